"""The session contract: what every session backend provides. No I/O lives here."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeGuard, runtime_checkable

from typing_extensions import TypedDict

from .settings import SessionSettings

if TYPE_CHECKING:
    from openai.types.responses import ResponseUsage

    from ..items import TResponseInputItem

__all__ = [
    "AtomicReplacementSession",
    "HistorySnapshot",
    "OpenAIResponsesCompactionArgs",
    "OpenAIResponsesCompactionAwareSession",
    "Session",
    "SessionABC",
    "UsageRecordingSession",
    "is_atomic_replacement_session",
    "is_openai_responses_compaction_aware_session",
    "is_usage_recording_session",
]


@runtime_checkable
class Session(Protocol):
    """The storage-agnostic contract of a conversation history.

    Any object with these attributes and coroutine methods is a session: it can be passed as
    `session=` to [`Runner.run`][turnstore.Runner.run] (and to the OpenAI Agents SDK's own
    `Runner`) without subclassing anything. `isinstance(obj, Session)` checks the shape at run time.

    Attributes:
        session_id: Identifies the conversation inside its storage.
        session_settings: Default settings for runs that use this session, or `None`.
    """

    session_id: str
    session_settings: SessionSettings | None

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Return the stored history, oldest first.

        Args:
            limit: Return only the latest `limit` items (still oldest first). `None` returns the
                whole history, unless the session's settings set a limit.

        Returns:
            The items in the order they were added.
        """
        ...

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items to the history, all of them or none.

        Args:
            items: The items to append, in order.
        """
        ...

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item.

        Returns:
            The removed item, or `None` when the history is empty.
        """
        ...

    async def clear_session(self) -> None:
        """Remove every item of this session, leaving other sessions untouched."""
        ...


class SessionABC(ABC):
    """An abstract base class with the same contract as [`Session`][turnstore.Session].

    Subclass it when you prefer a base class that checks, at instantiation, that all four methods
    are implemented. Subclasses satisfy the `Session` protocol.

    Attributes:
        session_id: Identifies the conversation inside its storage.
        session_settings: Default settings for runs that use this session, or `None`.
    """

    session_id: str
    session_settings: SessionSettings | None = None

    @abstractmethod
    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Return the stored history, oldest first.

        Args:
            limit: Return only the latest `limit` items. `None` returns the whole history, unless
                the session's settings set a limit.

        Returns:
            The items in the order they were added.
        """

    @abstractmethod
    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items to the history, all of them or none.

        Args:
            items: The items to append, in order.
        """

    @abstractmethod
    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item.

        Returns:
            The removed item, or `None` when the history is empty.
        """

    @abstractmethod
    async def clear_session(self) -> None:
        """Remove every item of this session, leaving other sessions untouched."""


class WrapperSessionABC(SessionABC):
    """Base of a session that wraps another (`EncryptedSession`, compaction).

    `session_settings` is the wrapped session's: reading and setting both pass through, so a
    wrapper and what it wraps never disagree on the settings of a run.

    Attributes:
        underlying_session: The wrapped session.
    """

    underlying_session: Session

    @property
    def session_settings(self) -> SessionSettings | None:
        """The wrapped session's settings (reading and setting both pass through)."""
        return self.underlying_session.session_settings

    @session_settings.setter
    def session_settings(self, value: SessionSettings | None) -> None:
        self.underlying_session.session_settings = value


class OpenAIResponsesCompactionArgs(TypedDict, total=False):
    """Arguments a runner passes to `run_compaction` after it saves a model call.

    Attributes:
        response_id: The id of the latest Responses API response, if known.
        compaction_mode: `"previous_response_id"` compacts the server-side response chain,
            `"input"` sends the stored items, `"auto"` picks one of the two.
        store: Whether the run stored its responses on the server (`store=True`).
        force: Compact even when the session's trigger says it is not yet needed.
    """

    response_id: str
    compaction_mode: Literal["previous_response_id", "input", "auto"]
    store: bool
    force: bool


