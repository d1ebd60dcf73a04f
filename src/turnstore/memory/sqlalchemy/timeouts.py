"""The bound on one SQLAlchemy operation, shared by the session and the CLI's store.

Apart from `engine.py` so that `open_session_store` can name the default without importing
SQLAlchemy (the `postgres` extra).
"""

from __future__ import annotations

__all__ = ["DEFAULT_COMMAND_TIMEOUT", "check_command_timeout"]

DEFAULT_COMMAND_TIMEOUT = 60.0
"""Seconds one `SQLAlchemySession` operation may spend in the database, unless set otherwise."""


def check_command_timeout(value: float | None) -> float | None:
    """Validate a `command_timeout`: positive finite seconds, or `None` for no limit."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"command_timeout must be seconds or None, not {type(value).__name__}")
    if not (0 < value < float("inf")):
        raise ValueError(f"command_timeout must be a positive number of seconds, got {value!r}")
    return float(value)
