"""Session memory: the protocol, its settings, the built-in backends, and the tools to write one.

The names an application uses are also exported from the top-level `turnstore` package. The
tools for writing a backend are exported from here only:
[`HistorySnapshot`][turnstore.memory.HistorySnapshot] and
[`AtomicReplacementSession`][turnstore.memory.AtomicReplacementSession],
[`UsageRecordingSession`][turnstore.memory.UsageRecordingSession] and their type guards,
[`await_session_mutation`][turnstore.memory.await_session_mutation] and
[`resolve_session_limit`][turnstore.memory.resolve_session_limit]. The PostgreSQL
(`SQLAlchemySession`) and Redis (`RedisSession`) backends and `EncryptedSession` need extras, and
the OpenAI-backed sessions import `openai`: they are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .extras import lazy_getattr
from .history import estimate_item_tokens, load_history
from .mutation import await_session_mutation
from .open_store import open_session_store
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

if TYPE_CHECKING:  # imported on first use (extras.LAZY_EXPORTS)
    from .encrypted import EncryptedSession
    from .openai.compaction import CompactionTriggerContext, OpenAIResponsesCompactionSession
    from .openai.conversations import OpenAIConversationsSession
    from .redis.session import RedisSession
    from .sqlalchemy.session import SQLAlchemySession

__all__ = [
    # Each name is also exported from `turnstore`, except the tools for writing a backend,
    # marked `here only`. Lazy names are imported on first use (extras.LAZY_EXPORTS).
    "AdvancedSQLiteSession",
    "AsyncSQLiteSession",
    "AtomicReplacementSession",  # here only
    "CompactionTriggerContext",
    "EncryptedSession",  # lazy: needs the encryption extra
    "HistorySnapshot",  # here only
    "OpenAIConversationsSession",
    "OpenAIResponsesCompactionArgs",
    "OpenAIResponsesCompactionAwareSession",
    "OpenAIResponsesCompactionSession",
    "RedisSession",  # lazy: needs the redis extra
    "SQLAlchemySession",  # lazy: needs the postgres extra
    "SQLiteSession",
    "Session",
    "SessionABC",
    "SessionInfo",
    "SessionRecord",
    "SessionSettings",
    "SessionStats",
    "SessionStore",
    "UsageRecordingSession",  # here only
    "await_session_mutation",  # here only
    "estimate_item_tokens",
    "is_atomic_replacement_session",  # here only
    "is_openai_responses_compaction_aware_session",
    "is_usage_recording_session",  # here only
    "load_history",
    "open_session_store",
    "resolve_session_limit",  # here only
]
"""Static: the same on every install. The lazy names are imported on first use (`__getattr__`);
those that need an extra raise an `ImportError` saying what to install when it is missing."""


if not TYPE_CHECKING:  # type checkers see the lazy names through the imports above, and
    # flag any other name (a module `__getattr__` would make every name `Any` to them)
    __getattr__ = lazy_getattr(__name__, __all__)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
