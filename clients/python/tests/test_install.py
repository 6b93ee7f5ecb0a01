"""The package installs with pip from the repository, as the README says,
and the installed copy (its scripts included) offers to a real Redis."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

PROBE = """
import json, sys, redis, redelay
from datetime import timedelta
assert redelay.__file__.startswith(sys.argv[1]), redelay.__file__
p = redelay.Producer(redis.Redis.from_url(sys.argv[2]), "installed")
print(json.dumps(p.offer({"n": 1}, delay=timedelta(minutes=5), id="i-1")))
"""


def test_pip_install_from_the_repository(tmp_path, r, redis_url):
    # A copy, so that the build leaves nothing behind in the repository.
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__"))
    site = tmp_path / "site"
    # No index: the build uses the setuptools at hand, the dependency
    # (redis-py) is the one installed.
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps", "--no-index",
         "--target", str(site), str(src)],
        check=True,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_ROOT_USER_ACTION": "ignore"},
    )
    assert sorted(p.name for p in (site / "redelay" / "lua").iterdir()) == ["offer.lua", "remove.lua"]
    assert (site / "redelay" / "py.typed").exists()
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(site), redis_url],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(site)},
        cwd=tmp_path,
    )
    assert out.stdout.strip() == '"i-1"'
    assert r.zcard("redelay:{installed}:delayed") == 1
