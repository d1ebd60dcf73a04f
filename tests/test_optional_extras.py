"""Without the extras the package still imports; their names say what to install."""

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
            from turnstore import *
        except ImportError as exc:
            print(exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'turnstore[" in done.stdout, done.stdout


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
    done = subprocess.run(
        [sys.executable, "-c", "from turnstore import *\nprint(RedisSession.__name__)"],
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
        from turnstore import EncryptedSession, SQLiteSession
        try:
            EncryptedSession("s", SQLiteSession("s"), "key")
        except ImportError as exc:
            print(exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'turnstore[encryption]'" in done.stdout, done.stdout
