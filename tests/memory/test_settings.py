"""SessionSettings, its dict form, and resolve_session_limit."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import create_async_engine

from support.backends import drop_tables, unique_prefix, unique_tables
from support.items import user
from turnstore import SessionSettings, SQLiteSession
from turnstore.extensions.memory import RedisSession, SQLAlchemySession
from turnstore.memory import resolve_session_limit
from turnstore.memory.settings import coerce_session_settings


def test_defaults_and_to_dict() -> None:
    assert SessionSettings().limit is None
    assert SessionSettings(limit=3).to_dict() == {
        "limit": 3,
        "limit_turns": None,
        "limit_tokens": None,
    }
    assert SessionSettings().to_dict() == {"limit": None, "limit_turns": None, "limit_tokens": None}


def test_resolve_overlays_only_non_none_fields() -> None:
    base = SessionSettings(limit=50)
    assert base.resolve(SessionSettings(limit=10)).limit == 10
    assert base.resolve(SessionSettings()).limit == 50
    assert base.resolve(None) is base
    assert base.resolve({"limit": 0}).limit == 0
    assert base.limit == 50  # unchanged


def test_dict_is_accepted_where_settings_are() -> None:
    assert coerce_session_settings({"limit": 4}) == SessionSettings(limit=4)
    assert coerce_session_settings({}) == SessionSettings()
    assert coerce_session_settings(None) is None
    settings = SessionSettings(limit=1)
    assert coerce_session_settings(settings) is settings
    session = SQLiteSession("s", session_settings={"limit": 2})
    assert session.session_settings == SessionSettings(limit=2)
    session.close()


def test_unknown_key_raises_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match="Unknown session settings: maximum"):
        coerce_session_settings({"maximum": 3})
    with pytest.raises(TypeError, match="Unknown session settings: colour"):
        SessionSettings().resolve({"limit": 1, "colour": "red"})
    with pytest.raises(TypeError, match="Unknown session settings: max_items"):
        SQLiteSession("s", session_settings={"max_items": 1})


@pytest.mark.parametrize("bad", ["5", 2.5, True, [1]])
def test_wrong_limit_type_is_a_clear_type_error(bad: object) -> None:
    with pytest.raises(TypeError, match=r"limit must be an int or None"):
        SessionSettings(limit=bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"limit must be an int or None"):
        coerce_session_settings({"limit": bad})


def test_negative_limit_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        SessionSettings(limit=-1)


@pytest.mark.parametrize("bad", [42, "limit=3", [("limit", 3)]])
def test_settings_of_another_type_raise(bad: object) -> None:
    with pytest.raises(TypeError, match="SessionSettings, a dict or None"):
        coerce_session_settings(bad)  # type: ignore[arg-type]


def test_settings_are_frozen() -> None:
    settings = SessionSettings(limit=1)
    with pytest.raises(AttributeError):
        settings.limit = 2  # type: ignore[misc]


def test_resolve_session_limit() -> None:
    assert resolve_session_limit(5, SessionSettings(limit=2)) == 5  # explicit wins
    assert resolve_session_limit(0, SessionSettings(limit=2)) == 0
    assert resolve_session_limit(None, SessionSettings(limit=2)) == 2
    assert resolve_session_limit(None, {"limit": 7}) == 7
    assert resolve_session_limit(None, SessionSettings()) is None
    assert resolve_session_limit(None, None) is None


def test_settings_object_of_another_library_is_accepted() -> None:
    agents = pytest.importorskip("agents", reason="the OpenAI Agents SDK's SessionSettings")

    theirs = agents.SessionSettings(limit=3)
    assert SessionSettings(limit=10).resolve(theirs).limit == 3
    assert resolve_session_limit(None, theirs) == 3


def test_object_without_to_dict_is_rejected_by_name() -> None:
    with pytest.raises(TypeError, match="not object"):
        SessionSettings().resolve(object())  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["limit_turns", "limit_tokens"])
def test_turn_and_token_limits_are_checked_like_limit(name: str) -> None:
    assert SessionSettings(**{name: 0}).to_dict()[name] == 0
    with pytest.raises(ValueError, match=rf"{name} must be >= 0"):
        SessionSettings(**{name: -1})
    with pytest.raises(TypeError, match=rf"{name} must be an int or None"):
        SessionSettings(**{name: True})
    with pytest.raises(TypeError, match=rf"{name} must be an int or None"):
        coerce_session_settings({name: "3"})
    # A run's settings overlay the session's, field by field.
    merged = SessionSettings(limit=50, **{name: 5}).resolve({name: 2})
    assert merged.limit == 50
    assert getattr(merged, name) == 2


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "redis"])
async def test_get_items_applies_only_limit_of_the_session_settings(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    """sessions.md: `get_items()` applies `limit`, never `limit_turns` or `limit_tokens`."""
    tables = unique_tables("settings")
    made: list[Any] = []

    def session(settings: SessionSettings) -> Any:
        sid = f"s-{uuid.uuid4().hex}"
        made_one: Any
        if backend == "sqlite":
            made_one = SQLiteSession(sid, tmp_path / "s.db", session_settings=settings)
        elif backend == "postgres":
            made_one = SQLAlchemySession.from_url(
                sid,
                request.getfixturevalue("postgres_url"),
                create_tables=True,
                sessions_table=tables[0],
                messages_table=tables[1],
                session_settings=settings,
            )
        else:
            made_one = RedisSession.from_url(
                sid,
                request.getfixturevalue("redis_url"),
                key_prefix=unique_prefix(),
                session_settings=settings,
            )
        made.append(made_one)
        return made_one

    turns = [user(f"question {n}") for n in range(6)]
    try:
        for settings, expected in (
            (SessionSettings(limit_turns=1, limit_tokens=1), turns),
            (SessionSettings(limit=4, limit_turns=1, limit_tokens=1), turns[-4:]),
        ):
            one = session(settings)
            await one.add_items(turns)
            assert await one.get_items() == expected
            assert await one.get_items(2) == turns[-2:]
    finally:
        for one in made:
            await one.clear_session()
            await one.aclose()
        if backend == "postgres" and made:
            engine = create_async_engine(request.getfixturevalue("postgres_url"))
            await drop_tables(engine, tables)
            await engine.dispose()
