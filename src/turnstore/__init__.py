"""turnstore: session memory for LLM agents.

Pass a session to a run and the history is loaded before the run and saved after it:

```python
from turnstore import Agent, Runner, SQLiteSession

agent = Agent(name="Assistant", instructions="Reply very concisely.")
session = SQLiteSession("conversation_123", "conversations.db")

result = await Runner.run(agent, "What city is the Golden Gate Bridge in?", session=session)
result = await Runner.run(agent, "What state is it in?", session=session)  # remembers the bridge
```

This module is the public import path of an application: agents, runs, sessions, stores and
errors. The tools for writing a session backend (`HistorySnapshot`,
`await_session_mutation`, `resolve_session_limit`, the atomic-replacement and usage-recording
protocols) are in `turnstore.memory`, and the test helpers in
`turnstore.testing`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import memory
from .exceptions import (
    AgentsError,
    BranchDeletedError,
    MaxTurnsExceeded,
    ModelBehaviorError,
    ModelCallError,
    SessionClosedError,
    SessionDecryptionError,
    SessionError,
    SessionSchemaError,
    SessionStorageError,
    TurnstoreError,
    UserError,
)
from .memory import (
    AdvancedSQLiteSession,
    AsyncSQLiteSession,
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
    estimate_item_tokens,
    is_openai_responses_compaction_aware_session,
    load_history,
    open_session_store,
)
from .memory.extras import lazy_getattr

if TYPE_CHECKING:  # imported on first use (memory.extras.LAZY_EXPORTS)
    from .agent import Agent
    from .extensions import ToolOutputTrimmer
    from .items import TResponseInputItem
    from .memory import (
        CompactionTriggerContext,
        EncryptedSession,
        OpenAIConversationsSession,
        OpenAIResponsesCompactionSession,
        RedisSession,
        SQLAlchemySession,
    )
    from .models import Model, ModelRequest, ModelSettings, OpenAIResponsesModel
    from .result import RunCompleteEvent, RunResult, RunResultStreaming, StreamEvent, Usage
    from .run_config import CallModelData, CallModelInputFilter, ModelInputData, RunConfig
    from .runner import Runner
    from .session_input import SessionInputCallback
    from .stream_events import RawResponseEvent, RunItemEvent, TextDeltaEvent
    from .tools import FunctionTool, function_tool

__version__ = "0.2.0"
"""The release: the one place the version is written (pyproject.toml reads it from here)."""

__all__ = [
    "AdvancedSQLiteSession",
    "Agent",
    "AgentsError",
    "AsyncSQLiteSession",
    "BranchDeletedError",
    "CallModelData",
    "CallModelInputFilter",
    "CompactionTriggerContext",
    "EncryptedSession",  # lazy: needs the encryption extra
    "FunctionTool",
    "MaxTurnsExceeded",
    "Model",
    "ModelBehaviorError",
    "ModelCallError",
    "ModelInputData",
    "ModelRequest",
    "ModelSettings",
    "OpenAIConversationsSession",
    "OpenAIResponsesCompactionArgs",
    "OpenAIResponsesCompactionAwareSession",
    "OpenAIResponsesCompactionSession",
    "OpenAIResponsesModel",
    "RawResponseEvent",
    "RedisSession",  # lazy: needs the redis extra
    "RunCompleteEvent",
    "RunConfig",
    "RunItemEvent",
    "RunResult",
    "RunResultStreaming",
    "Runner",
    "SQLAlchemySession",  # lazy: needs the postgres extra
    "SQLiteSession",
    "Session",
    "SessionABC",
    "SessionClosedError",
    "SessionDecryptionError",
    "SessionError",
    "SessionInfo",
    "SessionInputCallback",
    "SessionRecord",
    "SessionSchemaError",
    "SessionSettings",
    "SessionStats",
    "SessionStorageError",
    "SessionStore",
    "StreamEvent",
    "TResponseInputItem",
    "TextDeltaEvent",
    "ToolOutputTrimmer",
    "TurnstoreError",
    "Usage",
    "UserError",
    "__version__",
    "estimate_item_tokens",
    "function_tool",
    "is_openai_responses_compaction_aware_session",
    "load_history",
    "open_session_store",
]

"""Static: the same on every install. The names of `memory.extras.LAZY_EXPORTS` (the agent layer,
the OpenAI-backed sessions, the extras' backends) are imported on first use (`__getattr__`), so
`import turnstore` does not import `openai`; those that need an extra raise an `ImportError` saying
what to install when it is missing."""


if not TYPE_CHECKING:  # type checkers see the lazy names through the imports above, and
    # flag any other name (a module `__getattr__` would make every name `Any` to them)
    __getattr__ = lazy_getattr(__name__, __all__, moved=("turnstore.memory", memory.__all__))


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
