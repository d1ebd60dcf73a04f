"""conftest.py for the OpenAI Agents SDK's own session tests, run on turnstore's classes.

Copied next to the SDK's extracted `tests/` package by `test_sdk_parity.py`. It rebinds the
SDK's session names in every loaded `agents.*` module (the SDK's RunConfig checks `isinstance`
against the class it imported itself), so the SDK's tests and its Runner use ours.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

import turnstore

_MODULES = [
    "agents",
    "agents.memory",
    "agents.memory.session",
    "agents.memory.session_settings",
    "agents.memory.sqlite_session",
    "agents.run",
    "agents.run_config",
    "agents.extensions",
    "agents.extensions.memory",
    "agents.extensions.tool_output_trimmer",
]
_NAMES = {
    "SQLiteSession": turnstore.SQLiteSession,
    "SessionSettings": turnstore.SessionSettings,
    "OpenAIConversationsSession": turnstore.OpenAIConversationsSession,
    "OpenAIResponsesCompactionSession": turnstore.OpenAIResponsesCompactionSession,
    "AsyncSQLiteSession": turnstore.AsyncSQLiteSession,
    "ToolOutputTrimmer": turnstore.ToolOutputTrimmer,
}
for _optional in ("EncryptedSession", "AdvancedSQLiteSession"):
    if hasattr(turnstore, _optional):
        _NAMES[_optional] = getattr(turnstore, _optional)


def _rebind() -> None:
    for name in _MODULES:
        importlib.import_module(name)
    if "EncryptedSession" in _NAMES:
        importlib.import_module("agents.extensions.memory.encrypt_session")
    if "AdvancedSQLiteSession" in _NAMES:
        importlib.import_module("agents.extensions.memory.advanced_sqlite_session")
    if importlib.util.find_spec("aiosqlite") is not None:
        # The SDK's own AsyncSQLiteSession module needs aiosqlite (turnstore's does not).
        importlib.import_module("agents.extensions.memory.async_sqlite_session")
    for module_name, module in list(sys.modules.items()):
        if module_name != "agents" and not module_name.startswith("agents."):
            continue
        for name, ours in _NAMES.items():
            if name in vars(module):
                setattr(module, name, ours)
    # The extension package resolves its names lazily: bind them as attributes.
    extensions = sys.modules["agents.extensions.memory"]
    for name in ("EncryptedSession", "AdvancedSQLiteSession", "AsyncSQLiteSession"):
        if name in _NAMES:
            setattr(extensions, name, _NAMES[name])


_rebind()
