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

import inspect
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..exceptions import SessionDecryptionError, SessionError, UserError
from .closing import AsyncCloseable
from .codec import WHOLE_HISTORY, check_limit
from .encrypted_replace import AtomicReplacement, IfWrappedHas, off_loop_if_large
from .envelopes import Envelopes, Opened, fernet_module
from .session import (
    Session,
    WrapperSessionABC,
    is_atomic_replacement_session,
)
from .settings import resolve_session_limit

if TYPE_CHECKING:
    from cryptography.fernet import Fernet

    from ..items import TResponseInputItem

__all__ = ["EncryptedSession"]


class MaxScanItemsExhausted(SessionError, RuntimeError):
    """`get_items` read `max_scan_items` stored items without finding the history asked for.

    A [`SessionError`][turnstore.SessionError], and also a `RuntimeError`, which is what the
    OpenAI Agents SDK's `EncryptedSession` raises then.
    """


logger = logging.getLogger(__name__)

REWRITE_ATTEMPTS = 5
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

_READ_THROUGH_DECODER = frozenset(
    {
        "list_branches",
        "get_conversation_turns",
        "find_turns_by_content",
        "get_conversation_by_turns",
        "get_tool_usage",
        "create_branch_from_turn",
        "create_branch_from_content",
        "record_turn_usage",
        "store_run_usage",
    }
)
"""What passes through to a wrapped session that reads items through this session's decoder
(an `AdvancedSQLiteSession`: see its `set_item_decoder`), since it then works on the items."""


def _expired(ttl: float | None, stamp: int, now: float) -> bool:
    # The token's time is whole seconds, cut down: the item was written within the second
    # after `stamp`, so it expires only once a whole `ttl` has passed since the end of it.
    return ttl is not None and now - stamp >= ttl + 1


def _warn_plaintext(where: str, session_id: str) -> None:
    logger.warning(
        "skipping %s of encrypted session %r: it is not an encrypted envelope", where, session_id
    )


def _item_decoder(envelopes: Envelopes, ttl: float | None) -> Callable[[Any], Any]:
    """The decoder an `AdvancedSQLiteSession` reads items through: readable, unexpired ones."""

    def decode(stored: Any) -> Any:
        opened = envelopes.open(stored, "a stored item")
        if opened is None:
            _warn_plaintext("a stored item", envelopes.session_id)
            return None
        return None if _expired(ttl, opened.stamp, time.time()) else opened.item

    return decode


