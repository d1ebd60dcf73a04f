"""await_session_mutation: a started write finishes even if its caller is cancelled."""

from __future__ import annotations

import asyncio

import pytest

from turnstore.memory import await_session_mutation


class Gate:
    """A mutation that waits for a release, recording that it started and finished."""

    def __init__(self, result: object = "done", error: BaseException | None = None) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.finished = False
        self.result = result
        self.error = error

    async def run(self) -> object:
        self.started.set()
        await self.release.wait()
        self.finished = True
        if self.error is not None:
            raise self.error
        return self.result


async def test_returns_the_result_without_cancellation() -> None:
    gate = Gate(result=42)
    gate.release.set()
    assert await await_session_mutation(gate.run()) == 42


async def test_raises_the_mutations_exception_without_cancellation() -> None:
    gate = Gate(error=KeyError("boom"))
    gate.release.set()
    with pytest.raises(KeyError, match="boom"):
        await await_session_mutation(gate.run())


async def test_accepts_any_awaitable() -> None:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()
    loop.call_soon(future.set_result, "from a future")
    assert await await_session_mutation(future) == "from a future"


async def test_cancelling_the_caller_does_not_cancel_the_mutation() -> None:
    gate = Gate()
    caller = asyncio.ensure_future(await_session_mutation(gate.run()))
    await gate.started.wait()
    caller.cancel()
    await asyncio.sleep(0.01)
    assert not caller.done(), "the caller must wait for the mutation"
    gate.release.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert gate.finished


async def test_repeated_cancellations_are_deferred_until_the_mutation_finishes() -> None:
    gate = Gate()
    caller = asyncio.ensure_future(await_session_mutation(gate.run()))
    await gate.started.wait()
    for _ in range(5):
        caller.cancel()
        await asyncio.sleep(0)
    assert not caller.done()
    assert not gate.finished
    gate.release.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert gate.finished


async def test_cancellation_wins_over_the_mutations_failure() -> None:
    gate = Gate(error=RuntimeError("write failed"))
    caller = asyncio.ensure_future(await_session_mutation(gate.run()))
    await gate.started.wait()
    caller.cancel()
    caller.cancel()
    await asyncio.sleep(0)
    gate.release.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert gate.finished


async def test_first_cancellation_message_is_kept() -> None:
    gate = Gate()
    caller = asyncio.ensure_future(await_session_mutation(gate.run()))
    await gate.started.wait()
    caller.cancel("first")
    await asyncio.sleep(0)
    caller.cancel("second")
    await asyncio.sleep(0)
    gate.release.set()
    with pytest.raises(asyncio.CancelledError, match="first"):
        await caller


async def test_outer_timeout_still_fires_after_the_mutation() -> None:
    gate = Gate()

    async def release_later() -> None:
        await asyncio.sleep(0.05)
        gate.release.set()

    releaser = asyncio.ensure_future(release_later())
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await await_session_mutation(gate.run())
    assert gate.finished  # the timeout waited for the write to end
    await releaser


async def test_no_timeout_of_its_own() -> None:
    gate = Gate()
    caller = asyncio.ensure_future(await_session_mutation(gate.run()))
    await asyncio.sleep(0.05)
    assert not caller.done()
    gate.release.set()
    assert await caller == "done"


async def test_no_retry_of_its_own() -> None:
    calls = 0

    async def failing() -> None:
        nonlocal calls
        calls += 1
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        await await_session_mutation(failing())
    assert calls == 1


async def test_on_cancel_runs_once_at_the_first_cancellation() -> None:
    gate = Gate()
    calls: list[bool] = []
    caller = asyncio.ensure_future(
        await_session_mutation(gate.run(), on_cancel=lambda: calls.append(gate.finished))
    )
    await gate.started.wait()
    assert calls == []
    for _ in range(3):
        caller.cancel()
        await asyncio.sleep(0)
    assert calls == [False]  # once, while the mutation still ran
    gate.release.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert calls == [False]
