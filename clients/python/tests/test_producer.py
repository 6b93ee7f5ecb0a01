"""Tests of the producer against a real Redis: what it stores is what the
Go library's consumers read (docs/format.md, docs/keys.md)."""

from __future__ import annotations

import json
import math
import time
from datetime import datetime, timedelta, timezone

import pytest
import redis

from redelay import (
    DuplicateError,
    InvalidArgumentError,
    Item,
    OfferOutcomeUnknownError,
    Producer,
    QueueFullError,
)
from redelay._keys import Keys, is_tick_id, partition_of

from lossy import LostReply

K = Keys("redelay", "orders")


def read_uvarint(b: bytes, i: int):
    n = shift = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        if c < 0x80:
            return n, i
        shift += 7


def read_string(b: bytes, i: int):
    n, i = read_uvarint(b, i)
    return b[i : i + n], i + n


def parse(env: bytes):
    """Reads an envelope as the Go library does (docs/format.md)."""
    version = env[0]
    due = int.from_bytes(env[9:17], "big")
    attempt = int.from_bytes(env[17:21], "big")
    id, i = read_string(env, 21)
    nh, i = read_uvarint(env, i)
    headers = {}
    for _ in range(nh):
        k, i = read_string(env, i)
        v, i = read_string(env, i)
        headers[k.decode()] = v.decode()
    ext = {}
    if version == 2:
        ne, i = read_uvarint(env, i)
        for _ in range(ne):
            tag, i = read_uvarint(env, i)
            v, i = read_string(env, i)
            ext[tag] = v
    return dict(version=version, due=due, attempt=attempt, id=id.decode(), headers=headers, ext=ext, payload=env[i:])


def stored(r, id: str, keys: Keys = K):
    """The envelope of pending item id (items hash value: 6-byte seq, envelope)."""
    v = r.hget(keys.items, id)
    assert v is not None, f"item {id} is not pending"
    return parse(v[6:])


def test_offer_stores_an_envelope_the_go_consumer_reads(r):
    p = Producer(r, "orders")
    before = time.time()
    id = p.offer({"order": 7, "note": "ünïcode"}, delay=timedelta(minutes=30), id="order-7", headers={"tenant": "b"})
    assert id == "order-7"
    e = stored(r, id)
    assert e["version"] == 1 and e["attempt"] == 0 and e["id"] == "order-7"
    assert e["headers"] == {"tenant": "b"}
    assert json.loads(e["payload"]) == {"order": 7, "note": "ünïcode"}
    due_ms = e["due"]
    assert before * 1000 + 30 * 60_000 - 1000 <= due_ms <= time.time() * 1000 + 30 * 60_000 + 1000
    score = r.zscore(K.delayed, r.zrange(K.delayed, 0, 0)[0])
    assert math.isclose(score / 1000, due_ms, abs_tol=1)


def test_generated_ids_are_new_and_go_shaped(r):
    p = Producer(r, "orders")
    ids = {p.offer(i, delay=60) for i in range(50)}
    assert len(ids) == 50
    assert all(len(i) == 16 for i in ids)
    assert r.zcard(K.delayed) == 50


def test_duplicate_id_is_refused_and_the_first_kept(r):
    p = Producer(r, "orders")
    p.offer("first", delay=60, id="x")
    with pytest.raises(DuplicateError) as ei:
        p.offer("second", delay=1, id="x")
    assert ei.value.id == "x"
    assert json.loads(stored(r, "x")["payload"]) == "first"
    assert r.zcard(K.delayed) == 1


def test_due_now_goes_to_the_ready_list(r):
    p = Producer(r, "orders")
    p.offer({"n": 1})
    assert r.llen(K.ready) == 1
    assert r.zcard(K.delayed) == 0


def test_offer_at(r):
    p = Producer(r, "orders")
    at = datetime.now(timezone.utc) + timedelta(hours=2)
    id = p.offer_at("v", at, id="at-1")
    assert stored(r, id)["due"] == int(at.timestamp() * 1000)


def test_priority_and_group_are_extensions(r):
    p = Producer(r, "orders")
    id = p.offer("v", delay=60, priority=7, group="tenant-a")
    e = stored(r, id)
    assert e["version"] == 2
    assert e["ext"] == {1: bytes([7]), 3: b"tenant-a"}


def test_ttl_is_stamped_as_a_deadline(r):
    # The producer writes the TTL in ms; the script replaces it with the
    # deadline, due time + TTL in Unix ms (docs/format.md, tag 2).
    p = Producer(r, "orders")
    id = p.offer("v", delay=60, ttl=timedelta(minutes=5), id="t-1")
    e = stored(r, id)
    assert e["version"] == 2
    assert int.from_bytes(e["ext"][2], "big") == e["due"] + 5 * 60_000
    p.offer("w", delay=60, ttl=1.5, id="t-2")  # seconds, as delay
    e = stored(r, "t-2")
    assert int.from_bytes(e["ext"][2], "big") == e["due"] + 1500
    p.offer("x", delay=60, ttl=0, id="t-3")  # 0: none
    assert stored(r, "t-3")["ext"] == {}


def test_a_resent_offer_is_stored_once(r):
    lossy = LostReply(r)
    ids = Producer(lossy, "orders").offer_batch(["a", "b", "c"], delay=60)
    assert lossy.lost
    assert len(set(ids)) == 3
    assert r.zcard(K.delayed) == 3
    lossy = LostReply(r)
    assert Producer(lossy, "orders").offer("d", delay=60, id="d") == "d"  # the resend is answered, not refused as a duplicate
    assert lossy.lost
    assert r.zcard(K.delayed) == 4


