"""An in-memory session for tests of what uses a session (the runner, compaction)."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

from turnstore import SessionSettings, TResponseInputItem
from turnstore.memory import SessionABC


class MemorySession(SessionABC):
    """Keeps items in a list, records each call and lets a test inject faults.

    `calls` records `(method, argument)` for each call: the limit of `get_items`, the batch size
    of `add_items`, `None` for the others; `methods` gives only their names. `writes` keeps the
    batches passed to `add_items`.

    `before_add(batch)` runs before an `add_items` stores anything; it may be a coroutine
    function, and may raise or block. It fires once, unless it returns True.
    """

    def __init__(
        self,
        session_id: str = "memory",
        items: list[Any] | None = None,
        *,
        session_settings: SessionSettings | None = None,
        before_add: Callable[[list[Any]], Any] | None = None,
    ) -> None:
        self.session_id = session_id
        self.session_settings = session_settings
        self.items: list[TResponseInputItem] = copy.deepcopy(items or [])
        self.before_add = before_add
        self.calls: list[tuple[str, Any]] = []
        self.writes: list[tuple[str, list[TResponseInputItem]]] = []

    @property
    def methods(self) -> list[str]:
        """The names of the methods called, in order."""
        return [name for name, _ in self.calls]

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        self.calls.append(("get_items", limit))
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        items = self.items if limit is None else self.items[-limit:] if limit else []
        return copy.deepcopy(items)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        self.calls.append(("add_items", len(items)))
        hook, self.before_add = self.before_add, None
        if hook is not None:
            result = hook(items)
            if asyncio.iscoroutine(result):
                result = await result
            if result is True:
                self.before_add = hook
        await asyncio.sleep(0)
        self.writes.append(("add_items", copy.deepcopy(items)))
        self.items.extend(copy.deepcopy(items))

    async def pop_item(self) -> TResponseInputItem | None:
        self.calls.append(("pop_item", None))
        return self.items.pop() if self.items else None

    async def clear_session(self) -> None:
        self.calls.append(("clear_session", None))
        await asyncio.sleep(0)
        self.items.clear()
