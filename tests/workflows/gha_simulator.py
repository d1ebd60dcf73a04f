"""Run one GitHub Actions job's own `run:` steps locally, in order, the way a runner would.

What is real and what is emulated:

- `run:` steps are read from the workflow file and executed unchanged with the shell GitHub uses
  for `shell: bash` (`bash --noprofile --norc -eo pipefail FILE`), in the workspace, with the
  workflow's, the job's and the step's `env:` merged in that order.
- `${{ expr }}` expressions are replaced from an explicit mapping given by the test (for example
  `secrets.OPENAI_API_KEY`); an expression missing from the mapping is an error,
  so nothing is silently substituted.
- The runner's default variables are set: `CI`, `GITHUB_ACTIONS`, `GITHUB_WORKSPACE`,
  `GITHUB_REF`, `GITHUB_REF_NAME`, `GITHUB_EVENT_NAME`, `RUNNER_TEMP`, `GITHUB_ENV`,
  `GITHUB_OUTPUT`.
- `uses:` steps are handled by emulators the test supplies by step id (the checkout emulator
  clones the origin repository); a `uses:` step without an emulator is skipped and recorded.
- Steps named in `skip` (by id, with the reason) are not executed and are recorded as skipped.
- A step's `if:` is evaluated (see `evaluate`) against the outputs earlier steps wrote to their
  own `GITHUB_OUTPUT` file; a false one skips the step.
- As on GitHub, the first failing step stops the job; later steps do not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["JobSimulation", "StepResult", "clean_base_env", "evaluate", "substitute"]

_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_OPERATORS = {"==": "==", "!=": "!=", "&&": " and ", "||": " or ", "!": " not ", "(": "(", ")": ")"}
_TOKEN = re.compile(r"\s*(?:('[^']*')|(==|!=|&&|\|\||!|\(|\))|([A-Za-z_][\w.-]*))")
BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]


def substitute(text: str, expressions: Mapping[str, str]) -> str:
    """Replace every `${{ expr }}` in `text` from `expressions`; a missing one raises KeyError."""

    def _value(match: re.Match[str]) -> str:
        expr = match[1]
        if expr not in expressions:
            raise KeyError(f"the simulation has no value for the expression ${{{{ {expr} }}}}")
        return expressions[expr]

    return _EXPRESSION.sub(_value, text)


def evaluate(expression: str, context: Mapping[str, Any]) -> bool:
    """The truth of a GitHub expression (`${{ }}` optional) over `context`, like GitHub's.

    Supports what the workflows here use: property paths (a missing one is null), 'strings',
    true/false/null, `==`, `!=`, `&&`, `||`, `!` and parentheses; string comparison is
    case-insensitive, as on GitHub. Anything else (functions included) raises ValueError. `!`
    binds as Python's `not` does (looser than `==`): write `!(a == b)`, never `!a == b`.
    """
    text = expression.strip()
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2]
    python: list[str] = []
    position = 0
    while position < len(text.rstrip()):
        match = _TOKEN.match(text, position)
        if match is None:
            raise ValueError(f"cannot evaluate {expression!r} at {text[position:]!r}")
        string, operator, name = match.groups()
        if name and text[match.end() :].lstrip().startswith("("):
            raise ValueError(f"cannot evaluate {expression!r}: no functions ({name})")
        if string is not None:
            python.append(repr(string[1:-1].lower()))
        elif operator is not None:
            python.append(_OPERATORS[operator])
        elif name in ("true", "false", "null"):
            python.append({"true": "True", "false": "False", "null": "None"}[name])
        else:
            value: Any = context
            for part in name.split("."):
                value = value.get(part) if isinstance(value, Mapping) else None
            python.append(repr(value.lower() if isinstance(value, str) else value))
        position = match.end()
    return bool(eval("".join(python), {"__builtins__": {}}))  # only literals remain


@dataclass
class StepResult:
    """What happened to one step.

    Attributes:
        id: The step's `id` (or its position when it has none).
        kind: `"run"` (executed), `"emulated"` (a `uses:` step done by an emulator) or `"skipped"`.
        returncode: The exit status (0 for emulated and skipped steps).
        output: stdout and stderr together, or the reason for a skip.
    """

    id: str
    kind: str
    returncode: int = 0
    output: str = ""


@dataclass
class JobSimulation:
    """One job of a workflow file, ready to run in `workspace`.

    Attributes:
        workflow_path: The workflow file.
        job_id: The job to run.
        workspace: The checkout directory (`GITHUB_WORKSPACE`); an emulator creates it.
        expressions: Values for the `${{ }}` expressions in the job's steps.
        base_env: The environment the runner process starts with.
        emulators: Per step id, a function run instead of a `uses:` step.
        skip: Per step id, why the step is not executed.
        before_step: Per step id, a function called just before that step (to change the world
            mid-run, for example to push to the origin).
        event_name: `GITHUB_EVENT_NAME`.
        ref_name: The branch the run is for.
    """

    workflow_path: Path
    job_id: str
    workspace: Path
    expressions: Mapping[str, str]
    base_env: Mapping[str, str]
    emulators: Mapping[str, Callable[[dict[str, Any]], None]] = field(default_factory=dict)
    skip: Mapping[str, str] = field(default_factory=dict)
    before_step: Mapping[str, Callable[[], None]] = field(default_factory=dict)
    event_name: str = "push"
    ref_name: str = "main"

    def __post_init__(self) -> None:
        self.workflow: dict[Any, Any] = yaml.safe_load(self.workflow_path.read_text("utf-8"))
        self.job: dict[str, Any] = self.workflow["jobs"][self.job_id]
        shell = (self.workflow.get("defaults") or {}).get("run", {}).get("shell")
        if shell != "bash":
            raise ValueError(f"expected `defaults: run: shell: bash`, got {shell!r}")

    def steps(self) -> list[tuple[str, dict[str, Any]]]:
        """The job's steps with their ids, in order."""
        return [(str(s.get("id", i)), s) for i, s in enumerate(self.job["steps"])]

    def run(self) -> list[StepResult]:
        """Run the steps in order until one fails; return what happened to each step run."""
        results: list[StepResult] = []
        with tempfile.TemporaryDirectory(prefix="runner-temp-") as runner_temp:
            temp = Path(runner_temp)
            env_file = temp / "github_env"
            env_file.touch()
            steps: dict[str, dict[str, Any]] = {}
            for step_id, step in self.steps():
                if "if" in step and not evaluate(str(step["if"]), {"steps": steps}):
                    results.append(StepResult(step_id, "skipped", output=f"if: {step['if']}"))
                    continue
                if step_id in self.before_step:
                    self.before_step[step_id]()
                if step_id in self.skip:
                    results.append(StepResult(step_id, "skipped", output=self.skip[step_id]))
                    continue
                if "uses" in step:
                    if step_id in self.emulators:
                        self.emulators[step_id](self._with(step))
                        results.append(StepResult(step_id, "emulated"))
                    else:
                        results.append(StepResult(step_id, "skipped", output=step["uses"]))
                    continue
                output_file = temp / f"github_output_{step_id}"
                output_file.touch()
                result = self._run_step(step_id, step, temp, env_file, output_file)
                steps[step_id] = {"outputs": _name_values(output_file)}
                results.append(result)
                if result.returncode != 0:
                    break
        return results

    def _with(self, step: dict[str, Any]) -> dict[str, Any]:
        return {
            k: substitute(v, self.expressions) if isinstance(v, str) else v
            for k, v in (step.get("with") or {}).items()
        }

    def _env(
        self, step: dict[str, Any], temp: Path, env_file: Path, output_file: Path
    ) -> dict[str, str]:
        env = dict(self.base_env)
        env.update(
            CI="true",
            GITHUB_ACTIONS="true",
            GITHUB_WORKSPACE=str(self.workspace),
            GITHUB_REF=f"refs/heads/{self.ref_name}",
            GITHUB_REF_NAME=self.ref_name,
            GITHUB_EVENT_NAME=self.event_name,
            RUNNER_TEMP=str(temp),
            GITHUB_ENV=str(env_file),
            GITHUB_OUTPUT=str(output_file),
        )
        env.update(_name_values(env_file))  # what earlier steps exported through $GITHUB_ENV
        for scope in (self.workflow.get("env"), self.job.get("env"), step.get("env")):
            for name, value in (scope or {}).items():
                env[str(name)] = substitute(str(value), self.expressions)
        return env

    def _run_step(
        self, step_id: str, step: dict[str, Any], temp: Path, env_file: Path, output_file: Path
    ) -> StepResult:
        if step.get("shell", "bash") != "bash" or "working-directory" in step:
            raise ValueError(f"step {step_id!r}: only `shell: bash` in the workspace is simulated")
        script = temp / f"step-{step_id}.sh"
        script.write_text(substitute(step["run"], self.expressions), encoding="utf-8")
        completed = subprocess.run(
            [*BASH, str(script)],
            cwd=self.workspace,
            env=self._env(step, temp, env_file, output_file),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
            timeout=240,
        )
        return StepResult(step_id, "run", completed.returncode, completed.stdout)


def _name_values(path: Path) -> dict[str, str]:
    """The NAME=value lines of a `GITHUB_ENV` or `GITHUB_OUTPUT` file."""
    lines = (line.partition("=") for line in path.read_text("utf-8").splitlines())
    return {name: value for name, sep, value in lines if sep}


def clean_base_env() -> dict[str, str]:
    """The test process's environment without anything a real run would not have."""
    drop = ("GITHUB_", "OPENAI_", "RUNNER_", "GIT_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.pop("PYTEST_CURRENT_TEST", None)
    return env
