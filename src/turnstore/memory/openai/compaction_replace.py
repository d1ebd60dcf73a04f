"""Compaction on a session without an atomic replacement: replace, read back, restore on failure.

`OpenAIResponsesCompactionSession` uses this path when its wrapped session does not implement
[`AtomicReplacementSession`][turnstore.memory.AtomicReplacementSession].
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from typing import TYPE_CHECKING

from ...exceptions import SessionStorageError
from ..codec import WHOLE_HISTORY
from ..mutation import await_session_mutation
from ..session import Session

if TYPE_CHECKING:
    from ...items import TResponseInputItem

__all__ = ["WHOLE_HISTORY", "ReplaceAndRestore", "canonical"]

logger = logging.getLogger(__name__)


def canonical(items: list[TResponseInputItem]) -> str:
    """The items as canonical JSON, to compare two histories."""
    return json.dumps(items, sort_keys=True, ensure_ascii=False)


class ReplaceAndRestore:
    """The replace-and-restore path of `OpenAIResponsesCompactionSession` (a mixin)."""

    session_id: str
    underlying_session: Session
    _mutation_lock: asyncio.Lock
    _known: list[TResponseInputItem] | None

    # -- replacement -----------------------------------------------------------------------

    async def _replace(
        self, prefix: list[TResponseInputItem], output: list[TResponseInputItem]
    ) -> bool:
        """Put `output` in place of `prefix`, keeping whatever follows it now."""
        async with self._mutation_lock:
            current = await self.underlying_session.get_items(WHOLE_HISTORY)
            self._known = copy.deepcopy(current)
            if canonical(current[: len(prefix)]) != canonical(prefix):
                logger.warning(
                    "compaction result for %s discarded: the history changed during the call",
                    self.session_id,
                )
                return False
            new = [*output, *current[len(prefix) :]]
            self._known = None
            await self._swap(current, new)
            self._known = copy.deepcopy(new)
            return True

    async def _swap(
        self, previous: list[TResponseInputItem], new: list[TResponseInputItem]
    ) -> None:
        """Replace `previous` with `new` on any session; restore `previous` on any failure."""
        try:
            await self._write_history(new)
        except BaseException as exc:
            await await_session_mutation(self._restore(previous, exc))
            if isinstance(exc, Exception) and not isinstance(exc, SessionStorageError):
                raise SessionStorageError(
                    f"writing the compacted history of {self.session_id!r} failed; the previous "
                    f"history was restored: {exc!r}"
                ) from exc
            raise

    async def _write_history(self, items: list[TResponseInputItem]) -> None:
        """Make `items` the whole history: clear, add, and read back to verify."""
        session = self.underlying_session
        await session.clear_session()
        if items:
            await session.add_items(items)
        stored = await session.get_items(WHOLE_HISTORY)
        if canonical(stored) != canonical(items):
            raise SessionStorageError(
                f"session {self.session_id!r} holds {len(stored)} items after writing "
                f"{len(items)}: the write did not read back as written"
            )

    async def _restore(self, previous: list[TResponseInputItem], cause: BaseException) -> None:
        try:
            await self._write_history(previous)
        except Exception as exc:
            logger.error(
                "restoring the history of %s after a failed compaction failed; its %d previous "
                "items follow as JSON: %s",
                self.session_id,
                len(previous),
                canonical(previous),
            )
            raise SessionStorageError(
                f"writing the compacted history of {self.session_id!r} failed ({cause!r}) and "
                f"restoring its {len(previous)} previous items failed too ({exc!r}); they are "
                f"logged as JSON on the {logger.name!r} logger"
            ) from exc
