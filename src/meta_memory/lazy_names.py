"""The names a package gives on first use (a module ``__getattr__`` and ``__dir__``, PEP 562).

A package whose ``__init__`` would otherwise import every module it re-exports (and all they import)
names where each public name is defined instead; :func:`lazy_names` builds its ``__getattr__`` and
``__dir__`` from that table, so a program that uses one of its modules does not pay for the others.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Collection, Mapping


def lazy_names(package: str, homes: Mapping[str, str],
               modules: Collection[str] = ()) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` (its ``__name__``).

    ``homes`` maps each public name to the module of the package that defines it (``"Observability":
    "core"`` reads ``package.core.Observability``, importing ``package.core`` on first use); a name in
    ``modules`` is a submodule, returned itself. ``__getattr__`` raises :class:`AttributeError` naming the
    package and the attribute for any other name; ``__dir__`` lists the package's globals and its ``__all__``
    (the names loaded on first use included), sorted.
    """

    def __getattr__(name: str) -> object:
        if name in modules:
            return importlib.import_module(f"{package}.{name}")
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{home}"), name)

    def __dir__() -> list[str]:
        namespace = vars(sys.modules[package])
        return sorted({*namespace, *namespace.get("__all__", ())})

    return __getattr__, __dir__
