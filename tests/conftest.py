"""Shared fixtures: the fake OpenAI server and the services some tests need.

A test that needs PostgreSQL, Redis, the Redis Cluster, PgBouncer or Chromium skips with the
reason when the service is absent, except under `TURNSTORE_REQUIRE_SERVICES=1` (set by `.ci/run`),
where that is a failure.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from support.services import SSLPostgres, skip_or_fail
from turnstore.testing import FakeOpenAIServer

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

POSTGRES_URL = os.environ.get(
    "TURNSTORE_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
MYSQL_URL = os.environ.get("TURNSTORE_MYSQL_URL", "mysql+aiomysql://root@127.0.0.1:3306/test")
REDIS_URL = os.environ.get("TURNSTORE_REDIS_URL", "redis://127.0.0.1:6379/15")
# The scale-out services that .ci/scale-out-services starts: a 3-primary Redis Cluster on
# 127.0.0.1:7001-7003 and PgBouncer (transaction pooling) on 127.0.0.1:6432 in front of 5432.
REDIS_CLUSTER_URL = os.environ.get("TURNSTORE_REDIS_CLUSTER_URL", "redis+cluster://127.0.0.1:7001")
PGBOUNCER_URL = os.environ.get(
    "TURNSTORE_PGBOUNCER_URL", "postgresql+asyncpg://postgres@127.0.0.1:6432/test?pgbouncer=true"
)
# The SSL-only PostgreSQL that .ci/ssl-postgres starts, and the CA that signed its certificate
# (for 127.0.0.1 and localhost only; it also listens on 127.0.0.2, a name the certificate lacks).
SSL_POSTGRES_URL = os.environ.get(
    "TURNSTORE_SSL_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5433/test"
)
SSL_POSTGRES_CA = os.environ.get(
    "TURNSTORE_SSL_POSTGRES_CA", "/var/lib/turnstore-ssl-postgres/ca.crt"
)
CHROMIUM = os.environ.get("TURNSTORE_CHROMIUM", "/usr/bin/chromium")


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def _endpoint(url: str, default_port: int) -> tuple[str, int]:
    """The host and port a service URL names (the first node of a cluster URL).

    The fixtures probe what the URL names, not a fixed port: a `TURNSTORE_*_URL` pointing at
    a server that is not there skips the tests (fails them under TURNSTORE_REQUIRE_SERVICES=1)
    instead of letting them fail on a connection error.
    """
    parsed = urlsplit(url.replace("+cluster://", "://", 1))
    return parsed.hostname or "127.0.0.1", parsed.port or default_port


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """An async SQLAlchemy URL of a reachable PostgreSQL database."""
    host, port = _endpoint(POSTGRES_URL, 5432)
    if not _port_open(host, port):
        skip_or_fail(f"PostgreSQL is not reachable on {host}:{port}")
    return POSTGRES_URL


@pytest.fixture(scope="session")
def mysql_url() -> str:
    """An async SQLAlchemy URL of a reachable MariaDB/MySQL database (the MySQL dialect check)."""
    host, port = _endpoint(MYSQL_URL, 3306)
    if not _port_open(host, port):
        skip_or_fail(f"MariaDB/MySQL is not reachable on {host}:{port}")
    return MYSQL_URL


@pytest.fixture(scope="session")
def redis_url() -> str:
    """A URL of a reachable Redis database."""
    host, port = _endpoint(REDIS_URL, 6379)
    if not _port_open(host, port):
        skip_or_fail(f"Redis is not reachable on {host}:{port}")
    return REDIS_URL


@pytest.fixture(scope="session")
def redis_cluster_url() -> str:
    """A `redis+cluster://` URL of a reachable Redis Cluster whose every slot is served."""
    host, port = _endpoint(REDIS_CLUSTER_URL, 6379)
    if not _port_open(host, port):
        skip_or_fail(
            f"the Redis Cluster is not reachable on {host}:{port} (.ci/scale-out-services)"
        )
    import redis

    client = redis.Redis(host=host, port=port)
    try:
        state = client.execute_command("CLUSTER", "INFO")
    except redis.RedisError as exc:
        state = f"{type(exc).__name__}: {exc}"
    finally:
        client.close()
    text = state.decode() if isinstance(state, bytes) else str(state)
    if "cluster_state:ok" not in text:
        skip_or_fail(f"the Redis Cluster on {host}:{port} is not ready ({text.strip()[:80]})")
    return REDIS_CLUSTER_URL


@pytest.fixture(scope="session")
def pgbouncer_url() -> str:
    """A URL of PostgreSQL's database `test` through PgBouncer in transaction pooling mode."""
    host, port = _endpoint(PGBOUNCER_URL, 6432)
    if not _port_open(host, port):
        skip_or_fail(f"PgBouncer is not reachable on {host}:{port} (.ci/scale-out-services)")
    return PGBOUNCER_URL


