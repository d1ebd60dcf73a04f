"""Run the update-docs job's own steps locally against a bare `origin` and the fake OpenAI server.

How each step of `.github/workflows/update-docs.yml` is simulated (see gha_simulator.py):

- checkout (`uses: actions/checkout`): emulated by cloning the local bare `origin`, then checking
  out what the step asks for: its `ref` at the moment the step runs, or without one (as the
  action does) the commit that queued the run.
- setup-python and install: skipped; this venv's Python, first on `PATH`, has what they install.
- every `run:` step runs unchanged with bash, the real translation tool included, against the
  fake OpenAI server (`OPENAI_BASE_URL`); docs-build is a real strict four-language MkDocs build.
- `${{ secrets.* }}` come from each test; GITHUB_TOKEN is empty, so the push steps push to the
  local `origin` (the token path is tested on the script in test_commit_translations_script.py).
- "someone pushes meanwhile" is a maintainer's push from another clone, made just before a step
  or, for a push refused mid-step, from a pre-push hook in the runner's workspace.

The repository is a small copy of this one: the tool (scripts/ and its glossary and prompts),
the workflows and their scripts, and a two-page docs tree with its own short mkdocs.yml.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from gha_filters import push_triggers
from gha_simulator import JobSimulation, StepResult, clean_base_env, evaluate

from support.shared import once_per_run
from turnstore.testing import FakeOpenAIServer, RecordedRequest, text_response

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
# The tool's glossary, prompts and manifest.
I18N = ROOT / "docs" / "i18n"
MANIFEST = f"{I18N.relative_to(ROOT)}/manifest.json"
BOT = "github-actions[bot] <41898282+github-actions[bot]@users.noreply.github.com>"
LANGUAGES = ("ja", "ko", "zh")

pytestmark = pytest.mark.slow

MKDOCS_YML = """\
site_name: simulation
site_url: http://127.0.0.1:8000/
theme:
  name: material
exclude_docs: |
  i18n/
markdown_extensions:
  - admonition
  - attr_list
  - toc
plugins:
  - search
  - i18n:
      docs_structure: folder
      fallback_to_default: true
      languages:
        - {locale: en, name: English, default: true, build: true}
        - {locale: ja, name: 日本語, build: true}
        - {locale: ko, name: 한국어, build: true}
        - {locale: zh, name: 中文, build: true}
validation:
  omitted_files: warn
  unrecognized_links: warn
  anchors: warn
nav:
  - Home: index.md
  - Guide: guide.md
"""

INDEX_MD = """\
# Simulation

