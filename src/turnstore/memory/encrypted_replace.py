"""What `EncryptedSession` does through the wrapped session's atomic replacement.

Compaction's snapshot and replacement, `rotate` and `prune_expired` (one rewrite), and popping
the newest readable item from under plaintext items. The rule they share: what the wrapper cannot
read (plaintext items, rows the wrapped session cannot decode) is never deleted.
"""

from __future__ import annotations

import asyncio
import json
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..exceptions import SessionDecryptionError, SessionStorageError, UserError
from .codec import encode_items
from .envelopes import Envelopes, Opened, is_envelope
from .session import (
    AtomicReplacementSession,
    HistorySnapshot,
    Session,
    is_atomic_replacement_session,
)

if TYPE_CHECKING:
    from ..items import TResponseInputItem

__all__ = ["AtomicReplacement", "IfWrappedHas", "off_loop_if_large"]

REWRITE_ATTEMPTS = 5
"""How often a rewrite retries when another writer changes the history meanwhile."""


OFF_LOOP_ITEMS = 64
"""Batches at least this long are encrypted or decrypted on a worker thread, so that the event
loop is not held up for the length of the batch."""

_T = TypeVar("_T")


async def off_loop_if_large(work: Callable[[list[Any]], _T], batch: list[Any]) -> _T:
    """`work(batch)`, on a worker thread when the batch is long."""
    if len(batch) >= OFF_LOOP_ITEMS:
        return await asyncio.to_thread(work, batch)
    return work(batch)


class IfWrappedHas:
    """A method that `EncryptedSession` offers only when the wrapped session has its name."""

    def __init__(self, method: Callable[..., Any]) -> None:
        self.method = method
        self.name = method.__name__
        self.__doc__ = method.__doc__

    def __get__(self, session: Any, owner: type | None = None) -> Any:
        if session is None:
            return self.method
        if not callable(getattr(session.underlying_session, self.name, None)):
            raise AttributeError(self.name)  # `__getattr__` then says why
        return types.MethodType(self.method, session)


@dataclass(frozen=True, slots=True)
class SealedSnapshot(HistorySnapshot):
    """A snapshot of the decrypted items that remembers the wrapped session's own snapshot."""

    stored: HistorySnapshot | None = None

    def prefix(self, count: int) -> HistorySnapshot:
        narrowed = HistorySnapshot.prefix(self, count)
        return SealedSnapshot(narrowed.items, narrowed.rows, narrowed.item_rows, self.stored)

    def plaintext(self) -> list[Any]:
        """The stored plaintext items (not envelopes) among the rows this snapshot covers."""
        stored = self.stored
        if stored is None:
            return []
        mapped = len(stored.item_rows) == len(stored.items)
        return [
            item
            for index, item in enumerate(stored.items)
            if not is_envelope(item) and (not mapped or stored.item_rows[index] < len(self.rows))
        ]


