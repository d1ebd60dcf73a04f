"""Run the update-docs job's own steps locally against a bare `origin` and the fake OpenAI server.

How each step of `.github/workflows/update-docs.yml` is simulated (see gha_simulator.py):

- checkout (`uses: actions/checkout`): emulated by cloning the local bare repository `origin`
  (full history, branch `main` checked out), as `fetch-depth: 0` does.
- check-secret, translate, docs-build, commit: their `run:` scripts are executed unchanged, in
  order, with bash as on the runner; `${{ secrets.OPENAI_API_KEY }}` and `${{ inputs.scope }}` come
  from the mapping each test passes. The runner's environment carries `OPENAI_BASE_URL` pointing
  at the fake server (the only variable the simulation adds), and `PATH` starts with this venv,
  whose `python` stands for the one setup-python installs.
- setup-python (`uses:`): skipped; the venv's Python takes its place.
- install: skipped; the venv already has every dependency the step installs.
- docs-build runs for real: a strict MkDocs build (i18n plugin, four languages) of the small
  site in the temporary clone.

The repository is a small copy of this one: the translation script, its data files, the
workflows and their helper script, and a two-page docs tree with its own short mkdocs.yml.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from gha_filters import push_triggers
from gha_simulator import JobSimulation, StepResult, clean_base_env

from support.shared import once_per_run
from turnstore.testing import FakeOpenAIServer, RecordedRequest, text_response

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "update-docs.yml"
BOT = "github-actions[bot] <41898282+github-actions[bot]@users.noreply.github.com>"
TRANSLATED = re.compile(r"^(docs/(ja|ko|zh)/.+|i18n/manifest\.json)$")
LANGUAGES = ("ja", "ko", "zh")

pytestmark = pytest.mark.slow

MKDOCS_YML = """\
site_name: simulation
site_url: http://127.0.0.1:8000/
theme:
  name: material
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


# -- the fake model ------------------------------------------------------------------------------


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


def _languages(request: RecordedRequest) -> set[str]:
    """The languages a request asks for: one, or several for a request of many languages."""
    instructions = str(request.body.get("instructions"))
    names = {"Japanese": "ja", "Korean": "ko", "Simplified Chinese": "zh"}
    return {code for name, code in names.items() if name in instructions}


def _language(request: RecordedRequest) -> str:
    (lang,) = _languages(request)
    return lang


def _is_review(request: RecordedRequest) -> bool:
    """A review call of the translation's review pass (Structured Outputs)."""
    return bool((request.body.get("text") or {}).get("format", {}).get("type") == "json_schema")


def tagged_translator(edition: str = "") -> Any:
    """A model whose 'translation' is the English sections with `[lang<edition>]` after each
    heading: structure, placeholders and links unchanged, so every check accepts it. As the
    reviewer, it finds nothing."""

    def _reply(request: RecordedRequest) -> dict[str, Any]:
        if _is_review(request):
            return text_response('{"findings": []}')
        text = _user_text(request.body)
        found = re.findall(r"<source>\n(.*?)</source>", text, re.S)
        assert found, f"no <source> in the request: {text[:300]!r}"
        tag = f"[{_language(request)}{edition}]"
        return text_response(re.sub(r"(?m)^(#{1,6} .*)$", rf"\1 {tag}", found[-1]))

    return _reply


def japanese_fails(request: RecordedRequest) -> dict[str, Any]:
    """Korean and Chinese succeed; every Japanese draft (and repair) is garbage no check accepts.

    A request for several languages that include Japanese gets the same garbage at once (an
    answer, not a server error that the script would retry with backoff for a minute and more).
    """
    if "ja" in _languages(request):
        return text_response("This is not a translation at all.")
    reply: dict[str, Any] = tagged_translator()(request)
    return reply


# -- repositories --------------------------------------------------------------------------------


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, env=_git_env()
    ).stdout.strip()


def _git_env() -> dict[str, str]:
    env = clean_base_env()
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    return env


def commit_as_user(clone: Path, message: str) -> str:
    git(clone, "add", "-A")
    git(
        clone,
        "-c",
        "user.name=A Maintainer",
        "-c",
        "user.email=maintainer@example.com",
        "commit",
        "-q",
        "-m",
        message,
    )
    git(clone, "push", "-q", "origin", "HEAD:refs/heads/main")
    return git(clone, "rev-parse", "HEAD")