Store a conversation with `SQLiteSession` and read the [guide](guide.md#saving-items).

```python
session = SQLiteSession("conversation_123")
```
"""

GUIDE_MD = """\
# Guide

An introduction.

## Saving items

Call `add_items` to save items.

!!! note "Atomic"
    Every write is atomic.

## Reading items

Call `get_items` to read them back.
"""


# -- the fake model: how a request names its language and its English are the tool's prompt ----


def _user_text(body: dict[str, Any]) -> str:
    """The text of the request's user messages (a string input or message content parts)."""
    items = body.get("input")
    if isinstance(items, str):
        return items
    texts: list[str] = []
    for item in items or []:
        content = item.get("content")
        if item.get("role") != "user":
            continue
        if isinstance(content, str):
            texts.append(content)
        else:
            texts += [part.get("text", "") for part in content or []]
    return "\n".join(texts)


def _source(request: RecordedRequest) -> str:
    """The English the request asks to translate."""
    text = _user_text(request.body)
    found = re.findall(r"<source>\n(.*?)</source>", text, re.S)
    assert found, f"no <source> in the request: {text[:300]!r}"
    return str(found[-1])


def _language(request: RecordedRequest) -> str:
    names = {"Japanese": "ja", "Korean": "ko", "Chinese": "zh"}
    for text in (str(request.body.get("instructions")), _user_text(request.body)):
        found = {code for name, code in names.items() if name in text}
        if len(found) == 1:
            return found.pop()
    raise AssertionError(f"no single language in the request: {request.body!r:.300}")


def _is_review(request: RecordedRequest) -> bool:
    """A call of the tool's optional review pass (Structured Outputs)."""
    return bool((request.body.get("text") or {}).get("format", {}).get("type") == "json_schema")


def tagged_translator(fails: str = "") -> Callable[[RecordedRequest], dict[str, Any]]:
    """A model whose 'translation' is the English with `[lang]` after each heading: structure,
    code and links unchanged, so every check accepts it. As a reviewer it finds nothing. For the
    language `fails` it answers prose without the structure, which no check accepts."""

    def _reply(request: RecordedRequest) -> dict[str, Any]:
        if _is_review(request):
            return text_response('{"findings": []}')
        lang = _language(request)
        if lang == fails:
            return text_response("This is not a translation at all.")
        return text_response(re.sub(r"(?m)^(#{1,6} .*)$", rf"\1 [{lang}]", _source(request)))

    return _reply


def translations(server: FakeOpenAIServer) -> list[RecordedRequest]:
    """The translation calls (review calls left out)."""
    return [r for r in server.requests_to("/v1/responses") if not _is_review(r)]


# -- repositories --------------------------------------------------------------------------------


def git(cwd: Path, *args: str) -> str:
    env = {**clean_base_env(), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def commit(clone: Path, message: str, *, push: bool = True) -> str:
    """Commit everything in `clone` as a maintainer (and push it to main); return the commit."""
    git(clone, "add", "-A")
    identity = ("-c", "user.name=A Maintainer", "-c", "user.email=maintainer@example.com")
    git(clone, *identity, "commit", "-q", "-m", message)
    if push:
        git(clone, "push", "-q", "origin", "HEAD:refs/heads/main")
    return git(clone, "rev-parse", "HEAD")


def make_source_tree(tree: Path) -> None:
    """The small repository: the real tool and workflow files, a tiny site."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "manifest.json")
    shutil.copytree(ROOT / "scripts", tree / "scripts", ignore=ignore)
    shutil.copytree(ROOT / ".github", tree / ".github", ignore=ignore)
    i18n = tree / I18N.relative_to(ROOT)
    shutil.copytree(I18N, i18n, ignore=ignore)
    # The stand-in model copies the English: keep the glossary's names and drop its terms, which
    # the checks would (rightly) find untranslated in every section that uses them.
    glossary = yaml.safe_load((I18N / "glossary.yml").read_text(encoding="utf-8"))
    names = {"do_not_translate": glossary["do_not_translate"]}
    (i18n / "glossary.yml").write_text(yaml.safe_dump(names, allow_unicode=True), "utf-8")
    (tree / "docs").mkdir(exist_ok=True)
    (tree / "docs" / "index.md").write_text(INDEX_MD, encoding="utf-8")
    (tree / "docs" / "guide.md").write_text(GUIDE_MD, encoding="utf-8")
    (tree / "mkdocs.yml").write_text(MKDOCS_YML, encoding="utf-8")
    (tree / ".gitignore").write_text("site/\n__pycache__/\n", encoding="utf-8")


@dataclass
class World:
    """A bare `origin`, a maintainer's clone of it, and the runner's workspace path."""

    origin: Path
    clone: Path
    workspace: Path
    home: Path

    def head(self) -> str:
        return git(self.origin, "rev-parse", "refs/heads/main")

    def log(self) -> list[str]:
        """The subjects on main, newest first."""
        return git(self.origin, "log", "--format=%s", "refs/heads/main").splitlines()

    def changed_files(self, rev: str = "refs/heads/main") -> set[str]:
        return set(git(self.origin, "show", "--format=", "--name-only", rev).splitlines())

    def show(self, path: str, rev: str = "refs/heads/main") -> str:
        return git(self.origin, "show", f"{rev}:{path}")

    def edit(self, path: str, old: str, new: str, *, push: bool = True) -> str:
        """Pull, change a file and commit it (and push it) as a maintainer; return the commit."""
        git(self.clone, "pull", "-q", "--rebase", "origin", "main")
        page = self.clone / path
        text = page.read_text(encoding="utf-8")
        assert old in text
        page.write_text(text.replace(old, new), encoding="utf-8")
        return commit(self.clone, f"Edit {path}", push=push)


def simulate(
    world: World,
    server: FakeOpenAIServer,
    *,
    queued_by: str | None = None,
    api_key: str = "sk-simulated",
    before_step: dict[str, Callable[[], None]] | None = None,
) -> dict[str, StepResult]:
    """Run the update-docs job once in a fresh workspace; return the results by step id.

    Args:
        queued_by: The commit whose push queued the run (GITHUB_SHA); the head of main now
            by default.
    """
    event_sha = queued_by or world.head()
    if world.workspace.exists():
        shutil.rmtree(world.workspace)

    def checkout(options: dict[str, Any]) -> None:
        assert options.get("persist-credentials") is False
        git(world.origin.parent, "clone", "-q", str(world.origin), str(world.workspace))
        ref = options.get("ref")
        git(world.workspace, "checkout", "-q", "-B", "main", f"origin/{ref}" if ref else event_sha)

    env = clean_base_env()
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
        HOME=str(world.home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        OPENAI_BASE_URL=server.base_url,
        PYTHONDONTWRITEBYTECODE="1",
    )
    job = JobSimulation(
        workflow_path=WORKFLOWS / "update-docs.yml",
        job_id="translate",
        workspace=world.workspace,
        expressions={"secrets.OPENAI_API_KEY": api_key, "secrets.GITHUB_TOKEN": ""},
        base_env=env,
        emulators={"checkout": checkout},
        skip={"install": "the venv already has every dependency"},
        before_step=before_step or {},
    )
    return {result.id: result for result in job.run()}


def ran(results: dict[str, StepResult]) -> dict[str, int]:
    """The steps that ran, with their exit status."""
    return {r.id: r.returncode for r in results.values() if r.kind == "run"}


def output(results: dict[str, StepResult]) -> str:
    return "\n".join(f"--- {r.id} ({r.returncode})\n{r.output}" for r in results.values())


MAIN_PATH = {"translate": 0, "docs-build": 0, "push": 0, "failed-pages": 0}


def _first_run(base: Path) -> dict[str, Any]:
    """The job's first run on a bare origin whose English docs were just pushed."""
    shutil.rmtree(base, ignore_errors=True)  # what a worker's failed attempt left
    tree = base / "tree"
    tree.mkdir(parents=True)
    make_source_tree(tree)
    git(base, "init", "-q", "--bare", "-b", "main", "origin.git")
    git(tree, "init", "-q", "-b", "main")
    git(tree, "remote", "add", "origin", str(base / "origin.git"))
    commit(tree, "Initial docs")
    world = World(base / "origin.git", tree, base / "workspace", base / "home")
    world.home.mkdir()
    with FakeOpenAIServer() as server:
        server.route("POST", "/v1/responses", tagged_translator())
        results = simulate(world, server)
    return {"steps": [asdict(result) for result in results.values()]}


@pytest.fixture(scope="module")
def translated_origin(request: pytest.FixtureRequest) -> Path:
    """A bare origin whose docs are translated: the state after the job's first run (once per
    test run, shared by the `pytest -n` workers; each test works on a copy)."""
    base, first = once_per_run(request, "update-docs-first-run", _first_run)
    results = {step["id"]: StepResult(**step) for step in first["steps"]}
    assert ran(results) == MAIN_PATH, output(results)
    origin = base / "origin.git"
    assert git(origin, "log", "--format=%an <%ae>|%s", "main").splitlines() == [
        f"{BOT}|docs: update translations",
        "A Maintainer <maintainer@example.com>|Initial docs",
    ]
    pages = {f"docs/{lang}/{page}" for lang in LANGUAGES for page in ("index.md", "guide.md")}
    assert set(git(origin, "show", "--format=", "--name-only", "main").split()) == pages | {
        MANIFEST
    }
    return origin


@pytest.fixture
def world(translated_origin: Path, tmp_path: Path) -> World:
    """A private copy of the translated origin and a maintainer's clone of it."""
    origin = tmp_path / "origin.git"
    shutil.copytree(translated_origin, origin)
    git(tmp_path, "clone", "-q", str(origin), "clone")
    (tmp_path / "home").mkdir()
    return World(origin, tmp_path / "clone", tmp_path / "workspace", tmp_path / "home")


# -- the scenarios -------------------------------------------------------------------------------


def test_queued_runs_start_from_the_tip_and_a_race_is_rebased(world: World) -> None:
    world.edit("docs/guide.md", "to read them back.", "to read them again.")

    def meanwhile() -> None:
        # Before the push step: an English edit (it queues the next run) ...
        second["commit"] = world.edit("docs/index.md", "Store a conversation", "Keep a chat")
        # ... and a push that lands between the job's pull and its push (a pre-push hook).
        (world.clone / "NOTES.md").write_text("Unrelated.\n", encoding="utf-8")
        commit(world.clone, "Unrelated change", push=False)
        hook = world.workspace / ".git" / "hooks" / "pre-push"
        hook.write_text(
            "#!/bin/sh\n"
            f'[ -e "{marker}" ] || exit 0\n'
            f'rm "{marker}"\n'
            "unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE\n"
            f'git -C "{world.clone}" push -q origin HEAD:refs/heads/main\n',
            encoding="utf-8",
        )
        hook.chmod(0o755)
        marker.touch()

    second: dict[str, str] = {}
    marker = world.home / "race-once"
    with FakeOpenAIServer() as server:
        server.route("POST", "/v1/responses", tagged_translator())
        first = simulate(world, server, before_step={"push": meanwhile})
        first_calls = translations(server)

    assert ran(first) == MAIN_PATH, output(first)
    assert "The push was refused" in first["push"].output  # and the one retry went through
    assert not marker.exists()
    assert world.log()[:4] == [
        "docs: update translations",
        "Unrelated change",
        "Edit docs/index.md",
        "Edit docs/guide.md",
    ]
    bot_files = world.changed_files()
    assert bot_files == {f"docs/{lang}/guide.md" for lang in LANGUAGES} | {MANIFEST}
    assert len(first_calls) == len(LANGUAGES)  # the one changed section, once per language
    for lang in LANGUAGES:
        assert "to read them again." in world.show(f"docs/{lang}/guide.md")
    # The bot's commit cannot start the workflow again.
    workflow = yaml.safe_load((WORKFLOWS / "update-docs.yml").read_text(encoding="utf-8"))
    assert not push_triggers(workflow, "main", bot_files)

    # The run the index edit queued starts from the tip, the first run's commit included: it
    # pays for the index section only, and pushes on top.
    with FakeOpenAIServer() as server:
        server.route("POST", "/v1/responses", tagged_translator())
        queued = simulate(world, server, queued_by=second["commit"])
        queued_calls = translations(server)

    assert ran(queued) == MAIN_PATH, output(queued)
    assert len(queued_calls) == len(LANGUAGES)
    assert all("Keep a chat" in _source(r) for r in queued_calls)
    assert not any("read them" in _source(r) for r in queued_calls)
    assert world.log()[:2] == ["docs: update translations", "docs: update translations"]
    assert world.changed_files() == {f"docs/{lang}/index.md" for lang in LANGUAGES} | {MANIFEST}


def test_good_pages_are_pushed_and_published_when_a_page_fails(world: World) -> None:
    world.edit("docs/guide.md", "An introduction.", "A short introduction.")
    with FakeOpenAIServer() as server:
        server.route("POST", "/v1/responses", tagged_translator(fails="ja"))
        results = simulate(world, server)

    assert ran(results) == {**MAIN_PATH, "failed-pages": 1}, output(results)
    report = results["failed-pages"].output
    assert report.startswith("::error ")
    assert "ja/guide.md" in report
    assert "ko/" not in report
    assert "zh/" not in report
    # Korean and Chinese are pushed; Japanese is not written, and stays stale for the next run.
    assert world.log()[:2] == ["docs: update translations", "Edit docs/guide.md"]
    assert world.changed_files() == {"docs/ko/guide.md", "docs/zh/guide.md", MANIFEST}
    assert "A short introduction." in world.show("docs/ko/guide.md")
    assert "A short introduction." not in world.show("docs/ja/guide.md")

    # The failed run still deploys: docs.yml builds the tip of main after it.
    docs = yaml.safe_load((WORKFLOWS / "docs.yml").read_text(encoding="utf-8"))
    build = docs["jobs"]["build"]

    def deploys_after(conclusion: str) -> bool:
        event = {"workflow_run": {"conclusion": conclusion}, "repository": {"fork": False}}
        return evaluate(build["if"], {"github": {"event_name": "workflow_run", "event": event}})

    assert deploys_after("failure")
    assert deploys_after("success")
    assert not deploys_after("cancelled")
    checkout = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["ref"] == "main"

    # The next run pays only for the page that failed.
    with FakeOpenAIServer() as server:
        server.route("POST", "/v1/responses", tagged_translator())
        again = simulate(world, server)
        assert [_language(r) for r in translations(server)] == ["ja"]
    assert ran(again) == MAIN_PATH, output(again)
    assert world.changed_files() == {"docs/ja/guide.md", MANIFEST}


def test_a_conflicting_push_is_translated_again_from_the_new_tip(world: World) -> None:
    world.edit("docs/guide.md", "to read them back.", "to read them again.")

    def hand_fix() -> None:
        world.edit("docs/ja/guide.md", "to read them back.", "to read them back (by hand).")

    with FakeOpenAIServer() as server:
        server.route("POST", "/v1/responses", tagged_translator())
        results = simulate(world, server, before_step={"push": hand_fix})
        calls = translations(server)

    assert ran(results) == {
        **MAIN_PATH,
        "retranslate": 0,
        "docs-rebuild": 0,
        "push-again": 0,
    }, output(results)
    assert "translating again from its new tip" in results["push"].output
    assert len(calls) == 2 * len(LANGUAGES)
    assert world.log()[:3] == [
        "docs: update translations",
        "Edit docs/ja/guide.md",
        "Edit docs/guide.md",
    ]
    assert world.changed_files() == {f"docs/{lang}/guide.md" for lang in LANGUAGES} | {MANIFEST}
    for lang in LANGUAGES:
        assert "to read them again." in world.show(f"docs/{lang}/guide.md")


def test_a_missing_key_fails_before_any_call(world: World) -> None:
    edited = world.edit("docs/guide.md", "An introduction.", "A short introduction.")
    with FakeOpenAIServer() as server:
        server.route("POST", "/v1/responses", tagged_translator())
        results = simulate(world, server, api_key="")
        assert translations(server) == []

    assert ran(results) == {"translate": 1}
    assert results["translate"].output.startswith("::error title=Missing secret::")
    assert world.head() == edited
