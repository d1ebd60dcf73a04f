"""`AsyncSQLiteSession` at the path of the OpenAI Agents SDK's module of that name."""

from __future__ import annotations

from ...memory.sqlite.async_session import AsyncSQLiteSession

__all__ = ["AsyncSQLiteSession"]
