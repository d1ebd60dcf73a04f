"""The SQLite backend.

`SQLiteSession` (session.py), its thread (database.py), its tables and SQL
(schema.py) and the CLI's store for SQLite files (store.py).
"""

from .session import SQLiteSession

__all__ = ["SQLiteSession"]
