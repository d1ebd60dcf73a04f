"""Helpers the session stores share (`store.py` and each backend's `store.py`): internal.

Times as every backend keeps them (UTC, to the millisecond), SQLite's time text, Redis's
millisecond scores, and a URL with its password hidden. Nothing here is public API.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["from_ms", "hide_password", "parse_sqlite_time", "to_ms", "utc"]


def utc(value: datetime) -> datetime:
    """Make a datetime UTC-aware, at millisecond precision (the finest every backend keeps)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def from_ms(ms: int | float | None) -> datetime | None:
    """A count of milliseconds since 1970 as a UTC datetime (`None`: unknown)."""
    # Integer arithmetic, not `fromtimestamp(ms / 1000)`: a float loses the last millisecond of
    # stamps far from 1970 (9999-12-31T23:59:59.999 read back as .998993).
    if ms is None:
        return None
    try:
        return _EPOCH + int(ms) * _MS
    except OverflowError:  # a stamp past year 9999 (not one turnstore wrote): unknown
        return None


def to_ms(value: datetime) -> int:
    """A datetime as milliseconds since 1970 (naive means UTC)."""
    return (utc(value) - _EPOCH) // _MS


def parse_sqlite_time(value: Any) -> datetime | None:
    """A time as SQLite stores it as text (`2026-12-01 15:00:00.123`, UTC), or `None`."""
    if value is None:
        return None
    try:
        return utc(datetime.fromisoformat(str(value)))
    except ValueError:
        return None


def hide_password(url: str) -> str:
    """The URL with the password of its credentials replaced by `***`."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if not at or ":" not in credentials:
        return url
    user = credentials.split(":", 1)[0]
    return f"{scheme}{sep}{user}:***@{host}"
