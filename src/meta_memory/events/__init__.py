"""The timeline: lifecycle events as standard envelopes, kept durably with bounded retention."""

from .bus import EventBus, EventEnvelope

__all__ = ["EventBus", "EventEnvelope"]
