"""Shielding a storage mutation from the cancellation of its caller."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TypeVar

__all__ = ["await_session_mutation", "on_mutation_cancelled"]

_T = TypeVar("_T")

_cancel_hooks: ContextVar[list[Callable[[], None]] | None] = ContextVar(
    "turnstore_mutation_cancel_hooks", default=None
)


def on_mutation_cancelled(callback: Callable[[], None]) -> None:
    """Ask to be told when the caller of the enclosing `await_session_mutation` is cancelled.

    A storage mutation that has not committed yet may use it to give up early (nothing written)
    instead of holding the cancelled caller: SQLite stops retrying a write that waits for
    another process's lock. Outside any `await_session_mutation` this does nothing.

    Args:
        callback: Called once, on the event loop thread, at the first cancellation request.
    """
    hooks = _cancel_hooks.get()
    if hooks is not None:
        hooks.append(callback)


async def await_session_mutation(awaitable: Awaitable[_T]) -> _T:
    """Run a mutation to its end even when the caller is cancelled.

    A write that is abandoned halfway would leave a history the caller cannot reason about. Once
    this function has started the mutation, cancelling the awaiting task does not cancel the
    mutation: the cancellation is held back (however many times it is requested) until the
    mutation finishes, and then raised.

    It adds no timeout, transaction or retry of its own; every built-in session mutation goes
    through it.

    Args:
        awaitable: The mutation, for example `self._write(batch)`.

    Returns:
        The mutation's result, when the caller was not cancelled.

    Raises:
        asyncio.CancelledError: The caller was cancelled while the mutation ran; raised after the
            mutation finished, even if the mutation itself failed.
        BaseException: Whatever the mutation raised, when the caller was not cancelled.

    Example:
        ```python
        async def add_items(self, items):
            await await_session_mutation(self._insert(items))
        ```
    """
    hooks: list[Callable[[], None]] = []
    # A nested mutation (a session's own, inside a runner's) hears of this caller's cancellation.
    on_mutation_cancelled(lambda: _fire(hooks))
    token = _cancel_hooks.set(hooks)
    try:
        task = asyncio.ensure_future(awaitable)  # a new task copies the context, hooks included
    finally:
        _cancel_hooks.reset(token)
    held: asyncio.CancelledError | None = None
    while not task.done():
        try:
            # asyncio.wait never cancels what it waits for, unlike a plain await.
            await asyncio.wait((task,))
        except asyncio.CancelledError as exc:
            if held is None:
                _fire(hooks)
            held = held or exc
    if held is not None:
        if not task.cancelled():
            task.exception()  # mark a failure as retrieved: the cancellation is what we report
        raise held
    return task.result()


def _fire(hooks: list[Callable[[], None]]) -> None:
    while hooks:
        hooks.pop(0)()
