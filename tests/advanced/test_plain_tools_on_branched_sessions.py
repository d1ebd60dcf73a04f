"""A branched AdvancedSQLiteSession's rows under the plain tools working on the same file.

A `SQLiteSession`, the `turnstore` command and `open_session_store` all work on the file an
`AdvancedSQLiteSession` wrote. Clearing, pruning or replacing a session there must leave no row
of it in the branch and usage tables (or a later advanced session would see a cleared session's
branches and usage), and must leave other sessions' branches alone.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from support.items import user
from turnstore import SQLiteSession
from turnstore.admin import open_session_store
from turnstore.cli import main
from turnstore.extensions.memory import AdvancedSQLiteSession
from turnstore.result import Usage

SIDE = ("agent_messages_branches", "agent_messages_branch_items", "agent_messages_turn_usage")


async def branched(path: Path, session_id: str) -> None:
    session = AdvancedSQLiteSession(session_id, path)
    try:
        await session.add_items([user("one"), {"role": "assistant", "content": "a"}])
        await session.record_turn_usage(Usage(1, 3, 4, 7))
        await session.create_branch_from_turn(1, "b")
        await session.add_items([user("one again")])
        await session.record_turn_usage(Usage(1, 5, 6, 11))
    finally:
        session.close()


def rows_of(path: Path, session_id: str) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        return {
            table: conn.execute(
                f"SELECT COUNT(*) FROM {table} WHERE session_id = ?", (session_id,)
            ).fetchone()[0]
            for table in (*SIDE, "agent_messages")
        }


async def clear_plain(path: Path) -> None:
    session = SQLiteSession("gone", path)
    try:
        await session.clear_session()
    finally:
        session.close()


async def clear_through_store(path: Path) -> None:
    async with open_session_store(str(path)) as store:
        session = store.session("gone")
        await session.clear_session()
        session.close()


def clear_command(path: Path) -> None:
    assert main(["--db", str(path), "clear", "gone"]) == 0


def prune_command(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE agent_sessions SET updated_at = '2000-01-01 00:00:00' WHERE session_id = 'gone'"
        )
    assert main(["--db", str(path), "prune", "--idle", "30d"]) == 0


def import_replace(path: Path) -> None:
    export = path.parent / "export.jsonl"
    record = {"session_id": "gone", "item": user("imported")}
    export.write_text(json.dumps(record) + "\n")
    assert main(["--db", str(path), "import", "--replace", str(export)]) == 0


WAYS: list[Any] = [
    pytest.param(lambda p: asyncio.run(clear_plain(p)), id="SQLiteSession.clear_session"),
    pytest.param(lambda p: asyncio.run(clear_through_store(p)), id="store.session().clear"),
    pytest.param(clear_command, id="turnstore-clear"),
    pytest.param(prune_command, id="turnstore-prune"),
    pytest.param(import_replace, id="turnstore-import-replace"),
]


@pytest.mark.parametrize("remove", WAYS)
def test_removing_a_branched_session_leaves_no_branch_or_usage_rows(
    tmp_path: Path, remove: Callable[[Path], None]
) -> None:
    path = tmp_path / "shared.db"
    asyncio.run(branched(path, "gone"))
    asyncio.run(branched(path, "kept"))
    kept = rows_of(path, "kept")
    assert all(kept.values())
    remove(path)
    left = rows_of(path, "gone")
    assert {table: left[table] for table in SIDE} == dict.fromkeys(SIDE, 0)
    assert rows_of(path, "kept") == kept

    async def reopen() -> None:
        session = AdvancedSQLiteSession("gone", path)
        try:
            assert [b["branch_id"] for b in await session.list_branches()] in ([], ["main"])
            assert await session.get_session_usage() is None
            with pytest.raises(ValueError, match="does not exist"):
                await session.switch_to_branch("b")
        finally:
            session.close()

    asyncio.run(reopen())


@pytest.mark.parametrize("suffix", ["_branches", "_branch_items", "_turn_usage"])
async def test_clearing_leaves_another_pair_named_like_a_side_table_alone(
    tmp_path: Path, suffix: str
) -> None:
    path = tmp_path / "pairs.db"
    plain = SQLiteSession("s", path, sessions_table="a_sessions", messages_table="m")
    other = SQLiteSession("s", path, sessions_table="b_sessions", messages_table=f"m{suffix}")
    try:
        await plain.add_items([user("mine")])
        await other.add_items([user("theirs")])
        await plain.clear_session()
        assert await other.get_items() == [user("theirs")]
        async with open_session_store(
            str(path), sessions_table="a_sessions", messages_table="m"
        ) as store:
            await plain.add_items([user("mine")])
            with sqlite3.connect(path) as conn:
                conn.execute("UPDATE a_sessions SET updated_at = '2000-01-01 00:00:00'")
            assert await store.delete_idle_sessions(timedelta(days=1)) == 1
        assert await other.get_items() == [user("theirs")]
    finally:
        plain.close()
        other.close()
