"""conftest.py for the OpenAI Agents SDK's own session tests, run on turnstore's classes.

Copied next to the SDK's extracted `tests/` package by `sdk_run.py`. It rebinds the
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
import turnstore.extensions
import turnstore.extensions.memory

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
    "AsyncSQLiteSession": turnstore.extensions.memory.AsyncSQLiteSession,
    "ToolOutputTrimmer": turnstore.extensions.ToolOutputTrimmer,
}
for _optional in ("EncryptedSession", "AdvancedSQLiteSession"):
    try:
        _NAMES[_optional] = getattr(turnstore.extensions.memory, _optional)
    except ImportError:  # its extra is not installed
        continue
# The server backends, rebound in the SDK's own modules for them (their tests import from there).
_EXTENSIONS = {
    "RedisSession": "agents.extensions.memory.redis_session",
    "SQLAlchemySession": "agents.extensions.memory.sqlalchemy_session",
}
for _name, _module in _EXTENSIONS.items():
    try:
        importlib.import_module(_module)
    except ImportError:  # the SDK's module needs a driver that is not installed
        continue
    _NAMES[_name] = getattr(turnstore.extensions.memory, _name)


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
    for name in ("EncryptedSession", "AdvancedSQLiteSession", "AsyncSQLiteSession", *_EXTENSIONS):
        if name in _NAMES:
            setattr(extensions, name, _NAMES[name])


_rebind()


def _isolate_redis_keys() -> None:
    """Give sessions made without `key_prefix` a prefix of this run, deleted at exit.

    Some of the SDK's Redis tests write under the default prefix on the shared test database
    and never clear it: a second run would read the first run's items.
    """
    if "RedisSession" not in _NAMES:
        return
    import asyncio
    import atexit
    import contextlib
    import uuid

    from turnstore.memory.redis.session import create_client_for_url

    prefix = f"sdkparity{uuid.uuid4().hex[:10]}"
    redis_session = _NAMES["RedisSession"]
    redis_session.__init__.__kwdefaults__["key_prefix"] = prefix
    redis_session.from_url.__func__.__kwdefaults__["key_prefix"] = prefix

    async def delete() -> None:
        client = create_client_for_url("redis://localhost:6379/15")
        try:
            keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
            if keys:
                await client.delete(*keys)
        finally:
            await client.aclose()

    def at_exit() -> None:
        with contextlib.suppress(Exception):  # Redis not reachable: nothing was written there
            asyncio.run(delete())

    atexit.register(at_exit)


_isolate_redis_keys()
