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


MEMORY = [
    "AtomicReplacementSession",
    "HistorySnapshot",
    "OpenAIResponsesCompactionArgs",
    "OpenAIResponsesCompactionAwareSession",
    "SessionABC",
    "SessionSettingsLike",
    "UsageRecordingSession",
    "await_session_mutation",
    "estimate_item_tokens",
    "is_atomic_replacement_session",
    "is_openai_responses_compaction_aware_session",
    "is_usage_recording_session",
    "load_history",
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


ADMIN = [
    "SessionInfo",
    "SessionRecord",
    "SessionStats",
    "SessionStore",
    "open_session_store",
]


EXTENSIONS_MEMORY = [
    "AdvancedSQLiteSession",
    "AsyncSQLiteSession",
    "EncryptedSession",
    "RedisSession",
    "SQLAlchemySession",
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
    "turnstore.admin": ADMIN,
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


def test_each_public_name_has_one_import_path() -> None:
    paths: dict[str, list[str]] = {}
    for module_name, names in MODULES.items():
        for name in names:
            paths.setdefault(name, []).append(module_name)
    assert {name: where for name, where in paths.items() if len(where) > 1} == {}


def test_the_sdk_extension_sessions_are_not_at_the_top_level() -> None:
    top = importlib.import_module("turnstore")
    for name in [*EXTENSIONS_MEMORY, *EXTENSIONS, *ADMIN, "SessionABC", "load_history"]:
        with pytest.raises(AttributeError, match=name):
            getattr(top, name)


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


def test_sdk_import_paths_work_with_only_the_prefix_changed() -> None:
    # `from agents.extensions.memory import X` becomes `from turnstore.extensions.memory import X`.
    agents_memory = importlib.import_module("agents.extensions.memory")
    agents_extensions = importlib.import_module("agents.extensions")
    assert set(EXTENSIONS_MEMORY) <= set(agents_memory.__all__)
    assert hasattr(agents_extensions, "ToolOutputTrimmer")
    ours = importlib.import_module("turnstore.extensions.memory")
    for name in EXTENSIONS_MEMORY:
        assert getattr(ours, name).__name__ == name


def test_the_migration_table_covers_the_sdks_memory_modules() -> None:
    """docs/from_agents_sdk.md's import table: each name it lists imports from the module it
    names, and it lists every name of `agents.memory` and `agents.extensions.memory` except the
    SDK sessions the page says turnstore lacks."""
    import re
    from pathlib import Path

    page = Path(__file__).parent.parent / "docs" / "from_agents_sdk.md"
    listed: dict[str, set[str]] = {}
    for line in page.read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"\| (`agents[^|]*) \| `(turnstore[\w.]*)` \|", line)
        if match is None:
            continue
        sdk_modules, names = match.group(1).split(": ", 1)
        target = importlib.import_module(match.group(2))
        for name in re.findall(r"`(\w+)`", names):
            assert hasattr(target, name), (name, match.group(2))
        for sdk_module in re.findall(r"`([\w.]+)`", sdk_modules):
            listed.setdefault(sdk_module, set()).update(re.findall(r"`(\w+)`", names))
    sdk_memory = importlib.import_module("agents.memory")
    assert set(sdk_memory.__all__) <= listed["agents.memory"]
    sdk_extensions_memory = importlib.import_module("agents.extensions.memory")
    missing = set(sdk_extensions_memory.__all__) - listed["agents.extensions.memory"]
    assert {name for name in missing if not name.startswith("DAPR_")} == {
        "DaprSession",
        "MongoDBSession",
    }
    text = " ".join(page.read_text(encoding="utf-8").split())
    assert "`DaprSession` and `MongoDBSession` have no turnstore counterpart" in text
