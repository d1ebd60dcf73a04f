"""Each example script runs against the fake server, as a user would run it against the API."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from turnstore.agent import DEFAULT_MODEL
from turnstore.testing import FakeOpenAIServer, RecordedRequest, text_response

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(server: FakeOpenAIServer, name: str, cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-example",
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
    }
    env.pop("OPENAI_DEFAULT_MODEL", None)
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def user_texts(request: RecordedRequest) -> list[Any]:
    return [item["content"] for item in request.body["input"] if item.get("role") == "user"]


def numbered_replies(server: FakeOpenAIServer, count: int) -> None:
    server.enqueue(*(text_response(f"reply {i}") for i in range(1, count + 1)))


def test_every_example_is_run_by_a_test() -> None:
    tests = Path(__file__).resolve().parents[1]
    test_text = "\n".join(p.read_text(encoding="utf-8") for p in tests.rglob("test_*.py"))
    untested = [p.name for p in EXAMPLES.glob("*.py") if f'"{p.name}"' not in test_text]
    assert untested == []


def test_basic_memory(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    numbered_replies(fake_openai, 3)
    out = run_example(fake_openai, "basic_memory.py", tmp_path)
    requests = fake_openai.requests_to("/v1/responses")
    assert len(requests) == 3
    assert len(user_texts(requests[2])) == 3  # the third turn carries the first two
    assert requests[2].body["input"][1]["content"][0]["text"] == "reply 1"
    assert requests[0].body["model"] == DEFAULT_MODEL
    assert "6 items stored" in out


def test_isolated_sessions(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    numbered_replies(fake_openai, 4)
    out = run_example(fake_openai, "isolated_sessions.py", tmp_path)
    requests = fake_openai.requests_to("/v1/responses")
    alice, bob = requests[2], requests[3]
    assert user_texts(alice) == ["My favourite colour is green.", "What is my favourite colour?"]
    assert user_texts(bob) == ["My favourite colour is red.", "What is my favourite colour?"]
    assert "alice has 4 items, bob 4" in out


def test_memory_vs_file(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    numbered_replies(fake_openai, 3)
    out = run_example(fake_openai, "memory_vs_file.py", tmp_path)
    assert "in memory, after reopening: 0 items" in out
    assert "in conversations.db, after reopening: 2 items" in out
    assert (tmp_path / "conversations.db").exists()
    last = fake_openai.requests_to("/v1/responses")[-1]
    assert user_texts(last) == ["Remember the number 7.", "Which number did I ask you to remember?"]


def test_message_correction(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    numbered_replies(fake_openai, 2)
    out = run_example(fake_openai, "message_correction.py", tmp_path)
    second = fake_openai.requests_to("/v1/responses")[1]
    assert user_texts(second) == ["What's 2 + 3?"]  # the first question was popped
    assert 'removed: "What\'s 2 + 2?" and its answer' in out
    assert "2 items stored" in out


def test_manual_vs_session(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    numbered_replies(fake_openai, 4)
    out = run_example(fake_openai, "manual_vs_session.py", tmp_path)
    requests = fake_openai.requests_to("/v1/responses")
    # The manual second turn and the session's second turn send the same conversation.
    assert requests[1].body["input"][0] == requests[3].body["input"][0]
    assert user_texts(requests[1]) == user_texts(requests[3])
    assert len(requests[1].body["input"]) == len(requests[3].body["input"]) == 3
    assert "manual: reply 2 (4 items carried)" in out
    assert "session: reply 4 (4 items stored)" in out
