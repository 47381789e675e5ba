"""The Python SDK: ``Meta.builder()`` (embedded), ``Meta.connect(url)`` (HTTP), ``Meta.spawn(dir)`` (stdio)."""

from . import memory
from .builder import Meta, MetaBuilder
from .handle import AsyncMetaHandle, MetaHandle

__all__ = ["Meta", "MetaBuilder", "MetaHandle", "AsyncMetaHandle", "memory"]
