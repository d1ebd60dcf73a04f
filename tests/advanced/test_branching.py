"""AdvancedSQLiteSession's branches on real SQLite files: sharing, writing, popping, deleting."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from support.items import user
from turnstore import BranchDeletedError, SessionClosedError, SQLiteSession
from turnstore.extensions.memory import AdvancedSQLiteSession


def bot(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def texts(items: list[Any]) -> list[str]:
    return [item["content"] for item in items]


THREE_TURNS = [user("q1"), bot("a1"), user("q2"), bot("a2"), user("q3"), bot("a3")]


def rows_in_file(db_path: Path, table: str = "agent_messages") -> int:
    conn = sqlite3.connect(db_path)
    try:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "branches.db"


async def test_branch_from_turn_then_write_on_both(db: Path) -> None:
    async with AdvancedSQLiteSession(session_id="s", db_path=db) as session:
        await session.add_items(THREE_TURNS)
        name = await session.create_branch_from_turn(2, "retry")
        assert name == "retry"
        assert session.current_branch_id == "retry"
        assert texts(await session.get_items()) == ["q1", "a1"]
        await session.add_items([user("q2 again"), bot("a2 again")])
        await session.switch_to_branch("main")
        await session.add_items([user("q4"), bot("a4")])
        assert texts(await session.get_items()) == [*texts(THREE_TURNS), "q4", "a4"]
        assert texts(await session.get_items(branch_id="retry")) == [
            "q1",
            "a1",
            "q2 again",
            "a2 again",
        ]
        assert texts(await session.get_items(3, branch_id="retry")) == [
            "a1",
            "q2 again",
            "a2 again",
        ]
    # The shared turn is stored once: 8 rows on main, 2 on the branch.
    assert rows_in_file(db) == 10


async def test_a_branch_of_a_branch_and_turn_numbers(db: Path) -> None:
    async with AdvancedSQLiteSession(session_id="s", db_path=db) as session:
        await session.add_items(THREE_TURNS)
        await session.create_branch_from_turn(3, "b1")
        await session.add_items([user("x3"), bot("y3"), user("x4")])
        await session.create_branch_from_turn(2, "b2")
        assert texts(await session.get_items()) == ["q1", "a1"]
        await session.add_items([user("z2")])
        turns = await session.get_conversation_turns()
        assert [(t["turn"], t["content"]) for t in turns] == [(1, "q1"), (2, "z2")]
        b1 = await session.get_conversation_turns("b1")
        assert [t["turn"] for t in b1] == [1, 2, 3, 4]
        listed = {b["branch_id"]: b for b in await session.list_branches()}
        assert list(listed) == ["main", "b1", "b2"]
        assert listed["b1"]["message_count"] == 7
        assert listed["b1"]["user_turns"] == 4
        assert listed["b2"]["is_current"]
        assert not listed["main"]["is_current"]


async def test_pop_on_main_keeps_what_a_branch_shares(db: Path) -> None:
    async with AdvancedSQLiteSession(session_id="s", db_path=db) as session:
        await session.add_items(THREE_TURNS)
        await session.create_branch_from_turn(3, "keep")
        await session.switch_to_branch("main")
        popped = [await session.pop_item() for _ in range(4)]
        assert texts(popped) == ["a3", "q3", "a2", "q2"]
        assert texts(await session.get_items()) == ["q1", "a1"]
        assert texts(await session.get_items(branch_id="keep")) == ["q1", "a1", "q2", "a2"]
        await session.add_items([user("new q2")])
        assert texts(await session.get_items()) == ["q1", "a1", "new q2"]
        assert texts(await session.get_items(branch_id="keep")) == ["q1", "a1", "q2", "a2"]
        # On the branch, popping shared items leaves main alone.
        await session.switch_to_branch("keep")
        assert texts([await session.pop_item(), await session.pop_item()]) == ["a2", "q2"]
        assert texts(await session.get_items(branch_id="main")) == ["q1", "a1", "new q2"]


async def test_delete_branch_refuses_main_and_the_current_branch(db: Path) -> None:
    async with AdvancedSQLiteSession(session_id="s", db_path=db) as session:
        await session.add_items(THREE_TURNS)
        await session.create_branch_from_turn(2, "b")
        with pytest.raises(ValueError, match="Cannot delete the 'main' branch"):
            await session.delete_branch("main")
        with pytest.raises(ValueError, match="Cannot delete current branch 'b'"):
            await session.delete_branch("b")
        with pytest.raises(ValueError, match="cannot be empty"):
            await session.delete_branch("  ")
        with pytest.raises(ValueError, match="'nope' does not exist"):
            await session.delete_branch("nope")
        await session.add_items([user("b only")])
        await session.delete_branch("b", force=True)
        assert session.current_branch_id == "main"
        assert [b["branch_id"] for b in await session.list_branches()] == ["main"]
        with pytest.raises(ValueError, match="already been used"):
            await session.create_branch_from_turn(2, "b")
    assert rows_in_file(db) == 6


async def test_deleting_a_parent_keeps_its_children_whole(db: Path) -> None:
    async with AdvancedSQLiteSession(session_id="s", db_path=db) as session:
        await session.add_items(THREE_TURNS)
        await session.create_branch_from_turn(2, "mid")
        await session.add_items([user("m2"), bot("m2a"), user("m3")])
        await session.create_branch_from_turn(3, "leaf")
        await session.add_items([user("l3")])
        await session.switch_to_branch("main")
        await session.delete_branch("mid")
        assert texts(await session.get_items(branch_id="leaf")) == ["q1", "a1", "m2", "m2a", "l3"]
        # "m3" is read by no living branch any more: it is gone from the file.
        assert rows_in_file(db) == 6 + 2 + 1
        await session.delete_branch("leaf")
        assert rows_in_file(db) == 6
        with pytest.raises(ValueError, match="'mid' does not exist"):
            await session.switch_to_branch("mid")


async def test_content_search_and_branch_from_content(db: Path) -> None:
    async with AdvancedSQLiteSession(session_id="s", db_path=db) as session:
        await session.add_items(
            [
                user("Plan a trip to Kyoto"),
                bot("ok"),
                user([{"type": "input_text", "text": "Budget: 100% of 50_000"}]),
                bot("ok"),
                user("kyoto in autumn?"),
            ]
        )
        assert [t["turn"] for t in await session.find_turns_by_content("KYOTO")] == [1, 3]
        # LIKE wildcards and JSON escapes match literally.
        assert [t["turn"] for t in await session.find_turns_by_content("100% of 50_")] == [2]
        assert await session.find_turns_by_content("%") != []
        assert await session.find_turns_by_content('"role"') == []
        name = await session.create_branch_from_content("autumn", "fall")
        assert texts((await session.get_items())[:1]) == ["Plan a trip to Kyoto"]
        assert len(await session.get_items()) == 4
        assert name == "fall"
        with pytest.raises(ValueError, match="No user turns found containing 'nothing'"):
            await session.create_branch_from_content("nothing")


async def test_bad_input_is_a_clear_error_and_changes_nothing(db: Path) -> None:
    async with AdvancedSQLiteSession(session_id="s", db_path=db) as session:
        await session.add_items(THREE_TURNS)
        with pytest.raises(TypeError, match="turn_number must be an int"):
            await session.create_branch_from_turn("2")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="turn_number must be an int"):
            await session.create_branch_from_turn(True)
        for turn in (0, -1, 4):
            with pytest.raises(ValueError, match=f"Turn {turn} does not contain a user message"):
                await session.create_branch_from_turn(turn)
        with pytest.raises(ValueError, match="Branch name cannot be empty"):
            await session.create_branch_from_turn(1, " ")
        with pytest.raises(ValueError, match="NUL"):
            await session.create_branch_from_turn(1, "a\x00b")
        with pytest.raises(ValueError, match="already been used"):
            await session.create_branch_from_turn(1, "main")
        with pytest.raises(TypeError, match="branch id must be a str"):
            await session.switch_to_branch(3)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="'ghost' does not exist"):
            await session.switch_to_branch("ghost")
        with pytest.raises(ValueError, match="'ghost' does not exist"):
            await session.get_items(branch_id="ghost")
        with pytest.raises(TypeError, match="search_term must be a str"):
            await session.find_turns_by_content(None)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="run result"):
            await session.store_run_usage(object())
        with pytest.raises(TypeError, match="create_tables must be a bool"):
            AdvancedSQLiteSession(session_id="s", create_tables="yes")  # type: ignore[arg-type]
        assert session.current_branch_id == "main"
        assert [b["branch_id"] for b in await session.list_branches()] == ["main"]
        assert texts(await session.get_items()) == texts(THREE_TURNS)
    session = AdvancedSQLiteSession(session_id="s", db_path=db)
    await session.aclose()
    with pytest.raises(SessionClosedError):
        await session.create_branch_from_turn(1)


async def test_branches_survive_reopening_and_are_shared_across_objects(db: Path) -> None:
    async with AdvancedSQLiteSession(session_id="s", db_path=db) as first:
        await first.add_items(THREE_TURNS)
        await first.create_branch_from_turn(2, "alt")
        await first.add_items([user("alt q2")])
    async with AdvancedSQLiteSession(session_id="s", db_path=db) as again:
        assert again.current_branch_id == "main"
        assert texts(await again.get_items(branch_id="alt")) == ["q1", "a1", "alt q2"]
        await again.switch_to_branch("alt")
        # Another object deletes the branch this one is on: reads and writes refuse, naming it.
        async with AdvancedSQLiteSession(session_id="s", db_path=db) as other:
            await other.delete_branch("alt")
        with pytest.raises(BranchDeletedError, match="'alt'"):
            await again.get_items()
        assert again.current_branch_id == "alt"
        await again.switch_to_branch("main")
        assert texts(await again.get_items()) == texts(THREE_TURNS)


async def test_a_write_to_a_branch_another_object_deleted_raises_and_writes_nothing(
    db: Path,
) -> None:
    async with AdvancedSQLiteSession(session_id="s", db_path=db) as writer:
        await writer.add_items(THREE_TURNS)
        await writer.create_branch_from_turn(2, "alt")
        async with AdvancedSQLiteSession(session_id="s", db_path=db) as other:
            await other.delete_branch("alt")
        for write in (
            lambda: writer.add_items([user("meant for alt")]),
            writer.pop_item,
            lambda: writer.create_branch_from_turn(1, "from alt"),
        ):
            with pytest.raises(BranchDeletedError, match="'alt' of session 's' was deleted"):
                await write()
        assert writer.current_branch_id == "alt"
        assert [b["branch_id"] for b in await writer.list_branches()] == ["main"]
        assert rows_in_file(db) == len(THREE_TURNS)
        assert texts(await writer.get_items(branch_id="main")) == texts(THREE_TURNS)
        await writer.switch_to_branch("main")
        await writer.add_items([user("q4")])
        assert texts(await writer.get_items()) == [*texts(THREE_TURNS), "q4"]


async def test_after_another_object_clears_the_session_the_next_write_goes_to_main(
    db: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with AdvancedSQLiteSession(session_id="s", db_path=db) as writer:
        await writer.add_items(THREE_TURNS)
        await writer.create_branch_from_turn(2, "alt")
        async with AdvancedSQLiteSession(session_id="s", db_path=db) as other:
            await other.clear_session()
        await writer.add_items([user("after clear")])
        assert writer.current_branch_id == "main"
        assert texts(await writer.get_items()) == ["after clear"]
        assert "was cleared by another session object" in caplog.text


async def test_a_plain_sqlite_file_is_the_main_branch(db: Path) -> None:
    async with SQLiteSession("s", db) as plain:
        await plain.add_items(THREE_TURNS)
    async with AdvancedSQLiteSession(session_id="s", db_path=db) as session:
        assert texts(await session.get_items()) == texts(THREE_TURNS)
        await session.create_branch_from_turn(3, "x")
        assert len(await session.get_items()) == 4


async def test_clear_session_removes_every_branch_and_keeps_names_reserved(db: Path) -> None:
    async with AdvancedSQLiteSession(session_id="s", db_path=db) as session:
        await session.add_items(THREE_TURNS)
        await session.create_branch_from_turn(2, "gone")
        await session.add_items([user("g")])
        await session.record_turn_usage(_Usage(1, 2, 3))
        await session.clear_session()
        assert session.current_branch_id == "main"
        assert await session.get_items() == []
        assert await session.list_branches() == []
        assert await session.get_session_usage() is None
        await session.add_items([user("q")])
        with pytest.raises(ValueError, match="already been used"):
            await session.create_branch_from_turn(1, "gone")
    for table in ("agent_messages", "agent_messages_branch_items", "agent_messages_turn_usage"):
        assert rows_in_file(db, table) == (1 if table == "agent_messages" else 0)


async def test_replace_history_on_a_branch_leaves_main_alone(db: Path) -> None:
    async with AdvancedSQLiteSession(session_id="s", db_path=db) as session:
        await session.add_items(THREE_TURNS)
        await session.create_branch_from_turn(3, "b")
        await session.add_items([user("b3")])
        snapshot = await session.snapshot_history()
        assert texts(snapshot.items) == ["q1", "a1", "q2", "a2", "b3"]
        await session.add_items([bot("late")])
        assert await session.replace_history(snapshot, [user("summary")])
        assert texts(await session.get_items()) == ["summary", "late"]
        assert texts(await session.get_items(branch_id="main")) == texts(THREE_TURNS)
        assert texts(await session.get_archived_items()) == ["q1", "a1", "q2", "a2", "b3"]


async def test_concurrent_writers_on_two_branches(db: Path) -> None:
    async with AdvancedSQLiteSession(session_id="s", db_path=db) as a:
        await a.add_items([user("root")])
        await a.create_branch_from_turn(1, "other")
        await a.switch_to_branch("main")
        async with AdvancedSQLiteSession(session_id="s", db_path=db) as b:
            await b.switch_to_branch("other")
            await asyncio.gather(
                *(a.add_items([bot(f"main {n}")]) for n in range(20)),
                *(b.add_items([bot(f"other {n}")]) for n in range(20)),
            )
            assert sorted(texts(await b.get_items())) == sorted(f"other {n}" for n in range(20))
        main = texts(await a.get_items())
        assert main[0] == "root"
        assert sorted(main[1:]) == sorted(f"main {n}" for n in range(20))


class _Usage:
    def __init__(self, requests: int, input_tokens: int, output_tokens: int) -> None:
        self.requests = requests
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.total_tokens = input_tokens + output_tokens


async def test_retention_and_import_replace_remove_branches_and_usage(db: Path) -> None:
    """Deleting a session through the store (retention, `import --replace`) leaves no rows of it
    in the branch and usage tables; another session on the file keeps its own."""
    from turnstore import Usage
    from turnstore.admin import open_session_store

    for sid in ("old", "kept"):
        async with AdvancedSQLiteSession(session_id=sid, db_path=db) as session:
            await session.add_items(THREE_TURNS)
            await session.create_branch_from_turn(2, "retry")
            await session.add_items([user("q2 again")])
            await session.record_turn_usage(Usage(requests=1, input_tokens=3, output_tokens=2))
    side = ("agent_messages_branches", "agent_messages_branch_items", "agent_messages_turn_usage")

    def rows_of(sid: str) -> dict[str, int]:
        conn = sqlite3.connect(db)
        try:
            return {
                table: conn.execute(
                    f"SELECT count(*) FROM {table} WHERE session_id = ?", (sid,)
                ).fetchone()[0]
                for table in ("agent_messages", *side)
            }
        finally:
            conn.close()

    assert all(rows_of("old").values()), rows_of("old")
    conn = sqlite3.connect(db)
    conn.execute(
        "UPDATE agent_sessions SET updated_at = '2000-01-01 00:00:00' WHERE session_id = 'old'"
    )
    conn.commit()
    conn.close()
    store = open_session_store(str(db))
    try:
        assert await store.delete_idle_sessions(3600) == 1
        assert not any(rows_of("old").values()), rows_of("old")
        assert all(rows_of("kept").values()), rows_of("kept")
        records = await store.read_records("kept")
        await store.write_records("kept", records[:2], replace=True)
        assert rows_of("kept") == dict.fromkeys(("agent_messages",), 2) | dict.fromkeys(side, 0)
    finally:
        await store.aclose()


async def test_branch_ids_are_kept_exactly_as_given(db: Path) -> None:
    async with AdvancedSQLiteSession(session_id="s", db_path=db) as session:
        await session.add_items(THREE_TURNS)
        assert await session.create_branch_from_turn(2, "draft") == "draft"
        await session.add_items([user("kept")])
        await session.switch_to_branch("main")
        spaced = await session.create_branch_from_turn(2, " draft ")
        assert spaced == " draft "
        await session.add_items([user("deleted")])
        await session.switch_to_branch("main")
        await session.delete_branch(spaced)
        assert texts(await session.get_items(branch_id="draft")) == ["q1", "a1", "kept"]
        assert [b["branch_id"] for b in await session.list_branches()] == ["main", "draft"]
        with pytest.raises(ValueError, match="' draft ' does not exist"):
            await session.switch_to_branch(" draft ")
