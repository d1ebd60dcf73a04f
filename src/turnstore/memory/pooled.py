"""What the sessions on a pooled server client share: `SQLAlchemySession` and `RedisSession`.

A pooled session talks to a server through a client that holds a pool of connections (an
SQLAlchemy engine, a redis-py client). [`PooledSession`][turnstore.memory.pooled.PooledSession]
holds the plumbing both backends need, so each backend only says how to read and write:

- the argument checks every constructor makes (session id, settings);
- ownership of the client: `from_url` builds one that `close()` / `aclose()` releases (a
  forgotten close warns), a client passed in stays the caller's;
- the event loop the pooled connections belong to (`LoopBinding`);
- the open check and the mapping of the client's errors to
  [`SessionStorageError`][turnstore.SessionStorageError];
- the shape of the four operations and of the atomic replacement: argument checks and encoding
  first (nothing is sent for a bad batch), mutations shielded from the caller's cancellation,
  and an optional bound on the time one operation may take (`_command_timeout`), inside that
  shield so that it cancels the storage work itself.

The public methods (`get_items`, `add_items`, `pop_item`, `clear_session`, `snapshot_history`,
`replace_history`) are declared here once, with their docstrings; a backend overrides only the
private steps they call.
"""

from __future__ import annotations

import asyncio
import weakref
from abc import abstractmethod
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

from ..exceptions import SessionClosedError, SessionStorageError
from .closing import AsyncCloseable, warn_if_unclosed
from .codec import check_limit, check_session_id, encode_items
from .loop_binding import LoopBinding
from .mutation import await_session_mutation
from .session import HistorySnapshot, SessionABC
from .settings import (
    SessionSettings,
    SessionSettingsLike,
    default_session_settings,
    resolve_session_limit,
)

if TYPE_CHECKING:
    from ..items import TResponseInputItem

__all__ = ["PooledSession"]

_T = TypeVar("_T")