def test_no_reply_at_all_is_an_unknown_outcome(r):
    class Down:
        def hget(self, *a):
            return None

        def evalsha(self, *a):
            raise redis.exceptions.ConnectionError("down")

    with pytest.raises(OfferOutcomeUnknownError) as ei:
        Producer(Down(), "orders", resends=2).offer("v", id="u")
    assert ei.value.ids == ["u"]


def test_queue_full(r):
    p = Producer(r, "orders", max_size=2)
    p.offer(1, delay=60)
    p.offer(2, delay=60)
    with pytest.raises(QueueFullError):
        p.offer(3, delay=60)
    with pytest.raises(QueueFullError):
        p.offer_batch([4, 5], delay=60)
    assert r.zcard(K.delayed) == 2


def test_bounded_batch_fits_as_a_whole(r):
    p = Producer(r, "orders", max_size=5)
    p.offer_batch([1, 2, 3], delay=60)
    with pytest.raises(QueueFullError):
        p.offer_batch([4, 5, 6], delay=60)  # two would fit, not three: none stored
    assert r.zcard(K.delayed) == 3
    assert not r.keys("redelay:{orders}:batch:*")


def test_offer_batch_in_calls_of_500(r):
    p = Producer(r, "orders")
    ids = p.offer_batch(range(1200), delay=60)
    assert len(set(ids)) == 1200
    assert r.zcard(K.delayed) == 1200
    assert [json.loads(stored(r, i)["payload"]) for i in ids[:3]] == [0, 1, 2]


def test_remove(r):
    p = Producer(r, "orders")
    p.offer("v", delay=60, id="gone")
    assert p.remove("gone") is True
    assert p.remove("gone") is False
    assert r.zcard(K.delayed) == 0


def test_scripts_reload_after_a_flush(r):
    p = Producer(r, "orders")
    p.offer(1, delay=60)
    r.script_flush()
    p.offer(2, delay=60)
    assert r.zcard(K.delayed) == 2


def test_raw_codec(r):
    p = Producer(r, "orders", codec="raw")
    id = p.offer(b"\x00\xffbytes", delay=60)
    assert stored(r, id)["payload"] == b"\x00\xffbytes"
    with pytest.raises(InvalidArgumentError):
        p.offer("not bytes")


def test_partitions_follow_the_recorded_count(r):
    r.hset(K.meta, "partitions", 4)
    p = Producer(r, "orders")
    for i in range(20):
        id = p.offer(i, delay=60, id=f"id-{i}")
        part = partition_of(id, 4)
        assert r.hexists(Keys("redelay", "orders", part).items, id)
    gid = p.offer("g", delay=60, group="tenant-a")
    assert partition_of(gid, 4) == partition_of("tenant-a", 4)
    assert p.remove("id-3") is True


def test_partition_of_matches_go():
    # keys.PartitionOf in Go: FNV-1a 32 of the ID's bytes, modulo n.
    assert partition_of("", 7) == 0x811C9DC5 % 7
    assert partition_of("a", 1000) == 0xE40C292C % 1000
    assert partition_of("nightly@2026-12-04T03:00:00.000Z", 8) == 0
    assert is_tick_id("@2026-12-04T03:00:00.000Z")
    assert not is_tick_id("x@2026-13-04T03:00:00.000Z")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(delay=-1), "negative delay"),
        (dict(delay=float("nan")), "finite"),
        (dict(delay="soon"), "want a timedelta"),
        (dict(priority=10), "priority"),
        (dict(priority=True), "priority"),
        (dict(id=""), "empty id"),
        (dict(id="x" * 257), "at most 256"),
        (dict(id="\ud800"), "not UTF-8"),
        (dict(headers={"redelay-error": "x"}), "reserved"),
        (dict(headers={"": "x"}), "empty header"),
        (dict(headers={"k": 1}), "must be str"),
        (dict(group=""), "empty group"),
        (dict(delay=timedelta(days=365 * 300)), "out of range"),
        (dict(ttl=timedelta(microseconds=999)), "ttl .* out of range"),
        (dict(ttl=-1), "ttl .* out of range"),
        (dict(ttl=timedelta(days=3651)), "ttl .* out of range"),
        (dict(ttl="1h"), "ttl .*want a timedelta"),
        (dict(ttl=float("inf")), "ttl .*finite"),
    ],
)
def test_bad_input_is_refused_before_sending(r, kwargs, message):
    p = Producer(r, "orders")
    with pytest.raises(InvalidArgumentError, match=message):
        p.offer("v", **kwargs)
    assert r.dbsize() == 0


@pytest.mark.parametrize("name", ["", "a{b", "a}b", "a b", "a\x00", "x" * 201])
def test_bad_queue_names(r, name):
    with pytest.raises(InvalidArgumentError):
        Producer(r, name)


def test_values_json_cannot_encode(r):
    p = Producer(r, "orders")
    with pytest.raises(InvalidArgumentError, match="json"):
        p.offer(object())
    with pytest.raises(InvalidArgumentError, match="json"):
        p.offer(float("inf"))


def test_payload_limit(r):
    p = Producer(r, "orders", codec="raw", max_payload=10)
    with pytest.raises(InvalidArgumentError, match="too large"):
        p.offer(b"x" * 11)


def test_offer_many_mixed(r):
    p = Producer(r, "orders")
    ids = p.offer_many([Item("a", delay=60, id="m1"), Item("b", at=datetime.now(timezone.utc) + timedelta(minutes=5))])
    assert ids[0] == "m1" and len(ids[1]) == 16
    with pytest.raises(InvalidArgumentError, match="both"):
        p.offer_many([Item("c", delay=1, at=datetime.now(timezone.utc))])
