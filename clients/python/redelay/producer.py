"""The producer: offers items to a redelay queue from Python."""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import math
import os
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib import resources
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import redis.exceptions

from . import _envelope
from ._keys import Keys, check_name, check_prefix, partition_of
from .errors import (
    DuplicateError,
    InvalidArgumentError,
    OfferOutcomeUnknownError,
    QueueFullError,
    RedelayError,
)

#: The offer protocol this package speaks (docs/protocol.md).
PROTOCOL_VERSION = 1

MAX_ID_LEN = 256
MAX_HEADERS = 64
MAX_HEADER_KEY = 256
MAX_PRIORITY = 9
RESERVED_PREFIX = "redelay-"
DEFAULT_MAX_PAYLOAD = 1 << 20
#: The latest due time a queue holds: 2**53 µs after the epoch (June 2255).
MAX_DUE_US = 1 << 53
#: The longest TTL an item may have: 10 years (365-day years).
MAX_TTL = timedelta(days=10 * 365)
#: Items per offer script call of offer_batch.
CHUNK = 500
#: How long Redis keeps a call's outcome for a resend of it, ms.
LANE_TTL_MS = 60_000

# Statuses of offer.lua, one per item.
_DUPLICATE, _PENDING, _READY, _FULL = 0, 1, 2, 3

Delay = Union[timedelta, int, float]


class _Script:
    def __init__(self, name: str) -> None:
        self.src = resources.files(__package__).joinpath("lua", name).read_bytes()
        self.sha = hashlib.sha1(self.src).hexdigest()


_OFFER = _Script("offer.lua")
_REMOVE = _Script("remove.lua")


@dataclass
class Item:
    """One item of :meth:`Producer.offer_many`: a value and how to offer it.

    ``delay`` and ``at`` are exclusive (neither: due now); ``ttl`` is how
    long the item may wait once due (see :meth:`Producer.offer`)."""

    value: Any
    delay: Optional[Delay] = None
    at: Optional[datetime] = None
    id: Optional[str] = None
    headers: Optional[Mapping[str, str]] = None
    priority: int = 0
    group: Optional[str] = None
    ttl: Optional[Delay] = None


def new_id() -> str:
    """Returns a random 16-character ID (96 bits, URL-safe base64), the
    shape of the Go library's generated IDs."""
    return base64.urlsafe_b64encode(os.urandom(12)).decode("ascii")


