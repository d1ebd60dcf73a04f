"""The built site: strict build, API reference coverage, links, anchors and translated pages."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from site_support import LANGUAGES, ROOT, TRANSLATIONS, BuiltSite, parse, resolve

import turnstore
import turnstore.memory

DOCS = ROOT / "docs"
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
HEADING_ID = re.compile(r"<h[1-6][^>]*\bid=\"([^\"]+)\"")


def front_matter(path: Path) -> dict[str, object]:
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        return {}
    data = yaml.safe_load(text[4 : text.index("\n---", 4)])
    return data if isinstance(data, dict) else {}


def translated_pages(language: str) -> list[Path]:
    """The translated Markdown pages of a language, relative to its folder."""
    folder = DOCS / language
    return sorted(p.relative_to(folder) for p in folder.rglob("*.md"))


def page_url(md: Path) -> str:
    """The directory URL of a page: `sessions.md` -> `sessions/`, `index.md` -> ``."""
    stem = md.with_suffix("").as_posix()
    if stem == "index":
        return ""
    return (stem[: -len("/index")] if stem.endswith("/index") else stem) + "/"


def heading_ids(path: Path) -> set[str]:
    """Ids of the page's article headings (Markdown headings, not API objects)."""
    html = path.read_text(encoding="utf-8")
    article = html[html.index('<article class="md-content__inner') : html.index("</article>")]
    return {i for i in HEADING_ID.findall(article) if not i.startswith("turnstore.")}


def test_strict_build_writes_every_language(built_site: BuiltSite) -> None:
    assert "WARNING" not in built_site.log
    for language in LANGUAGES:
        root = built_site.lang_root(language)
        assert (root / "index.html").is_file(), language
        assert (root / "search" / "search_index.json").is_file(), language
        html = (root / "index.html").read_text(encoding="utf-8")
        assert f'<html lang="{language}"' in html


def test_every_public_name_has_an_api_entry(built_site: BuiltSite) -> None:
    documented: set[str] = set()
    for path in (built_site.path / "ref").rglob("index.html"):
        documented |= parse(path)[0]
    public = [f"turnstore.{name}" for name in turnstore.__all__ if name != "__version__"]
    # The tools for writing a backend are exported by turnstore.memory only, documented there.
    public += [
        f"turnstore.memory.{name}"
        for name in turnstore.memory.__all__
        if name not in turnstore.__all__
    ]
    # The other audiences' modules (contributing.md says which page each name goes on).
    for module in ("turnstore.admin", "turnstore.extensions", "turnstore.extensions.memory"):
        public += [f"{module}.{name}" for name in importlib.import_module(module).__all__]
    missing = [name for name in public if name not in documented]
    assert not missing, f"public names without an API entry in docs/ref/: {missing}"


# The modules the reference documents names in (docs/ref/index.md, tests/test_exported_members.py);
# turnstore.testing.interop is documented as a module of its own on the testing page.
PUBLIC_MODULES = (
    "turnstore",
    "turnstore.admin",
    "turnstore.extensions",
    "turnstore.extensions.memory",
    "turnstore.memory",
    "turnstore.testing",
    "turnstore.testing.interop",
)
API_HEADING = re.compile(r'<h[1-6] id="(turnstore\.[^"]+)" class="doc doc-heading"')
SOURCE_LISTING = re.compile(r'<details class="mkdocstrings-source"[^>]*>.*?</details>', re.S)


def test_the_reference_documents_names_at_their_import_paths(built_site: BuiltSite) -> None:
    # Each entry's id is the path a reader imports it from: `turnstore.memory.SessionSettingsLike`,
    # never an internal module such as `turnstore.memory.settings.SessionSettingsLike`.
    internal = []
    for path in sorted((built_site.path / "ref").rglob("index.html")):
        for name in API_HEADING.findall(path.read_text(encoding="utf-8")):
            parts = name.split(".")
            module = max(
                (m for m in PUBLIC_MODULES if parts[: m.count(".") + 1] == m.split(".")),
                key=len,
            )
            rest = parts[module.count(".") + 1 :]
            if rest and rest[0] not in importlib.import_module(module).__all__:
                internal.append(f"{path.parent.name}: {name}")
    assert not internal, f"reference entries at internal paths: {internal}"


def test_runner_reference_describes_every_field_of_the_results(built_site: BuiltSite) -> None:
    # RunResultBase is not on the page: each result class lists the fields under its Attributes.
    html = built_site.page("ref/runner/").read_text(encoding="utf-8")
    fields = ["final_output", "new_items", "usage", "input", "raw_responses", "last_agent"]
    for name, extra in [("RunResult", []), ("RunResultStreaming", ["is_complete"])]:
        start = html.index(f'<h2 id="turnstore.{name}"')
        end = html.index("<h2 ", start + 1)
        entry = SOURCE_LISTING.sub("", html[start:end])  # the source shows private names
        assert '<span class="doc-section-title">Attributes:</span>' in entry, name
        for field in fields + extra:
            assert f'<span title="turnstore.{name}.{field}">{field}</span>' in entry, field
        signature = re.search(r'doc-signature highlight"><pre>(.*?)</pre>', entry, re.S)
        assert signature, name
        assert "input" in signature.group(1)
        assert "_start" not in entry, f"{name} shows a private name"


