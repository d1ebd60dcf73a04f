"""Reads of one branch go through an index, however many rows other branches (or it) wrote.

`main`'s latest items after a branch wrote many rows, and the newest row of a long branch (what
`pop_item` looks up), are read through indexes that lead with (session_id, branch, position):
checked with EXPLAIN QUERY PLAN on the statements the session's own code runs, and by counting
the SQLite virtual-machine steps they take on a short and on a long history (not by timing).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from support.items import user
from turnstore.extensions.memory import AdvancedSQLiteSession
from turnstore.memory.sqlite.advanced.branches import Branches
from turnstore.memory.sqlite.advanced.schema import MAIN, AdvancedSQLiteSchema

SCHEMA = AdvancedSQLiteSchema("agent_sessions", "agent_messages")


def bot(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


async def write_history(path: Path, branch_rows: int) -> None:
    """`main` holds 30 items; the branch `long`, forked after the first turn, `branch_rows`."""
    async with AdvancedSQLiteSession(session_id="s", db_path=path) as session:
        await session.add_items([user("q1"), bot("a1"), user("q2")])
        await session.add_items([bot(f"main {n}") for n in range(27)])
        await session.create_branch_from_turn(2, "long")
        await session.add_items([bot(f"branch {n}") for n in range(branch_rows)])


@contextmanager
def traced(path: Path) -> Iterator[tuple[Branches, list[str]]]:
    """The session's branch code on a connection of ours, with every statement it runs."""
    conn = sqlite3.connect(path)
    statements: list[str] = []
    try:
        branches = Branches(conn, SCHEMA, "s")
        conn.set_trace_callback(statements.append)  # the SQL with its values bound
        yield branches, statements
    finally:
        conn.set_trace_callback(None)
        conn.close()


