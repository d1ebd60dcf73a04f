"""EncryptedSession: every item encrypted at rest, in any session.

Needs the `encryption` extra (`pip install 'turnstore[encryption]'`, which installs
`cryptography`).

How it stores an item: the item's JSON is encrypted with Fernet (AES-128-CBC with an HMAC-SHA256,
and a timestamp) under a key derived for this session from the master key and the session id with
HKDF-SHA256, and the wrapped session stores only the envelope
`{"__enc__": 1, "v": 1, "kid": "hkdf-v1", "payload": "<token>"}`. The derivation and the envelope
are those of the OpenAI Agents SDK's `EncryptedSession`, so a history it encrypted reads back here
with the same key, and the other way round.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
import inspect
import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..exceptions import SessionDecryptionError, UserError
from .closing import AsyncCloseable
from .codec import WHOLE_HISTORY, check_limit, encode_items
from .extras import missing_extra
from .session import (
    AtomicReplacementSession,
    HistorySnapshot,
    Session,
    WrapperSessionABC,
    is_atomic_replacement_session,
)
from .settings import resolve_session_limit

if TYPE_CHECKING:
    from cryptography.fernet import Fernet

    from ..items import TResponseInputItem

__all__ = ["EncryptedSession"]

logger = logging.getLogger(__name__)

_INFO = b"agents.session-store.hkdf.v1"
_KEY_ID = "hkdf-v1"
_VERSION = 1
_ROTATE_ATTEMPTS = 5
"""How often `rotate()` retries when another writer changes the history while it re-encrypts."""
_PRUNE_EVERY = 60.0
"""Seconds between two prunes of expired items triggered by `add_items`."""

_PASSED_THROUGH = frozenset(
    {
        # AdvancedSQLiteSession: branch names and token counts hold no item content.
        "current_branch_id",
        "switch_to_branch",
        "delete_branch",
        "get_session_usage",
        "get_turn_usage",
        # Connection-level attributes of the built-in backends.
        "db_path",
        "client",
        "engine",
        "ping",
    }
)
"""What `EncryptedSession` passes through to the wrapped session: what is right on ciphertext."""

_ON_PLAINTEXT = {
    "get_archived_items": "_archived_items",
    "list_branches": "_list_branches",
    "get_conversation_turns": "_conversation_turns",
    "find_turns_by_content": "_find_turns_by_content",
    "get_conversation_by_turns": "_conversation_by_turns",
    "get_tool_usage": "_tool_usage",
    "create_branch_from_turn": "_create_branch_from_turn",
    "create_branch_from_content": "_create_branch_from_content",
    "record_turn_usage": "_record_turn_usage",
    "store_run_usage": "_store_run_usage",
}
"""Methods of the wrapped session that `EncryptedSession` offers, when the wrapped session has
them, by running them on the decrypted items (name -> this class's implementation)."""


def _fernet_module() -> Any:
    try:
        from cryptography import fernet
    except ImportError as exc:
        raise missing_extra("EncryptedSession", "encryption") from exc
    return fernet


def _master_bytes(key: object, index: int) -> bytes:
    """A Fernet key (url-safe base64 of 32 bytes) gives its 32 bytes; other text its UTF-8."""
    if isinstance(key, bytes):
        key = key.decode("ascii", "strict") if key.isascii() else key
    if isinstance(key, bytes):
        raw: bytes = key
    elif isinstance(key, str):
        if not key:
            raise ValueError(f"encryption key {index} is empty")
        try:
            decoded = base64.urlsafe_b64decode(key)
        except (binascii.Error, ValueError):
            decoded = b""
        raw = decoded if len(decoded) == 32 else key.encode("utf-8")
    else:
        raise TypeError(
            f"encryption key {index} must be a str or bytes (for example "
            f"Fernet.generate_key()), not {type(key).__name__}"
        )
    if not raw:
        raise ValueError(f"encryption key {index} is empty")
    return raw


def _session_fernet(master: bytes, session_id: str) -> Fernet:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    derived = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=session_id.encode("utf-8"), info=_INFO
    ).derive(master)
    fernet: Fernet = _fernet_module().Fernet(base64.urlsafe_b64encode(derived))
    return fernet