def test_api_reference_is_shown_in_each_language_with_english_docstrings(
    built_site: BuiltSite,
) -> None:
    english = {
        path.relative_to(built_site.path): path
        for path in (built_site.path / "ref").rglob("*.html")
    }
    assert english
    for path in english.values():
        html = path.read_text(encoding="utf-8")
        article = html[html.index("<article") : html.index("</article>")]
        assert '<html lang="en"' in html
        assert not CJK.search(article), f"{path}: labels in another language"
    for language in TRANSLATIONS:
        # The translated nav lists the language's own copy of each API page.
        assert "ref/session/" in parse(built_site.page(language))[1], language
        for relative, path in english.items():
            copy = built_site.path / language / relative
            html = copy.read_text(encoding="utf-8")
            assert f'<html lang="{language}"' in html, copy
            # The same objects, with the same ids (the switcher keeps the reader on the object).
            assert {i for i in parse(copy)[0] if i.startswith("turnstore.")} == {
                i for i in parse(path)[0] if i.startswith("turnstore.")
            }, copy
            # Only the notice is in the reader's language; the docstrings stay English.
            article = html[html.index("<article") : html.index("</article>")]
            # (the edit and view buttons' tooltips are the interface's, in the reader's language)
            article = re.sub(r'<a [^>]*class="md-content__button[^>]*>', "", article)
            # (and the permalinks' tooltips, "link to this heading")
            article = re.sub(r'<a [^>]*class="headerlink"[^>]*>', "", article)
            notice = re.search(
                r'<div class="admonition note reference-language-notice" lang="(\w+)">(.*?)</div>',
                article,
                re.S,
            )
            assert notice, f"{copy}: no notice that the reference is in English"
            assert notice.group(1) == language
            assert not CJK.search(article.replace(notice.group(0), "")), copy


def test_every_internal_link_and_anchor_resolves(built_site: BuiltSite) -> None:
    broken: list[str] = []
    for path in sorted(built_site.path.rglob("*.html")):
        for href in parse(path)[1]:
            target = resolve(built_site.path, path, href)
            if target is None:
                continue
            file, fragment = target
            where = f"{path.relative_to(built_site.path)} -> {href}"
            if not file.is_file():
                broken.append(f"{where}: no such page")
            elif fragment and file.suffix == ".html" and fragment not in parse(file)[0]:
                broken.append(f"{where}: no #{fragment}")
    assert not broken, "\n".join(broken[:50])


@pytest.mark.parametrize("language", TRANSLATIONS)
def test_translated_headings_keep_the_english_ids(built_site: BuiltSite, language: str) -> None:
    pages = translated_pages(language)
    assert pages, f"docs/{language}/ has no page"
    for md in pages:
        url = page_url(md)
        english = heading_ids(built_site.page(url))
        translated = heading_ids(built_site.page(f"{language}/{url}"))
        assert translated == english, f"{language}/{md}: heading ids differ from English"


@pytest.mark.parametrize("language", TRANSLATIONS)
def test_machine_translated_pages_link_to_the_english_original(
    built_site: BuiltSite, language: str
) -> None:
    for md in translated_pages(language):
        built = built_site.page(f"{language}/{page_url(md)}")
        html = built.read_text(encoding="utf-8")
        if not front_matter(DOCS / language / md).get("machine_translated"):
            assert "translation-notice" not in html
            continue
        notice = re.search(r'<div class="admonition info translation-notice" lang="(\w+)">', html)
        assert notice, f"{language}/{md}: no notice"
        assert notice.group(1) == language
        href = re.search(r'<a href="([^"]+)" hreflang="en" class="translation-notice__link"', html)
        assert href, f"{language}/{md}: the notice has no link"
        target = resolve(built_site.path, built, href.group(1))
        assert target is not None
        assert target[0] == built_site.page(page_url(md)), f"{language}/{md}: wrong original"


def test_english_pages_have_no_translation_notice(built_site: BuiltSite) -> None:
    for md in sorted(DOCS.glob("*.md")):
        built = built_site.page(page_url(md.relative_to(DOCS)))
        assert 'class="admonition info translation-notice"' not in built.read_text("utf-8")


@pytest.mark.parametrize("language", TRANSLATIONS)
def test_translated_pages_load_their_own_search_index(built_site: BuiltSite, language: str) -> None:
    for url in ("", "sessions/"):
        page = built_site.page(f"{language}/{url}")
        base = re.search(r'"base": "([^"]*)"', page.read_text(encoding="utf-8"))
        assert base, page
        target = resolve(built_site.path, page, base.group(1).rstrip("/") + "/")
        assert target is not None
        assert target[0] == built_site.page(language), f"{page}: base is not /{language}/"


