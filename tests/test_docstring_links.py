"""What turnstore's docstrings and messages say about the guide pages exists there.

The API reference (docs/ref/*.md) renders the docstrings of src/turnstore. A docstring links a
guide page by a relative Markdown link from docs/ref/, `[title](../postgresql.md#pgbouncer)`:
the strict build fails on a missing page, and tests/site/test_site_build.py on a missing anchor;
here both are checked without a build. A text that names a section by its quoted title (an
error message cannot link) must quote a heading of an English page: a docstring once sent
readers to a "Scaling out" section that no page had.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from docs_i18n.pages import anchor_ids

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "turnstore"
DOCS = ROOT / "docs"

LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
# `the "Scaling out" section`, `section "Scaling out"`
SECTION_TITLE = re.compile(r"[\"“]([^\"”\n]+)[\"”] section|section [\"“]([^\"”\n]+)[\"”]")


def strings(path: Path) -> Iterator[tuple[int, str]]:
    """Every string constant of a module (docstrings, messages), with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def headings(page: Path) -> dict[str, str]:
    """The headings of a page outside code blocks: {id: title without Markdown}.

    The ids are those the translation tool pairs headings by (`docs_i18n.pages.anchor_ids`).
    """
    return {
        ident: marked.lstrip("#").strip().replace("`", "")
        for _, marked, ident in anchor_ids(page.read_text(encoding="utf-8"))
    }


PAGES = {page.name: headings(page) for page in sorted(DOCS.glob("*.md"))}
TITLES = {title for page in PAGES.values() for title in page.values()}
SOURCES = [(path, line, text) for path in sorted(SRC.rglob("*.py")) for line, text in strings(path)]


def test_the_pages_and_sources_are_read() -> None:
    # A change to the heading pattern or the walk that found nothing would pass every test below.
    assert PAGES["postgresql.md"]["pgbouncer"] == "PostgreSQL behind PgBouncer"
    assert PAGES["sessions.md"]
    assert any("../postgresql.md#pgbouncer" in text for _, _, text in SOURCES)


def test_docstring_links_to_guide_pages_resolve() -> None:
    broken = []
    for path, line, text in SOURCES:
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            where = f"{path.relative_to(ROOT)}:{line}: {target}"
            page, _, anchor = target.partition("#")
            # Relative to docs/ref/, where the reference renders the docstrings.
            name = page.removeprefix("../")
            if not page.startswith("../") or "/" in name or name not in PAGES:
                broken.append(f"{where}: not ../<page>.md of an English page in docs/")
            elif anchor and anchor not in PAGES[name]:
                broken.append(f"{where}: {name} has no heading #{anchor}")
    assert not broken, "\n".join(broken)


def test_section_titles_named_in_the_sources_are_headings_of_the_guides() -> None:
    missing = [
        f"{path.relative_to(ROOT)}:{line}: {title!r}"
        for path, line, text in SOURCES
        for match in SECTION_TITLE.finditer(text)
        for title in [match[1] or match[2]]
        if title not in TITLES
    ]
    assert not missing, f"no heading of docs/*.md has these titles: {missing}"
