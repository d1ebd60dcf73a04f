"""One definition of the CI services: `.ci/services` starts every service the suite's fixtures
name, `.ci/run` and the GitHub workflow both run it before their tests, and no checkout keeps
credentials."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

ROOT = Path(__file__).resolve().parents[2]
CI = ROOT / ".ci"
WORKFLOWS = ROOT / ".github" / "workflows"


def _load(name: str) -> dict[Any, Any]:
    return yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))


def required_services() -> dict[str, int]:
    """`TURNSTORE_*_URL` -> port, from the defaults of tests/conftest.py's service URLs."""
    tree = ast.parse((ROOT / "tests" / "conftest.py").read_text(encoding="utf-8"))
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and len(node.args) == 2
            and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args)
        ):
            name, default = (str(a.value) for a in node.args)  # type: ignore[attr-defined]
            if name.startswith("TURNSTORE_") and name.endswith("_URL"):
                port = urlsplit(default.replace("+cluster://", "://", 1)).port
                assert port is not None, (name, default)
                found[name] = port
    return found


def _code(text: str) -> str:
    """A shell script without its comments (whole-line ones)."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def services_scripts() -> dict[str, str]:
    """`.ci/services` and every `.ci/` script it runs, by path: their code without comments."""
    scripts: dict[str, str] = {}
    todo = [".ci/services"]
    while todo:
        path = todo.pop()
        if path in scripts:
            continue
        code = _code((ROOT / path).read_text(encoding="utf-8"))
        scripts[path] = code
        todo += re.findall(r"^\s*(\.ci/[\w.-]+)", code, re.M)
    return scripts


def _steps_running(job: dict[str, Any]) -> list[str]:
    return [str(step.get("run", "")).strip() for step in job["steps"]]


def _index(runs: list[str], pattern: str) -> int:
    hits = [i for i, run in enumerate(runs) if re.search(pattern, run, re.M)]
    assert hits, f"no step runs {pattern!r}: {runs}"
    return hits[0]


def test_the_suite_requires_the_six_servers() -> None:
    # Derived from the fixtures' URLs; this pins the derivation, not the list used below.
    assert set(required_services().values()) == {5432, 3306, 6379, 7001, 6432, 5433}


def test_the_services_script_starts_every_service_the_fixtures_name() -> None:
    code = "\n".join(services_scripts().values())
    for name, port in required_services().items():
        assert re.search(rf"\b{port}\b", code), f"{name}: nothing in .ci/services uses port {port}"
    # The cluster has all three primaries, and each server's readiness is checked.
    assert re.search(r"CLUSTER_PORTS=\(7001 7002 7003\)", code)
    for check in ("pg_isready", "mariadb-admin", "redis-cli", "cluster_ok", "pgbouncer_ok"):
        assert check in code


def test_ci_run_starts_the_services_then_runs_the_readme_test_command() -> None:
    lines = _code((CI / "run").read_text(encoding="utf-8")).splitlines()
    commands = [line.strip() for line in lines if line.strip()]
    assert commands.index(".ci/services") < commands.index("make test")
    assert commands[-1] == "make test"
    assert "export TURNSTORE_REQUIRE_SERVICES=1" in commands


def test_the_test_workflow_starts_the_same_services_before_the_test_command() -> None:
    job = _load("tests.yml")["jobs"]["test"]
    # One definition: no service containers beside the script.
    assert "services" not in job
    assert job["env"]["TURNSTORE_REQUIRE_SERVICES"] == "1"
    runs = _steps_running(job)
    services = _index(runs, r"^sudo\b.*\s\.ci/services$")
    assert services < _index(runs, r"^make test$")
    # The browser the services script must not install twice is found before it runs.
    assert _index(runs, "TURNSTORE_CHROMIUM=") < services
    assert "--preserve-env=TURNSTORE_CHROMIUM" in runs[services]


def test_the_floors_job_starts_the_services_then_checks_the_floors() -> None:
    job = _load("tests.yml")["jobs"]["floors"]
    assert job["env"]["TURNSTORE_REQUIRE_SERVICES"] == "1"
    runs = _steps_running(job)
    assert _index(runs, r"^sudo\b.*\s\.ci/services$") < _index(runs, r"^make test-floors$")
    python = next(s for s in job["steps"] if "setup-python" in str(s.get("uses", "")))
    assert python["with"]["python-version"] == "3.11"


def test_the_contributing_page_lists_what_the_workflow_starts() -> None:
    page = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    section = page.split("## Continuous integration", 1)[1].split("\n## ", 1)[0]
    for service in ("PostgreSQL", "MariaDB", "Redis Cluster", "PgBouncer", "`.ci/services`"):
        assert service in section
    for port in sorted(set(required_services().values())):
        assert str(port) in section


def test_no_checkout_in_any_workflow_keeps_credentials_it_does_not_need() -> None:
    for path in sorted(WORKFLOWS.glob("*.y*ml")):
        for job_id, job in yaml.safe_load(path.read_text(encoding="utf-8"))["jobs"].items():
            for step in job.get("steps", []):
                if str(step.get("uses", "")).startswith("actions/checkout"):
                    assert step.get("with", {}).get("persist-credentials") is False, (
                        f"{path.name} job {job_id}: set persist-credentials: false"
                    )
