"""turnstore: session memory for LLM agents.

Pass a session to a run and the history is loaded before the run and saved after it:

```python
from turnstore import Agent, Runner, SQLiteSession

agent = Agent(name="Assistant", instructions="Reply very concisely.")
session = SQLiteSession("conversation_123", "conversations.db")

result = await Runner.run(agent, "What city is the Golden Gate Bridge in?", session=session)
result = await Runner.run(agent, "What state is it in?", session=session)  # remembers the bridge
```

This module is the one public import path: everything documented is importable from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .agent import Agent
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
from .extensions import ToolOutputTrimmer
from .items import TResponseInputItem
from .memory import (
    AdvancedSQLiteSession,
    AsyncSQLiteSession,
    AtomicReplacementSession,
    Closing,
    CompactionTriggerContext,
    HistorySnapshot,
    OpenAIConversationsSession,
    OpenAIResponsesCompactionArgs,
    OpenAIResponsesCompactionAwareSession,
    OpenAIResponsesCompactionSession,
    Session,
    SessionABC,
    SessionInfo,
    SessionRecord,
    SessionSettings,
    SessionStats,
    SessionStore,
    SQLiteSession,
    UsageRecordingSession,
    await_session_mutation,
    estimate_item_tokens,
    is_atomic_replacement_session,
    is_openai_responses_compaction_aware_session,
    is_usage_recording_session,
    load_history,
    open_session_store,
    resolve_session_limit,
)
from .memory import __all__ as _memory_all
from .models import Model, ModelRequest, ModelSettings, OpenAIResponsesModel
from .result import RunCompleteEvent, RunResult, RunResultStreaming, StreamEvent, Usage
from .run_config import CallModelData, CallModelInputFilter, ModelInputData, RunConfig
from .runner import Runner
from .session_input import SessionInputCallback
from .stream_events import RawResponseEvent, RunItemEvent, TextDeltaEvent
from .tools import FunctionTool, function_tool

if TYPE_CHECKING:
    from .memory import EncryptedSession, RedisSession, SQLAlchemySession

__version__ = "0.2.0"
"""The release: the one place the version is written (pyproject.toml reads it from here)."""

__all__ = [
    "AdvancedSQLiteSession",
    "Agent",
    "AgentsError",
    "AsyncSQLiteSession",
    "AtomicReplacementSession",
    "BranchDeletedError",
    "CallModelData",
    "CallModelInputFilter",
    "Closing",
    "CompactionTriggerContext",
    "EncryptedSession",
    "FunctionTool",
    "HistorySnapshot",
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
    "RedisSession",
    "RunCompleteEvent",
    "RunConfig",
    "RunItemEvent",
    "RunResult",
    "RunResultStreaming",
    "Runner",
    "SQLAlchemySession",
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
    "UsageRecordingSession",
    "UserError",
    "__version__",
    "await_session_mutation",
    "estimate_item_tokens",
    "function_tool",
    "is_atomic_replacement_session",
    "is_openai_responses_compaction_aware_session",
    "is_usage_recording_session",
    "load_history",
    "open_session_store",
    "resolve_session_limit",
]


# `from turnstore import *` imports every name in `__all__`: leave out the backends whose
# extra is not installed, as `turnstore.memory` does.
for _name in ("SQLAlchemySession", "RedisSession", "EncryptedSession"):
    if _name not in _memory_all:
        __all__.remove(_name)
del _name


def __getattr__(name: str) -> Any:
    # SQLAlchemySession, RedisSession and EncryptedSession need extras: imported on first use.
    if name in ("SQLAlchemySession", "RedisSession", "EncryptedSession"):
        from . import memory

        return getattr(memory, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
