"""Build the configured recall provider for a runtime.

``[agent_memory] recall_provider``:

* ``"lexical"`` (default): :class:`~meta_memory.recall.lexical.LexicalRecallProvider`; nothing else runs.
* ``"hybrid"``: :class:`~meta_memory.recall.semantic.hybrid.HybridRecallProvider` over the bundled
  model (or the ``[agent_memory] embedder`` a configuration names: :func:`load_embedder`), with a started :class:`~meta_memory.recall.semantic.indexer.VectorIndexer` that fills the
  store's vectors in the background. Refused (``StartupError``) when the ``semantic`` extra is not
  installed (the message gives the ``pip install`` command) or when the store has no vector support
  (the PostgreSQL store: hybrid recall is SQLite-only for now).
* ``"package.module:Class"``, or a provider object given to ``Meta.builder().recall_provider(...)``:
  a custom provider (:mod:`meta_memory.recall.custom`), run inside the runtime's guarantees
  (:class:`~meta_memory.recall.custom.CustomRecallProvider`); nothing else runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from meta_memory.errors import StartupError
from meta_memory.recall.custom import CustomRecallProvider, check_provider, is_provider_reference, load_provider
from meta_memory.recall.lexical import LexicalRecallProvider

__all__ = ["RecallSetup", "build_recall_provider", "load_embedder", "VECTOR_STORE_METHODS"]

#: What a store must offer for ``hybrid`` (the SQLite store does).
VECTOR_STORE_METHODS = ("missing_vectors", "put_vectors", "vector_backlog", "vector_signature", "scope_vectors", "list_realms")


@dataclass
class RecallSetup:
    """The provider to hand to the agent-memory service, and the indexer (``None`` for lexical and
    custom providers) to stop at shutdown. ``kind``: ``"lexical"``, ``"hybrid"`` or ``"custom"``."""

    provider: Any
    indexer: Any = None
    kind: str = "lexical"

    def start(self) -> None:
        """Start the background indexer, if any (idempotent)."""
        if self.indexer is not None:
            self.indexer.start()

    def backlog(self) -> dict[str, Any]:
        """Records waiting for a vector, per realm (see :meth:`VectorIndexer.backlog` for the shape).

        Lexical recall has no backlog: ``{"provider": "lexical", "pending": 0, "realms": [],
        "complete": True, "reason": ...}``.
        """
        if self.indexer is None:
            name = "lexical" if self.kind == "lexical" else str(getattr(self.provider, "name", self.kind))
            return {"provider": self.kind, "pending": 0, "realms": [], "complete": True,
                    "reason": f'hybrid recall is off (agent_memory.recall_provider = "{name}"): no vectors are kept'}
        backlog: dict[str, Any] = self.indexer.backlog()
        return backlog

    def close(self) -> None:
        """Stop the background indexer, if any."""
        if self.indexer is not None:
            self.indexer.stop()


def load_embedder(reference: str) -> Any:
    """Import ``"package.module:Class"`` (``[agent_memory] embedder``) and return its embedder: the
    attribute itself when it already is one, else the result of calling it with no arguments. The
    object must offer ``model_id`` (str), ``dim`` (int >= 1), ``ready`` and ``embed(texts)``
    (:class:`~meta_memory.recall.semantic.embedder.Embedder`). Raises :class:`StartupError` naming
    ``agent_memory.embedder`` and the cause."""
    from ...plugins import load_object

    key = "agent_memory.embedder"
    module_name, _, attr_path = reference.partition(":")
    target = load_object(key, module_name, attr_path, is_object=lambda t: callable(getattr(t, "embed", None)),
                         what="an embedder")
    model_id, dim = getattr(target, "model_id", None), getattr(target, "dim", None)
    if not callable(getattr(target, "embed", None)) or not hasattr(target, "ready"):
        raise StartupError(f"{key}: {reference!r} has no embed(texts) method or no ready attribute")
    if not isinstance(model_id, str) or not model_id.strip():
        raise StartupError(f"{key}: {reference!r} has no model_id (a non-empty string)")
    if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
        raise StartupError(f"{key}: {reference!r} has no dim (a positive integer)")
    return target


def build_recall_provider(kind: str, store: Any, *, embedder: Any = None, start: bool = True,
                          custom: Any = None, vector_cache_bytes: int | None = None) -> RecallSetup:
    """The provider named by ``kind`` (``"lexical"`` | ``"hybrid"`` | ``"package.module:Class"``) over
    ``store``, or ``custom`` (a provider object from the builder), which takes the place of ``kind``.

    ``embedder``: overrides the bundled model (tests); ``start``: start the indexer thread.
    ``vector_cache_bytes``: hybrid recall's cache bound (:attr:`HybridConfig.cache_bytes`; ``None``: its default).
    Raises :class:`StartupError` for an unknown kind, a custom provider that cannot be loaded, a
    store without vector support, or a missing ``semantic`` extra.
    """
    if custom is not None:
        name = f"{type(custom).__module__}:{type(custom).__qualname__}"
        return RecallSetup(CustomRecallProvider(check_provider(custom, name), name), kind="custom")
    if is_provider_reference(kind):
        return RecallSetup(CustomRecallProvider(load_provider(kind), kind), kind="custom")
    if kind == "lexical":
        return RecallSetup(LexicalRecallProvider())
    if kind != "hybrid":
        raise StartupError(f"agent_memory.recall_provider: unknown provider {kind!r} "
                           "(allowed: 'lexical', 'hybrid', 'package.module:Class')")
    missing = [m for m in VECTOR_STORE_METHODS if not callable(getattr(store, m, None))]
    if missing:
        raise StartupError(
            f'agent_memory.recall_provider = "hybrid" is not supported on this store ({type(store).__name__}: '
            f'no {", ".join(missing)}); hybrid recall needs store = "sqlite"'
        )
    if embedder is None:
        from meta_memory.recall.semantic.model import MiniLMEmbedder

        embedder = MiniLMEmbedder()  # raises StartupError with the install command when the extra is missing
    try:
        from meta_memory.recall.semantic.hybrid import HybridRecallProvider
        from meta_memory.recall.semantic.indexer import VectorIndexer
    except ImportError as exc:  # numpy missing
        raise StartupError(
            f"agent_memory.recall_provider = \"hybrid\" needs the semantic extra ({exc}): "
            "pip install 'meta-memory[semantic]'"
        ) from None
    indexer = VectorIndexer(store, embedder)
    if start:
        indexer.start()
    from meta_memory.recall.semantic.hybrid import HybridConfig

    config = HybridConfig() if vector_cache_bytes is None else HybridConfig(cache_bytes=vector_cache_bytes)
    return RecallSetup(HybridRecallProvider(embedder, config), indexer, kind="hybrid")
