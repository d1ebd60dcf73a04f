"""Prove which pushes start update-docs.yml, by GitHub's documented path-filter semantics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from gha_filters import included, push_triggers, triggers_on_paths, workflow_on

WORKFLOWS = Path(__file__).resolve().parents[2] / ".github" / "workflows"


@pytest.fixture(scope="module")
def update_docs() -> dict[Any, Any]:
    return yaml.safe_load((WORKFLOWS / "update-docs.yml").read_text(encoding="utf-8"))


# -- the matcher against the examples of GitHub's "Filter pattern cheat sheet" -------------------


@pytest.mark.parametrize(
    ("pattern", "matches", "misses"),
    [
        ("*", ["README.md", "server.rb"], ["docs/README.md"]),
        ("*.jsx?", ["page.js", "page.jsx"], ["page.jsxx", "src/page.js"]),
        ("**", ["all/the/files.md", "a"], []),
        ("*.js", ["app.js", "index.js"], ["js/index.js"]),
        ("**.js", ["index.js", "js/index.js", "src/js/app.js"], ["index.jsx"]),
        ("docs/*", ["docs/README.md", "docs/file.txt"], ["docs/mona/octocat.txt", "README.md"]),
        ("docs/**", ["docs/README.md", "docs/mona/octocat.txt"], ["mydocs/x.md", "docsx/a"]),
        (
            "docs/**/*.md",
            ["docs/README.md", "docs/mona/hello-world.md", "docs/a/markdown/file.md"],
            ["docs/a/file.txt"],
        ),
        (
            "**/docs/**",
            ["docs/hello.md", "dir/docs/my-file.txt", "space/docs/plan/space.doc"],
            ["mydocs/x"],
        ),
        ("**/README.md", ["README.md", "js/README.md"], ["README.mdx"]),
        ("**/*src/**", ["a/src/app.js", "my-src/code/js/app.js"], ["src-a/app.js"]),
        ("**/*-post.md", ["my-post.md", "path/their-post.md"], ["post.md"]),
        (
            "**/migrate-*.sql",
            ["migrate-10909.sql", "db/migrate-v1.0.sql", "db/sept/migrate-v1.sql"],
            ["db/migrate/x.sql"],
        ),
        ("v[12].[0-9]+.[0-9]+", ["v1.10.1", "v2.0.0"], ["v3.0.0", "v1.x.0"]),
        ("mkdocs.yml", ["mkdocs.yml"], ["mkdocsxyml", "docs/mkdocs.yml"]),
    ],
)
def test_matcher_follows_the_cheat_sheet(
    pattern: str, matches: list[str], misses: list[str]
) -> None:
    for path in matches:
        assert included([pattern], path), (pattern, path)
    for path in misses:
        assert not included([pattern], path), (pattern, path)


def test_last_matching_pattern_wins() -> None:
    # The cheat sheet's negation examples.
    assert triggers_on_paths(["*.md", "!README.md"], ["hello.md"])
    assert not triggers_on_paths(["*.md", "!README.md"], ["README.md"])
    assert not triggers_on_paths(["*.md", "!README.md"], ["docs/hello.md"])
    readme_again = ["*.md", "!README.md", "README*"]
    for path in ["hello.md", "README.md", "README.doc"]:
        assert triggers_on_paths(readme_again, [path]), path


def test_a_filter_needs_a_positive_pattern() -> None:
    with pytest.raises(ValueError, match="positive"):
        triggers_on_paths(["!docs/**"], ["src/x.py"])


# -- update-docs.yml ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changed",
    [
        ["docs/x.md"],
        ["mkdocs.yml"],
        ["docs/guide/sessions.md"],
        ["docs/assets/diagram.svg"],
        # The tool's glossary and prompts: an edit retranslates the sections it concerns.
        ["docs/i18n/glossary.yml"],
        ["docs/i18n/prompts/common.md"],
        ["docs/i18n/prompts/ja.md"],
        # An English edit committed together with translations still counts.
        ["docs/x.md", "docs/ja/x.md", "docs/i18n/manifest.json"],
        ["src/turnstore/__init__.py", "docs/index.md"],
    ],
)
def test_english_docs_glossary_and_prompt_changes_trigger(
    update_docs: dict[Any, Any], changed: list[str]
) -> None:
    assert push_triggers(update_docs, "main", changed)


@pytest.mark.parametrize(
    "changed",
    [
        ["docs/ja/x.md"],
        ["docs/ko/guide/sessions.md"],
        ["docs/zh/index.md"],
        ["docs/i18n/manifest.json"],
        # Exactly what the bot's own commit touches (it pushes with the GITHUB_TOKEN, which
        # starts no workflow anyway).
        ["docs/ja/index.md", "docs/ko/index.md", "docs/zh/index.md", "docs/i18n/manifest.json"],
        ["src/turnstore/memory/session.py"],
        ["README.md", "pyproject.toml", "tests/conftest.py"],
    ],
)
def test_translations_and_code_do_not_trigger(
    update_docs: dict[Any, Any], changed: list[str]
) -> None:
    assert not push_triggers(update_docs, "main", changed)


def test_only_pushes_to_main_trigger(update_docs: dict[Any, Any]) -> None:
    assert push_triggers(update_docs, "main", ["docs/x.md"])
    assert not push_triggers(update_docs, "feature/docs", ["docs/x.md"])
    assert not push_triggers(update_docs, "mainline", ["docs/x.md"])


def test_events_are_push_and_dispatch_only(update_docs: dict[Any, Any]) -> None:
    on = workflow_on(update_docs)
    assert set(on) == {"push", "workflow_dispatch"}
    assert on["workflow_dispatch"] is None  # no inputs: a manual run translates what changed
