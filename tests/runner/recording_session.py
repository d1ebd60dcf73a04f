"""An in-memory session that records every call, for tests of the runner's session use."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

from turnstore import SessionABC, SessionSettings, TResponseInputItem


class RecordingSession(SessionABC):
    """Keeps items in a list and records `(method, arg)` for each call in `calls`.

    `writes` keeps the batches passed to `add_items`. `before_add(batch)` may return a pair of
    events `(started, release)`: the add then sets `started` and waits for `release`.
    """

    def __init__(
        self,
        session_id: str = "recording",
        *,
        session_settings: SessionSettings | None = None,
        before_add: Callable[[list[Any]], tuple[asyncio.Event, asyncio.Event] | None] | None = None,
    ) -> None:
        self.session_id = session_id
        self.session_settings = session_settings
        self.items: list[TResponseInputItem] = []
        self.calls: list[tuple[str, Any]] = []
        self.writes: list[tuple[str, list[TResponseInputItem]]] = []
        self._before_add = before_add

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        self.calls.append(("get_items", limit))
        items = self.items if limit is None else self.items[-limit:] if limit else []
        return copy.deepcopy(items)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        self.calls.append(("add_items", len(items)))
        gate = self._before_add(items) if self._before_add else None
        if gate is not None:
            started, release = gate
            started.set()
            await release.wait()
        self.writes.append(("add_items", copy.deepcopy(items)))
        self.items.extend(copy.deepcopy(items))

    async def pop_item(self) -> TResponseInputItem | None:
        self.calls.append(("pop_item", None))
        return self.items.pop() if self.items else None

    async def clear_session(self) -> None:
        self.calls.append(("clear_session", None))
        self.items.clear()
