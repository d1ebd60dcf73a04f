"""Without the postgres and redis extras the package still imports, star imports included."""

from __future__ import annotations

import subprocess
import sys
import textwrap

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


def test_star_imports_work_without_the_extras() -> None:
    done = _run(
        """
        from turnstore import *
        from turnstore.memory import *
        import turnstore, turnstore.memory
        assert "SQLAlchemySession" not in turnstore.__all__
        assert "RedisSession" not in turnstore.memory.__all__
        assert "SQLiteSession" in turnstore.__all__
        print(Runner.__name__, SQLiteSession.__name__)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["Runner", "SQLiteSession"]


def test_importing_a_backend_without_its_extra_names_the_install_command() -> None:
    for name, extra in (("SQLAlchemySession", "postgres"), ("RedisSession", "redis")):
        for module in ("turnstore", "turnstore.memory"):
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
    import turnstore
    import turnstore.memory

    assert {"SQLAlchemySession", "RedisSession"} <= set(turnstore.__all__)
    assert {"SQLAlchemySession", "RedisSession"} <= set(turnstore.memory.__all__)


def test_testing_helpers_work_without_pytest() -> None:
    done = _run(
        """
        sys.modules["pytest"] = None
        sys.modules["pytest_asyncio"] = None
        from turnstore.testing import *
        import turnstore.testing
        assert "SessionConformanceTests" not in turnstore.testing.__all__
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
        import turnstore
        from turnstore import EncryptedSession, SQLiteSession
        assert "EncryptedSession" not in turnstore.__all__
        try:
            EncryptedSession("s", SQLiteSession("s"), "key")
        except ImportError as exc:
            print(exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'turnstore[encryption]'" in done.stdout, done.stdout
