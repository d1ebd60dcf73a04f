"""The OpenAI Agents SDK's `agents.extensions.memory` sessions, under turnstore.

Code moving from the SDK changes `agents.extensions.memory` to `turnstore.extensions.memory` in
its imports. The classes are the ones of `turnstore.memory`; `EncryptedSession`, `RedisSession`
and `SQLAlchemySession` need their extras, as there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...memory import AdvancedSQLiteSession, AsyncSQLiteSession
from ...memory.extras import lazy_getattr

if TYPE_CHECKING:
    from ...memory import EncryptedSession, RedisSession, SQLAlchemySession

__all__ = [
    "AdvancedSQLiteSession",
    "AsyncSQLiteSession",
    "EncryptedSession",  # lazy: needs the encryption extra
    "RedisSession",  # lazy: needs the redis extra
    "SQLAlchemySession",  # lazy: needs the postgres extra
]
"""Static, as in `turnstore.memory`: a backend whose extra is missing raises an `ImportError`
naming the install command when it is first used."""


if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(__name__, __all__)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
