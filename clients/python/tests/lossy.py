"""A client that loses the reply of its first script call, for tests of
resends (test_producer.py, crossoffer.py)."""

from __future__ import annotations

import redis


class LostReply:
    """Wraps a redis-py client: the first EVALSHA or EVAL runs on the
    server, but its reply is lost, as when a connection drops after the
    request went out; the producer must resend it. ``lost`` says whether
    that happened."""

    def __init__(self, inner):
        self.inner = inner
        self.lost = False

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def _lose_first(self, out):
        if not self.lost:
            self.lost = True
            raise redis.exceptions.ConnectionError("connection reset after the request was sent")
        return out

    def evalsha(self, *args):
        return self._lose_first(self.inner.evalsha(*args))

    def eval(self, *args):
        return self._lose_first(self.inner.eval(*args))
