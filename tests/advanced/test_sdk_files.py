"""Files written by the OpenAI Agents SDK's own `AdvancedSQLiteSession`, opened by ours.

The SDK keeps its branches in a `message_structure` table that turnstore does not read. A session
the SDK branched is refused (reading it would show the branch's items in `main`); its sessions
without a branch read as `main`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from support.items import user
from turnstore import SessionSchemaError
from turnstore.extensions.memory import AdvancedSQLiteSession


@pytest.fixture
def sdk_memory() -> ModuleType:
    # Imported by the tests that use it, not when the file is collected: every pytest -n worker
    # collects this file, and the SDK takes seconds to import.
    return pytest.importorskip("agents.extensions.memory.advanced_sqlite_session")


def bot(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


TWO_TURNS = [user("q1"), bot("a1"), user("q2"), bot("a2")]


async def write_with_the_sdk(sdk_memory: ModuleType, path: Path) -> None:
    """Session `branched` gets the SDK branch `alt`; session `plain` stays on `main`."""
    branched = sdk_memory.AdvancedSQLiteSession(
        session_id="branched", db_path=path, create_tables=True
    )
    plain = sdk_memory.AdvancedSQLiteSession(session_id="plain", db_path=path)
    try:
        await branched.add_items(TWO_TURNS)
        await branched.create_branch_from_turn(2, "alt")
        await branched.add_items([user("q2 on alt")])
        assert [i["content"] for i in await branched.get_items(branch_id="main")] == [
            "q1",
            "a1",
            "q2",
            "a2",
        ]
        await plain.add_items(TWO_TURNS)
    finally:
        branched.close()
        plain.close()


async def test_a_session_the_sdk_branched_is_refused_not_read_as_main(
    sdk_memory: ModuleType, tmp_path: Path
) -> None:
    path = tmp_path / "sdk.db"
    await write_with_the_sdk(sdk_memory, path)
    async with AdvancedSQLiteSession(session_id="branched", db_path=path) as session:
        for read in (
            session.get_items,
            lambda: session.get_items(branch_id="main"),
            session.list_branches,
            session.pop_item,
            lambda: session.create_branch_from_turn(1, "ours"),
        ):
            with pytest.raises(SessionSchemaError, match=r"OpenAI Agents SDK.*\('alt'\)"):
                await read()


async def test_a_session_the_sdk_never_branched_reads_as_main(
    sdk_memory: ModuleType, tmp_path: Path
) -> None:
    path = tmp_path / "sdk.db"
    await write_with_the_sdk(sdk_memory, path)
    async with AdvancedSQLiteSession(session_id="plain", db_path=path) as session:
        assert await session.get_items() == TWO_TURNS
        await session.create_branch_from_turn(2, "ours")
        await session.add_items([user("q2 on ours")])
        assert await session.get_items() == [user("q1"), bot("a1"), user("q2 on ours")]
        assert await session.get_items(branch_id="main") == TWO_TURNS


async def test_a_write_to_main_of_a_session_the_sdk_branched_is_refused_before_storing(
    sdk_memory: ModuleType, tmp_path: Path
) -> None:
    path = tmp_path / "sdk.db"
    await write_with_the_sdk(sdk_memory, path)
    async with (
        AdvancedSQLiteSession(session_id="branched", db_path=path) as branched,
        AdvancedSQLiteSession(session_id="plain", db_path=path) as plain,
    ):
        assert branched.current_branch_id == "main"
        with pytest.raises(SessionSchemaError, match=r"OpenAI Agents SDK.*\('alt'\)"):
            await branched.add_items([user("lost?")])
        # Written together (one group commit): the refusal fails only its own write.
        results = await asyncio.gather(
            branched.add_items([user("lost?")]),
            plain.add_items([user("q3")]),
            return_exceptions=True,
        )
        assert isinstance(results[0], SessionSchemaError)
        assert results[1] is None
        assert await plain.get_items() == [*TWO_TURNS, user("q3")]
    sdk = sdk_memory.AdvancedSQLiteSession(session_id="branched", db_path=path)
    try:
        assert await sdk.get_items(branch_id="main") == TWO_TURNS
        assert [i["content"] for i in await sdk.get_items(branch_id="alt")] == [
            "q1",
            "a1",
            "q2 on alt",
        ]
    finally:
        sdk.close()
