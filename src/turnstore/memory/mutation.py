"""Shielding a storage mutation from the cancellation of its caller."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TypeVar

__all__ = ["await_session_mutation"]

_T = TypeVar("_T")

_enclosing: ContextVar[list[Callable[[], None]] | None] = ContextVar(
    "turnstore_enclosing_mutation", default=None
)
"""The cancel callbacks of the `await_session_mutation` whose task runs this code, if any."""


async def await_session_mutation(
    awaitable: Awaitable[_T], *, on_cancel: Callable[[], None] | None = None
) -> _T:
    """Run a mutation to its end even when the caller is cancelled.

    A write that is abandoned halfway would leave a history the caller cannot reason about. Once
    this function has started the mutation, cancelling the awaiting task does not cancel the
    mutation: the cancellation is held back (however many times it is requested) until the
    mutation finishes, and then raised.

    It adds no timeout, transaction or retry of its own; every built-in session mutation goes
    through it.

    Args:
        awaitable: The mutation, for example `self._write(batch)`.
        on_cancel: Called once, at the caller's first cancellation, so that a mutation that has
            not taken effect yet can give up early (for example a write still waiting for a
            busy database). The caller still waits for the mutation's outcome: it either took
            effect whole or not at all.

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
    # Nested mutations (a session's own shield inside the runner's) are told of this caller's
    # cancellation too: the runner's shield hides it from the session otherwise.
    callbacks: list[Callable[[], None]] = [] if on_cancel is None else [on_cancel]
    enclosing = _enclosing.get()
    if enclosing is not None:
        enclosing.append(lambda: _call_all(callbacks))
    token = _enclosing.set(callbacks)
    try:
        task = asyncio.ensure_future(awaitable)  # a new task copies this context
    finally:
        _enclosing.reset(token)
    held: asyncio.CancelledError | None = None
    while not task.done():
        try:
            # asyncio.wait never cancels what it waits for, unlike a plain await.
            await asyncio.wait((task,))
        except asyncio.CancelledError as exc:
            if held is None:
                _call_all(callbacks)
            held = held or exc
    if held is not None:
        if not task.cancelled():
            task.exception()  # mark a failure as retrieved: the cancellation is what we report
        raise held
    return task.result()


def _call_all(callbacks: list[Callable[[], None]]) -> None:
    while callbacks:
        callbacks.pop(0)()
