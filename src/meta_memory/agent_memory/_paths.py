"""File-name encoding of realm and identity names (reference §2C ``encode_path_segment``).

ASCII letters, digits, ``-`` and ``_`` are kept; every other UTF-8 byte becomes
``%XX`` (uppercase hex); the empty string becomes ``_``. So ``john_doe``,
``john-doe`` and ``a%`` (-> ``a%25``) never share a file.
"""

from __future__ import annotations

__all__ = ["encode_path_segment", "decode_path_segment"]

_KEEP = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_HEX = frozenset(b"0123456789abcdefABCDEF")


def encode_path_segment(value: str) -> str:
    """Encode ``value`` as one safe path segment (see module doc)."""
    if not value:
        return "_"
    out: list[str] = []
    for byte in value.encode("utf-8", "surrogatepass"):
        out.append(chr(byte) if byte in _KEEP else f"%{byte:02X}")
    return "".join(out)


def decode_path_segment(segment: str) -> str:
    """Reverse :func:`encode_path_segment`; malformed ``%`` escapes pass through unchanged."""
    raw = segment.encode("utf-8", "surrogatepass")
    out = bytearray()
    i = 0
    while i < len(raw):
        if raw[i] == ord("%") and i + 2 < len(raw) and raw[i + 1] in _HEX and raw[i + 2] in _HEX:
            out.append(int(raw[i + 1 : i + 3], 16))
            i += 3
        else:
            out.append(raw[i])
            i += 1
    return out.decode("utf-8", "replace")
