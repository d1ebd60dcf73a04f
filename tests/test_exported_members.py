"""The public surface, name by name: an export that slips in or out fails here.

When you export a new public name, add it to the list of its module below. `__all__` is static:
the same lists hold on an install without the extras (checked in a child Python that cannot
import them), where the names that need an extra raise an `ImportError` saying what to install.
"""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
import textwrap

import pytest

TOP_LEVEL = [
    "AdvancedSQLiteSession",
    "Agent",
    "AgentsError",
    "AsyncSQLiteSession",
    "BranchDeletedError",
    "CallModelData",
    "CallModelInputFilter",
    "CompactionTriggerContext",
    "EncryptedSession",
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
    "UserError",
    "__version__",
    "estimate_item_tokens",
    "function_tool",
    "is_openai_responses_compaction_aware_session",
    "load_history",
    "open_session_store",
]


MEMORY = [
    "AdvancedSQLiteSession",
    "AsyncSQLiteSession",
    "AtomicReplacementSession",
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


# The tools for writing a session backend: exported from turnstore.memory only.
BACKEND_TOOLS = [
    "AtomicReplacementSession",
    "HistorySnapshot",
    "UsageRecordingSession",
    "await_session_mutation",
    "is_atomic_replacement_session",
    "is_usage_recording_session",
    "resolve_session_limit",
]

# Imported on first use; the install command their ImportError names when it is missing.
NEEDS_INSTALLING = {
    "EncryptedSession": None,  # importable without its extra: constructing one says what to install
    "RedisSession": "pip install 'turnstore[redis]'",
    "SQLAlchemySession": "pip install 'turnstore[postgres]'",
    "SessionConformanceTests": "pip install pytest pytest-asyncio",
}

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


def test_app_names_are_the_same_objects_at_the_top_level_and_backend_tools_are_not() -> None:
    top = importlib.import_module("turnstore")
    memory = importlib.import_module("turnstore.memory")
    assert sorted(set(MEMORY) - set(TOP_LEVEL)) == BACKEND_TOOLS
    for name in MEMORY:
        if name in BACKEND_TOOLS:
            with pytest.raises(AttributeError, match=f"from turnstore.memory import {name}"):
                getattr(top, name)
        else:
            assert getattr(top, name) is getattr(memory, name), name


@pytest.mark.parametrize("module_name", sorted(MODULES))
def test_dir_lists_every_exported_name(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert set(MODULES[module_name]) <= set(dir(module))


# In the child: importing these raises ImportError, as if the extras and pytest were missing.
_BLOCKED = ("sqlalchemy", "redis", "cryptography", "pytest", "pytest_asyncio")

_CHILD = """
import json, sys
for blocked in {blocked!r}:
    sys.modules[blocked] = None
import importlib
report = {{}}
for module_name in {modules!r}:
    module = importlib.import_module(module_name)
    names = {{}}
    for name in module.__all__:
        try:
            getattr(module, name)
        except ImportError as exc:
            names[name] = str(exc)
        else:
            names[name] = None
    report[module_name] = {{
        "all": list(module.__all__),
        "dir": sorted(set(module.__all__) - set(dir(module))),
        "names": names,
    }}
print(json.dumps(report))
"""


def test_the_surface_is_the_same_without_the_extras() -> None:
    code = _CHILD.format(blocked=_BLOCKED, modules=sorted(MODULES))
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    for module_name, expected in MODULES.items():
        module = report[module_name]
        assert sorted(module["all"]) == expected, module_name
        assert module["dir"] == [], f"{module_name}: dir() misses {module['dir']}"
        for name, error in module["names"].items():
            command = NEEDS_INSTALLING.get(name)
            if command is None:
                assert error is None, f"{module_name}.{name}: {error}"
            else:
                assert error is not None, f"{module_name}.{name} imported without its extra"
                assert command in error, error


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
