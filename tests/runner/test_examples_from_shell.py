"""Every example, run the way its docstring says: `python -m turnstore.testing.fake_openai` in
one process, the export line it prints first run in a shell (`eval`), then the example from that
shell."""

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
    export_line: str

    def stop(self) -> tuple[int, str]:
        """Ctrl-C, as a user stops it; returns the exit status and what it wrote to stderr."""
        self.process.send_signal(signal.SIGINT)
        _, err = self.process.communicate(timeout=30)
        return self.process.returncode, err


# Start a command with SIGINT ignored, as a shell job started with `&` is: `trap "" INT` sets
# SIG_IGN, which exec keeps.
SIGINT_IGNORED = ["bash", "-c", 'trap "" INT; exec "$@"', "bash"]


def start_server(*args: str, sigint_ignored: bool = False) -> RunningServer:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    process = subprocess.Popen(
        [*(SIGINT_IGNORED if sigint_ignored else []), *SERVER, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # a Ctrl-C in the test's terminal is not sent to it as well
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line:
        process.kill()
        _, err = process.communicate(timeout=30)
        pytest.fail(f"the fake server printed no export line; stderr: {err}")
    return RunningServer(process, line)


@pytest.fixture
def server() -> Iterator[RunningServer]:
    running = start_server()
    try:
        yield running
    finally:
        if running.process.poll() is None:
            running.process.kill()
            running.process.communicate(timeout=30)


def run_in_shell(export_line: str, command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run `command` in bash after `eval` of the server's export line, as the README says."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
    script = f"eval {shlex.quote(export_line)}\n{command}\n"
    return subprocess.run(
        ["bash", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_eval_of_the_first_line_sets_the_variables_and_ctrl_c_stops_cleanly(
    server: RunningServer, tmp_path: Path
) -> None:
    assert re.fullmatch(
        r"export OPENAI_BASE_URL=http://127\.0\.0\.1:\d+/v1 OPENAI_API_KEY=\S+", server.export_line
    )
    shown = run_in_shell(
        server.export_line, 'printf "%s\\n" "$OPENAI_BASE_URL" "$OPENAI_API_KEY"', tmp_path
    )
    port = server.export_line.split(":")[2].split("/")[0]
    assert shown.stdout.splitlines() == [f"http://127.0.0.1:{port}/v1", "sk-fake"]
    code, err = server.stop()
    assert code == 0
    assert "Traceback" not in err
    assert "KeyboardInterrupt" not in err


def test_ctrl_c_stops_the_server_started_from_a_process_that_ignores_it() -> None:
    running = start_server(sigint_ignored=True)
    try:
        code, err = running.stop()
    finally:
        if running.process.poll() is None:
            running.process.kill()
            running.process.communicate(timeout=30)
    assert code == 0
    assert "fake OpenAI server stopped" in err
    assert "Traceback" not in err


def test_print_env_prints_the_same_line_for_eval_in_another_shell(
    server: RunningServer, tmp_path: Path
) -> None:
    port = server.export_line.split(":")[2].split("/")[0]
    command = f"{shlex.join([*SERVER, '--print-env', '--port', port])}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run(
        ["bash", "-c", f'eval "$({command})"\nprintf "%s\\n" "$OPENAI_BASE_URL" "$OPENAI_API_KEY"'],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"http://127.0.0.1:{port}/v1", "sk-fake"]
    without_port = subprocess.run(
        [*SERVER, "--print-env"], capture_output=True, text=True, timeout=60, check=False
    )
    assert without_port.returncode == 2
    assert without_port.stdout == ""
    assert "--print-env needs the --port" in without_port.stderr


def test_port_option_and_busy_port() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    first = start_server("--port", str(port))
    try:
        assert first.export_line.startswith(f"export OPENAI_BASE_URL=http://127.0.0.1:{port}/v1 ")
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
    # The same two ways as the README and the docs' quick start: paste the server's first
    # line, or `eval` what `--print-env` prints.
    doc = example.read_text(encoding="utf-8").split('"""')[1]
    assert "python -m turnstore.testing.fake_openai --port 8787" in doc
    assert "paste the first line the server printed" in doc
    assert 'eval "$(python -m turnstore.testing.fake_openai --print-env --port 8787)"' in doc
    assert f"python examples/{example.name}" in doc


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
    # Compacted on the 4th turn, as the docs say: the user messages stay, plus one compaction item
    # (auto mode sends previous_response_id: the server compacts the chain it kept).
    "compaction.py": [
        "[stored items: 5, tokens this run: 53]",
        'You said "Remind me: which month am I travelling in?". Your earlier messages: '
        '"I am planning a week in Japan in April. Where should I start?"; '
        '"How do I get from there to Kyoto?"; "What should I see in Kyoto in two days?"; '
        '"Is a rail pass worth it for this trip?". '
        "Earlier turns reached me compacted (1 compaction item).",
        f"stored now: {['message'] * 5 + ['compaction']}",
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
    done = run_in_shell(server.export_line, f"{shlex.quote(sys.executable)} {example}", tmp_path)
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
    done = run_in_shell(server.export_line, f"{shlex.quote(sys.executable)} program.py", tmp_path)
    assert done.returncode == 0, done.stderr
    assert 'You said "second question". Your earlier message: "first question".' in done.stdout
    assert "4 items in the conversation" in done.stdout


def test_the_server_keeps_response_chains_like_the_api(
    server: RunningServer, tmp_path: Path
) -> None:
    program = """
import asyncio
import openai

async def main() -> None:
    async with openai.AsyncOpenAI(max_retries=0) as client:
        first = await client.responses.create(model="o3", input="My name is Ada.")
        second = await client.responses.create(
            model="o3", input="What is my name?", previous_response_id=first.id
        )
        print(second.output_text)
        compacted = await client.responses.compact(model="o3", previous_response_id=second.id)
        print([(item.type, getattr(item, "role", None)) for item in compacted.output])
        unstored = await client.responses.create(model="o3", input="secret", store=False)
        for unknown in (unstored.id, "resp_never_served"):
            for call in (client.responses.create, client.responses.compact):
                try:
                    await call(model="o3", input="x", previous_response_id=unknown)
                except openai.NotFoundError as exc:
                    print(exc.status_code, exc.body["message"])

asyncio.run(main())
"""
    (tmp_path / "program.py").write_text(program, encoding="utf-8")
    done = run_in_shell(server.export_line, f"{shlex.quote(sys.executable)} program.py", tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # The second request carried only its question: the server fed the model the chain.
    assert lines[0] == (
        '(fake model) You said "What is my name?". Your earlier message: "My name is Ada.".'
    )
    # Compacting the chain keeps its user messages, then one compaction item.
    assert lines[1] == str([("message", "user"), ("message", "user"), ("compaction", None)])
    unstored = re.search(r"Previous response with id '(resp_\w+)' not found", lines[2])
    assert unstored is not None
    assert lines[2:] == [
        f"404 Previous response with id '{unstored.group(1)}' not found.",
        f"404 Previous response with id '{unstored.group(1)}' not found.",
        "404 Previous response with id 'resp_never_served' not found.",
        "404 Previous response with id 'resp_never_served' not found.",
    ]
