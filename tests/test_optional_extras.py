"""Without the postgres and redis extras the package still imports, star imports included."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# Setting a module to None in sys.modules makes importing it raise ImportError, as if the extra
# were not installed.
HIDE_EXTRAS = "import sys\nsys.modules['sqlalchemy'] = None\nsys.modules['redis'] = None\n"


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", HIDE_EXTRAS + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_star_imports_work_without_the_extras() -> None:
    done = _run(
        """
        from agent_sessions import *
        from agent_sessions.memory import *
        import agent_sessions, agent_sessions.memory
        assert "SQLAlchemySession" not in agent_sessions.__all__
        assert "RedisSession" not in agent_sessions.memory.__all__
        assert "SQLiteSession" in agent_sessions.__all__
        print(Runner.__name__, SQLiteSession.__name__)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["Runner", "SQLiteSession"]


def test_importing_a_backend_without_its_extra_names_the_install_command() -> None:
    for name, extra in (("SQLAlchemySession", "postgres"), ("RedisSession", "redis")):
        for module in ("agent_sessions", "agent_sessions.memory"):
            done = _run(
                f"""
                try:
                    from {module} import {name}
                except ImportError as exc:
                    print(exc)
                """
            )
            assert done.returncode == 0, done.stderr
            assert f"pip install 'agent-sessions[{extra}]'" in done.stdout, done.stdout


def test_star_imports_include_the_backends_when_the_extras_are_installed() -> None:
    import agent_sessions
    import agent_sessions.memory

    assert {"SQLAlchemySession", "RedisSession"} <= set(agent_sessions.__all__)
    assert {"SQLAlchemySession", "RedisSession"} <= set(agent_sessions.memory.__all__)


def test_testing_helpers_work_without_pytest() -> None:
    done = _run(
        """
        sys.modules["pytest"] = None
        sys.modules["pytest_asyncio"] = None
        from agent_sessions.testing import *
        import agent_sessions.testing
        assert "SessionConformanceTests" not in agent_sessions.testing.__all__
        print(FakeOpenAIServer.__name__)
        try:
            from agent_sessions.testing import SessionConformanceTests
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