def plans(path: Path, statements: list[str]) -> list[list[tuple[int, int, str]]]:
    conn = sqlite3.connect(path)
    try:
        return [
            [(row[0], row[1], row[3]) for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
            for sql in statements
            if sql.lstrip().upper().startswith("SELECT")
        ]
    finally:
        conn.close()


def assert_no_scan_or_sort_of_a_table(plan: list[tuple[int, int, str]]) -> None:
    """Every table is searched through an index; only LIMITed subquery results are sorted."""
    for _id, _parent, detail in plan:
        if detail.startswith("SCAN"):
            assert detail.startswith("SCAN (subquery"), plan
    coroutines = {node for node, _parent, detail in plan if detail.startswith("CO-ROUTINE")}
    for _id, parent, detail in plan:
        if detail.startswith("USE TEMP B-TREE"):
            # A sort of the rows a subquery already bounded with LIMIT, never of a branch.
            assert parent not in coroutines, plan
            siblings = [d for _n, p, d in plan if p == parent]
            assert any(d.startswith("SCAN (subquery") for d in siblings), plan


def vm_steps(path: Path, work: Callable[[Branches], Any]) -> int:
    """How many SQLite virtual-machine steps (in units of 100) `work` takes."""
    conn = sqlite3.connect(path)
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    try:
        branches = Branches(conn, SCHEMA, "s")
        conn.set_progress_handler(count, 100)
        work(branches)
    finally:
        conn.set_progress_handler(None, 100)
        conn.close()
    return steps


async def test_reading_main_after_a_long_branch_searches_the_branch_index(
    tmp_path: Path,
) -> None:
    path = tmp_path / "history.db"
    await write_history(path, 500)
    with traced(path) as (branches, statements):
        items = branches.read(MAIN, 20)
    assert [item["content"] for item in items][-1] == "main 26"
    reads = plans(path, statements)
    assert reads
    for plan in reads:
        assert_no_scan_or_sort_of_a_table(plan)
    details = [detail for plan in reads for _id, _parent, detail in plan]
    assert any(
        "agent_messages" in detail and "idx_agent_messages_branch " in f"{detail} "
        for detail in details
    ), details


async def test_the_newest_row_of_a_long_branch_is_found_without_sorting_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "history.db"
    await write_history(path, 500)
    with traced(path) as (branches, statements):
        found = branches.newest("long")
    assert found is not None
    assert found[1] == bot("branch 499")
    selects = plans(path, statements)
    assert selects
    for plan in selects:
        assert_no_scan_or_sort_of_a_table(plan)
    details = [detail for plan in selects for _id, _parent, detail in plan]
    assert any("idx_agent_messages_branch_items_branch" in detail for detail in details), details


async def test_branch_reads_take_as_many_steps_on_a_long_history_as_on_a_short_one(
    tmp_path: Path,
) -> None:
    short, long = tmp_path / "short.db", tmp_path / "long.db"
    await write_history(short, 20)
    await write_history(long, 5000)
    for work in (
        lambda branches: branches.read(MAIN, 20),
        lambda branches: branches.newest("long"),
        lambda branches: branches.read("long", 20),
    ):
        on_short, on_long = vm_steps(short, work), vm_steps(long, work)
        # Flat with history size: a read that walked the 5,000 rows would take 100x more.
        assert on_long <= 2 * on_short + 5, (on_short, on_long)


async def test_popping_and_adding_on_a_long_branch_keeps_its_items_in_order(
    tmp_path: Path,
) -> None:
    path = tmp_path / "history.db"
    await write_history(path, 300)
    async with AdvancedSQLiteSession(session_id="s", db_path=path) as session:
        await session.switch_to_branch("long")
        for _ in range(3):
            popped = await session.pop_item()
            assert popped == bot("branch 299")
            await session.add_items([popped])
        latest = await session.get_items(2)
        assert latest == [bot("branch 298"), bot("branch 299")]
        await session.switch_to_branch(MAIN)
        assert (await session.get_items(1)) == [bot("main 26")]


# The layout the previous release wrote: no `branch_id` column on the messages table, no triggers.
PREVIOUS_LAYOUT = """
CREATE TABLE "agent_sessions" (session_id TEXT PRIMARY KEY,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE "agent_messages" (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
    message_data TEXT NOT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    FOREIGN KEY (session_id) REFERENCES "agent_sessions" (session_id) ON DELETE CASCADE);
CREATE TABLE "agent_messages_archive" (id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL, message_data TEXT NOT NULL, created_at TIMESTAMP,
    archived_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE INDEX "idx_agent_messages_session_id" ON "agent_messages" (session_id, id);
CREATE TABLE "agent_messages_branches" (session_id TEXT NOT NULL, branch_id TEXT NOT NULL,
    parent_id TEXT, fork_before INTEGER, deleted INTEGER NOT NULL DEFAULT 0,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (session_id, branch_id));
CREATE TABLE "agent_messages_branch_items" (message_id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL, branch_id TEXT NOT NULL);
CREATE INDEX "idx_agent_messages_branch_items_branch"
    ON "agent_messages_branch_items" (session_id, branch_id, message_id);
PRAGMA user_version = 1;
"""


def write_previous_layout(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.executescript(PREVIOUS_LAYOUT)
        with conn:
            conn.execute("INSERT INTO agent_sessions (session_id) VALUES ('s')")
            for text in ("q1", "a1", "q2", "a2"):
                item = user(text) if text.startswith("q") else bot(text)
                conn.execute(
                    "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
                    (json.dumps(item),),
                )
            conn.execute(
                "INSERT INTO agent_messages_branches (session_id, branch_id) VALUES ('s', 'main')"
            )
            conn.execute(
                "INSERT INTO agent_messages_branches (session_id, branch_id, parent_id, "
                "fork_before) VALUES ('s', 'retry', 'main', 3)"
            )
            for text in ("q2 again", "a2 again"):
                row = conn.execute(
                    "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
                    (json.dumps(user(text) if text.startswith("q") else bot(text)),),
                ).lastrowid
                conn.execute(
                    "INSERT INTO agent_messages_branch_items (message_id, session_id, branch_id) "
                    "VALUES (?, 's', 'retry')",
                    (row,),
                )
    finally:
        conn.close()


async def test_a_file_of_the_previous_layout_gains_the_branch_column_once(
    tmp_path: Path,
) -> None:
    path = tmp_path / "previous.db"
    write_previous_layout(path)
    for _opening in range(2):  # the second opening finds everything in place
        async with AdvancedSQLiteSession(session_id="s", db_path=path) as session:
            assert [i["content"] for i in await session.get_items()] == ["q1", "a1", "q2", "a2"]
            assert [i["content"] for i in await session.get_items(branch_id="retry")] == [
                "q1",
                "a1",
                "q2 again",
                "a2 again",
            ]
    conn = sqlite3.connect(path)
    try:
        branch_of = dict(conn.execute("SELECT id, branch_id FROM agent_messages").fetchall())
        triggers = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'")
        assert triggers.fetchone()[0] == 3
    finally:
        conn.close()
    assert branch_of == {1: None, 2: None, 3: None, 4: None, 5: "retry", 6: "retry"}
    async with AdvancedSQLiteSession(session_id="s", db_path=path) as session:
        await session.switch_to_branch("retry")
        await session.add_items([user("q3 on retry")])
        assert await session.pop_item() == user("q3 on retry")
        assert await session.pop_item() == bot("a2 again")
        await session.switch_to_branch("main")
        assert await session.pop_item() == bot("a2")
        assert [i["content"] for i in await session.get_items(branch_id="retry")] == [
            "q1",
            "a1",
            "q2 again",
        ]
