"""Host helpers: wrap an agent's model loop with memory (see :class:`MemoryHost`)."""

from .adapter import MemoryHost, NoSessionError

__all__ = ["MemoryHost", "NoSessionError"]