def make_source_tree(tree: Path) -> None:
    """The small repository: the real translation script and workflow files, a tiny site."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "manifest.json")
    (tree / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "translate_docs.py", tree / "scripts" / "translate_docs.py")
    shutil.copytree(ROOT / "scripts" / "docs_i18n", tree / "scripts" / "docs_i18n", ignore=ignore)
    shutil.copytree(ROOT / "i18n", tree / "i18n", ignore=ignore)
    # The stand-in model copies the English: keep the glossary's names and drop its terms, which
    # the checks would (rightly) find untranslated in every section that uses them.
    glossary = yaml.safe_load((ROOT / "i18n" / "glossary.yml").read_text(encoding="utf-8"))
    (tree / "i18n" / "glossary.yml").write_text(
        yaml.safe_dump({"do_not_translate": glossary["do_not_translate"]}, allow_unicode=True),
        encoding="utf-8",
    )
    shutil.copytree(ROOT / ".github", tree / ".github", ignore=ignore)
    (tree / "docs").mkdir()
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
        return git(self.origin, "log", "--format=%H", "refs/heads/main").splitlines()

    def changed_files(self, commit: str) -> list[str]:
        return git(self.origin, "show", "--format=", "--name-only", commit).splitlines()

    def edit(self, path: str, old: str, new: str) -> str:
        """Pull, change an English page and push it as a maintainer; return the new head."""
        git(self.clone, "pull", "-q", "--ff-only", "origin", "main")
        page = self.clone / path
        text = page.read_text(encoding="utf-8")
        assert old in text
        page.write_text(text.replace(old, new), encoding="utf-8")
        return commit_as_user(self.clone, f"Edit {path}")


def simulate(
    world: World,
    server: FakeOpenAIServer,
    *,
    api_key: str = "sk-simulated",
    scope: str = "",
    event_name: str = "push",
    skip: dict[str, str] | None = None,
    before_step: dict[str, Any] | None = None,
) -> dict[str, StepResult]:
    """Run the update-docs job once, in a fresh checkout; return the results by step id."""
    if world.workspace.exists():
        shutil.rmtree(world.workspace)

    def checkout(options: dict[str, Any]) -> None:
        assert options.get("fetch-depth") == 0  # full history: the commit step may rebase
        git(world.origin.parent, "clone", "-q", str(world.origin), str(world.workspace))
        git(world.workspace, "checkout", "-q", "-B", "main", "origin/main")

    env = _git_env()
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
        HOME=str(world.home),
        OPENAI_BASE_URL=server.base_url,
        PYTHONDONTWRITEBYTECODE="1",
    )
    job = JobSimulation(
        workflow_path=WORKFLOW,
        job_id="translate",
        workspace=world.workspace,
        # No token: the push goes to the local `origin` (the token path is tested on the script
        # itself in test_commit_translations_script.py).
        expressions={
            "secrets.OPENAI_API_KEY": api_key,
            "secrets.GITHUB_TOKEN": "",
            "inputs.scope": scope,
        },
        base_env=env,
        emulators={"checkout": checkout},
        skip={"install": "the venv already has every dependency", **(skip or {})},
        before_step=before_step or {},
        event_name=event_name,
    )
    return {result.id: result for result in job.run()}


def assert_succeeded(results: dict[str, StepResult]) -> None:
    failed = [r for r in results.values() if r.returncode != 0]
    assert not failed, f"step {failed[0].id} failed:\n{failed[0].output}" if failed else ""
    assert list(results) == [
        "checkout",
        "check-secret",
        "setup-python",
        "install",
        "translate",
        "docs-build",
        "commit",
        "failed-pages",
    ]
    for result in results.values():
        assert result.returncode == 0, f"step {result.id} failed:\n{result.output}"


def calls(server: FakeOpenAIServer) -> int:
    """The translation calls (review calls left out)."""
    return len([r for r in server.requests_to("/v1/responses") if not _is_review(r)])


def reviews(server: FakeOpenAIServer) -> int:
    return len([r for r in server.requests_to("/v1/responses") if _is_review(r)])


def _first_run(base: Path) -> dict[str, Any]:
    """The workflow's first run on the small repository in `base`: a bare origin whose English
    docs are pushed, translated by the job. Returns the steps' results and the model calls."""
    shutil.rmtree(base, ignore_errors=True)  # what a worker's failed attempt left
    base.mkdir()
    tree = base / "tree"
    tree.mkdir()
    make_source_tree(tree)
    git(base, "init", "-q", "--bare", "-b", "main", "origin.git")
    git(tree, "init", "-q", "-b", "main")
    git(tree, "remote", "add", "origin", str(base / "origin.git"))
    commit_as_user(tree, "Initial docs")
    world = World(base / "origin.git", tree, base / "workspace", base / "home")
    world.home.mkdir()
    with FakeOpenAIServer() as server:
        server.route("POST", "/v1/responses", tagged_translator())
        results = simulate(world, server)
    return {
        "steps": [asdict(result) for result in results.values()],
        "calls": calls(server),
        "reviews": reviews(server),
    }


