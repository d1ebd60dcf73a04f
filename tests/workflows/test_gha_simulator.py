"""The local job runner used by the update-docs simulation behaves like a GitHub runner."""

from __future__ import annotations

from pathlib import Path

import pytest
from gha_simulator import JobSimulation, clean_base_env, evaluate, substitute

WORKFLOW = """\
on: push
defaults:
  run:
    shell: bash
env:
  LEVEL: workflow
jobs:
  job:
    runs-on: ubuntu-latest
    env:
      LEVEL: job
    steps:
      - id: checkout
        uses: actions/checkout@v7
      - id: export
        run: echo "FROM_EARLIER=yes" >> "$GITHUB_ENV"
      - id: show
        env:
          SECRET: ${{ secrets.TOKEN }}
        run: echo "level=$LEVEL secret=$SECRET earlier=$FROM_EARLIER ref=$GITHUB_REF_NAME"
      - id: out
        run: echo "go=yes" >> "$GITHUB_OUTPUT"
      - id: when
        if: ${{ steps.out.outputs.go == 'yes' }}
        run: echo "ran"
      - id: unless
        if: steps.out.outputs.go != 'yes'
        run: echo "must not run"
      - id: pipefail
        run: false | true
      - id: never
        run: echo "must not run"
"""


def _job(tmp_path: Path, text: str = WORKFLOW, **kwargs: object) -> JobSimulation:
    path = tmp_path / "wf.yml"
    path.write_text(text, encoding="utf-8")
    options: dict[str, object] = {
        "workflow_path": path,
        "job_id": "job",
        "workspace": tmp_path,
        "expressions": {"secrets.TOKEN": "t0k"},
        "base_env": clean_base_env(),
        **kwargs,
    }
    return JobSimulation(**options)  # type: ignore[arg-type]


def test_steps_run_in_order_and_stop_at_the_first_failure(tmp_path: Path) -> None:
    results = _job(tmp_path).run()
    assert [(r.id, r.kind, r.returncode) for r in results] == [
        ("checkout", "skipped", 0),
        ("export", "run", 0),
        ("show", "run", 0),
        ("out", "run", 0),
        ("when", "run", 0),
        ("unless", "skipped", 0),  # its `if:` is false
        ("pipefail", "run", 1),  # bash -eo pipefail, as GitHub runs `shell: bash`
    ]
    assert "level=job secret=t0k earlier=yes ref=main" in results[2].output


def test_emulators_and_skips(tmp_path: Path) -> None:
    seen: list[str] = []
    results = _job(
        tmp_path,
        emulators={"checkout": lambda options: seen.append("checked out")},
        skip={"export": "not needed"},
    ).run()
    assert seen == ["checked out"]
    assert results[0].kind == "emulated"
    assert (results[1].kind, results[1].output) == ("skipped", "not needed")
    assert "earlier= " in results[2].output


def test_an_unmapped_expression_is_an_error() -> None:
    assert substitute("a ${{ inputs.x }} b", {"inputs.x": "1"}) == "a 1 b"
    with pytest.raises(KeyError, match=r"inputs\.y"):
        substitute("${{ inputs.y }}", {"inputs.x": "1"})


def test_the_workflow_must_use_bash(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="shell: bash"):
        _job(tmp_path, WORKFLOW.replace("shell: bash", "shell: sh"))


def test_expressions_evaluate_as_on_github() -> None:
    context = {"github": {"event_name": "push", "event": {"repository": {"fork": False}}}}
    condition = """${{ !github.event.repository.fork
        && (github.event_name != 'workflow_run' || github.event.missing == 'x') }}"""
    assert evaluate(condition, context)
    assert not evaluate("github.event.repository.fork", context)
    assert evaluate("github.event_name == 'PUSH'", context)  # strings compare case-insensitively
    assert evaluate("github.nothing.here == null", context)
    for unsupported in ("contains(github.event_name, 'p')", "success()", "1 + 1"):
        with pytest.raises(ValueError, match="cannot evaluate"):
            evaluate(unsupported, context)
