"""What a session store reads and writes: the records of an export, listings and totals.

`SessionInfo`, `SessionStats` and `SessionRecord` (with its JSON form, the lines of an export)
are public through `turnstore.admin`; `EncodedWrite` is what `SessionStore.write_records`
hands a backend.
No I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ._store_helpers import utc

if TYPE_CHECKING:
    from ..items import TResponseInputItem

__all__ = [
    "MAIN_BRANCH",
    "EncodedWrite",
    "SessionInfo",
    "SessionRecord",
    "SessionStats",
    "session_times_of",
]


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session, as a store lists it.

    Attributes:
        session_id: The session's id.
        item_count: How many items it holds.
        created_at: When it was first written to (or its oldest item, for Redis), if known.
        last_activity: When it was last written to, if known.
    """

    session_id: str
    item_count: int
    created_at: datetime | None
    last_activity: datetime | None


@dataclass(frozen=True, slots=True)
class SessionStats:
    """The totals of one database or Redis.

    Returned by [`SessionStore.stats`][turnstore.admin.SessionStore.stats].

    Attributes:
        backend: `"sqlite"`, the SQLAlchemy dialect name (`"postgresql"`, `"mysql"`, ...) or
            `"redis"`.
        sessions: How many sessions exist.
        items: How many items they hold together.
        last_activity: The most recent write to any session, if any.
    """

    backend: str
    sessions: int
    items: int
    last_activity: datetime | None


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One stored item with its session and the time it was added: a line of an export.

    Attributes:
        session_id: The session the item belongs to.
        item: The item.
        created_at: When it was added (UTC, millisecond precision), if known.
        branch: The `AdvancedSQLiteSession` branch the item belongs to, other than `main`
            (`None`: `main`, or a session without branches).
        session_created_at: When the session was created, if known: an export sets it (and
            `session_last_activity`) on the first record of each session, and
            [`write_records`][turnstore.admin.SessionStore.write_records] keeps both.
        session_last_activity: When the session was last written to, if known.
    """

    session_id: str
    item: TResponseInputItem
    created_at: datetime | None
    branch: str | None = None
    session_created_at: datetime | None = None
    session_last_activity: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the record as a JSON-ready dict (`created_at` in ISO 8601).

        `branch` is written only for a branch other than `main`, so the records of a session
        without branches look the same as ever. `session` (the session's `created_at` and
        `last_activity`) is written only when a session time is set: on the first record of a
        session.
        """
        data: dict[str, Any] = {"session_id": self.session_id}
        if self.session_created_at is not None or self.session_last_activity is not None:
            data["session"] = {
                "created_at": _iso(self.session_created_at),
                "last_activity": _iso(self.session_last_activity),
            }
        data["created_at"] = _iso(self.created_at)
        data["item"] = self.item
        if self.branch is not None and self.branch != MAIN_BRANCH:
            data["branch"] = self.branch
        return data

    @classmethod
    def from_json(cls, data: Any, *, where: str = "record") -> SessionRecord:
        """Build a record from the dict that `to_json` made.

        Args:
            data: The decoded JSON value.
            where: Names the record in error messages (for example `"line 7"`).

        Returns:
            The record.

        Raises:
            ValueError: A field is missing or has the wrong type.
        """
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a JSON object, got {type(data).__name__}")
        session_id = data.get("session_id")
        item = data.get("item")
        stamp = data.get("created_at")
        if not isinstance(session_id, str):  # "" is a valid session id, as in the sessions
            raise ValueError(f"{where}: 'session_id' must be a string")
        if not isinstance(item, dict):
            raise ValueError(f"{where}: 'item' must be a JSON object")
        branch = data.get("branch")
        if branch is not None and (not isinstance(branch, str) or not branch or "\x00" in branch):
            raise ValueError(f"{where}: 'branch' must be a branch name (a non-empty string)")
        session = data.get("session")
        if session is not None and not isinstance(session, dict):
            raise ValueError(
                f"{where}: 'session' must be a JSON object with 'created_at' and 'last_activity'"
            )
        session = session or {}
        branch = None if branch == MAIN_BRANCH else branch
        return cls(
            session_id,
            item,  # type: ignore[arg-type]
            _parse_time(stamp, "created_at", where),
            branch,
            _parse_time(session.get("created_at"), "session.created_at", where),
            _parse_time(session.get("last_activity"), "session.last_activity", where),
        )


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _parse_time(stamp: Any, name: str, where: str) -> datetime | None:
    """A record's time (`None` or an ISO 8601 string) as a UTC datetime."""
    if stamp is None:
        return None
    if not isinstance(stamp, str):
        raise ValueError(f"{where}: '{name}' must be an ISO 8601 string or null")
    try:
        return utc(datetime.fromisoformat(stamp))
    except (ValueError, OverflowError) as exc:  # OverflowError: out of range in UTC
        raise ValueError(f"{where}: '{name}' is not ISO 8601: {stamp!r}") from exc


MAIN_BRANCH = "main"
"""The branch of a session that has none, and `AdvancedSQLiteSession`'s first branch."""


@dataclass(frozen=True, slots=True)
class EncodedWrite:
    """What `SessionStore.write_records` hands its backend, encoded and timed."""

    session_id: str
    """The session to write to (created if missing)."""
    encoded: list[str]
    """The encoded items, oldest first."""
    created: list[datetime]
    """When each item was added (the session's activity is stamped by the storage's clock when
    the write commits)."""
    replace: bool
    """Remove the session's items (and archive) first, in the same transaction."""
    session_created: datetime | None = None
    """When the session was created, from an export (`None`: unknown, as for a plain write)."""
    last_activity: datetime | None = None
    """When the session was last written to, from an export (`None`: unknown; the write's
    commit is stamped, as for any write)."""

    def session_times(
        self, existing: tuple[datetime | None, datetime | None] | None
    ) -> tuple[datetime | None, datetime | None]:
        """The (created, last activity) times to store; `None` leaves that time to the write.

        A session that the write creates or replaces takes the export's times. One that
        already exists and is appended to keeps the earlier creation time and the later last
        activity of its own and the export's.

        Args:
            existing: The session's (created, last activity) before the write, or `None` when
                it did not exist.
        """
        created, last = self.session_created, self.last_activity
        if existing is None or self.replace:
            return created, last
        old_created, old_last = existing
        if created is not None and old_created is not None:
            created = min(created, old_created)
        if last is not None and old_last is not None:
            last = max(last, old_last)
        return created, last


def session_times_of(records: list[SessionRecord]) -> tuple[datetime | None, datetime | None]:
    """The session times that records carry: the earliest creation and the latest activity."""
    created = [r.session_created_at for r in records if r.session_created_at is not None]
    last = [r.session_last_activity for r in records if r.session_last_activity is not None]
    return min(created, default=None), max(last, default=None)
