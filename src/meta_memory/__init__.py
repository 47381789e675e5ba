"""meta-memory: identity-first memory for multi-agent LLM runtimes.

Public surface: :class:`meta_memory.sdk.Meta` (builder, embedded and remote
handles), :mod:`meta_memory.sdk.memory` (ledger backend helpers) and
:mod:`meta_memory.errors`.
"""

__version__ = "0.1.0"

__all__ = ["__version__", "Meta", "memory"]


def __getattr__(name: str) -> object:  # lazy, so importing the package stays cheap
    if name == "Meta":
        from .sdk import Meta

        return Meta
    if name == "memory":
        from .sdk import memory

        return memory
    raise AttributeError(name)
