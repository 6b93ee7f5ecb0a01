"""Offer items to redelay queues from Python.

redelay (github.com/redelay/redelay) is a Go library of Redis-backed
delayed queues. This package is a producer only: it stores items exactly
as the Go library's ``delayed.Queue.Offer`` does, with the same script
(docs/protocol.md), for Go consumers to take, receive or consume::

    import redis
    from datetime import timedelta
    from redelay import Producer

    orders = Producer(redis.Redis(), "orders")
    id = orders.offer({"order": 7}, delay=timedelta(minutes=30), id="order-7")
"""

from .errors import (
    DuplicateError,
    InvalidArgumentError,
    OfferOutcomeUnknownError,
    QueueFullError,
    RedelayError,
)
from .producer import PROTOCOL_VERSION, Item, Producer, new_id

__all__ = [
    "PROTOCOL_VERSION",
    "DuplicateError",
    "InvalidArgumentError",
    "Item",
    "OfferOutcomeUnknownError",
    "Producer",
    "QueueFullError",
    "RedelayError",
    "new_id",
]
