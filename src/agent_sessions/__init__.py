"""agent-sessions: session memory for LLM agents.

Pass a session to a run and the history is loaded before the run and saved after it:

```python
from agent_sessions import Agent, Runner, SQLiteSession

agent = Agent(name="Assistant", instructions="Reply very concisely.")
session = SQLiteSession("conversation_123", "conversations.db")

result = await Runner.run(agent, "What city is the Golden Gate Bridge in?", session=session)
result = await Runner.run(agent, "What state is it in?", session=session)  # remembers the bridge
```

This module is the one public import path: everything documented is importable from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .exceptions import (
    AgentSessionsError,
    AgentsError,
    MaxTurnsExceeded,
    ModelBehaviorError,
    SessionClosedError,
    SessionError,
    SessionSchemaError,
    SessionStorageError,
    UserError,
)
from .items import TResponseInputItem
from .memory import (
    OpenAIResponsesCompactionArgs,
    OpenAIResponsesCompactionAwareSession,
    Session,
    SessionABC,
    SessionInfo,
    SessionRecord,
    SessionSettings,
    SessionStats,
    SessionStore,
    SQLiteSession,
    await_session_mutation,
    is_openai_responses_compaction_aware_session,
    open_session_store,
    resolve_session_limit,
)

if TYPE_CHECKING:
    from .memory import RedisSession, SQLAlchemySession

__version__ = "0.1.0"

__all__ = [
    "AgentSessionsError",
    "AgentsError",
    "MaxTurnsExceeded",
    "ModelBehaviorError",
    "OpenAIResponsesCompactionArgs",
    "OpenAIResponsesCompactionAwareSession",
    "RedisSession",
    "SQLAlchemySession",
    "SQLiteSession",
    "Session",
    "SessionABC",
    "SessionClosedError",
    "SessionError",
    "SessionInfo",
    "SessionRecord",
    "SessionSchemaError",
    "SessionSettings",
    "SessionStats",
    "SessionStorageError",
    "SessionStore",
    "TResponseInputItem",
    "UserError",
    "__version__",
    "await_session_mutation",
    "is_openai_responses_compaction_aware_session",
    "open_session_store",
    "resolve_session_limit",
]


def __getattr__(name: str) -> Any:
    # SQLAlchemySession and RedisSession need extras: imported on first use.
    if name in ("SQLAlchemySession", "RedisSession"):
        from . import memory

        return getattr(memory, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
