"""Offers a fixed set of items to a queue, for the Go test that consumes
them (internal/systemtest/polyglot_test.go). Prints one JSON object:
what was offered and when, for the consumer to check.

    python3 crossoffer.py ADDR QUEUE [--cluster]
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import timedelta

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(here, ".."), here]

import redis  # noqa: E402

from redelay import DuplicateError, Producer  # noqa: E402

from lossy import LostReply  # noqa: E402


def main() -> None:
    addr, queue = sys.argv[1], sys.argv[2]
    host, port = addr.rsplit(":", 1)
    if "--cluster" in sys.argv[3:]:
        client = redis.RedisCluster(host=host, port=int(port))
    else:
        client = redis.Redis(host=host, port=int(port))
    p = Producer(client, queue)
    start_ms = int(time.time() * 1000)
    # Ready now, with a TTL of 1 ms: expired before the consumer, which
    # starts after this script ends, can take it.
    p.offer({"n": 100, "text": "expires"}, id="py-expired", ttl=timedelta(milliseconds=1))
    items = []
    # Offered in one order, due in another; each with a TTL long enough.
    for i, delay in enumerate([1.2, 0.3, 0.9, 0.6, 1.5]):
        id = f"py-{i}"
        value = {"n": i, "text": f"from python ✓ {i}"}
        headers = {"lang": "python", "i": str(i)}
        p.offer(value, delay=delay, id=id, headers=headers, ttl=timedelta(minutes=1))
        items.append({"id": id, "value": value, "headers": headers, "delay_ms": int(delay * 1000)})
    duplicate_refused = False
    try:
        p.offer({"n": 99, "text": "a second py-2"}, delay=0.1, id="py-2")
    except DuplicateError:
        duplicate_refused = True
    lost = LostReply(client)
    resent = Producer(lost, queue)
    value = {"n": 5, "text": "resent"}
    resent.offer(value, delay=0.45, id="py-resent", headers={"lang": "python"})
    items.append({"id": "py-resent", "value": value, "headers": {"lang": "python"}, "delay_ms": 450})
    for id, n in zip(p.offer_batch([{"n": 6 + k, "text": "batch"} for k in range(3)], delay=0.75, headers={"lang": "python"}), range(6, 9)):
        items.append({"id": id, "value": {"n": n, "text": "batch"}, "headers": {"lang": "python"}, "delay_ms": 750})
    print(json.dumps({
        "start_ms": start_ms,
        "items": items,
        "expired": ["py-expired"],
        "duplicate_refused": duplicate_refused,
        "reply_lost": lost.lost,
    }))


if __name__ == "__main__":
    main()
