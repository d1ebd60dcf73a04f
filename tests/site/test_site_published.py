"""What the built site publishes beside its pages, and what every page carries.

The object inventory other projects link to, llms.txt / llms-full.txt read outside the site,
the footer and title of translated pages, each stylesheet linked once, and source links pinned
to the release.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mkdocstrings import Inventory
from site_support import LANGUAGES, ROOT, TRANSLATIONS, BuiltSite, parse, resolve

import turnstore

SITE_URL = "http://127.0.0.1:8000/"
REF_PAGES = ("ref/session/", "ref/sqlite/", "ref/backends/", "ref/runner/")


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def prefix(language: str) -> str:
    return "" if language == "en" else f"{language}/"


def test_published_inventory_lists_every_api_object_with_the_version(
    built_site: BuiltSite,
) -> None:
    with (built_site.path / "objects.inv").open("rb") as file:
        inventory = Inventory.parse_sphinx(file)
    assert inventory.project == "turnstore"
    assert inventory.version == turnstore.__version__
    documented = {
        identifier
        for page in (built_site.path / "ref").glob("*/index.html")
        for identifier in re.findall(
            r'<h\d id="(turnstore\.[\w.]+)" class="doc doc-heading"', read(page)
        )
    }
    assert len(documented) > 100
    assert documented <= set(inventory), sorted(documented - set(inventory))[:5]
    assert inventory["turnstore.Session"].uri.startswith("ref/session/")


@pytest.mark.parametrize("language", LANGUAGES)
def test_llms_txt_describes_every_page_with_whole_sentences(
    built_site: BuiltSite, language: str
) -> None:
    index = read(built_site.lang_root(language) / "llms.txt")
    entries = dict(re.findall(r"^- \[[^\]]+\]\(([^)]+)\)(?:: (.*))?$", index, re.M))
    reference = f"{SITE_URL}{prefix(language)}ref/"
    assert entries[reference], "the API reference's entry has no description"
    streaming = entries[f"{SITE_URL}{prefix(language)}ref/streaming/"]
    assert "RunResultStreaming.stream_events" in streaming, streaming
    # No description stops at the dot inside a dotted name.
    cut = [
        text
        for text in entries.values()
        if re.search(r"\w\.\w*$", text) and "`" in text and text.count("`") % 2
    ]
    assert not cut, cut


@pytest.mark.parametrize("language", LANGUAGES)
def test_llms_full_txt_links_are_absolute_and_resolve(built_site: BuiltSite, language: str) -> None:
    full = read(built_site.lang_root(language) / "llms-full.txt")
    unresolved = re.findall(r"\[[^\]\n]+\]\[[\w.]*\]", full)
    assert not unresolved, unresolved[:5]
    relative = re.findall(r"\]\((?![a-z]+:)[^)\s]+\)", full)
    assert not relative, relative[:5]
    links = re.findall(r"\]\((" + re.escape(SITE_URL) + r"[^)\s]*)\)", full)
    assert len(links) > 50
    for link in set(links):
        target = resolve(
            built_site.path, built_site.path / "index.html", "/" + link[len(SITE_URL) :]
        )
        assert target is not None
        path, fragment = target
        assert path.is_file(), link
        if fragment:
            assert fragment in parse(path)[0], link


@pytest.mark.parametrize("language", LANGUAGES)
def test_llms_full_txt_api_sections_are_markdown(built_site: BuiltSite, language: str) -> None:
    full = read(built_site.lang_root(language) / "llms-full.txt")
    start = full.index(f"<!-- {SITE_URL}{prefix(language)}ref/session/ -->")
    end = full.index("<!-- ", start + 5)
    section = full[start:end]
    assert "### `Session.get_items` (async)" in section
    assert "```python\nget_items(" in section
    assert "| `limit` | `int \\| None` |" in section
    outside_code = re.sub(r"```.*?```", "", section, flags=re.S)
    indented = [line for line in outside_code.splitlines() if line[:1].isspace()]
    assert not indented, indented[:5]
    labels = [
        line
        for line in outside_code.splitlines()
        if line.strip() in {"async", "classmethod", "module-attribute", "property"}
    ]
    assert not labels, labels[:5]


@pytest.mark.parametrize("language", TRANSLATIONS)
def test_translated_pages_have_a_footer_in_their_language(
    built_site: BuiltSite, language: str
) -> None:
    for url in ("", "sessions/", "ref/session/"):
        page = read(built_site.page(f"{language}/{url}"))
        footer = page[page.index('<div class="md-copyright">') :]
        footer = footer[: footer.index("</div>\n</div>") if "</div>\n</div>" in footer else 600]
        assert "Made with" not in footer, (language, url)
        assert "contributors" not in footer, (language, url)
        assert "Material for MkDocs" in footer


@pytest.mark.parametrize("language", LANGUAGES)
def test_home_page_is_titled_with_the_site_name(built_site: BuiltSite, language: str) -> None:
    page = read(built_site.page(prefix(language)))
    assert re.search(r"<title>([^<]*)</title>", page).group(1) == "turnstore"  # type: ignore[union-attr]


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_stylesheet_is_linked_once(built_site: BuiltSite, language: str) -> None:
    for url in ("", "ref/session/"):
        page = read(built_site.page(prefix(language) + url))
        sheets = re.findall(r'<link rel="stylesheet" href="([^"]+)"', page)
        assert sheets, url
        assert len(sheets) == len(set(sheets)), sorted(sheets)
        assert sum("_mkdocstrings.css" in sheet for sheet in sheets) == 1


def test_source_links_point_at_a_ref_that_exists(built_site: BuiltSite) -> None:
    # The tag exists once the changelog dates the release; before, the links follow `main`.
    version = re.escape(turnstore.__version__)
    changelog = read(ROOT / "CHANGELOG.md")
    released = re.search(rf"^## \[{version}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M)
    ref = f"v{turnstore.__version__}" if released else "main"
    for url in REF_PAGES:
        links = re.findall(
            r'href="(https://github\.com/[^"]+/blob/[^"]+)"', read(built_site.page(url))
        )
        assert links, url
        off = [link for link in links if f"/blob/{ref}/src/" not in link]
        assert not off, off[:3]


@pytest.mark.parametrize("language", LANGUAGES)
def test_llms_txt_descriptions_end_with_their_sentence(
    built_site: BuiltSite, language: str
) -> None:
    index = read(built_site.lang_root(language) / "llms.txt")
    entries = dict(re.findall(r"^- \[[^\]]+\]\(([^)]+)\): (.*)$", index, re.M))
    assert entries
    cut = [text for text in entries.values() if not re.search(r"[.!?。！？:：]$", text)]
    assert not cut, cut


@pytest.mark.parametrize("language", LANGUAGES)
def test_llms_full_txt_api_opening_sentences_keep_their_links(
    built_site: BuiltSite, language: str
) -> None:
    full = read(built_site.lang_root(language) / "llms-full.txt")
    start = full.index(f"<!-- {SITE_URL}{prefix(language)}ref/session/ -->")
    opening = full[start : full.index("\n## ", start)]
    assert f"]({SITE_URL}{prefix(language)}sessions/)" in opening, opening
