"""The persistent state directory: file layout, start-up checks, doctor, and adoption."""

from meta_memory.storage.adopt import AdoptReport, adopt_predecessor
from meta_memory.storage.layout import (
    RealmPathError,
    RootResolution,
    StorageLayout,
    decode_path_segment,
    encode_path_segment,
)

__all__ = [
    "AdoptReport",
    "adopt_predecessor",
    "RealmPathError",
    "RootResolution",
    "StorageLayout",
    "decode_path_segment",
    "encode_path_segment",
]
