"""The conformance tests of a session's history: the window a run loads, atomic replacement.

Two groups of `SessionConformanceTests`, which inherits them: the history window
(`load_history` with `limit`, `limit_turns` and `limit_tokens`), and, for sessions that implement
`AtomicReplacementSession`, atomic history replacement. Internal: subclass
`SessionConformanceTests` rather than these.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pytest

from ..memory.history import estimate_item_tokens, load_history
from ..memory.session import is_atomic_replacement_session
from .sample_items import TOO_DEEP, deeply_nested, msg, texts_of

__all__ = ["AtomicReplacementContract", "HistoryWindowContract", "SessionFactory"]

SessionFactory = Callable[..., Awaitable[Any]]
"""`await factory(session_id=None)` returns a new session; a random id is used when omitted."""


class HistoryWindowContract:
    """The history a run loads: never a tool output without its call, turns, token budgets."""

    if TYPE_CHECKING:

        def comparable(self, item: Any) -> Any: ...

    def _shape(self, items: list[Any]) -> list[str]:
        """Each item as `role` or `type:call_id`, for comparing windows."""
        shapes = []
        for got in items:
            item = self.comparable(got)
            if item.get("call_id") is not None:
                shapes.append(f"{item.get('type')}:{item['call_id']}")
            else:
                shapes.append(str(item.get("role") or item.get("type")))
        return shapes

    async def _tool_history(self, new_session: SessionFactory) -> Any:
        session = await new_session()
        await session.add_items(
            [
                msg("first question"),
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "one"},
                msg("first answer", "assistant"),
                msg("second question"),
                {"type": "function_call", "call_id": "c2", "name": "f", "arguments": "{}"},
                {"type": "function_call", "call_id": "c3", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c2", "output": "two"},
                {"type": "function_call_output", "call_id": "c3", "output": "three"},
                msg("second answer", "assistant"),
            ]
        )
        return session

    async def test_history_window_never_holds_a_tool_output_without_its_call(
        self, new_session: SessionFactory
    ) -> None:
        """An item limit that cuts between calls and outputs drops the orphaned outputs."""
        session = await self._tool_history(new_session)
        window = await load_history(session, {"limit": 4})
        # The latest 4 items are call c3, output c2, output c3, answer: c2's call is cut off.
        assert self._shape(window) == ["function_call:c3", "function_call_output:c3", "assistant"]
        window = await load_history(session, {"limit": 2})
        assert self._shape(window) == ["assistant"]
        assert len(await session.get_items()) == 10  # the session keeps every item

    async def test_history_window_by_turns_starts_at_a_user_message(
        self, new_session: SessionFactory
    ) -> None:
        """`limit_turns=N` loads the latest N turns, each from its user message."""
        session = await self._tool_history(new_session)
        window = await load_history(session, {"limit_turns": 1})
        assert self._shape(window) == [
            "user",
            "function_call:c2",
            "function_call:c3",
            "function_call_output:c2",
            "function_call_output:c3",
            "assistant",
        ]
        assert len(await load_history(session, {"limit_turns": 2})) == 10
        assert len(await load_history(session, {"limit_turns": 5})) == 10
        assert await load_history(session, {"limit_turns": 0}) == []
        # With an item limit too, the shorter window wins (and drops the orphaned output).
        both = await load_history(session, {"limit_turns": 1, "limit": 4})
        assert self._shape(both) == ["function_call:c3", "function_call_output:c3", "assistant"]

    async def test_history_window_by_turns_reads_past_the_first_window(
        self, new_session: SessionFactory
    ) -> None:
        """A turn longer than the first read (64 items) is loaded whole."""
        session = await new_session()
        await session.add_items([msg("old"), msg("old answer", "assistant")])
        await session.add_items([msg("long turn"), *(msg(str(i), "assistant") for i in range(150))])
        window = await load_history(session, {"limit_turns": 1})
        assert len(window) == 151
        assert texts_of([self.comparable(i) for i in window])[0] == "long turn"

    async def test_history_window_by_token_budget(self, new_session: SessionFactory) -> None:
        """`limit_tokens` loads the latest items whose estimated tokens fit the budget."""
        session = await self._tool_history(new_session)
        items = await session.get_items()  # as stored: what the estimate measures
        last_three = sum(estimate_item_tokens(item) for item in items[-3:])
        window = await load_history(session, {"limit_tokens": last_three})
        # The latest 3 items fit; both outputs' calls are cut off, so only the answer is left.
        assert self._shape(window) == ["assistant"]
        everything = sum(estimate_item_tokens(item) for item in items)
        assert len(await load_history(session, {"limit_tokens": everything})) == 10
        assert await load_history(session, {"limit_tokens": 0}) == []


class AtomicReplacementContract:
    """Atomic history replacement, for sessions that implement `AtomicReplacementSession`."""

    async def _atomic_session(self, new_session: SessionFactory) -> Any:
        session = await new_session()
        if not is_atomic_replacement_session(session):
            pytest.skip("this backend does not implement AtomicReplacementSession")
        return session

    async def test_replace_history_keeps_later_items_after_the_new_ones(
        self, new_session: SessionFactory
    ) -> None:
        """The snapshot's items are replaced; items added after the snapshot stay, after them."""
        session = await self._atomic_session(new_session)
        other = await new_session()
        await other.add_items([msg("other")])
        await session.add_items([msg("a"), msg("b"), msg("c")])
        snapshot = await session.snapshot_history()
        assert texts_of(snapshot.items) == ["a", "b", "c"]
        await session.add_items([msg("late")])
        assert await session.replace_history(snapshot, [msg("summary"), msg("s2")])
        assert texts_of(await session.get_items()) == ["summary", "s2", "late"]
        assert texts_of(await session.get_items(1)) == ["late"]
        assert texts_of(await other.get_items()) == ["other"]
        assert texts_of([await session.pop_item()]) == ["late"]

    async def test_replace_history_of_a_prefix_keeps_the_rest(
        self, new_session: SessionFactory
    ) -> None:
        """`snapshot.prefix(n)` replaces only the first `n` items."""
        session = await self._atomic_session(new_session)
        await session.add_items([msg("a"), msg("b"), msg("c")])
        snapshot = (await session.snapshot_history()).prefix(2)
        assert await session.replace_history(snapshot, [msg("ab")])
        assert texts_of(await session.get_items()) == ["ab", "c"]
        with pytest.raises(ValueError, match="cannot narrow"):
            snapshot.prefix(3)

    async def test_replace_history_refuses_a_stale_snapshot(
        self, new_session: SessionFactory
    ) -> None:
        """A snapshot whose rows were popped or cleared replaces nothing and returns False."""
        session = await self._atomic_session(new_session)
        await session.add_items([msg("a"), msg("b")])
        snapshot = await session.snapshot_history()
        await session.pop_item()
        await session.add_items([msg("c")])
        assert not await session.replace_history(snapshot, [msg("summary")])
        assert texts_of(await session.get_items()) == ["a", "c"]
        snapshot = await session.snapshot_history()
        await session.clear_session()
        assert not await session.replace_history(snapshot, [msg("summary")])
        assert await session.get_items() == []

    async def test_replace_history_checks_items_first(self, new_session: SessionFactory) -> None:
        """A bad replacement item raises `TypeError` naming its index; nothing changes."""
        session = await self._atomic_session(new_session)
        await session.add_items([msg("a")])
        snapshot = await session.snapshot_history()
        with pytest.raises(TypeError, match=r"\b1\b"):
            await session.replace_history(snapshot, [msg("ok"), deeply_nested(TOO_DEEP)])
        assert texts_of(await session.get_items()) == ["a"]
        assert await session.replace_history(snapshot, [msg("b")])
        assert texts_of(await session.get_items()) == ["b"]
