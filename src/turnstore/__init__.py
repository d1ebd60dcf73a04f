"""turnstore: session memory for LLM agents.

Pass a session to a run and the history is loaded before the run and saved after it:

```python
from turnstore import Agent, Runner, SQLiteSession

agent = Agent(name="Assistant", instructions="Reply very concisely.")
session = SQLiteSession("conversation_123", "conversations.db")

result = await Runner.run(agent, "What city is the Golden Gate Bridge in?", session=session)
result = await Runner.run(agent, "What state is it in?", session=session)  # remembers the bridge
```

This module holds what an application writes: agents, runs and their results and events, tools,
sessions and their settings, errors. Each other audience has one place:

- `turnstore.extensions.memory`: the OpenAI Agents SDK's extension sessions (`RedisSession`,
  `SQLAlchemySession`, `EncryptedSession`, `AdvancedSQLiteSession`, `AsyncSQLiteSession`), and
  `turnstore.extensions`: `ToolOutputTrimmer`, at the SDK's import paths;
- `turnstore.admin`: listing, reading and deleting the sessions in a database or Redis
  (`open_session_store`, `SessionStore`);
- `turnstore.memory`: the tools for writing a session backend (`SessionABC`, the optional
  protocols, `load_history`);
- `turnstore.testing`: the fake OpenAI server, the scripted model and the conformance suite.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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
from .memory.session import Session
from .memory.settings import SessionSettings
from .memory.sqlite.session import SQLiteSession

if TYPE_CHECKING:  # imported on first use: see _IMPORTS_OPENAI
    from .agent import Agent
    from .items import TResponseInputItem
    from .memory.openai.compaction import (
        CompactionTriggerContext,
        OpenAIResponsesCompactionSession,
    )
    from .memory.openai.conversations import OpenAIConversationsSession
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
    "Agent",
    "AgentsError",
    "BranchDeletedError",
    "CallModelData",
    "CallModelInputFilter",
    "CompactionTriggerContext",
    "FunctionTool",
    "MaxTurnsExceeded",
    "Model",
    "ModelBehaviorError",
    "ModelCallError",
    "ModelInputData",
    "ModelRequest",
    "ModelSettings",
    "OpenAIConversationsSession",
    "OpenAIResponsesCompactionSession",
    "OpenAIResponsesModel",
    "RawResponseEvent",
    "RunCompleteEvent",
    "RunConfig",
    "RunItemEvent",
    "RunResult",
    "RunResultStreaming",
    "Runner",
    "SQLiteSession",
    "Session",
    "SessionClosedError",
    "SessionDecryptionError",
    "SessionError",
    "SessionInputCallback",
    "SessionSchemaError",
    "SessionSettings",
    "SessionStorageError",
    "StreamEvent",
    "TResponseInputItem",
    "TextDeltaEvent",
    "TurnstoreError",
    "Usage",
    "UserError",
    "__version__",
    "function_tool",
]
"""Static: the same on every install."""

_IMPORTS_OPENAI: dict[str, str] = {
    "Agent": ".agent",
    "CallModelData": ".run_config",
    "CallModelInputFilter": ".run_config",
    "CompactionTriggerContext": ".memory.openai.compaction",
    "FunctionTool": ".tools",
    "Model": ".models",
    "ModelInputData": ".run_config",
    "ModelRequest": ".models",
    "ModelSettings": ".models",
    "OpenAIConversationsSession": ".memory.openai.conversations",
    "OpenAIResponsesCompactionSession": ".memory.openai.compaction",
    "OpenAIResponsesModel": ".models",
    "RawResponseEvent": ".stream_events",
    "RunCompleteEvent": ".result",
    "RunConfig": ".run_config",
    "RunItemEvent": ".stream_events",
    "RunResult": ".result",
    "RunResultStreaming": ".result",
    "Runner": ".runner",
    "SessionInputCallback": ".session_input",
    "StreamEvent": ".result",
    "TResponseInputItem": ".items",
    "TextDeltaEvent": ".stream_events",
    "Usage": ".result",
    "function_tool": ".tools",
}
"""The names whose modules import `openai`, and those modules: imported on first use.

Importing `openai` takes longer than the rest of turnstore together, so an application that only
stores sessions, and the `turnstore` command, never import it."""


if not TYPE_CHECKING:  # type checkers see the names through the imports above, and flag any
    # other name (a module `__getattr__` would make every name `Any` to them)

    def __getattr__(name: str) -> Any:
        module = _IMPORTS_OPENAI.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module, __name__), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
