"""AdvancedSQLiteSession's usage per turn at the edges (real SQLite files).

Token counts are Python ints: a count SQLite cannot hold must be refused naming the field with
nothing written, and counts that each fit must still add up in `get_session_usage`. A
`branch_id` that does not exist is refused by every analytics call, as the docs promise.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.items import user
from turnstore.extensions.memory import AdvancedSQLiteSession
from turnstore.result import Usage

BIG = 2**62


async def test_session_usage_adds_counts_that_each_fit_in_sqlite(tmp_path: Path) -> None:
    session = AdvancedSQLiteSession("s", tmp_path / "big.db")
    try:
        await session.add_items([user("one")])
        await session.record_turn_usage(Usage(1, BIG, BIG, BIG))
        await session.add_items([user("two")])
        await session.record_turn_usage(Usage(1, BIG, BIG, BIG))
        await session.create_branch_from_turn(2, "b")
        await session.add_items([user("two again")])
        await session.record_turn_usage(Usage(1, BIG, 0, BIG))
        assert await session.get_session_usage("main") == {
            "requests": 2,
            "input_tokens": 2 * BIG,
            "output_tokens": 2 * BIG,
            "total_tokens": 2 * BIG,
            "total_turns": 2,
        }
        total = await session.get_session_usage()
        assert total is not None
        assert (total["input_tokens"], total["total_turns"]) == (3 * BIG, 3)
    finally:
        session.close()


@pytest.mark.parametrize("field", ["requests", "input_tokens", "output_tokens", "total_tokens"])
async def test_a_count_sqlite_cannot_hold_is_refused_with_nothing_written(
    tmp_path: Path, field: str
) -> None:
    session = AdvancedSQLiteSession("s", tmp_path / "huge.db")
    try:
        await session.add_items([user("one")])
        await session.record_turn_usage(Usage(1, 5, 6, 11))
        huge = Usage(1, 5, 6, 11)
        setattr(huge, field, 2**63)
        with pytest.raises(ValueError, match=field):
            await session.record_turn_usage(huge)
        assert await session.get_turn_usage(1) == {
            "requests": 1,
            "input_tokens": 5,
            "output_tokens": 6,
            "total_tokens": 11,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
    finally:
        session.close()


@pytest.mark.parametrize("branch_id", ["", "nope", "MAIN"])
async def test_session_usage_of_a_branch_that_does_not_exist_is_refused(
    tmp_path: Path, branch_id: str
) -> None:
    session = AdvancedSQLiteSession("s", tmp_path / "missing.db")
    try:
        await session.add_items([user("one")])
        await session.record_turn_usage(Usage(1, 5, 6, 11))
        with pytest.raises(ValueError, match="does not exist"):
            await session.get_session_usage(branch_id)
        with pytest.raises(ValueError, match="does not exist"):
            await session.get_turn_usage(branch_id=branch_id)
        assert await session.get_session_usage("main") is not None
    finally:
        session.close()