@runtime_checkable
class OpenAIResponsesCompactionAwareSession(Session, Protocol):
    """A session that can shrink its history with the Responses API's compaction.

    The runner calls `run_compaction` after it saves each model call when
    [`is_openai_responses_compaction_aware_session`][turnstore.memory.is_openai_responses_compaction_aware_session]
    returns `True` for the run's session.
    """

    async def run_compaction(
        self, args: OpenAIResponsesCompactionArgs | None = None
    ) -> ResponseUsage | None:
        """Compact the stored history if the session's trigger (or `force`) says so.

        Args:
            args: What the runner knows about the latest response; see
                [`OpenAIResponsesCompactionArgs`][turnstore.memory.OpenAIResponsesCompactionArgs].

        Returns:
            The token usage of the compaction call, which the runner adds to the run's usage, or
            `None` when nothing was compacted.
        """
        ...


def is_openai_responses_compaction_aware_session(
    session: Any,
) -> TypeGuard[OpenAIResponsesCompactionAwareSession]:
    """Tell whether `session` supports `run_compaction`.

    Args:
        session: Any object, `None` included.

    Returns:
        `True` when `session` has a callable `run_compaction`; `False` for `None`, for objects
        without it, and for objects whose attribute lookup raises.
    """
    return _has_methods(session, "run_compaction")


@runtime_checkable
class UsageRecordingSession(Session, Protocol):
    """A session that keeps the token usage of each turn, such as `AdvancedSQLiteSession`.

    [`Runner`][turnstore.Runner] calls `record_turn_usage` with the run's usage after each run
    that completes, when
    [`is_usage_recording_session`][turnstore.memory.is_usage_recording_session] returns `True`.
    """

    async def record_turn_usage(self, usage: Any) -> None:
        """Record the usage of the latest turn.

        Args:
            usage: The run's [`Usage`][turnstore.Usage] (any object with its counts).
        """
        ...


def is_usage_recording_session(session: Any) -> TypeGuard[UsageRecordingSession]:
    """Tell whether `session` records usage per turn (has a callable `record_turn_usage`).

    Args:
        session: Any object, `None` included.

    Returns:
        `True` when `session` has a callable `record_turn_usage`; `False` otherwise, also when
        its attribute lookup raises.
    """
    return _has_methods(session, "record_turn_usage")


@dataclass(frozen=True, slots=True)
class HistorySnapshot:
    """A session's stored history as one read saw it, for an atomic replacement.

    [`AtomicReplacementSession.snapshot_history`][turnstore.memory.AtomicReplacementSession.snapshot_history]
    takes it; [`replace_history`][turnstore.memory.AtomicReplacementSession.replace_history]
    replaces exactly its rows, or nothing when they changed meanwhile. `prefix(n)` narrows it to
    its first `n` items, so that only their rows are replaced and the later rows stay.

    Attributes:
        items: The valid items, oldest first.
        rows: One token per stored row up to the snapshot, corrupt rows included, oldest first:
            what the backend needs to recognise its rows (the row id in SQL, the stored element
            in Redis). Opaque to everyone else.
        item_rows: For each item of `items`, the index of its row in `rows`.
    """

    items: list[TResponseInputItem]
    rows: tuple[Hashable, ...] = ()
    item_rows: tuple[int, ...] = ()

    def prefix(self, count: int) -> HistorySnapshot:
        """Narrow the snapshot to its first `count` items, for a partial replacement.

        The result covers the rows up to the row of item `count - 1` (corrupt rows before it
        included); replacing it leaves the later rows in place, after the new items.

        Args:
            count: How many leading items to keep, `1 <= count <= len(items)`.

        Returns:
            A snapshot of those items and rows.

        Raises:
            TypeError: `count` is not an int (a bool is not one).
            ValueError: `count` is out of range, or the snapshot does not map items to rows.
        """
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(f"count must be an int, not {type(count).__name__}")
        if not 1 <= count <= len(self.items) or len(self.item_rows) != len(self.items):
            raise ValueError(f"cannot narrow a snapshot of {len(self.items)} items to {count}")
        rows = self.item_rows[count - 1] + 1
        return HistorySnapshot(self.items[:count], self.rows[:rows], self.item_rows[:count])

    @staticmethod
    def check(value: object) -> HistorySnapshot:
        """Return `value` if it is a snapshot, for `replace_history` implementations.

        Args:
            value: What the caller passed as the snapshot.

        Returns:
            `value`, unchanged.

        Raises:
            TypeError: `value` is not a `HistorySnapshot`.
        """
        if not isinstance(value, HistorySnapshot):
            raise TypeError(
                f"snapshot must be a HistorySnapshot from snapshot_history(), not "
                f"{type(value).__name__}"
            )
        return value

    @classmethod
    def of_rows(cls, rows: list[tuple[Hashable, TResponseInputItem | None]]) -> HistorySnapshot:
        """Build a snapshot from `(token, item or None when corrupt)` pairs, oldest first.

        Args:
            rows: Every stored row of the session, oldest first.

        Returns:
            The snapshot.
        """
        items: list[TResponseInputItem] = []
        item_rows: list[int] = []
        for index, (_, item) in enumerate(rows):
            if item is not None:
                items.append(item)
                item_rows.append(index)
        return cls(items, tuple(token for token, _ in rows), tuple(item_rows))


