"""Every example, run the way its docstring says: `python -m turnstore.testing.fake_openai` in
one process, its two printed lines exported in a shell, then the example from that shell."""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
SERVER = [sys.executable, "-m", "turnstore.testing.fake_openai"]


@dataclass
class RunningServer:
    process: subprocess.Popen[str]
    exports: list[str]

    def stop(self) -> tuple[int, str]:
        """Ctrl-C, as a user stops it; returns the exit status and what it wrote to stderr."""
        self.process.send_signal(signal.SIGINT)
        _, err = self.process.communicate(timeout=30)
        return self.process.returncode, err


def start_server(*args: str) -> RunningServer:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    process = subprocess.Popen(
        [*SERVER, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # a Ctrl-C in the test's terminal is not sent to it as well
    )
    assert process.stdout is not None
    exports = [process.stdout.readline().strip() for _ in range(2)]
    if not all(exports):
        process.kill()
        _, err = process.communicate(timeout=30)
        pytest.fail(f"the fake server printed no exports; stderr: {err}")
    return RunningServer(process, exports)


@pytest.fixture
def server() -> Iterator[RunningServer]:
    running = start_server()
    try:
        yield running
    finally:
        if running.process.poll() is None:
            running.process.kill()
            running.process.communicate(timeout=30)


def run_in_shell(exports: list[str], command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
    script = f"export {' '.join(shlex.quote(line) for line in exports)}\n{command}\n"
    return subprocess.run(
        ["bash", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_the_server_prints_two_lines_to_export_and_stops_cleanly_on_ctrl_c(
    server: RunningServer,
) -> None:
    base_url, api_key = server.exports
    assert re.fullmatch(r"OPENAI_BASE_URL=http://127\.0\.0\.1:\d+/v1", base_url)
    assert re.fullmatch(r"OPENAI_API_KEY=\S+", api_key)
    code, err = server.stop()
    assert code == 0
    assert "Traceback" not in err
    assert "KeyboardInterrupt" not in err


def test_port_option_and_busy_port() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    first = start_server("--port", str(port))
    try:
        assert first.exports[0] == f"OPENAI_BASE_URL=http://127.0.0.1:{port}/v1"
        second = subprocess.run(
            [*SERVER, "--port", str(port)], capture_output=True, text=True, timeout=60, check=False
        )
        assert second.returncode == 1
        assert second.stdout == ""
        assert "Traceback" not in second.stderr
        assert f"cannot listen on 127.0.0.1:{port}" in second.stderr
        assert len(second.stderr.strip().splitlines()) == 1
    finally:
        code, _ = first.stop()
    assert code == 0


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_docstring_says_how_to_run_it_on_the_fake_server(example: Path) -> None:
    doc = example.read_text(encoding="utf-8").split('"""')[1]
    assert ".venv/bin/python -m turnstore.testing.fake_openai" in doc
    assert "export OPENAI_BASE_URL=" in doc
    assert f".venv/bin/python examples/{example.name}" in doc


# What each example prints, in part: the replies quote the earlier user turns, so the history
# reached the model.
EXPECTED_OUTPUT = {
    "basic_memory.py": [
        'You said "What state is it in?". '
        'Your earlier message: "What city is the Golden Gate Bridge in?".',
        "6 items stored",
    ],
    "isolated_sessions.py": [
        'alice: (fake model) You said "What is my favourite colour?". ',
        'Your earlier message: "My favourite colour is green.".',
        'Your earlier message: "My favourite colour is red.".',
    ],
    "memory_vs_file.py": ['earlier message: "Remember the number 7."'],
    "message_correction.py": ["2 items stored"],
    "manual_vs_session.py": ["(4 items carried)"],
    "compaction.py": [
        "[stored items: 1, tokens this run: 53]",  # compacted on the 4th turn
        "compacted (1 compaction item)",
    ],
}


def test_every_expected_output_is_of_an_example() -> None:
    assert set(EXPECTED_OUTPUT) <= {p.name for p in EXAMPLES}


# One case per example (each with its own server), so that `pytest -n` spreads them.
@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_runs_from_the_shell(
    example: Path, server: RunningServer, tmp_path: Path
) -> None:
    done = run_in_shell(server.exports, f"{shlex.quote(sys.executable)} {example}", tmp_path)
    assert done.returncode == 0, f"{example.name}: {done.stderr}"
    assert "Traceback" not in done.stderr
    for expected in EXPECTED_OUTPUT.get(example.name, []):
        assert expected in done.stdout, done.stdout
    code, err = server.stop()
    assert code == 0, err


def test_streaming_and_conversations_are_served(server: RunningServer, tmp_path: Path) -> None:
    program = """
import asyncio
from turnstore import Agent, OpenAIConversationsSession, Runner, TextDeltaEvent

async def main() -> None:
    agent = Agent(name="a")
    async with OpenAIConversationsSession() as session:
        await Runner.run(agent, "first question", session=session)
        streamed = Runner.run_streamed(agent, "second question", session=session)
        deltas = [e.delta async for e in streamed.stream_events() if isinstance(e, TextDeltaEvent)]
        print("".join(deltas))
        print(len(await session.get_items()), "items in the conversation")

asyncio.run(main())
"""
    (tmp_path / "program.py").write_text(program, encoding="utf-8")
    done = run_in_shell(server.exports, f"{shlex.quote(sys.executable)} program.py", tmp_path)
    assert done.returncode == 0, done.stderr
    assert 'You said "second question". Your earlier message: "first question".' in done.stdout
    assert "4 items in the conversation" in done.stdout
