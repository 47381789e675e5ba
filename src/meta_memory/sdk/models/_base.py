"""The base of every SDK result model: open (members the gateway adds are kept), frozen."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["OPEN", "OpenModel"]

OPEN = ConfigDict(extra="allow", frozen=True)


class OpenModel(BaseModel):
    """A result whose documented members are typed; extra members stay readable as attributes."""

    model_config = OPEN