@pytest.fixture(scope="session")
def ssl_postgres() -> SSLPostgres:
    """The SSL PostgreSQL of `.ci/ssl-postgres` (127.0.0.1:5433) and its CA certificate."""
    host, port = _endpoint(SSL_POSTGRES_URL, 5433)
    if not _port_open(host, port):
        skip_or_fail(f"the SSL PostgreSQL is not reachable on {host}:{port} (.ci/ssl-postgres)")
    if not os.path.isfile(SSL_POSTGRES_CA):
        skip_or_fail(f"the SSL PostgreSQL's CA certificate {SSL_POSTGRES_CA} is missing")
    return SSLPostgres(SSL_POSTGRES_URL, SSL_POSTGRES_CA)


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """The path of a Chromium executable for Playwright."""
    path = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    if not path:
        skip_or_fail("Chromium is not installed (apt-get install chromium)")
    assert path is not None
    return path


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """A running fake OpenAI server; requests are recorded in `fake_openai.requests`."""
    with FakeOpenAIServer() as server:
        yield server


SERVICE_FIXTURES = frozenset(
    {"postgres_url", "mysql_url", "redis_url", "redis_cluster_url", "pgbouncer_url", "ssl_postgres"}
)
# Session fixtures whose one child run (once_per_run) a group of short checks reads.
SHARED_RUN_FIXTURES = frozenset({"sdk_results"})


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark tests by the fixtures they need, so that `-m` selects them without a hand-made mark,
    then, under `pytest -n`, start the slowest tests first, spread over the workers.

    A service's URL makes a test `services`, Chromium makes it `browser`, and the built site
    (a whole `mkdocs build` to wait for) makes it `slow`. The tests that read one child run
    (`SHARED_RUN_FIXTURES`) start together on one worker: the first runs it, the others read it
    at once, where spread over the workers they would hold each one idle while it runs.
    """
    shared = [
        item for item in items if SHARED_RUN_FIXTURES & set(getattr(item, "fixturenames", ()))
    ]
    heavy = [[item] for item in items if item.get_closest_marker("slow") and item not in shared]
    if shared:
        heavy.insert(0, shared)
    for item in items:
        needs = set(getattr(item, "fixturenames", ()))
        if needs & SERVICE_FIXTURES:
            item.add_marker(pytest.mark.services)
        if "chromium_path" in needs:
            item.add_marker(pytest.mark.browser)
        if "built_site" in needs:
            item.add_marker(pytest.mark.slow)
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    if workers > 1:
        items[:] = heavy_first_in_each_share(items, heavy, workers)


def heavy_first_in_each_share(
    items: list[pytest.Item], heavy: list[list[pytest.Item]], workers: int
) -> list[pytest.Item]:
    """`items` reordered so that each worker's first share begins with its part of `heavy`.

    `heavy` holds groups of tests (most of one test each): a group stays together.

    `--dist worksteal` first hands worker k the k-th of `workers` near-equal runs of the
    collection, then moves tests from the end of a busy worker's queue to an idle one. A test
    that runs for minutes (a fresh venv, eight writer processes) and starts last would hold the
    whole run up: dealt round-robin to the front of each share, every one of them starts at
    once and the short tests fill in around them. Every worker sees the same collection, so
    every worker computes the same order, as xdist requires.
    """
    chosen = {id(item) for group in heavy for item in group}
    rest = iter([item for item in items if id(item) not in chosen])
    ordered: list[pytest.Item] = []
    remaining = len(items)
    for share in range(workers):
        size = remaining // (workers - share)
        first = [item for group in heavy[share::workers] for item in group]
        ordered += first
        ordered += [item for _, item in zip(range(size - len(first)), rest, strict=False)]
        remaining -= size
    ordered += list(rest)
    assert len(ordered) == len(items)
    return ordered