@pytest.fixture(scope="module")
def translated_origin(request: pytest.FixtureRequest) -> Path:
    """A bare origin whose docs are translated: the state after the workflow's first run.

    Once per test run: under `pytest -n` the first worker runs the job, the others copy its
    origin (the `world` fixture copies it for each test; no test writes to it).
    """
    base, first = once_per_run(request, "update-docs-first-run", _first_run)
    assert_succeeded({step["id"]: StepResult(**step) for step in first["steps"]})
    assert first["calls"] == 2 * len(LANGUAGES)  # one call per page and language
    assert first["reviews"] == 2 * len(LANGUAGES)  # and one review of each
    return base / "origin.git"


@pytest.fixture
def world(translated_origin: Path, tmp_path: Path) -> World:
    """A private copy of the translated origin and a maintainer's clone of it."""
    origin = tmp_path / "origin.git"
    shutil.copytree(translated_origin, origin)
    git(tmp_path, "clone", "-q", str(origin), "clone")
    (tmp_path / "home").mkdir()
    return World(origin, tmp_path / "clone", tmp_path / "workspace", tmp_path / "home")


@pytest.fixture
def translator() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        server.route("POST", "/v1/responses", tagged_translator())
        yield server


# -- the scenarios -------------------------------------------------------------------------------


def test_first_run_committed_every_translation(translated_origin: Path) -> None:
    log = git(translated_origin, "log", "--format=%an <%ae>|%s", "refs/heads/main").splitlines()
    assert log == [
        f"{BOT}|docs: update translations",
        "A Maintainer <maintainer@example.com>|Initial docs",
    ]
    files = git(translated_origin, "show", "--format=", "--name-only", "refs/heads/main").split()
    expected = {f"docs/{lang}/{page}" for lang in LANGUAGES for page in ("index.md", "guide.md")}
    assert set(files) == expected | {"i18n/manifest.json"}


def test_english_edit_pushes_one_commit_of_translations(
    world: World, translator: FakeOpenAIServer
) -> None:
    edited = world.edit(
        "docs/guide.md", "Call `get_items` to read them back.", "Call `get_items` to read them."
    )

    results = simulate(world, translator)

    assert_succeeded(results)
    log = world.log()
    assert log[1] == edited, "exactly one commit is pushed on top of the maintainer's"
    bot_commit = log[0]
    assert git(world.origin, "show", "-s", "--format=%an <%ae>|%cn <%ce>|%s", bot_commit) == (
        f"{BOT}|{BOT}|docs: update translations"
    )
    files = world.changed_files(bot_commit)
    assert set(files) == {f"docs/{lang}/guide.md" for lang in LANGUAGES} | {"i18n/manifest.json"}
    assert all(TRANSLATED.match(path) for path in files)
    # Only the changed section went to the model, once per language.
    assert calls(translator) == len(LANGUAGES)
    for request in translator.requests_to("/v1/responses"):
        if _is_review(request):
            continue
        assert "to read them." in _user_text(request.body)
        assert "Saving items" not in _user_text(request.body).split("<source>")[-1]
    for lang in LANGUAGES:
        page = git(world.origin, "show", f"{bot_commit}:docs/{lang}/guide.md")
        assert "Call `get_items` to read them." in page
        assert f"## Reading items [{lang}] {{#reading-items}}" in page
    # The bot's commit cannot start the workflow again.
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert not push_triggers(workflow, "main", files)
    assert push_triggers(workflow, "main", world.changed_files(edited))

    # A second run finds everything current: no API call, no commit, no push.
    head = world.head()
    again = simulate(world, translator)
    assert_succeeded(again)
    assert world.head() == head
    assert calls(translator) == len(LANGUAGES)
    assert "nothing to commit" in again["commit"].output


