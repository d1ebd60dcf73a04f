"""`AsyncSQLiteSession` at the OpenAI Agents SDK's module path (`agents.extensions.memory.async_sqlite_session`)."""

from __future__ import annotations

from ...memory.sqlite.async_session import AsyncSQLiteSession

__all__ = ["AsyncSQLiteSession"]
