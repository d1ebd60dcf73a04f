"""The OpenAI Agents SDK's `agents.extensions.memory` sessions, under turnstore.

Code moving from the SDK changes `agents.extensions.memory` to `turnstore.extensions.memory` in
its imports. The classes are the ones of `turnstore.memory`; `EncryptedSession`, `RedisSession`
and `SQLAlchemySession` need their extras, as there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ... import memory as _memory
from ...memory import AdvancedSQLiteSession, AsyncSQLiteSession

if TYPE_CHECKING:
    from ...memory import EncryptedSession, RedisSession, SQLAlchemySession

__all__ = [
    "AdvancedSQLiteSession",
    "AsyncSQLiteSession",
    "EncryptedSession",
    "RedisSession",
    "SQLAlchemySession",
]

_WITH_EXTRAS = ("EncryptedSession", "RedisSession", "SQLAlchemySession")

# As in `turnstore.memory`: without its extra, a backend is left out of the star import.
for _name in _WITH_EXTRAS:
    if _name not in _memory.__all__:
        __all__.remove(_name)
del _name


def __getattr__(name: str) -> Any:
    if name in _WITH_EXTRAS:
        return getattr(_memory, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
