"""The envelope format (docs/format.md): the bytes every stored item is."""

from __future__ import annotations

from typing import Mapping, Optional

HEADER_LEN = 21  # version, enqueued at, due at, attempt
EXT_PRIORITY = 1
EXT_DEADLINE = 2
EXT_GROUP = 3


def uvarint(n: int) -> bytes:
    """Encodes n as an unsigned LEB128 varint, like Go's binary.AppendUvarint."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _string(b: bytes) -> bytes:
    return uvarint(len(b)) + b


def build(
    id: str,
    payload: bytes,
    headers: Optional[Mapping[str, str]] = None,
    priority: int = 0,
    group: Optional[str] = None,
    ttl_ms: int = 0,
) -> bytes:
    """Returns the envelope of one item, with zero times for the offer script
    to stamp from the server's clock: version 1 unless the item has a
    priority, a TTL or a group (version 2, extension fields in ascending
    tags). A TTL is written in ms, 8 bytes big-endian; the script replaces
    it with the deadline (due time + TTL)."""
    ext = {}
    if priority:
        ext[EXT_PRIORITY] = bytes([priority])
    if ttl_ms:
        ext[EXT_DEADLINE] = ttl_ms.to_bytes(8, "big")
    if group:
        ext[EXT_GROUP] = group.encode("utf-8")
    out = bytearray([2 if ext else 1])
    out += bytes(HEADER_LEN - 1)
    out += _string(id.encode("utf-8"))
    headers = headers or {}
    out += uvarint(len(headers))
    for k, v in headers.items():
        out += _string(k.encode("utf-8"))
        out += _string(v.encode("utf-8"))
    if ext:
        out += uvarint(len(ext))
        for tag in sorted(ext):
            out += uvarint(tag)
            out += _string(ext[tag])
    out += payload
    return bytes(out)
