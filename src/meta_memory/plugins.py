"""Objects named in the configuration as ``"package.module:Attr"`` (``[agent_memory] recall_provider``
and ``embedder``): imported, and instantiated when the attribute is a class or a factory.

One loader, so every such key refuses the same mistakes with the same words: a module that does not
import, an attribute it lacks, a value that is neither the object nor something that makes it, a
constructor that fails. Each refusal is a :class:`~meta_memory.errors.StartupError` naming the key.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from .errors import StartupError

__all__ = ["load_object"]


def load_object(key: str, module_name: str, attr_path: str, *, is_object: Callable[[Any], bool],
                what: str) -> Any:
    """Import ``module_name``, follow the dotted ``attr_path``, and return the object it names: the
    attribute itself when ``is_object`` says it already is one (a class never is), else what calling
    it with no arguments returns. ``what`` names the object kind in refusals ("a provider object").

    Raises :class:`StartupError` ``"<key>: ..."`` for a module that fails to import (with the cause),
    a missing attribute, a value that is neither callable nor an object, or a call that raises."""
    reference = f"{module_name}:{attr_path}"
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - ImportError, or whatever the module raises while importing
        raise StartupError(f"{key}: cannot import module {module_name!r} ({type(exc).__name__}: {exc})") from None
    for part in attr_path.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise StartupError(f"{key}: module {module_name!r} has no attribute {attr_path!r}") from None
    if not isinstance(target, type) and is_object(target):
        return target
    if not callable(target):
        raise StartupError(f"{key}: {reference!r} is neither a class, a factory nor {what}")
    try:
        return target()
    except Exception as exc:  # noqa: BLE001 - the class's own failure, named in the refusal
        raise StartupError(f"{key}: {reference!r}() failed ({type(exc).__name__}: {exc})") from None
