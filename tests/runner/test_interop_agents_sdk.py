"""Interop with the OpenAI Agents SDK: our sessions in its Runner, its sessions in ours."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

from turnstore import SQLiteSession
from turnstore.testing.interop import (
    check_agents_sdk_runner_remembers,
    check_history_interchange,
    check_runner_remembers,
)


@pytest.fixture
def agents() -> ModuleType:
    """The SDK, imported by the tests that use it, not when the file is collected: every
    pytest -n worker collects this file, and the SDK takes seconds to import."""
    importlib.import_module("agents.testing")
    return importlib.import_module("agents")


async def test_our_sqlite_session_in_the_sdk_runner(tmp_path: Path) -> None:
    stored = await check_agents_sdk_runner_remembers(
        lambda sid: SQLiteSession(sid, tmp_path / "ours.db")
    )
    assert [item.get("type") for item in stored].count("function_call") == 1


async def test_sdk_sqlite_session_in_our_runner(agents: ModuleType, tmp_path: Path) -> None:
    stored = await check_runner_remembers(
        lambda sid: agents.SQLiteSession(sid, str(tmp_path / "sdk.db"))
    )
    assert [item.get("type") or item.get("role") for item in stored] == [
        "user",
        "function_call",
        "function_call_output",
        "message",
        "user",
        "message",
    ]


async def test_history_interchange_on_our_session(tmp_path: Path) -> None:
    await check_history_interchange(lambda sid: SQLiteSession(sid, tmp_path / "mix.db"))


async def test_history_interchange_on_the_sdk_session(agents: ModuleType, tmp_path: Path) -> None:
    await check_history_interchange(lambda sid: agents.SQLiteSession(sid, str(tmp_path / "m.db")))


async def test_sdk_run_config_session_settings_on_our_session(agents: ModuleType) -> None:
    scripted = agents.testing
    model = scripted.ScriptedModel([[scripted.assistant_message("a", item_id="m1")]])
    async with SQLiteSession("sdk-settings", session_settings={"limit": 5}) as session:
        await session.add_items([{"role": "user", "content": f"old {i}"} for i in range(3)])
        await agents.Runner.run(
            agents.Agent(name="A", model=model),
            "new",
            session=session,
            run_config=agents.RunConfig(session_settings=agents.SessionSettings(limit=1)),
        )
    assert [item.get("content") for item in model.calls[-1].input] == ["old 2", "new"]


async def test_the_sdk_runner_reports_the_loaded_history_and_allows_an_empty_input(
    agents: ModuleType,
) -> None:
    """running_agents.md: with `[]`, the SDK's `Runner` reports the loaded history as
    `result.input`, and it runs an empty input on an empty session (turnstore's raises)."""
    scripted = agents.testing
    model = scripted.ScriptedModel(
        [
            [scripted.assistant_message("Oslo.", item_id="m1")],
            [scripted.assistant_message("Nothing to answer.", item_id="m2")],
        ]
    )
    agent = agents.Agent(name="A", model=model)
    question = {"role": "user", "content": "What is the capital of Norway?"}
    async with SQLiteSession("retry") as session:
        await session.add_items([question])
        result = await agents.Runner.run(agent, [], session=session)
    assert result.input == [question]
    async with SQLiteSession("empty") as empty:
        result = await agents.Runner.run(agent, [], session=empty)
    assert result.input == []
    assert result.final_output == "Nothing to answer."
