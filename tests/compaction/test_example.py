"""examples/compaction.py runs against the fake server, as a user would run it against the API."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from turnstore.testing import FakeCompactionAPI, FakeOpenAIServer, text_response

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "compaction.py"


@pytest.mark.slow
def test_compaction_example(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    compaction = FakeCompactionAPI().install(fake_openai)
    fake_openai.enqueue(*(text_response(f"reply {n}", response_id=f"resp_{n}") for n in range(5)))
    env = {**os.environ, "OPENAI_API_KEY": "sk-example", "OPENAI_BASE_URL": fake_openai.base_url}
    env.pop("OPENAI_DEFAULT_MODEL", None)
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    # The fourth answer triggered a compaction of the stored response chain; the forced one at
    # the end compacted the rest.
    assert compaction.bodies[0] == {"model": "gpt-4.1", "previous_response_id": "resp_3"}
    assert compaction.bodies[1] == {"model": "gpt-4.1", "previous_response_id": "resp_4"}
    assert len(compaction.bodies) == 2
    # The session compacts with the model the conversation runs on, as the docs advise.
    models = {request.body["model"] for request in fake_openai.requests_to("/v1/responses")}
    assert models == {"gpt-4.1"}
    out = done.stdout
    assert "[stored items: 6, tokens this run: 5]" in out  # three turns: nothing compacted
    # The fourth turn compacted the chain of resp_3: its four questions stay, plus one item.
    assert "[stored items: 5, tokens this run: 53]" in out
    assert "forced compaction used 48 tokens" in out
    # The forced one compacted the chain of resp_4: five questions and one compaction item.
    assert f"stored now: {['message'] * 5 + ['compaction']}" in out
    assert "archived items: 15" in out  # the 8 items replaced first, then the 7 after


def test_the_docs_show_the_example_as_it_is() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "compaction.md").read_text("utf-8")
    shown = re.findall(r"```python\n(.*?)```", docs, re.S)[-1]
    source = EXAMPLE.read_text("utf-8")
    assert shown == source[source.index("import asyncio") :]
