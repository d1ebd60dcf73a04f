"""What a reader of each language gets from the built site (HTML checks).

404 pages, sitemaps and hreflang, a site that loads nothing from another host, the navigation
(readers' pages apart from maintainers'), logo, favicon and breadcrumbs, the changelog and
examples pages, llms.txt, inventory links in the reference, the search index's content and
code examples that fit the content column.
"""

from __future__ import annotations

import html as html_lib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from site_support import LANGUAGES, ROOT, TRANSLATIONS, BuiltSite, parse, resolve

SITE_URL = "http://127.0.0.1:8000/"
HOME_NAMES = {"en": "English", "ja": "日本語", "ko": "한국어", "zh": "中文"}
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>\w*)[^\n]*\n(?P<body>.*?)^(?P=indent)```", re.M | re.S
)


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def head(html: str) -> str:
    return html[: html.index("</head>")]


def primary_nav(html: str) -> str:
    start = html.index('<nav class="md-nav md-nav--primary"')
    return html[start : html.index("md-sidebar--secondary", start)]


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_language_has_its_own_404_page(built_site: BuiltSite, language: str) -> None:
    path = built_site.lang_root(language) / "404.html"
    html = read(path)
    assert f'<html lang="{language}"' in html, path
    # It links to every language's home page, each under its own name.
    for other, name in HOME_NAMES.items():
        home = "/" if other == "en" else f"/{other}/"
        assert f'<a href="{home}" hreflang="{other}" lang="{other}">{name}</a>' in html
    # The language switcher offers the same homes (not the alternates of the last page built,
    # which Material would otherwise read from the page context).
    switcher = {
        lang: href
        for href, lang in re.findall(
            r'<a href="([^"]+)" hreflang="([\w-]+)" class="md-select__link"', html
        )
    }
    assert switcher == {other: "/" if other == "en" else f"/{other}/" for other in HOME_NAMES}, (
        switcher
    )
    # Served for any missing URL, so its links are absolute, and a translated one searches its
    # own language's index.
    base = re.search(r'"base": "([^"]*)"', html)
    assert base is not None
    assert base.group(1) == ("/" if language == "en" else f"/{language}/")
    if language != "en":
        assert CJK.search(html[html.index("<article") : html.index("</article>")])


def test_pages_have_no_head_alternates_and_the_sitemaps_have_x_default(
    built_site: BuiltSite,
) -> None:
    # Material fetched `sitemap.xml` beside each <link rel="alternate"> (404s on every page):
    # hreflang lives in the sitemaps instead.
    for url in ("", "sessions/", "ja/sessions/", "ref/session/", "zh/ref/session/"):
        assert 'rel="alternate" href=' not in head(read(built_site.page(url))), url
    sitemap = read(built_site.path / "sitemap.xml")
    blocks = re.findall(r"<url>.*?</url>", sitemap, re.S)
    assert blocks
    for block in blocks:
        alternates = dict(re.findall(r'hreflang="([\w-]+)" href="([^"]+)"', block))
        assert alternates.get("x-default") == alternates["en"], block
        assert set(alternates) == {*LANGUAGES, "x-default"}, block
    # Each language root has its own sitemap (Material fetches the one of the page's `base`).
    for language in TRANSLATIONS:
        own = read(built_site.path / language / "sitemap.xml")
        locs = re.findall(r"<loc>([^<]+)</loc>", own)
        assert locs
        assert all(loc.startswith(f"{SITE_URL}{language}/") for loc in locs), language
        assert f"{SITE_URL}{language}/ref/session/" in locs


def test_switcher_of_an_api_page_leads_to_the_same_page_in_each_language(
    built_site: BuiltSite,
) -> None:
    page = built_site.page("ref/session/")
    links = re.findall(r'<a href="([^"]+)" hreflang="(\w+)" class="md-select__link"', read(page))
    targets = {lang: resolve(built_site.path, page, href) for href, lang in links}
    for language in TRANSLATIONS:
        target = targets[language]
        assert target is not None
        assert target[0] == built_site.page(f"{language}/ref/session/"), targets


def test_nothing_is_loaded_from_another_host(built_site: BuiltSite) -> None:
    resource = re.compile(r'<(?:script|img|link|iframe|source)\b[^>]*?\b(?:src|href)="([^"]+)"')
    found = []
    for path in sorted(built_site.path.rglob("*.html")):
        html = read(path)
        for tag_url in resource.findall(html):
            if (
                re.match(r"^(?:https?:)?//", tag_url)
                and 'rel="canonical"' not in html.split(tag_url)[0][-80:]
            ):
                found.append(f"{path.relative_to(built_site.path)}: {tag_url}")
        assert "fonts.googleapis" not in html, path
        assert "fonts.gstatic" not in html, path
        # Material asks the GitHub API for the repository's stars unless this is absent.
        assert 'data-md-component="source"' not in html, path
    assert not found, found[:10]
    css = "".join(read(p) for p in (built_site.path / "assets").rglob("*.css"))
    assert "@import url(" not in css


@pytest.mark.parametrize("language", LANGUAGES)
def test_reader_navigation_keeps_maintainer_pages_in_contributing(
    built_site: BuiltSite, language: str
) -> None:
    prefix = "" if language == "en" else f"{language}/"
    html = read(built_site.page(f"{prefix}sessions/"))
    nav = primary_nav(html)
    contributing = nav.index('href="../contributing/"')
    assert nav.index('href="../translation/"') > contributing
    for reader_page in ("../examples/", "../changelog/", "../ref/", "../compaction/"):
        assert nav.index(f'href="{reader_page}"') < contributing, reader_page
    # The section's pages are not named like the section ("Contributing > Contributing").
    labels = [
        " ".join(label.split())
        for label in re.findall(r'<span class="md-ellipsis">(.*?)</span>', nav[:contributing], re.S)
    ]
    page = re.search(r'<span class="md-ellipsis">(.*?)</span>', nav[contributing:], re.S)
    assert page is not None
    assert " ".join(page.group(1).split()) != labels[-1], labels[-1]
    # The reference's "add a ::: block" note is on the Contributing page, not in the reference.
    ref_index = read(built_site.page(f"{prefix}ref/"))
    article = ref_index[ref_index.index("<article") : ref_index.index("</article>")]
    assert "::: turnstore.Name" not in article
    contributing_page = read(built_site.page(f"{prefix}contributing/"))
    assert "::: turnstore.Name" in contributing_page


def test_logo_favicon_and_breadcrumbs(built_site: BuiltSite) -> None:
    for url in ("", "ja/ref/session/", "ko/sessions/"):
        page = built_site.page(url)
        html = read(page)
        icon = re.search(r'<link rel="icon" href="([^"]+)">', html)
        assert icon is not None
        assert icon.group(1).endswith("assets/images/favicon.svg")
        target = resolve(built_site.path, page, icon.group(1))
        assert target is not None
        assert target[0].is_file()
        logo = re.search(r'<img src="([^"]+logo\.svg)"', html)
        assert logo is not None, url
        logo_target = resolve(built_site.path, page, logo.group(1))
        assert logo_target is not None
        assert logo_target[0].is_file()
    # Breadcrumbs (navigation.path) on a nested page, in the page's language.
    html = read(built_site.page("ja/ref/session/"))
    path = html[html.index('<nav class="md-path"') : html.index("</nav>", html.index("md-path"))]
    assert "API リファレンス" in path


@pytest.mark.parametrize("language", LANGUAGES)
def test_changelog_page_shows_the_repository_changelog(
    built_site: BuiltSite, language: str
) -> None:
    prefix = "" if language == "en" else f"{language}/"
    html = read(built_site.page(f"{prefix}changelog/"))
    article = html[html.index("<article") : html.index("</article>")]
    assert article.count("<h1") == 1
    changelog = read(ROOT / "CHANGELOG.md")
    versions = re.findall(r"^## (.+)$", changelog, re.M)
    assert versions
    for version in versions:
        assert re.sub(r"[\[\]]", "", version).split(" ")[0] in article, version


@pytest.mark.parametrize("language", LANGUAGES)
def test_examples_page_shows_every_example_script(built_site: BuiltSite, language: str) -> None:
    prefix = "" if language == "en" else f"{language}/"
    html = read(built_site.page(f"{prefix}examples/"))
    scripts = sorted((ROOT / "examples").glob("*.py"))
    assert scripts
    for script in scripts:
        assert f"examples/{script.name}" in html, script.name
        first_def = next(
            line for line in read(script).splitlines() if line.startswith("async def ")
        )
        name = first_def.split("(")[0].split()[-1]
        assert f'<span class="nf">{name}</span>' in html, script.name


@pytest.mark.parametrize("language", LANGUAGES)
def test_llms_txt_for_each_language(built_site: BuiltSite, language: str) -> None:
    root = built_site.lang_root(language)
    prefix = "" if language == "en" else f"{language}/"
    index = read(root / "llms.txt")
    assert index.startswith("# turnstore\n\n> ")
    links = re.findall(r"^- \[[^\]]+\]\(([^)]+)\)", index, re.M)
    for url in ("", "sessions/", "examples/", "changelog/", "ref/session/"):
        assert f"{SITE_URL}{prefix}{url}" in links, url
    for link in links:
        assert built_site.page(link[len(SITE_URL) :]).is_file(), link
    full = read(root / "llms-full.txt")
    guide = (
        read(ROOT / "docs" / prefix / "sessions.md") if prefix else read(ROOT / "docs/sessions.md")
    )
    first_heading = re.search(r"^## (.+?)(?:\s*\{#[^}]*\})?$", guide, re.M)
    assert first_heading is not None
    assert first_heading.group(1) in full
    # The API reference's text is there, its source listings are not.
    assert "Session.pop_item" in full or "pop_item" in full
    assert "Source code in" not in full
    changelog_versions = re.findall(r"^## .+$", read(ROOT / "CHANGELOG.md"), re.M)
    assert changelog_versions[0] in full  # the changelog's snippet is expanded


def test_reference_links_standard_library_types_and_session_settings_like(
    built_site: BuiltSite,
) -> None:
    html = read(built_site.page("ref/backends/"))
    assert 'href="https://docs.python.org/3/library/stdtypes.html#str"' in html
    assert 'href="https://docs.python.org/3/library/datetime.html#datetime.datetime"' in html
    assert 'href="../settings/#turnstore.memory.SessionSettingsLike"' in html
    assert (
        "turnstore.memory.SessionSettingsLike"
        in parse(built_site.page("ref/settings/"))[0]
    )
    # A translated reference links within its own language.
    ja = read(built_site.page("ja/ref/backends/"))
    assert 'href="../settings/#turnstore.memory.SessionSettingsLike"' in ja
    # ... and so do translated guides (autorefs resolve to the closest copy).
    guide = read(built_site.page("ja/sessions/"))
    assert re.search(r'href="\.\./ref/[a-z]+/#turnstore\.', guide)
    assert not re.search(r'href="\.\./\.\./ref/', guide)


def _index(site: BuiltSite, language: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        read(site.lang_root(language) / "search" / "search_index.json")
    )
    return data


@pytest.mark.parametrize("language", LANGUAGES)
def test_search_index_has_no_source_and_names_objects(built_site: BuiltSite, language: str) -> None:
    docs = _index(built_site, language)["docs"]
    text = " ".join(doc["text"] for doc in docs)
    # Source listings are not indexed: the code of the source appears in no entry.
    assert '"""Return the stored history' not in text
    assert "codelineno" not in text
    by_location = {doc["location"]: doc for doc in docs}
    entry = by_location["ref/session/#turnstore.Session.pop_item"]
    assert entry["title"] == "Session.pop_item"
    assert not [
        doc["title"]
        for doc in docs
        if "<code>" in doc["title"] and "#turnstore." in doc["location"]
    ]
    config = _index(built_site, language)["config"]
    assert "." in config["separator"].split("]")[0]


def test_glossary_synonyms_are_in_the_japanese_and_korean_indexes(built_site: BuiltSite) -> None:
    assert _index(built_site, "ja")["config"]["synonyms"]["圧縮"] == ["コンパクション"]
    assert _index(built_site, "ko")["config"]["synonyms"]["컴팩션"] == ["압축"]
    assert "synonyms" not in _index(built_site, "en")["config"]


def test_long_dotted_code_in_tables_breaks_at_dots_only(built_site: BuiltSite) -> None:
    html = read(built_site.page("ref/backends/"))
    assert "sqlalchemy.<wbr>ext.<wbr>asyncio.<wbr>create_async_engine" in html
    css = read(built_site.path / "assets" / "stylesheets" / "turnstore.css")
    assert re.search(r"table:not\(\[class\]\) code \{\s*word-break: normal;", css)


@pytest.mark.parametrize("language", LANGUAGES)
def test_code_examples_fit_80_columns(language: str) -> None:
    # The content column holds 80 characters of code at 1280 px (checked in the browser tests).
    folder = ROOT / "docs" / ("" if language == "en" else language)
    long_lines = []
    for md in sorted(folder.glob("*.md")):
        if md.name == "translation.md":  # maintainer page (Contributing), shell transcripts
            continue
        for match in FENCE.finditer(read(md)):
            if match["lang"] not in ("python", "bash", "sql", "toml", "yaml"):
                continue
            indent = len(match["indent"])
            long_lines += [
                f"{md.name}: {line.strip()}"
                for line in match["body"].splitlines()
                if len(line) - indent > 80
            ]
    assert not long_lines, long_lines


def test_example_scripts_fit_80_columns() -> None:
    # The Examples page shows each script of examples/ whole (examples/ruff.toml formats them
    # to 80 columns): no line of one may scroll sideways there.
    long_lines = [
        f"{script.name}:{number}"
        for script in sorted((ROOT / "examples").glob("*.py"))
        for number, line in enumerate(read(script).splitlines(), 1)
        if len(line) > 80
    ]
    assert not long_lines, long_lines


def test_api_signatures_fit_80_columns(built_site: BuiltSite) -> None:
    # Each signature of the reference is a code block of the content column (80 characters at
    # 1280 px): formatted over several lines, none scrolls sideways (ScriptStep's alias, one
    # string, was a 164-character line).
    signature = re.compile(r'doc-signature highlight"><pre>(.*?)</pre>', re.S)
    long_lines = []
    pages = sorted((built_site.path / "ref").rglob("index.html"))
    assert pages
    for page in pages:
        for block in signature.findall(read(page)):
            text = html_lib.unescape(re.sub(r"<[^>]+>", "", block))
            long_lines += [
                f"{page.parent.name}: {line[:60]}" for line in text.splitlines() if len(line) > 80
            ]
    assert not long_lines, long_lines
