"""The base of every SDK result model: open (members the gateway adds are kept), frozen."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["OPEN", "OpenModel"]

OPEN = ConfigDict(extra="allow", frozen=True)


class OpenModel(BaseModel):
    """A result whose documented members are typed; extra members stay readable as attributes."""

    model_config = OPEN

    # Read access by key, for code written when these results were plain dicts
    # (``status()["version"]``, ``erase_agent_memory(...)["count"]``).
    def __getitem__(self, key: str) -> Any:
        if key in type(self).model_fields or key in (self.__pydantic_extra__ or {}):
            return getattr(self, key)
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        """``result.get(key, default)``, as on the dict these results once were."""
        try:
            return self[key]
        except KeyError:
            return default
