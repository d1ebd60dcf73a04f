"""AsyncSQLiteSession: the OpenAI Agents SDK's name and signature, on `SQLiteSession`'s engine.

The SDK's `AsyncSQLiteSession` runs SQLite through aiosqlite so that it never blocks the event
loop. `SQLiteSession` never blocks it either (its SQLite calls run on one thread per
database file), so this class is `SQLiteSession` under the SDK's name, with the SDK's positional
constructor arguments: code moving from the SDK changes its import and nothing else, and needs no
aiosqlite.
"""

from __future__ import annotations

import os

from ..settings import SessionSettingsLike
from .session import SQLiteSession

__all__ = ["AsyncSQLiteSession"]


class AsyncSQLiteSession(SQLiteSession):
    """A session in SQLite that never blocks the event loop: `SQLiteSession` under the SDK's name.

    Accepts the constructor of the OpenAI Agents SDK's `AsyncSQLiteSession` (whose arguments
    may be given by position); everything else is [`SQLiteSession`][turnstore.SQLiteSession]:
    the same tables, files and behaviour, so both classes can open the same file. It needs no
    aiosqlite. Its `close()` is a coroutine, as in the SDK: `await session.close()`.

    Args:
        session_id: Identifies the conversation inside the database.
        db_path: `":memory:"` (the default) or a file path, created on first use.
        sessions_table: Name of the table of sessions; a plain identifier.
        messages_table: Name of the table of items; a plain identifier.
        session_settings: Default settings for runs that use this session (a dict is accepted).

    Raises:
        TypeError: `session_id` is not a str, or `session_settings` has an unknown key.
        ValueError: A table name is not a plain identifier, or both names are the same.

    Example:
        ```python
        # Was: from agents.extensions.memory import AsyncSQLiteSession
        from turnstore.extensions.memory import AsyncSQLiteSession

        session = AsyncSQLiteSession("user_42", "conversations.db")
        await session.add_items([{"role": "user", "content": "Hello"}])
        await session.close()
        ```
    """

    def __init__(
        self,
        session_id: str,
        db_path: str | os.PathLike[str] = ":memory:",
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: SessionSettingsLike | None = None,
    ) -> None:
        super().__init__(
            session_id,
            db_path,
            sessions_table=sessions_table,
            messages_table=messages_table,
            session_settings=session_settings,
        )

    async def close(self) -> None:  # type: ignore[override]  # the SDK's is a coroutine here
        """Close the session and wait until its thread has stopped (the same as `aclose()`).

        Closing twice is harmless; any other operation after it raises `SessionClosedError`.
        """
        await self.aclose()
