"""Ctrl-C and SIGTERM while `turnstore` runs as a program: one line, status 130 or 143.

The first signal while a command works cancels its task: the write in progress ends first (a
session is written in one transaction, so what is stored stays whole), then the command says
what it did. A signal at any other moment (before the command starts, after it ended, or a
second one) says the same at once and ends the process. The process also ends by `os._exit`
once the command is done: the interpreter's own exit has moments in which a Ctrl-C prints a
traceback (in `threading._shutdown`) or kills the process silently.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import NoReturn

__all__ = ["Interrupts"]


class Interrupts:
    """The SIGINT and SIGTERM handler of one `turnstore` run."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.describe: Callable[[], str] = lambda: ""
        """What the command has done so far (an import sets it), for the line."""
        self._work: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reported = False

    def install(self) -> None:
        """Handle SIGINT and SIGTERM from now on (in the main thread)."""
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._on_signal)

    @contextlib.contextmanager
    def cancelling(self, work: asyncio.Task[None]) -> Iterator[None]:
        """While the block runs, the first signal cancels `work`."""
        self._work, self._loop = work, asyncio.get_running_loop()
        try:
            yield
        finally:
            self._work = None

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        first = self.signum is None
        if first:
            self.signum = signum
        work, loop = self._work, self._loop
        if first and work is not None and loop is not None and not work.done():
            loop.call_soon_threadsafe(work.cancel)
            return
        self.exit(self.status)

    @property
    def status(self) -> int:
        """128 plus the signal's number: 130 for SIGINT, 143 for SIGTERM (as a shell says)."""
        return 128 + (self.signum or signal.SIGINT)

    def report(self) -> int:
        """Print the one line that says the command was interrupted; return its exit status."""
        if not self._reported and self.signum is not None:
            self._reported = True
            name = signal.Signals(self.signum).name
            done = self.describe()
            with contextlib.suppress(Exception):
                print(
                    f"turnstore: interrupted ({name}){': ' + done if done else ''}",
                    file=sys.stderr,
                    flush=True,
                )
        return self.status

    def exit(self, status: int) -> NoReturn:
        """End the process with `status` (an interrupt's, if one came), output flushed."""
        if self.signum is not None:
            status = self.report()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(status)
