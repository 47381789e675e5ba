"""Agent memory: the record model, the one write validator, and the per-realm stores."""