def test_api_entries_link_to_their_source_lines(built_site: BuiltSite) -> None:
    html = built_site.page("ref/session/").read_text(encoding="utf-8")
    start = html.index('id="turnstore.Session.get_items"')
    link = re.compile(r'Source code in <a href="([^"]+)"').search(html, start)
    assert link, "no source link after Session.get_items"
    url = link.group(1)
    # At `main` or at the release's tag (test_site_published.py checks which); the lines are
    # the object's in the working tree.
    blob, path_lines = url.split("/blob/", 1)
    assert blob == "https://github.com/turnstore/turnstore"
    path, lines = path_lines.split("/", 1)[1].split("#L")
    first, last = (int(n) for n in lines.split("-L"))
    source = (ROOT / path).read_text(encoding="utf-8").splitlines()[first - 1 : last]
    assert "async def get_items(" in source[0]
    assert '"""Return the stored history, oldest first.' in "\n".join(source)


def test_sitemap_lists_each_existing_page_once(built_site: BuiltSite) -> None:
    sitemap = (built_site.path / "sitemap.xml").read_text(encoding="utf-8")
    prefix = "http://127.0.0.1:8000/"
    locs = re.findall(r"<loc>([^<]+)</loc>", sitemap)
    assert len(locs) == len(set(locs)), "a page is listed twice"
    alternates = re.findall(r'hreflang="\w+" href="([^"]+)"', sitemap)
    missing = []
    for url in locs + alternates:
        assert url.startswith(prefix), url
        if not built_site.page(url[len(prefix) :]).is_file():
            missing.append(url)
    assert not missing, f"sitemap URLs without a page: {sorted(set(missing))[:10]}"


def test_mermaid_is_served_with_the_site(built_site: BuiltSite) -> None:
    script = built_site.path / "assets" / "javascripts" / "mermaid.min.js"
    assert script.is_file()
    assert "globalThis" in script.read_text(encoding="utf-8")[-300:]
    for url in ("sessions/", "ja/sessions/", "ko/sessions/", "zh/sessions/"):
        html = built_site.page(url).read_text(encoding="utf-8")
        assert '<pre class="mermaid"' in html, url
        tags = re.findall(r'<script src="([^"]*mermaid[^"]*)"', html)
        assert len(tags) == 1, (url, tags)
        assert html.index(tags[0]) < html.index("assets/javascripts/bundle."), url
        target = resolve(built_site.path, built_site.page(url), tags[0])
        assert target is not None
        assert target[0] == script
    # Pages without a diagram do not load it (the script is large).
    assert "mermaid.min.js" not in built_site.page("").read_text(encoding="utf-8")


def test_no_inline_code_is_read_as_a_language_marker() -> None:
    # InlineHilite reads `:::lang code` and `#!lang code` as "highlight code as lang": the
    # marker and the first word vanish from the page (`::: turnstore.Name` showed as
    # `turnstore.Name`). Write such code as `` ::: turnstore.Name `` instead.
    fence = re.compile(r"^([ \t]*)(```|~~~).*?^\1\2[ \t]*$", re.M | re.S)
    marker = re.compile(r"(?<!`)`(?:::|#!)[^`]*`(?!`)")
    found = []
    for md in sorted(DOCS.rglob("*.md")):
        text = fence.sub("", md.read_text(encoding="utf-8"))
        found += [f"{md.relative_to(ROOT)}: {m.group(0)}" for m in marker.finditer(text)]
    assert not found, found


@pytest.mark.parametrize("language", TRANSLATIONS)
def test_translated_pages_have_no_english_interface_labels(
    built_site: BuiltSite, language: str
) -> None:
    # Labels from mkdocs.yml rather than Material's own translations (the palette toggle's
    # tooltip) showed in English on every translated page.
    english = ("Switch to dark mode", "Switch to light mode", "Permanent link")
    for url in (f"{language}/", f"{language}/sessions/"):
        html = built_site.page(url).read_text(encoding="utf-8")
        labels = re.findall(r'(?:title|aria-label)="([^"]*)"', html)
        assert "md-header__button" in html
        assert not [label for label in labels if label in english], url


def test_the_build_stops_without_a_signature_formatter(tmp_path: Path) -> None:
    # The published site is built with the docs group alone (docs.yml). Without Ruff or Black,
    # mkdocstrings printed every API signature on one line (341 characters on ref/backends):
    # the docs group installs Black, and a build that could not format them stops, saying why.
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    docs_group = groups["dependency-groups"]["docs"]
    assert any(re.match(r"(ruff|black)\b", requirement) for requirement in docs_group)
    hide_formatters = (
        "import sys; sys.modules['black'] = None; sys.modules['ruff'] = None; "
        "from mkdocs.__main__ import cli; cli()"
    )
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DOCS_TRANSLATIONS": "false"}
    proc = subprocess.run(
        [sys.executable, "-c", hide_formatters, "build", "--strict", "-d", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "signatures need Ruff or Black" in proc.stderr, proc.stderr
    assert not (tmp_path / "ref").exists()
