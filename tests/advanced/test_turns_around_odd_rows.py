"""AdvancedSQLiteSession's turn numbers around rows that SQLite and Python read differently.

`get_items` decodes rows in Python; turns are counted in SQL. A row SQLite finds invalid but
Python reads (UTF-8 JSON stored as a BLOB, a `NaN` written by another tool) still counts as the
turn `get_items` shows: `get_conversation_turns`, `create_branch_from_turn`, `list_branches` and
the usage per turn number turns as `get_items` orders them, and a branch starts with the whole
prefix before its turn.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from support.items import user
from turnstore.extensions.memory import AdvancedSQLiteSession
from turnstore.result import Usage

ODD_ROWS = [
    pytest.param('{"role":"user","content":NaN}', id="nan"),
    pytest.param(b'{"role":"user","content":"stored as a blob"}', id="blob"),
    pytest.param('{"role":"user","content":"\\ud800"}', id="lone-surrogate"),
    pytest.param(
        '{"role":"assistant","role":"user","content":"twice"}',
        id="duplicate-role",
        marks=pytest.mark.xfail(
            strict=True,
            reason="SQLite's json_extract reads the first of two equal keys, Python's json the "
            "last: a row whose keys repeat 'role' counts as a turn in one and not the other",
        ),
    ),
]


@pytest.mark.parametrize("raw", ODD_ROWS)
async def test_turn_numbers_match_get_items_around_an_odd_row(tmp_path: Path, raw: Any) -> None:
    path = tmp_path / "odd.db"
    session = AdvancedSQLiteSession("s", path)
    try:
        await session.add_items([user("first"), {"role": "assistant", "content": "ok"}])
        with sqlite3.connect(path) as conn:
            conn.execute(
                "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)", (raw,)
            )
        await session.add_items([user("last")])
        items = await session.get_items()
        starts = [n for n, item in enumerate(items) if item.get("role") == "user"]
        turns = await session.get_conversation_turns()
        assert [t["turn"] for t in turns] == list(range(1, len(starts) + 1))
        await session.record_turn_usage(Usage(1, 1, 1, 2))
        usage = await session.get_turn_usage()
        assert isinstance(usage, list)
        assert [row["user_turn_number"] for row in usage] == [len(starts)]
        for turn, start in enumerate(starts, 1):
            await session.switch_to_branch("main")
            await session.create_branch_from_turn(turn, f"from-{turn}")
            assert await session.get_items() == items[:start], turn
            listed = {b["branch_id"]: b["user_turns"] for b in await session.list_branches()}
            assert listed[f"from-{turn}"] == turn - 1
    finally:
        session.close()


async def test_popping_a_blob_user_message_drops_its_turn_usage(tmp_path: Path) -> None:
    path = tmp_path / "pop.db"
    session = AdvancedSQLiteSession("s", path)
    try:
        await session.add_items([user("first")])
        await session.record_turn_usage(Usage(1, 1, 1, 2))
        with sqlite3.connect(path) as conn:
            conn.execute(
                "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
                (b'{"role":"user","content":"blob"}',),
            )
        await session.record_turn_usage(Usage(1, 5, 5, 10))
        assert await session.get_turn_usage(2) != {}
        assert await session.pop_item() == user("blob")
        assert await session.get_turn_usage(2) == {}
        assert (await session.get_turn_usage(1))["total_tokens"] == 2  # type: ignore[call-overload]
    finally:
        session.close()
