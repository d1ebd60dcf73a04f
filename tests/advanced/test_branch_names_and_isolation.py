"""AdvancedSQLiteSession's promises: branch names are data, sessions and table pairs on one file
never see each other's branches, races have one outcome, and no SQLite call runs on the loop."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from support.items import user
from support.sqlite_rows import trace_sqlite_calls
from turnstore import Agent, RunConfig, Runner
from turnstore.extensions.memory import AdvancedSQLiteSession
from turnstore.testing import FakeOpenAIServer, text_response


def texts(items: list[Any]) -> list[str]:
    return [item["content"] for item in items]


async def test_hostile_branch_names_are_only_names(tmp_path: Path) -> None:
    db = tmp_path / "names.db"
    names = ["'; DROP TABLE agent_messages; --", 'a"b', "%", "_", "main ", "枝", "🌿" * 50]
    async with AdvancedSQLiteSession(session_id="s", db_path=db) as session:
        await session.add_items([user("q1"), user("q2")])
        for name in names:
            await session.switch_to_branch("main")
            assert await session.create_branch_from_turn(2, name) == name
            await session.add_items([user(f"on {name}")])
        for name in names:
            assert texts(await session.get_items(branch_id=name)) == ["q1", f"on {name}"]
        listed = [branch["branch_id"] for branch in await session.list_branches()]
        assert listed == ["main", *names]
        # A LIKE pattern is no wildcard for delete or switch.
        with pytest.raises(ValueError, match="does not exist"):
            await session.switch_to_branch("%%")
        await session.delete_branch("%", force=True)
        assert texts(await session.get_items(branch_id="_")) == ["q1", "on _"]
    assert sqlite3.connect(db).execute("SELECT count(*) FROM agent_messages").fetchone()[0] > 0


async def test_sessions_and_table_pairs_on_one_file_never_see_each_others_branches(
    tmp_path: Path,
) -> None:
    db = tmp_path / "shared.db"
    a = AdvancedSQLiteSession(session_id="a", db_path=db)
    b = AdvancedSQLiteSession(session_id="b", db_path=db)
    other_pair = AdvancedSQLiteSession(
        session_id="a", db_path=db, sessions_table="s2", messages_table="m2"
    )
    try:
        for session in (a, b, other_pair):
            await session.add_items([user(f"{session.session_id} q1"), user("q2")])
        await a.create_branch_from_turn(2, "mine")
        await a.add_items([user("secret of a")])
        with pytest.raises(ValueError, match="'mine' does not exist"):
            await b.switch_to_branch("mine")
        with pytest.raises(ValueError, match="'mine' does not exist"):
            await other_pair.get_items(branch_id="mine")
        # b may use the same name for a branch of its own.
        await b.create_branch_from_turn(1, "mine")
        assert await b.get_items() == []
        assert texts(await other_pair.get_items()) == ["a q1", "q2"]
        await b.clear_session()
        assert texts(await a.get_items()) == ["a q1", "secret of a"]
        assert await a.find_turns_by_content("secret") != []
        assert await b.find_turns_by_content("secret") == []
    finally:
        for session in (a, b, other_pair):
            await session.aclose()


async def test_two_objects_racing_for_one_branch_name_get_one_winner(tmp_path: Path) -> None:
    db = tmp_path / "race.db"
    sessions = [AdvancedSQLiteSession(session_id="s", db_path=db) for _ in range(6)]
    try:
        await sessions[0].add_items([user("q1"), user("q2")])
        results = await asyncio.gather(
            *(session.create_branch_from_turn(2, "only") for session in sessions),
            return_exceptions=True,
        )
        winners = [r for r in results if r == "only"]
        losers = [r for r in results if isinstance(r, ValueError)]
        assert len(winners) == 1
        assert len(losers) == 5
        assert all("already been used" in str(error) for error in losers)
        assert [b["branch_id"] for b in await sessions[1].list_branches()] == ["main", "only"]
    finally:
        for session in sessions:
            await session.aclose()


async def test_writes_queued_before_a_switch_land_on_the_branch_they_were_made_on(
    tmp_path: Path,
) -> None:
    async with AdvancedSQLiteSession(session_id="s", db_path=tmp_path / "q.db") as session:
        await session.add_items([user("q1")])
        await session.create_branch_from_turn(1, "b")
        pending = asyncio.ensure_future(session.add_items([user("for b")]))
        await session.switch_to_branch("main")
        await pending
        assert texts(await session.get_items()) == ["q1"]
        assert texts(await session.get_items(branch_id="b")) == ["for b"]


async def test_no_sqlite_call_runs_on_the_event_loop_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_openai: FakeOpenAIServer
) -> None:
    seen = trace_sqlite_calls(monkeypatch)
    loop_thread = threading.get_ident()
    fake_openai.enqueue(text_response("one"), text_response("two"))
    client = fake_openai.async_client()
    config = RunConfig(openai_client=client)
    agent = Agent(name="A", model="gpt-4.1")
    for path in (str(tmp_path / "loop.db"), ":memory:"):
        session = AdvancedSQLiteSession(session_id="s", db_path=path)
        await Runner.run(agent, "hi", session=session, run_config=config)
        await session.create_branch_from_turn(1, "b")
        await session.add_items([user("x")])
        await session.get_items(1)
        await session.list_branches()
        await session.get_conversation_turns()
        await session.get_tool_usage()
        await session.get_turn_usage()
        await session.get_session_usage()
        await session.pop_item()
        await session.switch_to_branch("main")
        await session.delete_branch("b")
        await session.clear_session()
        await session.aclose()
    await client.close()
    assert any("_branches" in sql for _, sql in seen)
    assert [sql for thread, sql in seen if thread == loop_thread] == []


async def test_a_failed_write_on_a_branch_leaves_nothing_behind(tmp_path: Path) -> None:
    async with AdvancedSQLiteSession(session_id="s", db_path=tmp_path / "f.db") as session:
        await session.add_items([user("q1")])
        await session.create_branch_from_turn(1, "b")
        with pytest.raises(TypeError, match=r"\b1\b"):
            await session.add_items([user("fine"), {"bad": object()}])
        assert await session.get_items() == []
        assert [b["message_count"] for b in await session.list_branches()] == [1, 0]
