"""The public surface, name by name: an export that slips in or out fails here.

When you export a new public name, add it to the list of its module below.
"""

from __future__ import annotations

import importlib
import inspect

import pytest

TOP_LEVEL = [
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


MEMORY = [
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


TESTING = [
    "FakeCompactionAPI",
    "FakeConversationsAPI",
    "FakeOpenAIServer",
    "FakeReply",
    "RecordedRequest",
    "ScriptStep",
    "ScriptedModel",
    "SessionConformanceTests",
    "function_call_item",
    "message_item",
    "response_body",
    "sse_events_for",
    "text_response",
    "tool_call_response",
]


EXTENSIONS = ["ToolOutputTrimmer"]


EXTENSIONS_MEMORY = [
    "AdvancedSQLiteSession",
    "AsyncSQLiteSession",
    "EncryptedSession",
    "RedisSession",
    "SQLAlchemySession",
]


MODULES = {
    "turnstore": TOP_LEVEL,
    "turnstore.extensions": EXTENSIONS,
    "turnstore.extensions.memory": EXTENSIONS_MEMORY,
    "turnstore.memory": MEMORY,
    "turnstore.testing": TESTING,
}


@pytest.mark.parametrize("module_name", sorted(MODULES))
def test_all_lists_exactly_the_expected_names(module_name: str) -> None:
    module = importlib.import_module(module_name)
    exported = list(module.__all__)
    assert len(exported) == len(set(exported)), "a name is listed twice in __all__"
    assert sorted(exported) == MODULES[module_name]


@pytest.mark.parametrize("module_name", sorted(MODULES))
def test_every_exported_name_resolves(module_name: str) -> None:
    module = importlib.import_module(module_name)
    for name in module.__all__:
        assert getattr(module, name) is not None, name


def test_memory_names_are_the_same_objects_at_the_top_level() -> None:
    top = importlib.import_module("turnstore")
    memory = importlib.import_module("turnstore.memory")
    for name in MEMORY:
        assert name in TOP_LEVEL, f"{name} is exported from turnstore.memory only"
        assert getattr(top, name) is getattr(memory, name), name


def test_public_classes_and_functions_are_documented() -> None:
    for module_name, names in MODULES.items():
        module = importlib.import_module(module_name)
        for name in names:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                assert (obj.__doc__ or "").strip(), f"{module_name}.{name} has no docstring"


def test_sdk_extension_paths_give_the_same_objects_as_the_top_level() -> None:
    top = importlib.import_module("turnstore")
    paths = {
        "turnstore.extensions": EXTENSIONS,
        "turnstore.extensions.tool_output_trimmer": ["ToolOutputTrimmer"],
        "turnstore.extensions.memory": EXTENSIONS_MEMORY,
        "turnstore.extensions.memory.async_sqlite_session": ["AsyncSQLiteSession"],
    }
    for module_name, names in paths.items():
        module = importlib.import_module(module_name)
        for name in names:
            assert getattr(module, name) is getattr(top, name), f"{module_name}.{name}"
