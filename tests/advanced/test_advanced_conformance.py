"""The shared session contract, run on AdvancedSQLiteSession: on `main`, and on a branch."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from support.sqlite_rows import corrupt_newest_row, count_rows
from turnstore import Session
from turnstore.extensions.memory import AdvancedSQLiteSession
from turnstore.testing import SessionConformanceTests


class TestAdvancedOnMain(SessionConformanceTests):
    @pytest.fixture(autouse=True)
    def _db_file(self, tmp_path: Path) -> None:
        self.db_path = str(tmp_path / "advanced.db")

    async def make_session(self, session_id: str) -> Session:
        return AdvancedSQLiteSession(session_id=session_id, db_path=self.db_path)

    async def corrupt_latest_row(self, session: Session) -> None:
        await asyncio.to_thread(corrupt_newest_row, self.db_path, session.session_id)

    async def stored_row_count(self, session: Session) -> int:
        return await asyncio.to_thread(count_rows, self.db_path, session.session_id)


class TestAdvancedOnABranch(TestAdvancedOnMain):
    """Every session starts with one turn on `main`, then works on a branch forked before it.

    The branch starts empty and shares nothing, and `main`'s turn must never show on it.
    """

    async def make_session(self, session_id: str) -> Session:
        session = AdvancedSQLiteSession(session_id=session_id, db_path=self.db_path)
        # Sessions of one id share the history (the contract's "same id" test): fork once.
        branches = await session.list_branches()
        if any(branch["branch_id"] == "side" for branch in branches):
            await session.switch_to_branch("side")
            return session
        await session.add_items([{"role": "user", "content": "on main only"}])
        await session.create_branch_from_turn(1, "side")
        assert await session.get_items() == []
        return session

    async def stored_row_count(self, session: Session) -> int:
        # `main`'s turn is a row of the session too.
        return await asyncio.to_thread(count_rows, self.db_path, session.session_id) - 1