class PooledSession(SessionABC, AsyncCloseable):
    """The base of the sessions that share a pooled client (SQLAlchemy, Redis).

    Subclasses implement the storage steps (`_read`, `_append`, `_pop_newest`, `_clear`,
    `_snapshot`, `_replace`), `_release_client` and `_storage_error`, and list the client's
    exception types in `_storage_errors`.

    Args:
        session_id: Identifies the conversation.
        session_settings: Default settings for runs that use this session (or a dict of them).
        nul_allowed: Whether the storage can hold a NUL character in a session id.

    Raises:
        TypeError: `session_id` is not a str, or the settings are invalid.
        ValueError: `session_id` cannot be stored.
    """

    _storage_errors: ClassVar[tuple[type[BaseException], ...]] = ()
    """The client's exception types that `_storage_error` maps."""

    _command_timeout: float | None = None
    """The most seconds one operation may take (`None`: no bound); see `_timeout_error`."""

    def __init__(
        self,
        session_id: str,
        session_settings: SessionSettingsLike | None,
        *,
        nul_allowed: bool = True,
    ) -> None:
        self.session_id = check_session_id(session_id, nul_allowed=nul_allowed)
        self.session_settings: SessionSettings | None = default_session_settings(session_settings)
        self._owns_client = False
        self._unclosed: weakref.finalize[..., object] | None = None
        self._closed = False
        self._loop_binding = LoopBinding(f"{type(self).__name__} {session_id!r}")

    @classmethod
    def _owning(cls, **kwargs: Any) -> Self:
        """Construct a session that owns its client: `close()` releases it (for `from_url`)."""
        session = cls(**kwargs)
        session._owns_client = True
        session._unclosed = warn_if_unclosed(
            session, f"{cls.__name__} {session.session_id!r} (made by from_url)"
        )
        return session

    # -- what a backend provides ---------------------------------------------------------------

    @abstractmethod
    async def _read(self, count: int | None) -> list[TResponseInputItem]:
        """The latest `count` valid items (all when `None`), oldest first."""

    @abstractmethod
    async def _append(self, encoded: list[str]) -> None:
        """Store the encoded items, in one transaction."""

    @abstractmethod
    async def _pop_newest(self) -> TResponseInputItem | None:
        """Remove and return the newest valid item, in one transaction."""

    @abstractmethod
    async def _clear(self) -> None:
        """Remove the session, in one transaction."""

    @abstractmethod
    async def _snapshot(self) -> HistorySnapshot:
        """Read every row of the session, in one read."""

    @abstractmethod
    async def _replace(self, snapshot: HistorySnapshot, encoded: list[str]) -> bool:
        """Replace the snapshot's rows by the encoded items, in one transaction."""

    @abstractmethod
    async def _release_client(self) -> None:
        """Release the client this session owns (dispose of the engine, close the client)."""

    @abstractmethod
    def _storage_error(self, operation: str, exc: BaseException) -> SessionStorageError:
        """The error to raise for one of `_storage_errors` that `operation` met."""

    async def _prepare(self) -> None:
        """Run before each operation (for example, create missing tables)."""

    def _timeout_error(self, operation: str, *, mutation: bool) -> SessionStorageError:
        """The error to raise when `operation` took longer than `_command_timeout`."""
        return SessionStorageError(
            f"{operation} on session {self.session_id!r} failed: no answer within "
            f"{self._command_timeout} s"
        )

    # -- the public methods: one declaration for both backends --------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Return the stored history, oldest first.

        Args:
            limit: Return only the latest `limit` items (still oldest first), reading only
                those; `0` returns `[]`. `None` uses `session_settings.limit`, else returns
                everything. A stored item that is not valid JSON is skipped with a logged
                warning and does not count.

        Returns:
            The items in the order they were added.

        Raises:
            ValueError: `limit` is negative.
            SessionClosedError: The session was closed.
            SessionStorageError: The database or Redis failed.
        """
        count = check_limit(resolve_session_limit(limit, self.session_settings))
        self._check_open()
        if count == 0:
            return []
        return await self._run("get_items", lambda: self._read(count))

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items to the history in one transaction: all of them or none.

        Args:
            items: The items to append, in order. Each must be a JSON-serialisable mapping;
                every item is checked before anything is written. An empty list does nothing.

        Raises:
            TypeError: An item is not a JSON-serialisable mapping (the message names its index).
            SessionClosedError: The session was closed.
            SessionStorageError: The database or Redis failed; the batch was not stored (when
                the connection broke after the transaction was sent, the outcome is unknown).
        """
        encoded = encode_items(items)
        self._check_open()
        if not encoded:
            return
        await self._run("add_items", lambda: self._append(encoded), mutation=True)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item, atomically.

        Returns:
            The removed item, or `None` when the session has no valid item. Corrupt items are
            skipped (and left in place) with a logged warning.

        Raises:
            SessionClosedError: The session was closed.
            SessionStorageError: The database or Redis failed.
        """
        self._check_open()
        return await self._run("pop_item", self._pop_newest, mutation=True)

    async def clear_session(self) -> None:
        """Remove every item of this session atomically; other sessions are untouched.

        Raises:
            SessionClosedError: The session was closed.
            SessionStorageError: The database or Redis failed.
        """
        self._check_open()
        await self._run("clear_session", self._clear, mutation=True)

    async def snapshot_history(self) -> HistorySnapshot:
        """Read the whole history and the ids of its rows (or elements), in one read.

        Returns:
            The snapshot to pass to `replace_history` (corrupt items are in its `rows`, not in
            its `items`).

        Raises:
            SessionClosedError: The session was closed.
            SessionStorageError: The database or Redis failed.
        """
        self._check_open()
        return await self._run("snapshot_history", self._snapshot)

    async def replace_history(
        self,
        snapshot: HistorySnapshot,
        new_items: list[TResponseInputItem],
        *,
        archive: bool = True,
    ) -> bool:
        """Replace the snapshot's items by `new_items` in one transaction, keeping later ones last.

        When the history still starts with exactly the snapshot's items, they are removed and
        `new_items` put in their place; items added after the snapshot stay after them
        (`SQLAlchemySession` re-inserts those rows with new ids and their original
        `created_at`; `RedisSession` runs one Lua script and refreshes the TTL, like every write).

        Args:
            snapshot: What `snapshot_history` returned, possibly narrowed with `prefix`.
            new_items: The items that take the place of the snapshot's items.
            archive: Part of the protocol; these backends keep no archive, so the replaced
                items are deleted either way.

        Returns:
            `True` when replaced; `False`, changing nothing, when an item of the snapshot was
            popped or cleared since it was taken.

        Raises:
            TypeError: An item of `new_items` is not a JSON-serialisable mapping.
            SessionClosedError: The session was closed.
            SessionStorageError: The database or Redis failed; nothing changed.
        """
        HistorySnapshot.check(snapshot)
        encoded = encode_items(new_items)
        self._check_open()
        return await self._run(
            "replace_history", lambda: self._replace(snapshot, encoded), mutation=True
        )

    async def close(self) -> None:
        """Close the session; release the client too if `from_url` created it.

        A coroutine, as the OpenAI Agents SDK's `RedisSession.close()` is; the same as
        `aclose()`. Further operations raise
        [`SessionClosedError`][turnstore.SessionClosedError]. Closing twice is harmless. A
        session belongs to the event loop it was first used on (its pooled connections do):
        another loop raises [`UserError`][turnstore.UserError], and closing there cannot
        release those connections, so close it on its own loop.
        """
        await self.aclose()

    async def aclose(self) -> None:
        """Close the session; release the client too if `from_url` created it (see `close`)."""
        if self._closed:
            return
        self._closed = True
        if self._unclosed is not None:
            self._unclosed.detach()
        if not self._owns_client:
            return  # not ours to close
        if self._loop_binding.bound and not self._loop_binding.is_foreign():
            await self._release_client()

    # -- plumbing ------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(
                f"{type(self).__name__} {self.session_id!r} is closed; create a new session object"
            )
        self._loop_binding.check()

    async def _run(
        self, operation: str, call: Callable[[], Awaitable[_T]], *, mutation: bool = False
    ) -> _T:
        async def bounded() -> _T:
            # The bound is inside the shield of a mutation: it cancels the storage work itself
            # (SQLAlchemy then drops that connection), not only the caller's wait for it.
            async with asyncio.timeout(self._command_timeout):
                await self._prepare()
                return await call()

        try:
            if mutation:
                return await await_session_mutation(bounded())
            return await bounded()
        except TimeoutError as exc:
            if self._command_timeout is not None:
                raise self._timeout_error(operation, mutation=mutation) from exc
            if isinstance(exc, self._storage_errors):
                raise self._storage_error(operation, exc) from exc
            raise
        except self._storage_errors as exc:
            raise self._storage_error(operation, exc) from exc
