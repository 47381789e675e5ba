"""Typed results of every gateway method, as the SDK returns them (pydantic v2, open models).

One module per domain: :mod:`.agent_memory`, :mod:`.host`, :mod:`.system`, :mod:`.review`,
:mod:`.panel`; the ledger's models live in :mod:`meta_memory.ledger.model`. Every model keeps the
members the gateway adds beyond those typed (``extra="allow"``) and is frozen.
"""

from __future__ import annotations

from ._base import OpenModel
from .agent_memory import *  # noqa: F401,F403
from .agent_memory import __all__ as _am
from .host import *  # noqa: F401,F403
from .host import __all__ as _host
from .panel import *  # noqa: F401,F403
from .panel import __all__ as _panel
from .review import *  # noqa: F401,F403
from .review import __all__ as _review
from .system import *  # noqa: F401,F403
from .system import __all__ as _system

__all__ = ["OpenModel", *_am, *_host, *_system, *_review, *_panel]
