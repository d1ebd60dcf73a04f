"""The declared dependency floors are true: what turnstore imports is declared, with a floor, and
every runtime dependency at its floor installs into a fresh venv and passes `.ci/floors.py`
(the import, the README example on the fake server, the backend smoke tests)."""

from __future__ import annotations

import ast
import importlib.util
import shutil
import subprocess
import sys
from importlib.metadata import packages_distributions
from pathlib import Path
from types import ModuleType

import pytest

from support.shared import kept_folder

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "turnstore"
FLOORS = ROOT / ".ci" / "floors.py"

# Imported by turnstore but not a dependency, each for a reason a user can read in the module.
NOT_DEPENDENCIES = {
    # The conformance suite is for backend authors who run pytest; turnstore.testing imports it
    # only when it is asked for, and says what to install.
    "pytest": {"testing/conformance.py", "testing/_conformance_history.py"},
    "pytest_asyncio": {"testing/conformance.py"},
    # Interop with the OpenAI Agents SDK, imported inside the function that uses it.
    "agents": {"testing/interop.py"},
}


def _floors_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ci_floors", FLOORS)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["ci_floors"] = module
    spec.loader.exec_module(module)
    return module


floors = _floors_module()


def third_party_imports() -> dict[str, set[str]]:
    """Top-level module -> the files of src/turnstore that import it (standard library left out)."""
    found: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "turnstore":
                    found.setdefault(top, set()).add(path.relative_to(SRC).as_posix())
    return found


def test_every_third_party_module_turnstore_imports_is_a_declared_dependency() -> None:
    requirements, _ = floors.runtime_requirements(ROOT)
    declared = set(floors.floor_pins(requirements))
    distributions = packages_distributions()
    imports = third_party_imports()
    assert {"openai", "pydantic", "typing_extensions", "sqlalchemy", "redis"} <= set(imports)
    undeclared = {}
    for module, files in sorted(imports.items()):
        if module in NOT_DEPENDENCIES:
            assert files == NOT_DEPENDENCIES[module], (module, files)
            continue
        names = {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
        if not names & declared:
            undeclared[module] = sorted(files)
    assert not undeclared, f"imported but not in pyproject's dependencies or extras: {undeclared}"


def test_every_runtime_dependency_declares_a_floor() -> None:
    requirements, extras = floors.runtime_requirements(ROOT)
    assert extras == ["encryption", "postgres", "redis"]
    pins = floors.floor_pins(requirements)
    assert pins["openai"] == "openai==2.9.0"
    assert pins["sqlalchemy"] == "sqlalchemy[asyncio]==2.0.10"
    assert pins["redis"] == "redis==5.0.1"
    with pytest.raises(floors.FloorsError, match="declares no floor"):
        floors.floor_pins(["openai"])


def test_make_test_floors_runs_the_floors_check() -> None:
    done = subprocess.run(
        ["make", "-n", "test-floors"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert ".ci/floors.py" in done.stdout


def _run_floors(*args: str | Path) -> subprocess.CompletedProcess[str]:
    # The floors are installed from nothing on a machine's first run, then kept (`--reuse`):
    # later runs install only the project into them again.
    kept = kept_folder("floors")
    reuse = ["--reuse", str(kept)] if kept is not None else []
    return subprocess.run(
        [sys.executable, FLOORS, *map(str, args), *reuse],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )


# Some floors publish no wheels past Python 3.12 (asyncpg 0.29.0, pydantic 2.0); the workflow's
# floors job runs on 3.11, the oldest Python turnstore supports.
OLD_WHEELS = pytest.mark.skipif(
    sys.version_info >= (3, 13), reason="the floors have no wheels for Python 3.13+"
)


@OLD_WHEELS
@pytest.mark.slow
@pytest.mark.services
@pytest.mark.timeout(1800)  # installs into a fresh venv, then the backend smoke tests
def test_every_runtime_dependency_at_its_declared_floor_passes_the_smoke(
    postgres_url: str, redis_url: str, redis_cluster_url: str, pgbouncer_url: str
) -> None:
    done = _run_floors()
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    for pin in ("openai==2.9.0", "sqlalchemy==2.0.10", "redis==5.0.1", "asyncpg==0.29.0"):
        assert pin in out
    assert out.count("(fake model)") == 2
    assert "floors: every runtime dependency works at its declared floor" in out


@OLD_WHEELS
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_floor_below_what_turnstore_needs_fails_the_check(tmp_path: Path) -> None:
    # A copy of the project whose openai floor is 2.8.0: the client before CompactedResponse.
    copy = tmp_path / "project"
    copy.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, copy / name)
    shutil.copytree(
        ROOT / "src", copy / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__")
    )
    pyproject = copy / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    assert '"openai>=2.9.0"' in text
    pyproject.write_text(text.replace('"openai>=2.9.0"', '"openai>=2.8.0"'), encoding="utf-8")

    done = _run_floors("--root", copy, "--only", "import")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "openai==2.8.0" in out
    assert "CompactedResponse" in out
    assert "floors: FAILED" in out
