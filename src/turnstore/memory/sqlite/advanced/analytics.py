"""The turn and usage analytics of `AdvancedSQLiteSession` (a mixin; see `session.py`).

Each method is one job on the database's thread, through the session's `_on_branch` or `_read`.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .branches import Branches
from .items import (
    content_preview,
    content_texts,
    is_user,
    message_type,
    numbered_turns,
    tool_name,
    tool_usage,
    usage_row,
)

__all__ = ["BranchAnalytics", "user_turns"]


class BranchAnalytics:
    """Turns, tool calls and token usage of a branch: the read side of `AdvancedSQLiteSession`."""

    session_id: str

    if TYPE_CHECKING:

        async def _on_branch(
            self,
            work: Callable[[Branches, str], Any],
            branch_id: str | None = None,
            *,
            write: bool,
        ) -> Any: ...

        async def _read(self, work: Callable[[sqlite3.Connection], Any]) -> Any: ...

        def _check_open(self) -> None: ...

    # --- turns --------------------------------------------------------------------------------

    async def get_conversation_turns(self, branch_id: str | None = None) -> list[dict[str, Any]]:
        """List the user turns of a branch (default: the current one), to choose a fork point.

        Returns:
            One dict per turn: `turn` (its number), `content` (the first 100 characters),
            `full_content`, `timestamp`, `can_branch` (always `True`).

        Raises:
            TypeError: `branch_id` is not a str.
            ValueError: `branch_id` does not exist.
        """
        turns: list[dict[str, Any]] = await self._on_branch(
            lambda branches, name: user_turns(branches.read_rows(name), None, 100),
            branch_id,
            write=False,
        )
        return turns

    async def find_turns_by_content(
        self, search_term: str, branch_id: str | None = None
    ) -> list[dict[str, Any]]:
        """List the user turns whose text contains `search_term` (ASCII letters case-blind).

        Returns:
            Matching turns, as `get_conversation_turns` lists them (`content` uncut).

        Raises:
            TypeError: `search_term` or `branch_id` is not a str.
            ValueError: `branch_id` does not exist.
        """
        if not isinstance(search_term, str):
            raise TypeError(f"search_term must be a str, not {type(search_term).__name__}")
        pattern = re.compile(re.escape(search_term), re.IGNORECASE | re.ASCII)
        turns: list[dict[str, Any]] = await self._on_branch(
            lambda branches, name: user_turns(branches.read_rows(name), pattern, None),
            branch_id,
            write=False,
        )
        return turns

    async def get_conversation_by_turns(
        self, branch_id: str | None = None
    ) -> dict[int, list[dict[str, str | None]]]:
        """Group a branch's items by turn: `{turn: [{"type": ..., "tool_name": ...}, ...]}`.

        Items before the first user message are turn 0.

        Raises:
            TypeError: `branch_id` is not a str.
            ValueError: `branch_id` does not exist.
        """

        def group(branches: Branches, name: str) -> dict[int, list[dict[str, str | None]]]:
            items = [item for _, item, _ in branches.read_rows(name)]
            grouped: dict[int, list[dict[str, str | None]]] = {}
            for turn, item in numbered_turns(items):
                entry = {"type": message_type(item), "tool_name": tool_name(item)}
                grouped.setdefault(turn, []).append(entry)
            return grouped

        grouped: dict[int, list[dict[str, str | None]]] = await self._on_branch(
            group, branch_id, write=False
        )
        return grouped

    async def get_tool_usage(self, branch_id: str | None = None) -> list[tuple[str, int, int]]:
        """Count tool calls per turn of a branch: `(tool_name, uses, turn)`, by turn.

        Raises:
            TypeError: `branch_id` is not a str.
            ValueError: `branch_id` does not exist.
        """
        usage: list[tuple[str, int, int]] = await self._on_branch(
            lambda branches, name: tool_usage(item for _, item, _ in branches.read_rows(name)),
            branch_id,
            write=False,
        )
        return usage

    # --- usage ----------------------------------------------------------------------------------

    async def store_run_usage(self, result: Any) -> None:
        """Record a run's token usage against the current turn of the current branch.

        Not needed with turnstore's `Runner`, which records it by itself.

        Args:
            result: A run result: turnstore's (its `usage`) or the OpenAI Agents SDK's (its
                `context_wrapper.usage`).

        Raises:
            TypeError: `result` carries no usage, or its counts are not non-negative ints.
            ValueError: A count is above 2**63 - 1 (SQLite cannot store it); nothing is stored.
            SessionClosedError: The session was closed.
            SessionStorageError: SQLite failed.
        """
        wrapper = getattr(result, "context_wrapper", None)
        if wrapper is not None and hasattr(wrapper, "usage"):
            usage = wrapper.usage
        elif hasattr(result, "usage"):
            usage = result.usage
        else:
            raise TypeError(
                "store_run_usage needs a run result (turnstore's RunResult or the OpenAI Agents "
                f"SDK's), not {type(result).__name__}"
            )
        if usage is not None:
            await self.record_turn_usage(usage)

    async def record_turn_usage(self, usage: Any) -> None:
        """Record token usage against the current turn (replacing what the turn had).

        Called by `Runner` after each run (see
        [`UsageRecordingSession`][turnstore.memory.UsageRecordingSession]). Nothing is recorded
        while the branch holds no user message.

        Args:
            usage: Counts `requests`, `input_tokens`, `output_tokens`, `total_tokens`, and
                token details (turnstore's `Usage` or the SDK's).

        Raises:
            TypeError: A count is missing or not a non-negative int.
            ValueError: A count is above 2**63 - 1 (SQLite cannot store it); nothing is stored.
            SessionClosedError: The session was closed.
            SessionStorageError: SQLite failed.
        """
        values = usage_row(usage)

        def record(branches: Branches, name: str) -> None:
            number = branches.count_users(name)
            if number == 0:
                return
            branches.conn.execute(
                branches.schema.record_usage, (branches.sid, name, number, *values)
            )

        await self._on_branch(record, write=True)

    async def get_session_usage(self, branch_id: str | None = None) -> dict[str, int] | None:
        """Sum the usage of every turn of one branch, or of all branches.

        Returns:
            `requests`, `input_tokens`, `output_tokens`, `total_tokens`, `total_turns`; `None`
            when no usage was recorded.

        Raises:
            TypeError: `branch_id` is not a str.
            ValueError: `branch_id` does not exist.
        """

        def read(branches: Branches, name: str) -> list[Any]:
            one_branch = branch_id is not None
            args = (branches.sid, name) if one_branch else (branches.sid,)
            # Summed here: SQLite's SUM fails on counts that add up past 2**63 - 1.
            query = branches.schema.select_usage_totals(one_branch=one_branch)
            return branches.conn.execute(query, args).fetchall()

        rows = await self._on_branch(read, branch_id, write=False)
        if not rows:
            return None
        keys = ("requests", "input_tokens", "output_tokens", "total_tokens")
        totals = {key: sum(int(row[n] or 0) for row in rows) for n, key in enumerate(keys)}
        return {**totals, "total_turns": len(rows)}

    async def get_turn_usage(
        self, user_turn_number: int | None = None, branch_id: str | None = None
    ) -> list[dict[str, Any]] | dict[str, Any]:
        """Return the usage of one turn (a dict, `{}` if none) or of every turn (a list).

        Each has `requests`, `input_tokens`, `output_tokens`, `total_tokens`,
        `input_tokens_details` and `output_tokens_details` (dicts or `None`); the list's entries
        also `user_turn_number`.

        Raises:
            TypeError: `user_turn_number` is not an int or `branch_id` not a str.
        """
        if user_turn_number is not None and (
            isinstance(user_turn_number, bool) or not isinstance(user_turn_number, int)
        ):
            raise TypeError(
                f"user_turn_number must be an int, not {type(user_turn_number).__name__}"
            )

        def read(branches: Branches, name: str) -> list[Any]:
            args: tuple[Any, ...] = (branches.sid, name)
            if user_turn_number is not None:
                args += (user_turn_number,)
            query = branches.schema.select_turn_usage(one_turn=user_turn_number is not None)
            return branches.conn.execute(query, args).fetchall()

        rows = await self._on_branch(read, branch_id, write=False)
        entries = [_usage_entry(row) for row in rows]
        if user_turn_number is None:
            return entries
        if not entries:
            return {}
        entries[0].pop("user_turn_number")
        return entries[0]


def user_turns(
    rows: list[tuple[int, Any, Any]], pattern: re.Pattern[str] | None, cut: int | None
) -> list[dict[str, Any]]:
    """The user turns among (id, item, created_at) rows, as `get_conversation_turns` lists them."""
    out = []
    for turn, (item, created) in _numbered_with_time(rows):
        if not is_user(item):
            continue
        content = item.get("content", "")
        if pattern is not None and not any(pattern.search(t) for t in content_texts(content)):
            continue
        out.append(
            {
                "turn": turn,
                "content": content_preview(content, cut),
                "full_content": content,
                "timestamp": created,
                "can_branch": True,
            }
        )
    return out


def _numbered_with_time(rows: list[tuple[int, Any, Any]]) -> list[tuple[int, Any]]:
    """(turn, (item, created_at)) for rows (id, item, created_at)."""
    turns = numbered_turns(item for _, item, _ in rows)
    return [
        (turn, (item, created)) for (turn, item), (_, _, created) in zip(turns, rows, strict=True)
    ]


def _usage_entry(row: Any) -> dict[str, Any]:
    def details(text: Any) -> Any:
        if not text:
            return None
        try:
            return json.loads(text)
        except ValueError:
            return None

    return {
        "user_turn_number": row[0],
        "requests": row[1],
        "input_tokens": row[2],
        "output_tokens": row[3],
        "total_tokens": row[4],
        "input_tokens_details": details(row[5]),
        "output_tokens_details": details(row[6]),
    }
