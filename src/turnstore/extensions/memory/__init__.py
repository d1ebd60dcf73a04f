"""The OpenAI Agents SDK's `agents.extensions.memory` sessions, under turnstore.

Code moving from the SDK changes `agents.extensions.memory` to `turnstore.extensions.memory` in
its imports; this is the one import path of these classes. `SQLAlchemySession` needs the
`postgres` extra, `RedisSession` the `redis` extra and `EncryptedSession` the `encryption` extra:
each is imported on first use, and says what to install when its extra is missing
(`RedisSession needs the redis extra: pip install 'turnstore[redis]'`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._extras import import_extra
from ...memory.sqlite.advanced import AdvancedSQLiteSession
from ...memory.sqlite.async_session import AsyncSQLiteSession

if TYPE_CHECKING:  # imported on first use: see _NEEDS_AN_EXTRA
    from ...memory.encrypted import EncryptedSession
    from ...memory.redis.session import RedisSession
    from ...memory.sqlalchemy.session import SQLAlchemySession

__all__ = [
    "AdvancedSQLiteSession",
    "AsyncSQLiteSession",
    "EncryptedSession",
    "RedisSession",
    "SQLAlchemySession",
]
"""Static: the same on every install."""

_NEEDS_AN_EXTRA: dict[str, tuple[str, str]] = {
    "EncryptedSession": ("turnstore.memory.encrypted", "encryption"),
    "RedisSession": ("turnstore.memory.redis.session", "redis"),
    "SQLAlchemySession": ("turnstore.memory.sqlalchemy.session", "postgres"),
}
"""The sessions that need an extra: their module and the extra."""


if not TYPE_CHECKING:  # type checkers see the names through the imports above

    def __getattr__(name: str) -> Any:
        if name not in _NEEDS_AN_EXTRA:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        module, extra = _NEEDS_AN_EXTRA[name]
        return getattr(import_extra(module, extra, name), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
