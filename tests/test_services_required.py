"""A scale-out service that is not there fails the run under TURNSTORE_REQUIRE_SERVICES=1.

The Redis Cluster and PgBouncer tests (conformance, the 8-process load test, the CLI round trip)
are run in a child pytest whose `TURNSTORE_REDIS_CLUSTER_URL` and `TURNSTORE_PGBOUNCER_URL` name
a port where nothing listens, so the services the other tests share are left alone: the same
tests skip without the variable and fail with it, naming the missing service.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent

SCALE_OUT_TESTS = [
    "tests/memory/test_redis_cluster.py::TestRedisClusterConformance::test_order_is_kept_across_batches",
    "tests/memory/test_redis_cluster.py::test_from_url_and_an_explicit_cluster_client",
    "tests/memory/test_pgbouncer.py::TestPgBouncerConformance::test_order_is_kept_across_batches",
    "tests/memory/test_pgbouncer.py::test_concurrent_processes_through_pgbouncer_detected_without_the_flag",
    "tests/memory/test_backends_load.py::test_eight_processes_lose_nothing_and_keep_order[pgbouncer]",
    "tests/memory/test_backends_load.py::test_eight_processes_lose_nothing_and_keep_order[redis-cluster]",
    "tests/cli/test_session_cli.py::test_export_import_round_trips_between_backends[sqlite-pgbouncer]",
    "tests/cli/test_session_cli.py::test_export_import_round_trips_between_backends[sqlite-redis-cluster]",
    "tests/stores/test_listing_retention.py::TestRedisCluster::test_prefix_and_paging",
    "tests/stores/test_listing_retention.py::TestPgBouncer::test_prefix_and_paging",
]


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_without_services(required: bool) -> tuple[dict[str, int], str]:
    port = closed_port()
    env = {
        **os.environ,
        "TURNSTORE_REDIS_CLUSTER_URL": f"redis+cluster://127.0.0.1:{port}",
        "TURNSTORE_PGBOUNCER_URL": f"postgresql+asyncpg://postgres@127.0.0.1:{port}/test"
        "?pgbouncer=true",
        "TURNSTORE_REQUIRE_SERVICES": "1" if required else "0",
    }
    child = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rfEs",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            *SCALE_OUT_TESTS,
        ],
        cwd=TESTS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = child.stdout + child.stderr
    summary = out.strip().splitlines()[-1]
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", summary)}
    return counts, out


@pytest.mark.slow
def test_without_the_variable_missing_scale_out_services_skip() -> None:
    counts, out = run_without_services(required=False)
    assert counts == {"skipped": len(SCALE_OUT_TESTS)}, out
    assert "the Redis Cluster is not reachable" in out
    assert "PgBouncer is not reachable" in out


@pytest.mark.slow
def test_under_require_services_missing_scale_out_services_fail() -> None:
    counts, out = run_without_services(required=True)
    assert counts.get("skipped", 0) == 0, out
    assert counts.get("passed", 0) == 0, out
    assert counts.get("failed", 0) + counts.get("errors", counts.get("error", 0)) == len(
        SCALE_OUT_TESTS
    ), out
    assert out.count("TURNSTORE_REQUIRE_SERVICES=1 forbids skipping") >= len(SCALE_OUT_TESTS), out
    assert "the Redis Cluster is not reachable" in out
    assert "PgBouncer is not reachable" in out
