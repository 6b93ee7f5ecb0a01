"""Errors raised by the redelay producer.

Every error derives from :class:`RedelayError`. Bad input raises
:class:`InvalidArgumentError`, which is also a :class:`ValueError`.
"""

from __future__ import annotations

from typing import Sequence


class RedelayError(Exception):
    """Base class of every error this package raises."""


class InvalidArgumentError(RedelayError, ValueError):
    """An argument cannot be offered: the message names the problem.

    Nothing was sent to Redis.
    """


class DuplicateError(RedelayError):
    """An item with this ID is already pending: it was left as it was and
    the new one was dropped (the Go library's ``ErrDuplicate``)."""

    def __init__(self, id: str) -> None:
        super().__init__(f"an item with id {id!r} is already pending")
        self.id = id


class QueueFullError(RedelayError):
    """The queue is at the bound given as ``max_size``: nothing was stored
    (the Go library's ``ErrQueueFull``)."""


class OfferOutcomeUnknownError(RedelayError):
    """The offer was sent but no reply came, even after resending it: it
    may or may not be stored. ``ids`` are the IDs it was sent with; offering
    them again with the same IDs is safe (a stored one is refused as a
    duplicate)."""

    def __init__(self, message: str, ids: Sequence[str]) -> None:
        super().__init__(message)
        self.ids = list(ids)
