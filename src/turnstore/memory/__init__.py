"""Session memory: the protocol, its settings, and the built-in backends.

Everything here is also exported from the top-level `turnstore` package. The PostgreSQL
(`SQLAlchemySession`) and Redis (`RedisSession`) backends and `EncryptedSession` need extras and
are imported lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .closing import Closing
from .extras import missing_extra
from .history import estimate_item_tokens, load_history
from .mutation import await_session_mutation
from .open_store import open_session_store
from .openai.compaction import CompactionTriggerContext, OpenAIResponsesCompactionSession
from .openai.conversations import OpenAIConversationsSession
from .session import (
    AtomicReplacementSession,
    HistorySnapshot,
    OpenAIResponsesCompactionArgs,
    OpenAIResponsesCompactionAwareSession,
    Session,
    SessionABC,
    UsageRecordingSession,
    is_atomic_replacement_session,
    is_openai_responses_compaction_aware_session,
    is_usage_recording_session,
)
from .settings import SessionSettings, resolve_session_limit
from .sqlite.advanced import AdvancedSQLiteSession
from .sqlite.async_session import AsyncSQLiteSession
from .sqlite.session import SQLiteSession
from .store import SessionInfo, SessionRecord, SessionStats, SessionStore

if TYPE_CHECKING:
    from .encrypted import EncryptedSession
    from .redis.session import RedisSession
    from .sqlalchemy.session import SQLAlchemySession

__all__ = [
    "AdvancedSQLiteSession",
    "AsyncSQLiteSession",
    "AtomicReplacementSession",
    "Closing",
    "CompactionTriggerContext",
    "EncryptedSession",
    "HistorySnapshot",
    "OpenAIConversationsSession",
    "OpenAIResponsesCompactionArgs",
    "OpenAIResponsesCompactionAwareSession",
    "OpenAIResponsesCompactionSession",
    "RedisSession",
    "SQLAlchemySession",
    "SQLiteSession",
    "Session",
    "SessionABC",
    "SessionInfo",
    "SessionRecord",
    "SessionSettings",
    "SessionStats",
    "SessionStore",
    "UsageRecordingSession",
    "await_session_mutation",
    "estimate_item_tokens",
    "is_atomic_replacement_session",
    "is_openai_responses_compaction_aware_session",
    "is_usage_recording_session",
    "load_history",
    "open_session_store",
    "resolve_session_limit",
]

# Backends that need an extra: name -> (module, pip extra).
_LAZY: dict[str, tuple[str, str]] = {
    "SQLAlchemySession": (".sqlalchemy.session", "postgres"),
    "RedisSession": (".redis.session", "redis"),
    "EncryptedSession": (".encrypted", "encryption"),
}

# The third-party package each lazy backend imports first.
_EXTRA_PACKAGE = {
    "SQLAlchemySession": "sqlalchemy",
    "RedisSession": "redis",
    "EncryptedSession": "cryptography",
}


def _extra_missing(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(_EXTRA_PACKAGE[name]) is None
    except (ImportError, ValueError):
        return True


# `from turnstore.memory import *` imports every name in `__all__`: without an extra, its
# backend is left out of the star import (importing it by name still explains what to install).
for _name in _LAZY:
    if _extra_missing(_name):
        __all__.remove(_name)
del _name


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module_name, extra = _LAZY[name]
        import importlib

        try:
            module = importlib.import_module(module_name, __name__)
        except ImportError as exc:
            raise missing_extra(name, extra) from exc
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