class Producer:
    """Offers items to the redelay queue ``queue`` on ``redis`` (a
    ``redis.Redis`` or ``redis.RedisCluster``), for the queue's Go
    consumers to take, receive or consume.

    ``codec`` must be the name of the codec the consumers decode with:
    ``"json"`` (values are encoded with :func:`json.dumps`; the Go side
    uses ``codec.JSON[T]()``) or ``"raw"`` (values are ``bytes``, stored as
    they are; the Go side is a ``Queue[[]byte]`` with ``codec.Raw()``).
    ``prefix`` is the key prefix (``blocking.WithPrefix``; default
    ``"redelay"``). ``max_size`` is the queue's bound
    (``blocking.WithMaxSize``; default 0, none): an offer that does not fit
    raises :class:`QueueFullError`. ``max_payload`` bounds an encoded value
    in bytes (default 1 MiB, as the Go library's; 0: none). A call that gets
    no reply is resent up to ``resends`` times (default 3) with the same
    arguments, which Redis answers without storing anything twice.

    A Producer is safe for use by several threads.
    """

    def __init__(
        self,
        redis: Any,
        queue: str,
        *,
        prefix: str = "redelay",
        codec: str = "json",
        max_size: int = 0,
        max_payload: int = DEFAULT_MAX_PAYLOAD,
        resends: int = 3,
    ) -> None:
        check_name(queue)
        check_prefix(prefix)
        if codec not in ("json", "raw"):
            raise InvalidArgumentError(f"codec {codec!r}: want 'json' or 'raw'")
        if max_size < 0:
            raise InvalidArgumentError(f"negative max_size {max_size}")
        if max_payload < 0:
            raise InvalidArgumentError(f"negative max_payload {max_payload}")
        if resends < 0:
            raise InvalidArgumentError(f"negative resends {resends}")
        self._redis = redis
        self.queue = queue
        self._prefix = prefix
        self._codec = codec
        self._max_size = max_size
        self._max_payload = max_payload
        self._resends = resends
        self._partitions: Optional[int] = None
        self._lock = threading.Lock()
        self._lane_prefix = base64.urlsafe_b64encode(os.urandom(8)).decode("ascii").rstrip("=")
        self._free: List[str] = []
        self._lanes = itertools.count()
        self._nonce = itertools.count(1)

    # -- offers -----------------------------------------------------------

    def offer(
        self,
        value: Any,
        *,
        delay: Delay = 0,
        id: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
        priority: int = 0,
        group: Optional[str] = None,
        ttl: Optional[Delay] = None,
    ) -> str:
        """Offers ``value``, due after ``delay`` (a :class:`timedelta` or
        seconds; 0: ready now unless earlier items are due), and returns its
        ID: ``id`` when given, else a new random one. With ``ttl`` (1 ms to
        10 years; None or 0: none), an item still undelivered that long
        after its due time is never handed out: consumers move it to the
        dead letters as expired (Go's ``WithTTL``).

        Raises :class:`DuplicateError` when an item with ``id`` is already
        pending, :class:`QueueFullError` at the bound,
        :class:`InvalidArgumentError` for bad input (nothing sent), and
        :class:`OfferOutcomeUnknownError` when no reply came."""
        return self.offer_many(
            [Item(value, delay=delay, id=id, headers=headers, priority=priority, group=group, ttl=ttl)]
        )[0]

    def offer_at(
        self,
        value: Any,
        at: datetime,
        *,
        id: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
        priority: int = 0,
        group: Optional[str] = None,
        ttl: Optional[Delay] = None,
    ) -> str:
        """Offers ``value`` due at ``at`` (an aware datetime; a naive one is
        local time) and returns its ID; see :meth:`offer`."""
        return self.offer_many([Item(value, at=at, id=id, headers=headers, priority=priority, group=group, ttl=ttl)])[0]

    def offer_batch(
        self,
        values: Iterable[Any],
        *,
        delay: Delay = 0,
        headers: Optional[Mapping[str, str]] = None,
        priority: int = 0,
        ttl: Optional[Delay] = None,
    ) -> List[str]:
        """Offers every value with the same delay, headers, priority and TTL, and
        returns their new IDs in order. Items go in calls of 500, each
        atomic and idempotent on resend; values due at the same time become
        ready in order. The batch as a whole is not atomic: an error means
        the calls before it were stored. With ``max_size``, each partition's
        share is sent in one call and fits as a whole or is refused as a
        whole with :class:`QueueFullError` (keep such batches to thousands)."""
        items = [Item(v, delay=delay, headers=headers, priority=priority, ttl=ttl) for v in values]
        return self.offer_many(items, _batch=True)

    def offer_many(self, items: Sequence[Item], *, _batch: bool = False) -> List[str]:
        """Offers each item as :meth:`offer` would, in as few calls as it
        can (each call of up to 500 items is atomic and idempotent), and
        returns their IDs in order. The first item refused raises its error
        (:class:`DuplicateError`, :class:`QueueFullError`); the items of
        the same call before and after it were offered."""
        n = self._partition_count()
        prepared: List[tuple] = []  # (part, id, envelope, mode, us)
        for it in items:
            prepared.append(self._prepare(it, n))
        by_part: Dict[int, List[int]] = {}
        for i, p in enumerate(prepared):
            by_part.setdefault(p[0], []).append(i)
        statuses: List[Optional[int]] = [None] * len(prepared)
        for part, idx in by_part.items():
            bound = self._max_size // n if self._max_size else 0
            if _batch and bound:
                chunks = [idx]
            else:
                chunks = [idx[i : i + CHUNK] for i in range(0, len(idx), CHUNK)]
            for chunk in chunks:
                got = self._offer_call(part, bound, [prepared[i] for i in chunk], whole=_batch and bound > 0)
                for i, st in zip(chunk, got):
                    statuses[i] = st
        ids = [p[1] for p in prepared]
        for id, st in zip(ids, statuses):
            if st == _DUPLICATE:
                raise DuplicateError(id)
            if st == _FULL:
                raise QueueFullError(f"queue {self.queue!r} is full (max_size {self._max_size})")
        return ids

    def remove(self, id: str) -> bool:
        """Cancels the pending item ``id``: True when it was pending and is
        now removed, False when no pending item has this ID (it was never
        offered, is ready or delivered already, or was removed)."""
        _check_text("id", id, MAX_ID_LEN)
        keys = self._keys(partition_of(id, self._partition_count()))
        return bool(self._run(_REMOVE, [keys.delayed, keys.items], [id]))

    # -- internals --------------------------------------------------------

    def _prepare(self, it: Item, n: int) -> tuple:
        if it.delay is not None and it.at is not None:
            raise InvalidArgumentError("both delay and at given")
        if it.at is not None:
            if not isinstance(it.at, datetime):
                raise InvalidArgumentError(f"at {it.at!r}: want a datetime")
            us = round(it.at.timestamp() * 1_000_000)
            if us < 0 or us > MAX_DUE_US:
                raise InvalidArgumentError(f"due time {it.at} out of range (1970 to 2255)")
            mode = "a"
        else:
            us = _micros(it.delay or 0)
            mode = "d"
        self._check_headers(it.headers)
        if isinstance(it.priority, bool) or not isinstance(it.priority, int) or not 0 <= it.priority <= MAX_PRIORITY:
            raise InvalidArgumentError(f"priority {it.priority!r}: want 0 to {MAX_PRIORITY}")
        ttl_ms = _ttl_ms(it.ttl)
        if it.group is not None:
            _check_text("group key", it.group, MAX_ID_LEN)
        if it.id is not None:
            _check_text("id", it.id, MAX_ID_LEN)
            id = it.id
        else:
            mode = mode.upper()  # a generated ID: no pending item holds it
            id = new_id()
            if it.group and n > 1:
                want = partition_of(it.group, n)
                while partition_of(id, n) != want:
                    id = new_id()
        part = partition_of(it.group, n) if it.group else partition_of(id, n)
        payload = self._encode(it.value)
        env = _envelope.build(id, payload, it.headers, it.priority, it.group, ttl_ms)
        size = len(payload) + sum(len(k.encode()) + len(v.encode()) for k, v in (it.headers or {}).items())
        if self._max_payload and size > self._max_payload:
            raise InvalidArgumentError(f"payload too large: {size} bytes encoded, limit {self._max_payload}")
        return (part, id, env, mode, us)

    def _encode(self, value: Any) -> bytes:
        if self._codec == "raw":
            if not isinstance(value, (bytes, bytearray, memoryview)):
                raise InvalidArgumentError(f"raw codec: value of type {type(value).__name__}, want bytes")
            return bytes(value)
        try:
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError) as e:
            raise InvalidArgumentError(f"json codec: {e}") from e

    @staticmethod
    def _check_headers(h: Optional[Mapping[str, str]]) -> None:
        if not h:
            return
        if len(h) > MAX_HEADERS:
            raise InvalidArgumentError(f"{len(h)} headers, at most {MAX_HEADERS}")
        for k, v in h.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise InvalidArgumentError(f"header {k!r}: names and values must be str")
            try:
                n = len(k.encode("utf-8"))
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidArgumentError(f"header {k!r} is not UTF-8") from None
            if n == 0:
                raise InvalidArgumentError("empty header name")
            if n > MAX_HEADER_KEY:
                raise InvalidArgumentError(f"header name of {n} bytes, at most {MAX_HEADER_KEY}")
            if k.lower().startswith(RESERVED_PREFIX):
                raise InvalidArgumentError(f"header {k!r}: names starting with {RESERVED_PREFIX!r} are reserved")

    def _keys(self, part: int) -> Keys:
        return Keys(self._prefix, self.queue, part)

    def _partition_count(self) -> int:
        if self._partitions is None:
            v = self._redis.hget(self._keys(0).meta, "partitions")
            try:
                n = int(v) if v is not None else 1
            except ValueError:
                raise RedelayError(f"queue {self.queue!r}: partitions field {v!r} is not a number") from None
            if not 1 <= n <= 256:
                raise RedelayError(f"queue {self.queue!r}: {n} partitions recorded, want 1 to 256")
            self._partitions = n
        return self._partitions

    def _lane(self) -> str:
        with self._lock:
            if self._free:
                return self._free.pop()
            return f"{self._lane_prefix}.{next(self._lanes)}"

    def _offer_call(self, part: int, bound: int, items: List[tuple], whole: bool) -> List[int]:
        k = self._keys(part)
        lane = self._lane()
        try:
            with self._lock:
                nonce = _base36(next(self._nonce))
            pass_key = k.batch(new_id()) if whole else k.meta
            keys = [k.delayed, k.items, k.seq, k.ready, k.retry, k.lane(lane), k.prio, pass_key]
            args: List[Any] = [k.wake, nonce, LANE_TTL_MS, bound, len(items) if whole else 0, 0]
            for _, id, env, mode, us in items:
                args += [id, env, mode, us]
            last: Optional[Exception] = None
            for _ in range(self._resends + 1):
                try:
                    got = self._run(_OFFER, keys, args)
                    break
                except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as e:
                    last = e
                except redis.exceptions.ResponseError as e:
                    if str(e).startswith("STALE"):
                        raise OfferOutcomeUnknownError(str(e), [i[1] for i in items]) from e
                    raise
            else:
                raise OfferOutcomeUnknownError(
                    f"offer to {self.queue!r}: no reply after {self._resends + 1} sends: {last}",
                    [i[1] for i in items],
                ) from last
        finally:
            with self._lock:
                self._free.append(lane)
        if not isinstance(got, list) or len(got) != len(items):
            raise RedelayError(f"offer to {self.queue!r}: unexpected reply {got!r}")
        return [int(s) for s in got]

    def _run(self, script: _Script, keys: List[str], args: List[Any]) -> Any:
        try:
            return self._redis.evalsha(script.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            return self._redis.eval(script.src, len(keys), *keys, *args)


def _micros(d: Delay) -> int:
    if isinstance(d, bool) or not isinstance(d, (timedelta, int, float)):
        raise InvalidArgumentError(f"delay {d!r}: want a timedelta or seconds")
    if isinstance(d, float) and not math.isfinite(d):
        raise InvalidArgumentError(f"delay {d!r}: not a finite number")
    us = d // timedelta(microseconds=1) if isinstance(d, timedelta) else round(d * 1_000_000)
    if us < 0:
        raise InvalidArgumentError(f"negative delay {d!r}")
    if us > MAX_DUE_US - round(datetime.now().timestamp() * 1_000_000):
        raise InvalidArgumentError(f"delay {d!r} out of range (due after 2255)")
    return us


def _ttl_ms(d: Optional[Delay]) -> int:
    """Checks a TTL and returns it in ms (0: none), as Go's CheckTTL and
    SetTTL do: 1 ms to MAX_TTL, whole ms."""
    if d is None:
        return 0
    if isinstance(d, bool) or not isinstance(d, (timedelta, int, float)):
        raise InvalidArgumentError(f"ttl {d!r}: want a timedelta or seconds")
    if isinstance(d, float) and not math.isfinite(d):
        raise InvalidArgumentError(f"ttl {d!r}: not a finite number")
    us = d // timedelta(microseconds=1) if isinstance(d, timedelta) else round(d * 1_000_000)
    if us == 0:
        return 0
    if us < 1000 or us > MAX_TTL // timedelta(microseconds=1):
        raise InvalidArgumentError(f"ttl {d!r} out of range (1 ms to 10 years)")
    return us // 1000


def _check_text(what: str, s: str, limit: int) -> None:
    """Checks an ID or a group key: a str of 1 to limit bytes of UTF-8."""
    if not isinstance(s, str):
        raise InvalidArgumentError(f"{what} {s!r}: want a str")
    if s == "":
        raise InvalidArgumentError(f"empty {what}")
    try:
        n = len(s.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidArgumentError(f"{what} {s!r} is not UTF-8") from None
    if n > limit:
        raise InvalidArgumentError(f"{what} of {n} bytes, at most {limit}")


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out