class EncryptedSession(AtomicReplacement, WrapperSessionABC, AsyncCloseable):
    """A session wrapper that encrypts every item before the wrapped session stores it.

    Use it when the stored history must be unreadable without your key: a shared database,
    backups, or a retention rule. It wraps any session
    ([`SQLiteSession`][turnstore.SQLiteSession],
    [`SQLAlchemySession`][turnstore.extensions.memory.SQLAlchemySession],
    [`RedisSession`][turnstore.extensions.memory.RedisSession], your own). The storage only
    ever sees ciphertext.
    Each session id gets its own key, derived from the master key, so one session's items
    cannot be moved into another.

    !!! warning "Items older than `ttl` are hidden, and expired ones deleted"
        By default (`ttl=600`) an item is returned for 10 minutes only. Older items are skipped
        by `get_items`, so the agent no longer sees them. Over `SQLiteSession`,
        `SQLAlchemySession` and `RedisSession`, `add_items` also deletes the expired items
        from storage. Pass `ttl=None` to keep items readable, or the retention you want (for
        example `ttl=86400` for a day).

    A wrong key never reads as an empty history. An item that none of the keys can decrypt
    raises [`SessionDecryptionError`][turnstore.SessionDecryptionError] and changes nothing.
    Stored items that are not encrypted (written around this wrapper) are skipped with a
    logged warning. This session never deletes what it cannot read.

    Methods of the wrapped session do not pass through, since they would work on ciphertext.
    The exceptions are branch switching and deletion, `current_branch_id`, usage counts and
    connection attributes such as `db_path` or `engine`.
    The turn, search, branching and usage methods of an
    [`AdvancedSQLiteSession`][turnstore.extensions.memory.AdvancedSQLiteSession] work on the
    decrypted items.
    Any other method raises `AttributeError`, naming `.underlying_session`.
    Wrapped in [`OpenAIResponsesCompactionSession`][turnstore.OpenAIResponsesCompactionSession],
    it is compacted in one atomic step when the wrapped session supports that.

    To rotate keys, pass a list of keys. The first encrypts new items; every key decrypts.
    [`rotate`][turnstore.extensions.memory.EncryptedSession.rotate] re-encrypts the stored
    history with the first key. Then the old keys can be dropped.

    Args:
        session_id: Identifies the conversation. It also salts the key derivation.
        underlying_session: The session that stores the encrypted items. Its
            `session_settings` are this session's settings.
        encryption_key: The master key: a Fernet key (`Fernet.generate_key()`), or another
            high-entropy secret as text or bytes. A password is not enough: it is not
            stretched. A list of keys enables rotation; the first encrypts.
        ttl: Seconds an item stays readable, or `None` for ever. The default, 600 (10
            minutes), is the OpenAI Agents SDK's: older items are hidden, and deleted over
            `SQLiteSession`, `SQLAlchemySession` and `RedisSession`.
        max_scan_items: The most stored items one `get_items` reads while it looks for
            `limit` readable ones; past it, `get_items` raises a
            [`SessionError`][turnstore.SessionError] that is also a `RuntimeError`, as in the
            OpenAI Agents SDK. `None` reads as many as needed.

    Raises:
        ImportError: The `encryption` extra is not installed.
        TypeError: A key is not str or bytes, `ttl` is not a number, or `max_scan_items` is
            not an int.
        ValueError: No key, an empty key, or a `ttl` or `max_scan_items` that is not positive.
        UserError: `underlying_session` is not a session.

    Example:
        ```python
        from cryptography.fernet import Fernet
        from turnstore import SQLiteSession
        from turnstore.extensions.memory import EncryptedSession

        key = Fernet.generate_key().decode()  # keep it in your secret store
        session = EncryptedSession(
            "user_42",
            SQLiteSession("user_42", "chats.db"),
            encryption_key=key,
            # Keep items until you delete them. The default, 600, hides them
            # after 10 minutes.
            ttl=None,
        )
        ```
    """

    # Expiry: an item stays readable for its whole `ttl` and up to a second longer (a Fernet
    # token's time is whole seconds). Over a session with an atomic replacement, `add_items`
    # prunes expired items at most once a minute per session object; elsewhere they stay stored
    # until the wrapped session's own expiry (a Redis `ttl`) or a retention job removes them.
    # Keys: HKDF derives each session's key from the master key (it does not stretch a
    # password). Plaintext items were never authenticated: they are skipped, never deleted,
    # not when pruning, rotating or popping. A damaged envelope (`__enc__` set, the rest
    # missing) raises SessionDecryptionError like an unknown key.

    def __init__(
        self,
        session_id: str,
        underlying_session: Session,
        encryption_key: str | bytes | Sequence[str | bytes],
        ttl: float | None = 600,
        max_scan_items: int | None = None,
    ) -> None:
        fernet_module()  # first: a missing extra is the error to report
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
        self._envelopes = Envelopes(session_id, encryption_key)
        self.session_id = session_id
        self.underlying_session = underlying_session
        self.ttl = ttl
        self.max_scan_items = max_scan_items
        self._last_prune: float | None = None
        # An AdvancedSQLiteSession reads its turns, search, branches and usage through this.
        set_decoder = getattr(underlying_session, "set_item_decoder", None)
        self._decoded = callable(set_decoder)
        if callable(set_decoder):
            set_decoder(_item_decoder(self._envelopes, ttl))

    @property
    def cipher(self) -> Fernet:
        """The `Fernet` of this session's key derived from the first master key (it encrypts)."""
        return self._envelopes.fernets[0]

    def __getattr__(self, name: str) -> Any:
        # Nothing passes through by default: a method of the wrapped session would search,
        # count or copy ciphertext and answer as if the history were empty.
        if name.startswith("_") or "underlying_session" not in vars(self):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        underlying = self.underlying_session
        if name in _PASSED_THROUGH or (self._decoded and name in _READ_THROUGH_DECODER):
            return getattr(underlying, name)
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

    def _open(self, stored: Any, where: str) -> Opened | None:
        """Authenticate and decrypt one stored item; `None` (with a warning) for plaintext.

        Raises:
            SessionDecryptionError: No key authenticates the envelope, or it is damaged.
        """
        opened = self._envelopes.open(stored, where)
        if opened is None:
            _warn_plaintext(where, self.session_id)
        return opened

    def _expired(self, stamp: int, now: float) -> bool:
        return _expired(self.ttl, stamp, now)

    def _open_all(self, stored: list[Any]) -> list[Opened]:
        opened = []
        for index, element in enumerate(stored):
            result = self._open(element, f"item {index}")
            if result is not None:
                opened.append(result)
        return opened

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
            SessionError: `max_scan_items` stored items were read without establishing the
                result (too many expired or plaintext items in the way); nothing changed. It
                is also a `RuntimeError`, as in the OpenAI Agents SDK.
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
            opened = await off_loop_if_large(self._open_all, stored)
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
                    raise MaxScanItemsExhausted(
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
        sealed = await off_loop_if_large(self._envelopes.seal, items)
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

        The item removed is the one `get_items()` returns last. Nothing this session cannot read
        is ever removed. Plaintext items (not written through an `EncryptedSession`) above it
        stay in place.

        Returns:
            The removed item, decrypted, or `None` when no unexpired item is left.

        Raises:
            SessionDecryptionError: The newest stored item cannot be read (a wrong key or a
                damaged item). Or plaintext items lie above the newest readable item, and the
                wrapped session cannot remove an item from under them (it is not an
                [`AtomicReplacementSession`][turnstore.memory.AtomicReplacementSession]).
                Nothing was removed.

        Example:
            ```python
            last = await session.pop_item()  # decrypted; None when no unexpired item is left
            ```
        """
        # The newest stored item is authenticated before anything is removed. When plaintext
        # items lie above the newest readable item, that item is removed from under them in one
        # atomic replacement, which rewrites the stored items below it
        # (docs/architecture.md#mechanisms).
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

    async def clear_session(self) -> None:
        """Remove every item of the wrapped session."""
        await self.underlying_session.clear_session()

    # -- rotation and pruning ------------------------------------------------------------------

    async def rotate(self) -> int:
        """Re-encrypt the stored history with the first key, in one atomic replacement.

        Every stored envelope is decrypted, with whichever key opens it, and encrypted again
        with the first key. It keeps its original timestamp, so `ttl` still counts from when
        the item was added. Expired items are dropped, and plaintext items (not envelopes) stay
        as they are. Afterwards the other keys are no longer needed for this session.

        On a `SQLiteSession` (and so an `AdvancedSQLiteSession`), every row the session owns is
        re-encrypted in place in one transaction: every branch, and the compaction archive.
        The expired items of the current history are then pruned. Elsewhere the history is
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

    # -- offered when the wrapped session has them ----------------------------------------------

    @IfWrappedHas
    async def get_archived_items(self) -> list[TResponseInputItem]:
        """Return the readable, unexpired items of the wrapped session's archive, oldest first.

        Raises:
            SessionDecryptionError: An archived envelope cannot be decrypted, or is damaged.
        """
        underlying: Any = self.underlying_session
        opened = await off_loop_if_large(self._open_all, await underlying.get_archived_items())
        now = time.time()
        items = [item for item, stamp, _ in opened if not self._expired(stamp, now)]
        return cast("list[TResponseInputItem]", items)

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
