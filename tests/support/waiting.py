"""Waiting for the other side of a test (a server, a thread, a process) by what it does.

A test that needs another party to reach a point waits on an event that party sets, or polls a
condition with `eventually`, which fails with a clear message when a deadline passes. A fixed
sleep would pass on an idle machine and race on a busy one.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

DEADLINE_SECONDS = 30.0
"""How long a wait may take before the test fails: far beyond what any wait needs."""

POLL_SECONDS = 0.005
"""How often a condition is checked again."""


async def eventually(
    check: Callable[[], T | Awaitable[T]], what: str, *, timeout: float = DEADLINE_SECONDS
) -> T:
    """Poll `check` (a function or a coroutine function) until it returns a true value.

    Returns:
        The first true value `check` returned.

    Raises:
        AssertionError: `timeout` seconds passed first; the message names `what` was awaited.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result  # type: ignore[return-value]
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout} s for {what}")
        await asyncio.sleep(POLL_SECONDS)