def test_a_failing_page_fails_the_job_after_the_good_pages_are_pushed(world: World) -> None:
    edited = world.edit("docs/guide.md", "An introduction.", "A short introduction.")
    with FakeOpenAIServer() as server:
        server.route("POST", "/v1/responses", japanese_fails)
        results = simulate(world, server)
        assert calls(server) == len(LANGUAGES) + 2  # the Japanese draft and its two repairs

    translate = results["translate"]
    assert translate.returncode == 0  # the failure is reported at the end of the job
    assert "FAILED ja/guide.md" in translate.output
    assert "::error title=Translations failed::" in translate.output
    assert results["docs-build"].returncode == 0
    assert results["commit"].returncode == 0
    failed = results["failed-pages"]
    assert failed.returncode == 1
    assert failed.output.startswith("::error title=Translations failed::")
    # Korean and Chinese are pushed; Japanese is not, and stays stale for the next run.
    log = world.log()
    assert log[1] == edited
    files = world.changed_files(log[0])
    assert set(files) == {"docs/ko/guide.md", "docs/zh/guide.md", "i18n/manifest.json"}
    assert "A short introduction." in git(world.origin, "show", f"{log[0]}:docs/ko/guide.md")
    assert "A short introduction." not in git(world.origin, "show", f"{log[0]}:docs/ja/guide.md")

    # The next run pays only for the page that failed.
    with FakeOpenAIServer() as server:
        server.route("POST", "/v1/responses", tagged_translator())
        again = simulate(world, server)
        assert calls(server) == 1
    assert_succeeded(again)
    assert world.changed_files(world.head()) == ["docs/ja/guide.md", "i18n/manifest.json"]


def test_missing_key_fails_clearly(world: World, translator: FakeOpenAIServer) -> None:
    edited = world.edit("docs/guide.md", "An introduction.", "A short introduction.")

    results = simulate(world, translator, api_key="")

    check = results["check-secret"]
    assert check.returncode == 1
    assert "The OPENAI_API_KEY repository secret is not set" in check.output
    assert check.output.startswith("::error title=Missing secret::")
    assert list(results) == ["checkout", "check-secret"]
    assert calls(translator) == 0
    assert world.head() == edited

    # Without the guard step the script itself refuses, in one line, with exit status 2.
    unguarded = simulate(world, translator, api_key="", skip={"check-secret": "bypassed"})
    translate = unguarded["translate"]
    assert translate.returncode == 2
    assert len(translate.output.splitlines()) == 1
    assert "OPENAI_API_KEY is not set" in translate.output
    assert "Traceback" not in translate.output
    assert calls(translator) == 0
    assert world.head() == edited


def test_push_rebases_when_main_moved(world: World, translator: FakeOpenAIServer) -> None:
    world.edit("docs/index.md", "Store a conversation", "Keep a conversation")

    def someone_pushes() -> None:
        (world.clone / "NOTES.md").write_text("Unrelated change.\n", encoding="utf-8")
        commit_as_user(world.clone, "Unrelated change")

    results = simulate(world, translator, before_step={"commit": someone_pushes})

    assert_succeeded(results)
    assert "rebasing onto main as it is now" in results["commit"].output
    log = world.log()
    assert git(world.origin, "show", "-s", "--format=%s", log[1]) == "Unrelated change"
    files = world.changed_files(log[0])
    assert set(files) == {f"docs/{lang}/index.md" for lang in LANGUAGES} | {"i18n/manifest.json"}


def test_dispatch_all_retranslates_every_page(world: World) -> None:
    head = world.head()
    with FakeOpenAIServer() as server:
        server.route("POST", "/v1/responses", tagged_translator(" v2"))
        results = simulate(world, server, scope="all", event_name="workflow_dispatch")
        assert calls(server) == 2 * len(LANGUAGES)  # --force: every page, every language

    assert_succeeded(results)
    log = world.log()
    assert log[1] == head
    files = world.changed_files(log[0])
    expected = {f"docs/{lang}/{page}" for lang in LANGUAGES for page in ("index.md", "guide.md")}
    # Every page is rewritten; the manifest records English hashes, which did not change.
    assert expected <= set(files) <= expected | {"i18n/manifest.json"}
    assert "# Guide [ja v2] {#guide}" in git(world.origin, "show", f"{log[0]}:docs/ja/guide.md")
