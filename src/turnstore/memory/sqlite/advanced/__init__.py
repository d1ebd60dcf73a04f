"""`AdvancedSQLiteSession`: `SQLiteSession` with conversation branches and usage per turn.

session.py (the class), schema.py (the branch and usage tables, their SQL), branches.py (the
branch operations), analytics.py (turns, tools, usage), items.py (what is derived from items).
"""

from .session import AdvancedSQLiteSession

__all__ = ["AdvancedSQLiteSession"]
