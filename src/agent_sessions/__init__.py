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
    SessionSettings,
    SQLiteSession,
    await_session_mutation,
    is_openai_responses_compaction_aware_session,
    resolve_session_limit,
)

__version__ = "0.1.0"

__all__ = [
    "AgentSessionsError",
    "AgentsError",
    "MaxTurnsExceeded",
    "ModelBehaviorError",
    "OpenAIResponsesCompactionArgs",
    "OpenAIResponsesCompactionAwareSession",
    "SQLiteSession",
    "Session",
    "SessionABC",
    "SessionClosedError",
    "SessionError",
    "SessionSchemaError",
    "SessionSettings",
    "SessionStorageError",
    "TResponseInputItem",
    "UserError",
    "__version__",
    "await_session_mutation",
    "is_openai_responses_compaction_aware_session",
    "resolve_session_limit",
]