def _is_envelope(item: object) -> bool:
    return (
        isinstance(item, dict)
        and item.get("__enc__") == 1
        and isinstance(item.get("payload"), str)
        and "kid" in item
        and "v" in item
    )


def _claims_envelope(item: object) -> bool:
    """Whether a stored item says it is an envelope (has `__enc__`), valid or not."""
    return isinstance(item, dict) and "__enc__" in item


_OFF_LOOP_ITEMS = 64
"""Batches at least this long are encrypted or decrypted on a worker thread, so that the event
loop is not held up for the length of the batch."""

_T = TypeVar("_T")


async def _off_loop_if_large(work: Callable[[list[Any]], _T], batch: list[Any]) -> _T:
    if len(batch) >= _OFF_LOOP_ITEMS:
        return await asyncio.to_thread(work, batch)
    return work(batch)


class EncryptedSession(WrapperSessionABC, AsyncCloseable):
    """A wrapper that encrypts every item before the wrapped session stores it.

    Works on any session ([`SQLiteSession`][turnstore.SQLiteSession],
    [`SQLAlchemySession`][turnstore.SQLAlchemySession],
    [`RedisSession`][turnstore.RedisSession], your own): the storage only ever sees
    ciphertext. Each session id gets its own key, derived from the master key with HKDF, so one
    session's ciphertext cannot be moved into another.

    Reading: items older than `ttl` seconds are skipped (an item stays readable for its whole
    `ttl`, and up to a second longer: the token's time is whole seconds). Writing: on a
    session with an atomic replacement (`SQLiteSession`, `SQLAlchemySession`,
    `RedisSession`), `add_items` also
    deletes the expired items from storage, at most once a minute per session object;
    elsewhere they stay stored until the wrapped session's own expiry (a Redis `ttl`) or a
    retention job removes them. Stored items that
    are not envelopes (plaintext written around this wrapper) are skipped with a logged
    warning: they were never authenticated. This session never deletes them (nor anything else
    it cannot read): not when it prunes, rotates or pops.
    An envelope that none of the keys authenticates, or a damaged one (`__enc__` set, the rest
    missing), raises [`SessionDecryptionError`][turnstore.SessionDecryptionError] and changes
    nothing: a wrong key never reads as an empty history, and `pop_item` does not remove what
    it cannot read.

    Over a session with an atomic replacement, this session has one too
    ([`is_atomic_replacement_session`][turnstore.memory.is_atomic_replacement_session] tells):
    wrapped in [`OpenAIResponsesCompactionSession`][turnstore.OpenAIResponsesCompactionSession], it
    is compacted in one atomic step. Methods of the wrapped session do not pass through, since
    they would work on ciphertext; only an allow-list does (branch switching and deletion,
    `current_branch_id`, usage counts, connection attributes), and the turn, search, branching
    and usage methods of an [`AdvancedSQLiteSession`][turnstore.AdvancedSQLiteSession] run on
    the decrypted items. Any other raises `AttributeError` naming `.underlying_session`.

    Key rotation: pass a list of keys. New items are encrypted with the first; every key of the
    list decrypts. [`rotate`][turnstore.EncryptedSession.rotate] re-encrypts the stored history
    with the first key (keeping each item's age), after which the old keys can be dropped.

    Args:
        session_id: Identifies the conversation; also salts the key derivation.
        underlying_session: The session that stores the envelopes. Its `session_settings` are
            this session's settings.
        encryption_key: The master key: a Fernet key (`Fernet.generate_key()`), or any other
            high-entropy secret as text or bytes (a password is not: HKDF does not stretch it).
            A list of keys enables rotation; the first encrypts.
        ttl: Seconds after which an item is no longer returned; `None` keeps items readable
            forever. The OpenAI Agents SDK's default, 600, applies when omitted.
        max_scan_items: At most this many stored items are read by one `get_items` while it
            looks for `limit` readable ones (past it, `RuntimeError`); `None` reads as many as
            needed. As in the OpenAI Agents SDK.

    Raises:
        ImportError: The `encryption` extra is not installed.
        TypeError: A key is not str or bytes, `ttl` is not a number, or `max_scan_items` is
            not an int.
        ValueError: No key, an empty key, or a `ttl` or `max_scan_items` that is not positive.
        UserError: `underlying_session` is not a session.

    Example:
        ```python
        from cryptography.fernet import Fernet
        from turnstore import EncryptedSession, SQLiteSession

        key = Fernet.generate_key().decode()  # keep it in your secret store
        session = EncryptedSession(
            "user_42", SQLiteSession("user_42", "chats.db"), encryption_key=key, ttl=86400
        )
        ```
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> EncryptedSession:  # noqa: D102
        # Over a session with an atomic replacement, the wrapper has one too (so that
        # compaction swaps the history in one step); over any other, it has none, and
        # `is_atomic_replacement_session` says so.
        underlying = kwargs.get("underlying_session", args[1] if len(args) > 1 else None)
        if is_atomic_replacement_session(underlying):
            cls = _with_atomic_replacement(cls)
        return super().__new__(cls)

    def __init__(
        self,
        session_id: str,
        underlying_session: Session,
        encryption_key: str | bytes | Sequence[str | bytes],
        ttl: float | None = 600,
        max_scan_items: int | None = None,
    ) -> None:
        fernet = _fernet_module()  # first: a missing extra is the error to report
        if not isinstance(session_id, str):
            raise TypeError(f"session_id must be a str, not {type(session_id).__name__}")
        if not isinstance(underlying_session, Session):
            raise UserError(
                "underlying_session must be a Session (get_items, add_items, pop_item, "
                f"clear_session), got {type(underlying_session).__name__}"
            )
        if ttl is not None:
            if isinstance(ttl, bool) or not isinstance(ttl, int | float):
                raise TypeError(f"ttl must be seconds (int or float) or None, not {ttl!r}")
            if not ttl > 0:
                raise ValueError(f"ttl must be positive or None, got {ttl!r}")
        if max_scan_items is not None:
            if isinstance(max_scan_items, bool) or not isinstance(max_scan_items, int):
                raise TypeError(
                    f"max_scan_items must be an int or None, not {type(max_scan_items).__name__}"
                )
            if max_scan_items <= 0:
                raise ValueError("max_scan_items must be positive or None")
        keys = [encryption_key] if isinstance(encryption_key, str | bytes) else encryption_key
        if not isinstance(keys, Sequence) or not keys:
            raise ValueError("encryption_key must be a key or a non-empty list of keys")
        masters = [_master_bytes(key, index) for index, key in enumerate(keys)]
        self.session_id = session_id
        self.underlying_session = underlying_session
        self.ttl = ttl
        self.max_scan_items = max_scan_items
        self._fernets = [_session_fernet(master, session_id) for master in masters]
        self._invalid_token: type[Exception] = fernet.InvalidToken
        self._last_prune: float | None = None

    @property
    def cipher(self) -> Fernet:
        """The `Fernet` of this session's key derived from the first master key (it encrypts)."""
        return self._fernets[0]

    def __getattr__(self, name: str) -> Any:
        # Nothing passes through by default: a method of the wrapped session would search,
        # count or copy ciphertext and answer as if the history were empty.
        if name.startswith("_") or "underlying_session" not in vars(self):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        underlying = self.underlying_session
        if name in _PASSED_THROUGH:
            return getattr(underlying, name)
        own = _ON_PLAINTEXT.get(name)
        if own is not None and callable(getattr(underlying, name, None)):
            return getattr(self, own)
        kind = type(underlying).__name__
        if hasattr(underlying, name):
            raise AttributeError(
                f"EncryptedSession does not pass {name!r} through to the wrapped {kind}: it "
                "would work on the encrypted envelopes, not on the items. Call it on "
                "`.underlying_session` only if it needs no item content."
            )
        raise AttributeError(
            f"{type(self).__name__!r} object has no attribute {name!r} (nor has the wrapped "
            f"{kind}, `.underlying_session`)"
        )

    # -- envelopes -----------------------------------------------------------------------------

    def _seal(self, plain: str) -> dict[str, Any]:
        token = self._fernets[0].encrypt(plain.encode("utf-8")).decode("ascii")
        return {"__enc__": 1, "v": _VERSION, "kid": _KEY_ID, "payload": token}

    def _seal_all(self, items: list[TResponseInputItem]) -> list[dict[str, Any]]:
        # The codec every backend uses validates and encodes: the same items are refused here
        # as anywhere (TypeError naming the index), and whatever is sealed decodes again.
        return [self._seal(plain) for plain in encode_items(items)]

    def _open(self, stored: Any, where: str) -> tuple[dict[str, Any], int, int] | None:
        """Authenticate and decrypt one stored item.

        Returns:
            (item, timestamp, index of the key that opened it), or `None` for a non-envelope.

        Raises:
            SessionDecryptionError: No key authenticates the envelope.
        """
        if not _is_envelope(stored):
            if _claims_envelope(stored):
                raise SessionDecryptionError(
                    f"{where} of encrypted session {self.session_id!r} is a damaged envelope "
                    "(it has `__enc__` but not a version, key id and text payload): it was "
                    "altered in storage. Nothing was changed; remove or restore that item in "
                    "the wrapped session."
                )
            logger.warning(
                "skipping %s of encrypted session %r: it is not an encrypted envelope",
                where,
                self.session_id,
            )
            return None
        token = stored["payload"].encode("ascii", "replace")
        for index, fernet in enumerate(self._fernets):
            try:
                plain = fernet.decrypt(token)
                stamp = fernet.extract_timestamp(token)
            except self._invalid_token:
                continue
            item = json.loads(plain)
            if not isinstance(item, dict):
                raise SessionDecryptionError(
                    f"{where} of encrypted session {self.session_id!r} decrypts to a JSON "
                    f"{type(item).__name__}, not an item"
                )
            return item, stamp, index
        raise SessionDecryptionError(
            f"{where} of encrypted session {self.session_id!r} cannot be decrypted with "
            f"{'the given key' if len(self._fernets) == 1 else 'any of the given keys'}: a wrong "
            "key, or a history written under another session id. Nothing was changed; pass the "
            "key that wrote it (a list of keys during a rotation)."
        )

    def _expired(self, stamp: int, now: float) -> bool:
        # The token's time is whole seconds, cut down: the item was written within the second
        # after `stamp`, so it expires only once a whole `ttl` has passed since the end of it.
        return self.ttl is not None and now - stamp >= self.ttl + 1

    def _open_all(self, stored: list[Any]) -> list[tuple[dict[str, Any], int, int]]:
        opened = []
        for index, element in enumerate(stored):
            result = self._open(element, f"item {index}")
            if result is not None:
                opened.append(result)
        return opened

    # -- the Session protocol ------------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Return the readable, unexpired items, oldest first.

        Args:
            limit: Return only the latest `limit` such items. `None` uses the settings' limit,
                or returns everything.

        Returns:
            The decrypted items.

        Raises:
            SessionDecryptionError: A stored envelope cannot be decrypted with the keys given,
                or is damaged.
            ValueError: `limit` is negative.
            RuntimeError: `max_scan_items` stored items were read without establishing the
                result (too many expired or plaintext items in the way); nothing changed.
        """
        budget = self.max_scan_items
        if budget is not None and isinstance(limit, int) and limit < 0:
            raise ValueError("limit must be non-negative when max_scan_items is set")
        wanted = check_limit(resolve_session_limit(limit, self.session_settings))
        if wanted == 0:
            return []
        window = WHOLE_HISTORY if wanted is None else wanted
        if budget is not None:
            window = min(window, budget)
        while True:
            stored = await self.underlying_session.get_items(window)
            opened = await _off_loop_if_large(self._open_all, stored)
            now = time.time()
            items = [item for item, stamp, _ in opened if not self._expired(stamp, now)]
            if (wanted is not None and len(items) >= wanted) or len(stored) < window:
                return cast(
                    "list[TResponseInputItem]", items if wanted is None else items[-wanted:]
                )
            next_window = min(window * 2, WHOLE_HISTORY)
            if budget is not None:
                budget -= len(stored)
                next_window = min(next_window, budget)
                if next_window <= window:
                    raise RuntimeError(
                        f"EncryptedSession max_scan_items exhausted: {self.max_scan_items} "
                        f"stored items of session {self.session_id!r} were read without "
                        "finding the requested history (expired or plaintext items in the "
                        "way); raise max_scan_items, or prune_expired()"
                    )
            window = next_window

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Encrypt the items and append them to the wrapped session, all or none.

        When the items are stored the call succeeds: the pruning of expired items that may
        follow (see the class) only logs a warning when it fails.

        Args:
            items: The items to append, in order.

        Raises:
            TypeError: `items` is not a list, or an item is not a JSON-serialisable mapping;
                nothing is stored.
        """
        if not isinstance(items, list):
            raise TypeError(f"items must be a list of item dicts, not {type(items).__name__}")
        sealed = await _off_loop_if_large(self._seal_all, items)
        await self.underlying_session.add_items(cast("list[TResponseInputItem]", sealed))
        if self._prune_due():
            # The items are stored: a failed clean-up must not read as a failed write (a caller
            # retrying it would store the batch twice). The next due prune tries again.
            try:
                await self.prune_expired()
            except Exception as exc:
                logger.warning(
                    "pruning expired items of encrypted session %r after a write failed: %s",
                    self.session_id,
                    exc,
                )

    def _prune_due(self) -> bool:
        """Prune on a write at most once per `_PRUNE_EVERY` seconds, where it can be atomic."""
        if self.ttl is None or not is_atomic_replacement_session(self.underlying_session):
            return False
        now = time.monotonic()
        if self._last_prune is not None and now - self._last_prune < _PRUNE_EVERY:
            return False
        self._last_prune = now
        return True

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest unexpired item; expired ones above it go with it.

        The item removed is the one `get_items()` returns last. What this session cannot read
        is never removed: the newest stored item is authenticated before anything is removed
        (with a wrong key, or a damaged envelope, this raises
        [`SessionDecryptionError`][turnstore.SessionDecryptionError] and removes nothing), and
        plaintext items (not envelopes) above the newest readable item stay where they are:
        that item is removed from under them in one atomic replacement, which rewrites the
        stored items below it.

        Returns:
            The removed item, or `None` when no unexpired item is left.

        Raises:
            SessionDecryptionError: The newest stored item cannot be read; or plaintext items
                lie above the newest readable item and the wrapped session has no atomic
                replacement to remove it from under them. Nothing was removed.
        """
        while True:
            newest = await self.underlying_session.get_items(1)
            if not newest:
                return None
            # Raises before anything is removed; plaintext on top is never popped.
            if self._open(newest[0], "the newest item") is None:
                return await self._pop_under_plaintext()
            popped = await self.underlying_session.pop_item()
            if popped is None:
                return None
            try:
                opened = self._open(popped, "the newest item")
            except SessionDecryptionError:
                # Another writer added an unreadable item in between: put it back.
                await self.underlying_session.add_items([popped])
                raise
            if opened is None:
                # Another writer added a plaintext item in between: put it back, and look again.
                await self.underlying_session.add_items([popped])
                continue
            if not self._expired(opened[1], time.time()):
                return cast("TResponseInputItem", opened[0])

    async def _pop_under_plaintext(self) -> TResponseInputItem | None:
        """Remove the newest readable, unexpired item from under plaintext items, atomically."""
        from ..exceptions import SessionStorageError

        underlying = self.underlying_session
        if not is_atomic_replacement_session(underlying):
            raise SessionDecryptionError(
                f"the newest item of encrypted session {self.session_id!r} is not an encrypted "
                "envelope (plaintext written around this wrapper): pop_item does not remove "
                f"what it cannot read, and the wrapped {type(underlying).__name__} has no "
                "atomic replacement to remove the readable item below it. Nothing was removed; "
                "remove the plaintext item with `.underlying_session.pop_item()` if it should go"
            )
        for _ in range(_ROTATE_ATTEMPTS):
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
            f"{_ROTATE_ATTEMPTS} attempts to pop its newest item; nothing was removed"
        )

    async def clear_session(self) -> None:
        """Remove every item of the wrapped session."""
        await self.underlying_session.clear_session()

    # -- rotation and pruning ------------------------------------------------------------------

    async def rotate(self) -> int:
        """Re-encrypt the stored history with the first key, in one atomic replacement.

        Every stored envelope is decrypted (with whichever key opens it) and encrypted again
        with the first key, keeping its original timestamp (so `ttl` still counts from when the
        item was added); expired items are dropped, and plaintext items (not envelopes) stay
        as they are. Afterwards the other keys are no longer needed for this session.

        On a `SQLiteSession` (and so an `AdvancedSQLiteSession`) every row the session owns is
        re-encrypted in place in one transaction: every branch, and the compaction archive;
        the expired items of the current history are then pruned. Elsewhere the history is
        replaced in one atomic replacement.

        Returns:
            How many readable, unexpired items the history holds after the rotation.

        Raises:
            SessionDecryptionError: An envelope opens with none of the keys; nothing changed.
            UserError: The wrapped session has no atomic replacement (see
                [`AtomicReplacementSession`][turnstore.memory.AtomicReplacementSession];
                `SQLiteSession`, `SQLAlchemySession` and `RedisSession` have one).
            SessionStorageError: The history kept changing during five attempts; nothing
                changed.
        """
        rewrite_rows = getattr(self.underlying_session, "rewrite_stored_items", None)
        if callable(rewrite_rows):
            await rewrite_rows(self._rotated)
            return await self._rewrite(rotate=False)
        return await self._rewrite(rotate=True)

    def _rotated(self, text: str) -> str | None:
        """The stored JSON text of an envelope re-encrypted with the first key, or `None`."""
        try:
            stored = json.loads(text)
        except ValueError:
            return None  # a corrupt row: no ciphertext to rotate
        opened = self._open(stored, "a stored item")
        if opened is None or opened[2] == 0:
            return None
        return encode_items([self._reseal(stored, opened[2])])[0]

    async def prune_expired(self) -> int:
        """Delete the expired items from storage, in one atomic replacement.

        Only envelopes that a key opens and whose `ttl` has passed are deleted. What this session
        cannot read stays: plaintext items (not envelopes), and rows the wrapped session cannot
        decode (the replacement stops before the first of them). An envelope that no key
        opens raises and changes nothing (the sweep after `add_items` logs a warning then).

        Returns:
            How many readable, unexpired items the history holds afterwards.

        Raises:
            SessionDecryptionError: An envelope opens with none of the keys, or is damaged;
                nothing changed.
            UserError: The wrapped session has no atomic replacement (see
                [`AtomicReplacementSession`][turnstore.memory.AtomicReplacementSession]).
        """
        return await self._rewrite(rotate=False)

    async def _rewrite(self, *, rotate: bool) -> int:
        from ..exceptions import SessionStorageError

        underlying = self.underlying_session
        if not is_atomic_replacement_session(underlying):
            raise UserError(
                f"{type(underlying).__name__} has no atomic replacement, which rotate() and "
                "prune_expired() need; use a SQLiteSession, SQLAlchemySession or RedisSession "
                "underneath"
            )
        for _ in range(_ROTATE_ATTEMPTS):
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
                        element = self._reseal(element, opened[2])
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
            f"{_ROTATE_ATTEMPTS} attempts to rewrite it; nothing was changed"
        )

    def _reseal(self, envelope: dict[str, Any], key_index: int) -> dict[str, Any]:
        multi = _fernet_module().MultiFernet([self._fernets[0], self._fernets[key_index]])
        token = multi.rotate(envelope["payload"].encode("ascii")).decode("ascii")
        return {**envelope, "payload": token}

    # -- the wrapped session's own methods, on the decrypted items ------------------------------

    async def _plain(self, items: list[Any]) -> list[tuple[dict[str, Any], int]]:
        """(item, token time) of the readable, unexpired items among stored ones."""
        opened = await _off_loop_if_large(self._open_all, items)
        now = time.time()
        return [(item, stamp) for item, stamp, _ in opened if not self._expired(stamp, now)]

    async def _branch_items(self, branch_id: str | None) -> list[tuple[dict[str, Any], int]]:
        underlying: Any = self.underlying_session
        stored = await underlying.get_items(WHOLE_HISTORY, branch_id=branch_id)
        return await self._plain(stored)

    async def _archived_items(self) -> list[TResponseInputItem]:
        underlying: Any = self.underlying_session
        stored = await underlying.get_archived_items()
        return cast("list[TResponseInputItem]", [item for item, _ in await self._plain(stored)])

    async def _list_branches(self) -> list[dict[str, Any]]:
        from .sqlite.advanced.items import is_user

        underlying: Any = self.underlying_session
        listed: list[dict[str, Any]] = await underlying.list_branches()
        for entry in listed:
            items = await self._branch_items(entry["branch_id"])
            entry["user_turns"] = sum(1 for item, _ in items if is_user(item))
        return listed

    async def _turns(self, branch_id: str | None, search_term: str | None) -> list[dict[str, Any]]:
        from .sqlite.advanced.analytics import user_turns

        if search_term is not None and not isinstance(search_term, str):
            raise TypeError(f"search_term must be a str, not {type(search_term).__name__}")
        rows = [
            (index, item, time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(stamp)))
            for index, (item, stamp) in enumerate(await self._branch_items(branch_id))
        ]
        if search_term is None:
            return user_turns(rows, None, 100)
        return user_turns(rows, re.compile(re.escape(search_term), re.I | re.ASCII), None)

    async def _conversation_turns(self, branch_id: str | None = None) -> list[dict[str, Any]]:
        return await self._turns(branch_id, None)

    async def _find_turns_by_content(
        self, search_term: str, branch_id: str | None = None
    ) -> list[dict[str, Any]]:
        return await self._turns(branch_id, search_term)

    async def _conversation_by_turns(
        self, branch_id: str | None = None
    ) -> dict[int, list[dict[str, str | None]]]:
        from .sqlite.advanced.items import message_type, numbered_turns, tool_name

        items = [item for item, _ in await self._branch_items(branch_id)]
        grouped: dict[int, list[dict[str, str | None]]] = {}
        for turn, item in numbered_turns(items):
            entry = {"type": message_type(item), "tool_name": tool_name(item)}
            grouped.setdefault(turn, []).append(entry)
        return grouped

    async def _tool_usage(self, branch_id: str | None = None) -> list[tuple[str, int, int]]:
        from .sqlite.advanced.items import tool_usage

        return tool_usage(item for item, _ in await self._branch_items(branch_id))

    async def _current_turn(self) -> int:
        from .sqlite.advanced.items import is_user

        return sum(1 for item, _ in await self._branch_items(None) if is_user(item))

    async def _record_turn_usage(self, usage: Any) -> None:
        underlying: Any = self.underlying_session
        await underlying.record_turn_usage(usage, turn=await self._current_turn())

    async def _store_run_usage(self, result: Any) -> None:
        underlying: Any = self.underlying_session
        await underlying.store_run_usage(result, turn=await self._current_turn())

    async def _create_branch_from_turn(
        self, turn_number: int, branch_name: str | None = None
    ) -> str:
        from .sqlite.advanced.items import is_user

        underlying: Any = self.underlying_session
        if isinstance(turn_number, bool) or not isinstance(turn_number, int):
            raise TypeError(f"turn_number must be an int, not {type(turn_number).__name__}")
        snapshot = await underlying.snapshot_history()
        now = time.time()
        turn, row = 0, None
        for index, stored in enumerate(snapshot.items):
            opened = self._open(stored, f"item {index}")
            if opened is None or self._expired(opened[1], now) or not is_user(opened[0]):
                continue
            turn += 1
            if turn == turn_number:
                row = snapshot.rows[snapshot.item_rows[index]]
                break
        if row is None:
            raise ValueError(
                f"Turn {turn_number} does not contain a user message in branch "
                f"'{underlying.current_branch_id}'"
            )
        name: str = await underlying.create_branch_from_turn(turn_number, branch_name, user_row=row)
        return name

    async def _create_branch_from_content(
        self, search_term: str, branch_name: str | None = None
    ) -> str:
        matches = await self._turns(None, search_term)
        if not matches:
            raise ValueError(f"No user turns found containing '{search_term}'")
        return await self._create_branch_from_turn(int(matches[0]["turn"]), branch_name)

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> Any:
        """Close the wrapped session with its own `close()`, and return what that returns.

        As in the OpenAI Agents SDK, where this call reaches the wrapped session: a plain call
        over a `SQLiteSession` or `AdvancedSQLiteSession`, a coroutine to await over the
        others. A wrapped session without `close()` is left as it is.

        Returns:
            `None`, or the awaitable the wrapped session's `close()` returned.
        """
        close = getattr(self.underlying_session, "close", None)
        return close() if callable(close) else None

    async def aclose(self) -> None:
        """Close the wrapped session and wait until it has released its resources."""
        aclose = getattr(self.underlying_session, "aclose", None)
        result = aclose() if callable(aclose) else self.close()
        if inspect.isawaitable(result):
            await result


class _AtomicEncryptedSession(EncryptedSession):
    """`EncryptedSession` over a session with an atomic replacement: it offers one too.

    `EncryptedSession(...)` returns this class when the wrapped session is an
    [`AtomicReplacementSession`][turnstore.memory.AtomicReplacementSession], so that compaction over
    an encrypted session swaps the history in one step (never clear, then add).
    """

    async def snapshot_history(self) -> HistorySnapshot:
        """Read the wrapped session's snapshot and decrypt its items.

        Expired items and non-envelopes count as rows without an item: a replacement that
        covers them removes them.

        Raises:
            SessionDecryptionError: A stored envelope cannot be decrypted, or is damaged.
        """
        underlying = cast(AtomicReplacementSession, self.underlying_session)
        stored = await underlying.snapshot_history()
        opened = await _off_loop_if_large(self._open_each, list(stored.items))
        now = time.time()
        mapped = len(stored.item_rows) == len(stored.items)
        items: list[TResponseInputItem] = []
        item_rows: list[int] = []
        for index, result in enumerate(opened):
            if result is None or self._expired(result[1], now):
                continue
            items.append(cast("TResponseInputItem", result[0]))
            if mapped:
                item_rows.append(stored.item_rows[index])
        return HistorySnapshot(items, stored.rows, tuple(item_rows))

    def _open_each(self, stored: list[Any]) -> list[tuple[dict[str, Any], int, int] | None]:
        return [self._open(element, f"item {index}") for index, element in enumerate(stored)]

    async def replace_history(
        self,
        snapshot: HistorySnapshot,
        new_items: list[TResponseInputItem],
        *,
        archive: bool = True,
    ) -> bool:
        """Encrypt `new_items` and replace the snapshot's rows by them, atomically.

        Args:
            snapshot: What `snapshot_history` returned, possibly narrowed with `prefix`.
            new_items: The plaintext items that take the place of the snapshot's rows.
            archive: Passed to the wrapped session (its archive holds envelopes).

        Returns:
            `True` when replaced; `False`, changing nothing, when the rows changed meanwhile.

        Raises:
            TypeError: An item of `new_items` is not a JSON-serialisable mapping; nothing
                changed.
        """
        HistorySnapshot.check(snapshot)
        if not isinstance(new_items, list):
            raise TypeError(
                f"new_items must be a list of item dicts, not {type(new_items).__name__}"
            )
        sealed = await _off_loop_if_large(self._seal_all, new_items)
        underlying = cast(AtomicReplacementSession, self.underlying_session)
        # The wrapped session identifies its rows by `snapshot.rows`, which are its own.
        return await underlying.replace_history(
            snapshot, cast("list[TResponseInputItem]", sealed), archive=archive
        )


@functools.cache
def _with_atomic_replacement(cls: type[EncryptedSession]) -> type[EncryptedSession]:
    """`cls` with the atomic replacement of `_AtomicEncryptedSession` (a subclass keeps its own)."""
    if cls is EncryptedSession:
        return _AtomicEncryptedSession
    if issubclass(cls, _AtomicEncryptedSession):
        return cls
    return type(cls.__name__, (cls, _AtomicEncryptedSession), {"__module__": cls.__module__})
