"""What `import turnstore` leaves for first use: the extras, which their names say how to install,
and the `openai` package, which only the agent layer and the OpenAI-backed sessions import."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

# Setting a module to None in sys.modules makes importing it raise ImportError, as if the extra
# were not installed.
HIDE_EXTRAS = (
    "import sys\nsys.modules['sqlalchemy'] = None\nsys.modules['redis'] = None\n"
    "sys.modules['cryptography'] = None\n"
)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", HIDE_EXTRAS + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_package_imports_without_the_extras() -> None:
    done = _run(
        """
        import turnstore, turnstore.memory
        from turnstore import Runner, SQLiteSession
        print(Runner.__name__, SQLiteSession.__name__)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["Runner", "SQLiteSession"]


def test_a_star_import_without_an_extra_names_the_install_command() -> None:
    # `__all__` is the same on every install, so a star import asks for every backend.
    done = _run(
        """
        try:
            from turnstore.extensions.memory import *
        except ImportError as exc:
            print(exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'turnstore[" in done.stdout, done.stdout


def test_importing_a_backend_without_its_extra_names_the_install_command() -> None:
    for name, extra in (("SQLAlchemySession", "postgres"), ("RedisSession", "redis")):
        for module in ("turnstore.extensions.memory",):
            done = _run(
                f"""
                try:
                    from {module} import {name}
                except ImportError as exc:
                    print(exc)
                """
            )
            assert done.returncode == 0, done.stderr
            assert f"pip install 'turnstore[{extra}]'" in done.stdout, done.stdout


def test_star_imports_include_the_backends_when_the_extras_are_installed() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from turnstore.extensions.memory import *\nprint(RedisSession.__name__)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["RedisSession"]


def test_testing_helpers_work_without_pytest() -> None:
    done = _run(
        """
        sys.modules["pytest"] = None
        sys.modules["pytest_asyncio"] = None
        from turnstore.testing import FakeOpenAIServer
        print(FakeOpenAIServer.__name__)
        try:
            from turnstore.testing import SessionConformanceTests
        except ImportError as exc:
            print(exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "FakeOpenAIServer",
        "SessionConformanceTests needs pytest and pytest-asyncio: "
        "pip install pytest pytest-asyncio",
    ]


def test_encrypted_session_without_its_extra_names_the_install_command() -> None:
    done = _run(
        """
        from turnstore import SQLiteSession
        from turnstore.extensions.memory import EncryptedSession
        try:
            EncryptedSession("s", SQLiteSession("s"), "key")
        except ImportError as exc:
            print(exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'turnstore[encryption]'" in done.stdout, done.stdout


# Stores sessions, reads them back and runs the `turnstore` command (its console script calls
# `turnstore.cli.main`), then reports whether any of it imported openai.
_STORE_ONLY = """
import asyncio, contextlib, io, sys
import turnstore
from turnstore import SessionSettings, SQLiteSession
from turnstore.memory import load_history
import turnstore.cli

async def main():
    session = SQLiteSession("s1", {db!r}, session_settings=SessionSettings(limit=5))
    await session.add_items([{{"role": "user", "content": "hi"}}])
    history = await load_history(session, session.session_settings)
    session.close()
    return [item["content"] for item in history]

print(asyncio.run(main()))
out = io.StringIO()
with contextlib.redirect_stdout(out):
    for argv in (["--help"], ["--db", {db!r}, "list"], ["--db", {db!r}, "show", "s1"]):
        try:
            turnstore.cli.main(argv)
        except SystemExit as exc:
            assert exc.code in (0, None), (argv, exc.code)
assert "s1" in out.getvalue(), out.getvalue()
print("openai" in sys.modules)
from turnstore import Agent, Runner, TResponseInputItem
from openai.types.responses import ResponseInputItemParam
print(Agent.__name__, Runner.__name__, TResponseInputItem is ResponseInputItemParam)
"""


def test_storing_sessions_and_the_cli_do_not_import_openai(tmp_path: Path) -> None:
    code = _STORE_ONLY.format(db=str(tmp_path / "lazy-openai.db"))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['hi']", "False", "Agent Runner True"]


def test_the_fake_server_runs_without_importing_openai() -> None:
    # `python -m turnstore.testing.fake_openai` serves a test's or an example's client from a
    # process of its own; only the client it hands out (`async_client`) needs openai.
    done = _run(
        """
        from turnstore.testing import FakeConversationsAPI, FakeOpenAIServer, text_response
        import urllib.request, json
        with FakeOpenAIServer() as server:
            FakeConversationsAPI().install(server)
            server.enqueue(text_response("hi"))
            request = urllib.request.Request(
                server.base_url + "/responses", data=b'{"input": "x"}', method="POST"
            )
            with urllib.request.urlopen(request) as reply:
                print(json.loads(reply.read())["output"][0]["content"][0]["text"])
            print("openai" in sys.modules)
            client = server.async_client()
            print(type(client).__name__, "openai" in sys.modules)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["hi", "False", "AsyncOpenAI True"]


def test_without_openai_the_agent_layer_fails_as_a_broken_install() -> None:
    # openai is a dependency, not an extra: its absence is reported as it is, with no install
    # hint, and what does not need it keeps working.
    done = _run(
        """
        sys.modules["openai"] = None
        from turnstore import SQLiteSession
        print(SQLiteSession.__name__)
        try:
            from turnstore import Runner
        except ImportError as exc:
            print(type(exc).__name__, exc.name, "pip install" in str(exc))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["SQLiteSession", "ModuleNotFoundError openai False"]