class AtomicReplacement:
    """The methods of `EncryptedSession` that work through the wrapped session's replacement."""

    session_id: str
    underlying_session: Session
    _envelopes: Envelopes

    if TYPE_CHECKING:

        def _open(self, stored: Any, where: str) -> Opened | None: ...

        def _expired(self, stamp: int, now: float) -> bool: ...

    async def _pop_under_plaintext(self) -> TResponseInputItem | None:
        """Remove the newest readable, unexpired item from under plaintext items, atomically."""
        underlying = self.underlying_session
        if not is_atomic_replacement_session(underlying):
            raise SessionDecryptionError(
                f"the newest item of encrypted session {self.session_id!r} is not an encrypted "
                "envelope (plaintext written around this wrapper): pop_item does not remove "
                f"what it cannot read, and the wrapped {type(underlying).__name__} has no "
                "atomic replacement to remove the readable item below it. Nothing was removed; "
                "remove the plaintext item with `.underlying_session.pop_item()` if it should go"
            )
        for _ in range(REWRITE_ATTEMPTS):
            snapshot = await underlying.snapshot_history()
            now = time.time()
            for index in range(len(snapshot.items) - 1, -1, -1):
                opened = self._open(snapshot.items[index], f"item {index}")
                if opened is not None and not self._expired(opened[1], now):
                    break
            else:
                return None  # only plaintext and expired items: nothing this session returns
            below = snapshot.items[:index]
            if len(snapshot.item_rows) != len(snapshot.items):
                # The wrapped session does not map items to rows: replace the whole history.
                replaced, kept = snapshot, [*below, *snapshot.items[index + 1 :]]
            else:
                replaced, kept = snapshot.prefix(index + 1), below
                if len(replaced.rows) != len(replaced.items):
                    raise SessionStorageError(
                        f"encrypted session {self.session_id!r} holds stored rows that "
                        f"{type(underlying).__name__} cannot decode below its newest readable "
                        "item, under plaintext items: removing that item would delete them. "
                        "Nothing was removed"
                    )
            # Envelopes and plaintext below are stored again as they are: no archive copy.
            if await underlying.replace_history(replaced, kept, archive=False):
                return cast("TResponseInputItem", opened[0])
        raise SessionStorageError(
            f"the history of encrypted session {self.session_id!r} kept changing during "
            f"{REWRITE_ATTEMPTS} attempts to pop its newest item; nothing was removed"
        )

    def _rotated(self, text: str) -> str | None:
        """The stored JSON text of an envelope re-encrypted with the first key, or `None`."""
        try:
            stored = json.loads(text)
        except ValueError:
            return None  # a corrupt row: no ciphertext to rotate
        opened = self._open(stored, "a stored item")
        if opened is None or opened[2] == 0:
            return None
        return encode_items([self._envelopes.reseal(stored, opened[2])])[0]

    async def _rewrite(self, *, rotate: bool) -> int:
        underlying = self.underlying_session
        if not is_atomic_replacement_session(underlying):
            raise UserError(
                f"{type(underlying).__name__} has no atomic replacement, which rotate() and "
                "prune_expired() need; use a SQLiteSession, SQLAlchemySession or RedisSession "
                "underneath"
            )
        for _ in range(REWRITE_ATTEMPTS):
            snapshot = await underlying.snapshot_history()
            now = time.time()
            mapped = len(snapshot.item_rows) == len(snapshot.items)
            # Never deleted: what this session cannot read. An envelope no key opens raises
            # (nothing changes); plaintext is stored again as it is; and a prune covers no row
            # the wrapped session cannot decode (it stops before the first one).
            clean = len(snapshot.items)
            if mapped and not rotate:
                clean = next(
                    (i for i, row in enumerate(snapshot.item_rows) if row != i), len(snapshot.items)
                )
            kept: list[tuple[int, dict[str, Any]]] = []
            readable, covered = 0, 0
            for index, stored in enumerate(snapshot.items):
                element = cast(dict[str, Any], stored)
                opened = self._open(element, f"item {index}")
                if opened is not None and index < clean:
                    if self._expired(opened[1], now):
                        covered = index + 1
                        continue
                    if rotate and opened[2] != 0:
                        element = self._envelopes.reseal(element, opened[2])
                        covered = index + 1
                if opened is not None and not self._expired(opened[1], now):
                    readable += 1
                kept.append((index, element))
            if covered == 0:
                return readable  # nothing to drop or re-encrypt
            replaced = snapshot
            if mapped:
                # Only the rows up to the last item that changes; the later ones stay as stored.
                replaced = snapshot.prefix(covered)
                kept = [(index, element) for index, element in kept if index < covered]
            new_items = cast("list[TResponseInputItem]", [element for _, element in kept])
            # No archive: no ciphertext under an old key may stay behind.
            if await underlying.replace_history(replaced, new_items, archive=False):
                return readable
        raise SessionStorageError(
            f"the history of encrypted session {self.session_id!r} kept changing during "
            f"{REWRITE_ATTEMPTS} attempts to rewrite it; nothing was changed"
        )

    @IfWrappedHas
    async def snapshot_history(self) -> HistorySnapshot:
        """Read the wrapped session's snapshot and decrypt its items.

        Expired items count as rows without an item: a replacement that covers them removes
        them. Plaintext items (not envelopes) are not among the items either, but a
        replacement stores them again, before the new items: nothing unreadable is removed.

        Raises:
            SessionDecryptionError: A stored envelope cannot be decrypted, or is damaged.
        """
        underlying = cast(AtomicReplacementSession, self.underlying_session)
        stored = await underlying.snapshot_history()
        opened = await off_loop_if_large(self._open_each, list(stored.items))
        now = time.time()
        mapped = len(stored.item_rows) == len(stored.items)
        items: list[TResponseInputItem] = []
        item_rows: list[int] = []
        for index, result in enumerate(opened):
            if result is None or self._expired(result.stamp, now):
                continue
            items.append(cast("TResponseInputItem", result.item))
            if mapped:
                item_rows.append(stored.item_rows[index])
        return SealedSnapshot(items, stored.rows, tuple(item_rows), stored)

    def _open_each(self, stored: list[Any]) -> list[Opened | None]:
        return [self._open(element, f"item {index}") for index, element in enumerate(stored)]

    @IfWrappedHas
    async def replace_history(
        self,
        snapshot: HistorySnapshot,
        new_items: list[TResponseInputItem],
        *,
        archive: bool = True,
    ) -> bool:
        """Encrypt `new_items` and replace the snapshot's rows by them, atomically.

        The plaintext items among those rows are stored again as they are, before `new_items`.

        Args:
            snapshot: What `snapshot_history` returned, possibly narrowed with `prefix`.
            new_items: The plaintext items that take the place of the snapshot's rows.
            archive: Passed to the wrapped session (its archive holds envelopes).

        Returns:
            `True` when replaced; `False`, changing nothing, when the rows changed meanwhile.

        Raises:
            TypeError: `snapshot` does not come from this session's `snapshot_history`, or an
                item of `new_items` is not a JSON-serialisable mapping; nothing changed.
        """
        if not isinstance(HistorySnapshot.check(snapshot), SealedSnapshot):
            raise TypeError(
                "snapshot must come from this EncryptedSession's snapshot_history() (narrowed "
                "with prefix() if need be): it tells which stored items are plaintext to keep"
            )
        if not isinstance(new_items, list):
            raise TypeError(
                f"new_items must be a list of item dicts, not {type(new_items).__name__}"
            )
        sealed = await off_loop_if_large(self._envelopes.seal, new_items)
        underlying = cast(AtomicReplacementSession, self.underlying_session)
        # The wrapped session identifies its rows by `snapshot.rows`, which are its own.
        kept = [*cast(SealedSnapshot, snapshot).plaintext(), *sealed]
        return await underlying.replace_history(
            snapshot, cast("list[TResponseInputItem]", kept), archive=archive
        )
