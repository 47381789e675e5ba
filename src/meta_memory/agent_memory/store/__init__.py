"""Agent-memory store backends behind one interface (:mod:`.base`)."""
