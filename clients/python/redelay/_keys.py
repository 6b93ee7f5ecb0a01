"""Key names of a queue (docs/keys.md) and the partition of an ID."""

from __future__ import annotations

import re
from datetime import datetime

from .errors import InvalidArgumentError

MAX_NAME_LEN = 200
MAX_PREFIX_LEN = 64

# A recurring schedule's tick ID: anything, '@', then its time in UTC.
_TICK = re.compile(r"@([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3})Z\Z")


def _check(what: str, s: str, limit: int) -> None:
    try:
        n = len(s.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidArgumentError(f"{what} {s!r} is not UTF-8") from None
    if n == 0:
        raise InvalidArgumentError(f"empty {what}")
    if n > limit:
        raise InvalidArgumentError(f"{what} of {n} bytes, at most {limit}")
    for c in s:
        if c in "{}" or ord(c) <= 0x20 or ord(c) == 0x7F:
            raise InvalidArgumentError(f"{what} {s!r} contains {c!r}")


def check_name(name: str) -> None:
    """Raises InvalidArgumentError unless name is a valid queue name."""
    _check("queue name", name, MAX_NAME_LEN)


def check_prefix(prefix: str) -> None:
    """Raises InvalidArgumentError unless prefix is a valid key prefix."""
    _check("key prefix", prefix, MAX_PREFIX_LEN)
    if prefix.startswith(":") or prefix.endswith(":"):
        raise InvalidArgumentError(f"key prefix {prefix!r} starts or ends with ':'")


class Keys:
    """The keys of one partition of a queue."""

    def __init__(self, prefix: str, name: str, part: int = 0) -> None:
        tag = "{" + name + "}" if part == 0 else "{" + name + "{" + str(part) + "}"
        base = prefix + ":" + tag + ":"
        self.delayed = base + "delayed"
        self.items = base + "items"
        self.seq = base + "seq"
        self.ready = base + "ready"
        self.retry = base + "retry"
        self.prio = base + "prio"
        self.meta = base + "meta"
        self.wake = base + "wake"
        self._base = base

    def lane(self, lane: str) -> str:
        return self._base + "lane:" + lane

    def batch(self, token: str) -> str:
        return self._base + "batch:" + token


def is_tick_id(id: str) -> bool:
    m = _TICK.search(id)
    if not m:
        return False
    try:
        datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f")
    except ValueError:
        return False
    return True


def partition_of(id: str, n: int) -> int:
    """The partition that holds id in a queue of n partitions: FNV-1a
    (32-bit) of its UTF-8 bytes modulo n; a schedule tick's ID: 0."""
    if n <= 1 or is_tick_id(id):
        return 0
    h = 0x811C9DC5
    for b in id.encode("utf-8"):
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h % n
