"""The backend matrix: one session factory per real backend, for tests that hold on every storage.

`backend` is parametrised over SQLite (a real file), PostgreSQL, PostgreSQL through PgBouncer,
Redis and the Redis Cluster; a missing service skips (or fails under
`TURNSTORE_REQUIRE_SERVICES=1`) through the shared fixtures of `tests/conftest.py`.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from turnstore import SQLiteSession
from turnstore.extensions.memory import RedisSession, SQLAlchemySession

BACKENDS = ("sqlite", "postgres", "pgbouncer", "redis", "cluster")


@dataclass
class Backend:
    """Makes sessions on one storage; every session it made is closed after the test."""

    name: str
    url: str
    key_prefix: str = ""
    made: list[Any] = field(default_factory=list)

    def session(self, session_id: str | None = None) -> Any:
        """A new session object on this storage (a random id unless given)."""
        sid = session_id if session_id is not None else f"matrix-{uuid.uuid4().hex}"
        session: Any
        if self.name == "sqlite":
            session = SQLiteSession(sid, self.url)
        elif self.name in ("postgres", "pgbouncer"):
            session = SQLAlchemySession.from_url(sid, self.url, create_tables=True)
        else:
            session = RedisSession.from_url(sid, self.url, key_prefix=self.key_prefix)
        self.made.append(session)
        return session

    @property
    def store_target(self) -> str:
        """The target `open_session_store` takes for this storage."""
        return self.url


def _url(request: pytest.FixtureRequest, name: str, tmp_path: Path) -> str:
    if name == "sqlite":
        return str(tmp_path / "matrix.db")
    fixture = {
        "postgres": "postgres_url",
        "pgbouncer": "pgbouncer_url",
        "redis": "redis_url",
        "cluster": "redis_cluster_url",
    }[name]
    url: str = request.getfixturevalue(fixture)
    return url


@pytest.fixture(name="backend", params=BACKENDS)
async def backend_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    """`backend`: a session factory on one real backend (import this into a test module)."""
    name = request.param
    made = Backend(name, _url(request, name, tmp_path), key_prefix=f"matrix{uuid.uuid4().hex}")
    yield made
    for session in made.made:
        try:
            if not getattr(session, "_closed", False):
                await session.clear_session()
        except Exception:
            pass
        await session.aclose()


Factory = Callable[[str | None], Awaitable[Any]]
