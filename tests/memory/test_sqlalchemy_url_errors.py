"""`SQLAlchemySession.from_url` errors for URLs that cannot work say what to use instead."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("sqlalchemy")

from turnstore.extensions.memory import SQLAlchemySession


@pytest.mark.parametrize(
    ("url", "module", "instead"),
    [
        ("postgresql+psycopg2://u@127.0.0.1/db", "psycopg2", "postgresql+asyncpg://"),
        ("mysql://u@127.0.0.1/db", "MySQLdb", "mysql+aiomysql://"),
    ],
)
def test_a_missing_sync_driver_points_at_an_async_driver(
    monkeypatch: pytest.MonkeyPatch, url: str, module: str, instead: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # as if the driver were not installed
    with pytest.raises(ImportError) as caught:
        SQLAlchemySession.from_url("s", url)
    message = str(caught.value)
    assert "async driver" in message
    assert module in message  # what is really missing
    assert instead in message  # the async driver of the same database
    assert "; install it" not in message  # installing a sync driver would not help


def test_a_sync_driver_error_reads_as_one_sentence() -> None:
    with pytest.raises(ValueError, match="async driver") as caught:
        SQLAlchemySession.from_url("s", "sqlite:///x.db")
    assert ".." not in str(caught.value)