@runtime_checkable
class AtomicReplacementSession(Session, Protocol):
    """A session that can replace part of its history in one atomic step.

    [`OpenAIResponsesCompactionSession`][turnstore.OpenAIResponsesCompactionSession] uses it to
    swap the compacted items in, so that the history is never half-written. It takes a
    snapshot, computes the replacement (which may take a network call), then replaces the
    snapshot's rows. The replacement fails harmlessly when another writer popped or cleared
    them meanwhile. Items added after the snapshot stay, after the new items.
    [`SQLiteSession`][turnstore.SQLiteSession],
    [`SQLAlchemySession`][turnstore.extensions.memory.SQLAlchemySession] and
    [`RedisSession`][turnstore.extensions.memory.RedisSession] implement it; check with
    [`is_atomic_replacement_session`][turnstore.memory.is_atomic_replacement_session].

    Example:
        ```python
        if is_atomic_replacement_session(session):
            snapshot = await session.snapshot_history()
            summary = await summarise(snapshot.items)
            if not await session.replace_history(snapshot, [summary]):
                print("the history changed meanwhile; nothing was replaced")
        ```
    """

    async def snapshot_history(self) -> HistorySnapshot:
        """Read the whole history and what identifies its rows, in one read.

        Returns:
            The snapshot to pass to `replace_history` (or narrow with `prefix` first).
        """
        ...

    async def replace_history(
        self,
        snapshot: HistorySnapshot,
        new_items: list[TResponseInputItem],
        *,
        archive: bool = True,
    ) -> bool:
        """Replace the snapshot's rows by `new_items`, atomically, keeping later additions last.

        Args:
            snapshot: What `snapshot_history` returned, possibly narrowed with `prefix`.
            new_items: The items that take the place of the snapshot's rows.
            archive: Keep the replaced rows in the backend's archive, where it has one
                (`SQLiteSession`'s `<messages_table>_archive`); `False` deletes them (as
                [`EncryptedSession.rotate`][turnstore.extensions.memory.EncryptedSession.rotate]
                needs: no old ciphertext stays behind). A backend without an archive deletes them
                either way.

        Returns:
            `True` when replaced; `False`, changing nothing, when a row of the snapshot was
            popped or cleared since it was taken.

        Raises:
            TypeError: An item of `new_items` is not a JSON-serialisable mapping; nothing
                changed.
        """
        ...


def is_atomic_replacement_session(session: Any) -> TypeGuard[AtomicReplacementSession]:
    """Tell whether `session` can replace its history atomically.

    Args:
        session: Any object, `None` included.

    Returns:
        `True` when `session` has callable `snapshot_history` and `replace_history` methods;
        `False` for `None`, for objects without them, and for objects whose attribute lookup
        raises.
    """
    return _has_methods(session, "snapshot_history", "replace_history")


def _has_methods(session: Any, *names: str) -> bool:
    """Whether `session` is not `None` and has each method; `False` if a lookup raises."""
    if session is None:
        return False
    try:
        return all(callable(getattr(session, name, None)) for name in names)
    except Exception:
        return False
