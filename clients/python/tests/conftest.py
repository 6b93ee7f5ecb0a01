"""Fixtures: a real redis-server for each test session.

REDELAY_TEST_REDIS_URL, when set, names a server to use instead (its
database is flushed before each test). Without it, redis-server must be on
PATH: a test that cannot reach a server fails, it does not skip.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest
import redis


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def redis_url():
    url = os.environ.get("REDELAY_TEST_REDIS_URL")
    if url:
        yield url
        return
    exe = shutil.which("redis-server")
    assert exe, "redis-server is not on PATH (scripts/test.sh installs it)"
    port = _free_port()
    workdir = tempfile.mkdtemp(prefix="redelay-py-")
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", workdir],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 10
    while True:
        try:
            redis.Redis.from_url(url).ping()
            break
        except redis.exceptions.ConnectionError:
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.02)
    yield url
    proc.kill()
    proc.wait()
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def r(redis_url):
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    yield client
    client.close()
