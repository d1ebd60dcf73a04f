"""A conformance suite that any `Session` implementation can run.

Subclass [`SessionConformanceTests`][turnstore.testing.SessionConformanceTests] in a test
module, tell it how to make a session, and pytest collects every contract test for your backend:
ordering, limits, isolation, pop and clear, unicode and large items, hostile ids, concurrent
writers and pops, cancellation, corrupt rows and rejected items (too deeply nested, `NaN`
included), the history window a run loads (`limit`, `limit_turns`, `limit_tokens`: never a tool
output without its call), and, for sessions that implement
[`AtomicReplacementSession`][turnstore.memory.AtomicReplacementSession], atomic history replacement.

Example:
    ```python
    # tests/test_my_session.py
    from turnstore.testing import SessionConformanceTests

    from my_package import MySession


    class TestMySession(SessionConformanceTests):
        async def make_session(self, session_id):
            return MySession(session_id, url="...")

        # Optional: lets the corrupt-row test run (it is skipped otherwise).
        async def corrupt_latest_row(self, session):
            await session._raw_update_latest("not json{")
    ```

Requirements: pytest and pytest-asyncio (the tests are marked `asyncio`, so they run in strict
and auto mode alike). Each test uses fresh, random session ids, so a persistent database can be
shared between runs; sessions are closed after each test (see `close_session`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, ClassVar

import pytest
import pytest_asyncio

from ..exceptions import SessionClosedError
from ..memory.session import Session
from ..memory.settings import SessionSettings
from ._conformance_history import (
    AtomicReplacementContract,
    HistoryWindowContract,
    SessionFactory,
)
from .sample_items import TOO_DEEP, deeply_nested, msg, texts_of

__all__ = ["SessionConformanceTests", "SessionFactory"]


class SessionConformanceTests(HistoryWindowContract, AtomicReplacementContract):
    """The contract every session backend must keep, as a pytest test class.

    Override [`make_session`][turnstore.testing.SessionConformanceTests.make_session]
    (required) and, optionally,
    [`corrupt_latest_row`][turnstore.testing.SessionConformanceTests.corrupt_latest_row] and
    [`close_session`][turnstore.testing.SessionConformanceTests.close_session]. Set
    `shared_storage = False` when two objects made with the same id do not share a history (an
    in-memory store per object); the tests that need a shared history then skip.

    Attributes:
        shared_storage: Whether `make_session(id)` twice gives two views of one history.
        large_item_bytes: The size of the "large item" test's payload (1 MB by default).
    """

    pytestmark: ClassVar[Any] = pytest.mark.asyncio
    shared_storage: ClassVar[bool] = True
    large_item_bytes: ClassVar[int] = 1_000_000

    # --- hooks --------------------------------------------------------------------------------

    async def make_session(self, session_id: str) -> Session:
        """Return a new session object for `session_id` (required).

        Args:
            session_id: The id to use; fresh and random for each test unless the test is about
                odd ids.

        Returns:
            A session; the suite closes it after the test.
        """
        raise NotImplementedError("override make_session() in your SessionConformanceTests")

    async def close_session(self, session: Session) -> None:
        """Release a session made by `make_session`.

        The default awaits `session.aclose()`, or else calls `session.close()` (awaiting what
        it returns, if anything) when the session has one.

        Args:
            session: A session this suite made.
        """
        close = getattr(session, "aclose", None) or getattr(session, "close", None)
        if close is None:
            return
        result = close()
        if inspect.isawaitable(result):
            await result

    async def corrupt_latest_row(self, session: Session) -> None:
        """Overwrite the newest stored item of `session` with undecodable data (optional).

        The default raises `NotImplementedError`, which skips the corrupt-row tests.

        Args:
            session: A session holding at least one item.
        """
        raise NotImplementedError

    async def stored_row_count(self, session: Session) -> int:
        """Return how many rows `session` has in storage, corrupt ones included (optional).

        Lets the corrupt-row test check that `pop_item` leaves a corrupt row in place. The
        default raises `NotImplementedError`, which skips that check.

        Args:
            session: A session this suite made.
        """
        raise NotImplementedError

    def comparable(self, item: Any) -> Any:
        """Return `item` as the exact round-trip test compares it (default: unchanged).

        A session backed by an API that adds fields to what it stores (an `id`, a `status`)
        removes them here.

        Args:
            item: An item read back from the session.
        """
        return item

    # --- fixtures -----------------------------------------------------------------------------

    @pytest_asyncio.fixture
    async def new_session(self) -> AsyncIterator[SessionFactory]:
        """A factory of sessions with random ids, all closed after the test."""
        made: list[Session] = []

        async def factory(session_id: str | None = None) -> Any:
            sid = session_id if session_id is not None else f"conformance-{uuid.uuid4().hex}"
            session = await self.make_session(sid)
            made.append(session)
            return session

        yield factory
        for session in reversed(made):
            await self.close_session(session)

    # --- the contract -------------------------------------------------------------------------

    async def test_is_a_session(self, new_session: SessionFactory) -> None:
        """The object satisfies the runtime-checkable `Session` protocol and keeps its id."""
        session = await new_session("conformance-shape-" + uuid.uuid4().hex)
        assert isinstance(session, Session)
        assert session.session_id.startswith("conformance-shape-")

    async def test_empty_session(self, new_session: SessionFactory) -> None:
        """A new session is empty: no items, `pop_item()` is `None`, clearing is harmless."""
        session = await new_session()
        assert await session.get_items() == []
        assert await session.get_items(5) == []
        assert await session.pop_item() is None
        await session.clear_session()
        assert await session.get_items() == []

    async def test_order_is_kept_across_batches(self, new_session: SessionFactory) -> None:
        """Items come back in the order they were added, across batches."""
        session = await new_session()
        await session.add_items([msg("a"), msg("b", "assistant")])
        await session.add_items([])
        await session.add_items([msg("c")])
        await session.add_items([msg(str(i)) for i in range(20)])
        assert texts_of(await session.get_items()) == ["a", "b", "c", *map(str, range(20))]

    async def test_items_round_trip_exactly(self, new_session: SessionFactory) -> None:
        """An item comes back equal to what was stored, nested values included."""
        session = await new_session()
        item: Any = {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": '{"ok": true}',
            "nested": {"list": [1, 2.5, None, True, False, "x"], "empty": {}, "zero": 0},
        }
        await session.add_items([item])
        assert [self.comparable(got) for got in await session.get_items()] == [item]

    async def test_limit_semantics(self, new_session: SessionFactory) -> None:
        """`limit=N` gives the latest N oldest first; 0 gives `[]`; negative raises."""
        session = await new_session()
        await session.add_items([msg(str(i)) for i in range(10)])
        assert texts_of(await session.get_items(3)) == ["7", "8", "9"]
        assert texts_of(await session.get_items(1)) == ["9"]
        assert len(await session.get_items(10)) == 10
        assert len(await session.get_items(1000)) == 10
        assert await session.get_items(0) == []
        assert len(await session.get_items(None)) == 10
        with pytest.raises(ValueError, match="limit"):
            await session.get_items(-1)

    async def test_settings_limit_applies_when_no_limit_is_given(
        self, new_session: SessionFactory
    ) -> None:
        """`session_settings.limit` applies to `get_items()`; an explicit limit wins."""
        session = await new_session()
        await session.add_items([msg(str(i)) for i in range(5)])
        session.session_settings = SessionSettings(limit=2)
        assert texts_of(await session.get_items()) == ["3", "4"]
        assert texts_of(await session.get_items(4)) == ["1", "2", "3", "4"]  # explicit wins
        session.session_settings = SessionSettings(limit=0)
        assert await session.get_items() == []

    async def test_sessions_are_isolated(self, new_session: SessionFactory) -> None:
        """Two session ids never see, pop or clear each other's items."""
        first, second = await new_session(), await new_session()
        await first.add_items([msg("first")])
        await second.add_items([msg("second")])
        assert texts_of(await first.get_items()) == ["first"]
        assert texts_of(await second.get_items()) == ["second"]
        assert texts_of([await second.pop_item()]) == ["second"]
        assert texts_of(await first.get_items()) == ["first"]
        await first.clear_session()
        await second.add_items([msg("still here")])
        assert await first.get_items() == []
        assert texts_of(await second.get_items()) == ["still here"]

    async def test_pop_returns_newest_first(self, new_session: SessionFactory) -> None:
        """`pop_item()` removes and returns the newest item, then `None` when empty."""
        session = await new_session()
        await session.add_items([msg("a"), msg("b"), msg("c")])
        assert texts_of([await session.pop_item()]) == ["c"]
        assert texts_of(await session.get_items()) == ["a", "b"]
        await session.add_items([msg("d")])
        popped = [await session.pop_item() for _ in range(4)]
        assert popped[3] is None
        assert texts_of(popped[:3]) == ["d", "b", "a"]
        assert await session.get_items() == []

    async def test_clear_then_reuse(self, new_session: SessionFactory) -> None:
        """`clear_session()` empties the session, which stays usable."""
        session = await new_session()
        await session.add_items([msg("a"), msg("b")])
        await session.clear_session()
        assert await session.get_items() == []
        assert await session.pop_item() is None
        await session.add_items([msg("c")])
        assert texts_of(await session.get_items()) == ["c"]

    async def test_unicode_and_emoji(self, new_session: SessionFactory) -> None:
        """Non-ASCII text, emoji sequences, quotes and control characters survive."""
        session = await new_session()
        texts = [
            "héllo wörld",
            "日本語のテキスト、中文，한국어",
            "emoji 🎉👩‍👩‍👧‍👦🏳️‍🌈",
            "rtl مرحبا שלום",
            "quotes ' \" ` and backslash \\ and newline\n\ttab",
            "astral 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and combining e\u0301",
        ]
        await session.add_items([msg(text) for text in texts])
        assert texts_of(await session.get_items()) == texts

    async def test_large_item(self, new_session: SessionFactory) -> None:
        """An item of about 1 MB is stored and read back whole."""
        session = await new_session()
        big = ("x" * 999 + "é") * (self.large_item_bytes // 1000)
        await session.add_items([msg("before"), msg(big), msg("after")])
        items = await session.get_items()
        assert texts_of(items) == ["before", big, "after"]
        assert texts_of(await session.get_items(2)) == [big, "after"]

    @pytest.mark.parametrize(
        "hostile",
        [
            "x'; DROP TABLE agent_messages; --",
            'x"; DELETE FROM agent_sessions; --',
            "x' OR '1'='1",
            "x%_*?[]{}\\",
            "",
        ],
    )
    async def test_ids_that_look_like_sql_injection(
        self, new_session: SessionFactory, hostile: str
    ) -> None:
        """Session ids are data, never code: hostile ids harm nothing."""
        suffix = uuid.uuid4().hex
        hostile_session = await new_session(hostile + suffix if hostile else "")
        bystander = await new_session()
        await bystander.add_items([msg("bystander")])
        await hostile_session.clear_session()
        await hostile_session.add_items([msg("hostile")])
        assert texts_of(await hostile_session.get_items()) == ["hostile"]
        assert texts_of(await bystander.get_items()) == ["bystander"]
        await hostile_session.clear_session()
        assert texts_of(await bystander.get_items()) == ["bystander"]

    async def test_fifty_concurrent_writers(self, new_session: SessionFactory) -> None:
        """50 concurrent writers lose nothing and keep each writer's order."""
        sessions = [await new_session() for _ in range(5)]
        writes_each = 8

        async def writer(n: int) -> None:
            session = sessions[n % len(sessions)]
            for seq in range(writes_each):
                await session.add_items([msg(f"{n}:{seq}"), msg(f"{n}:{seq}:b")])

        await asyncio.gather(*(writer(n) for n in range(50)))
        for index, session in enumerate(sessions):
            texts = texts_of(await session.get_items())
            writers = [n for n in range(50) if n % len(sessions) == index]
            assert len(texts) == len(writers) * writes_each * 2
            assert len(set(texts)) == len(texts)
            for n in writers:
                mine = [t for t in texts if t.split(":")[0] == str(n)]
                expected = []
                for seq in range(writes_each):
                    expected += [f"{n}:{seq}", f"{n}:{seq}:b"]
                assert mine == expected, f"writer {n}'s items are out of order or missing"

    async def test_concurrent_pops_never_return_the_same_item(
        self, new_session: SessionFactory
    ) -> None:
        """Concurrent pops return each item at most once."""
        session = await new_session()
        await session.add_items([msg(str(i)) for i in range(20)])
        popped = await asyncio.gather(*(session.pop_item() for _ in range(30)))
        got = [item for item in popped if item is not None]
        assert sorted(texts_of(got), key=int) == [str(i) for i in range(20)]
        assert popped.count(None) == 10
        assert await session.get_items() == []

    async def test_same_id_shares_history_across_objects(self, new_session: SessionFactory) -> None:
        """Two objects with one id share a history, concurrent pops included."""
        if not self.shared_storage:
            pytest.skip("this backend keeps one history per object (shared_storage = False)")
        sid = f"conformance-shared-{uuid.uuid4().hex}"
        first, second = await new_session(sid), await new_session(sid)
        await first.add_items([msg("from first")])
        await second.add_items([msg("from second")])
        assert texts_of(await first.get_items()) == ["from first", "from second"]
        await first.add_items([msg(str(i)) for i in range(10)])
        popped = await asyncio.gather(
            *(s.pop_item() for s in (first, second) * 8)  # 16 pops for 12 items
        )
        got = texts_of([item for item in popped if item is not None])
        assert len(got) == 12
        assert len(set(got)) == 12
        assert await second.get_items() == []

    async def test_cancelled_add_is_whole_or_absent(self, new_session: SessionFactory) -> None:
        """A cancelled `add_items` stores its batch whole or not at all, never twice."""
        batch = [msg(f"item {i}") for i in range(50)]
        for yields in range(6):
            session = await new_session()
            await session.add_items([msg("before")])
            task = asyncio.ensure_future(session.add_items(batch))
            for _ in range(yields):
                await asyncio.sleep(0)
            task.cancel()
            task.cancel()  # a second request must not break the write either
            with contextlib.suppress(asyncio.CancelledError):
                await task
            texts = texts_of(await session.get_items())
            assert texts in (["before"], ["before", *texts_of(batch)]), (
                f"cancelled after {yields} yields: the batch is partial or duplicated"
            )
            await session.add_items([msg("after")])
            assert texts_of(await session.get_items())[-1] == "after"

    async def test_corrupt_row_is_skipped(self, new_session: SessionFactory) -> None:
        """An undecodable row is skipped, and `limit` counts valid items only."""
        session = await new_session()
        await session.add_items([msg("a"), msg("b")])
        try:
            await self.corrupt_latest_row(session)
        except NotImplementedError:
            pytest.skip("corrupt_latest_row() is not provided for this backend")
        await session.add_items([msg("c"), msg("d")])
        assert texts_of(await session.get_items()) == ["a", "c", "d"]
        assert texts_of(await session.get_items(3)) == ["a", "c", "d"]  # limit counts valid items
        assert texts_of(await session.get_items(2)) == ["c", "d"]
        assert texts_of([await session.pop_item()]) == ["d"]

    @pytest.mark.parametrize(
        ("bad", "index"),
        [
            ([{"role": "user", "content": "ok"}, {"content": object()}], 1),
            ([{"role": "user", "content": "ok"}, "not a mapping"], 1),
            ([42], 0),
            ([{"role": "user", "content": "ok"}, {"x": "y"}, {"role": {1, 2}}], 2),
            ([{"role": "user", "content": "ok"}, deeply_nested(TOO_DEEP)], 1),
            ([{"role": "user", "content": "ok"}, {"role": "user", "n": float("nan")}], 1),
            ([{"role": "user", "content": "ok"}] * 3 + [{"n": float("inf")}], 3),
        ],
        ids=["unserialisable", "not-a-mapping", "int", "set", "too-deep", "nan", "infinity"],
    )
    async def test_bad_items_are_rejected_and_nothing_is_written(
        self, new_session: SessionFactory, bad: list[Any], index: int
    ) -> None:
        """A batch with a bad item raises `TypeError` naming its index; nothing is stored."""
        session = await new_session()
        await session.add_items([msg("before")])
        with pytest.raises(TypeError, match=rf"\b{index}\b"):
            await session.add_items(bad)
        assert texts_of(await session.get_items()) == ["before"]

    async def test_the_deepest_item_accepted_reads_back_from_a_deeper_stack(
        self, new_session: SessionFactory
    ) -> None:
        """Whatever nesting `add_items` accepts, `get_items` returns, even called deeper.

        The deepest accepted item is found by bisection (a refused batch writes nothing), then
        read back from 100 frames deeper than it was written: a decoder that gives up there
        would skip it as a corrupt row.
        """
        session = await new_session()
        low, high = 1, 2_000  # accepted at `low`; refused at `high`
        while high - low > 1:
            middle = (low + high) // 2
            try:
                await session.add_items([deeply_nested(middle)])
            except TypeError:
                high = middle
            else:
                await session.clear_session()
                low = middle
        await session.add_items([msg("before"), deeply_nested(low), msg("after")])

        async def deeper(frames: int) -> list[Any]:
            return list(await (deeper(frames - 1) if frames else session.get_items()))

        items = await deeper(100)
        assert texts_of([items[0], items[-1]]) == ["before", "after"]
        assert [self.comparable(got) for got in items[1:-1]] == [deeply_nested(low)]

    async def test_pop_skips_a_corrupt_row_and_leaves_it_in_place(
        self, new_session: SessionFactory
    ) -> None:
        """`pop_item` pops the newest valid item; a corrupt row is never deleted, only skipped."""
        session = await new_session()
        await session.add_items([msg("a"), msg("b"), msg("c")])
        try:
            await self.corrupt_latest_row(session)
        except NotImplementedError:
            pytest.skip("corrupt_latest_row() is not provided for this backend")
        assert texts_of([await session.pop_item()]) == ["b"]
        assert texts_of(await session.get_items()) == ["a"]
        assert texts_of([await session.pop_item()]) == ["a"]
        assert await session.pop_item() is None
        assert await session.get_items() == []
        try:
            rows = await self.stored_row_count(session)
        except NotImplementedError:
            return
        assert rows == 1, "pop_item deleted a corrupt row (it must be left in place)"

    async def test_a_closed_session_raises_session_closed_error(
        self, new_session: SessionFactory
    ) -> None:
        """After `close()` every operation raises `SessionClosedError`; closing again is fine.

        Skipped for a session without `close()`: the `Session` protocol does not require one.
        """
        session = await new_session()
        if not callable(getattr(session, "close", None)):
            pytest.skip("this session has no close() (the Session protocol does not require one)")
        await session.add_items([msg("a")])
        for _ in range(2):
            result = session.close()
            if inspect.isawaitable(result):
                await result
        calls: list[Callable[[], Awaitable[Any]]] = [
            lambda: session.get_items(),
            lambda: session.get_items(1),
            lambda: session.add_items([msg("b")]),
            lambda: session.pop_item(),
            lambda: session.clear_session(),
        ]
        for call in calls:
            with pytest.raises(SessionClosedError):
                await call()
        reopened = await new_session(session.session_id) if self.shared_storage else None
        if reopened is not None and session.session_id:
            assert texts_of(await reopened.get_items()) == ["a"]  # closing lost nothing
