"""Session memory: the protocol, its settings, and the built-in backends.

Everything here is also exported from the top-level `agent_sessions` package. The PostgreSQL
(`SQLAlchemySession`) and Redis (`RedisSession`) backends need extras and are imported lazily.
"""

from __future__ import annotations

from typing import Any

from .mutation import await_session_mutation
from .session import (
    OpenAIResponsesCompactionArgs,
    OpenAIResponsesCompactionAwareSession,
    Session,
    SessionABC,
    is_openai_responses_compaction_aware_session,
)
from .settings import SessionSettings, resolve_session_limit
from .sqlite_session import SQLiteSession


__all__ = [
    "OpenAIResponsesCompactionArgs",
    "OpenAIResponsesCompactionAwareSession",
    "SQLiteSession",
    "Session",
    "SessionABC",
    "SessionSettings",
    "await_session_mutation",
    "is_openai_responses_compaction_aware_session",
    "resolve_session_limit",
]

# Backends that need an extra: name -> (module, pip extra).
_LAZY: dict[str, tuple[str, str]] = {}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module_name, _extra = _LAZY[name]
        import importlib

        module = importlib.import_module(module_name, __name__)
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
