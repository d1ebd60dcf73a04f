"""What a reader sees in Chromium: 404 pages in their language, Korean wrapped between words,
search results of prose ranked guide-first without false "missing" notes, tables that show they
scroll on a phone, and whole names in the page's contents."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import unquote

import pytest
from site_support import LANGUAGES

pytestmark = pytest.mark.browser

NOT_FOUND_TITLES = {
    "en": "Page not found",
    "ja": "ページが見つかりません",
    "ko": "페이지를 찾을 수 없습니다",
    "zh": "找不到页面",
}


def home(site_url: str, language: str) -> str:
    return site_url + ("" if language == "en" else f"{language}/")


def search(page: Any, query: str) -> list[str]:
    """Type `query` into Material's search box; return the result links (none when none match)."""
    config = json.loads(page.locator("#__config").text_content())
    none = config["translations"]["search.result.none"]
    page.locator("label.md-search__icon, .md-search__input").first.click()
    box = page.locator("input.md-search__input")
    box.fill(query)
    box.press("End")  # fill() sends no keyup for CJK text; Material's search listens to keyup
    page.wait_for_function(
        """none => document.querySelector('.md-search-result__item > a')
            || document.querySelector('.md-search-result__meta').textContent.trim() === none""",
        arg=none,
    )
    hrefs: list[str] = page.locator(".md-search-result__item > a").evaluate_all(
        "links => links.map(a => a.href)"
    )
    return hrefs


SEARCH_WORDS = {"en": "session", "ja": "セッション", "ko": "세션", "zh": "会话"}


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_missing_url_shows_the_404_page_of_the_language_of_its_path(
    page: Any, site_url: str, language: str
) -> None:
    # The test server answers a missing path as GitHub Pages does: the root 404.html.
    missing = home(site_url, language) + "no/such/page/"
    response = page.goto(missing)
    assert response is not None
    assert response.status == 404
    page.wait_for_selector(f'html[lang="{language}"] article h1#not-found')
    page.wait_for_load_state("load")
    assert page.url == missing  # the reader still sees the address they asked for
    assert page.title() == f"{NOT_FOUND_TITLES[language]} - turnstore"
    assert page.locator("article h1").inner_text().strip() == NOT_FOUND_TITLES[language]
    # The chrome is the language's: navigation into its pages, its footer, its search index.
    nav = page.locator(".md-nav--primary a.md-nav__link[href]").evaluate_all(
        "links => links.map(a => a.href)"
    )
    assert nav
    assert all(link.startswith(home(site_url, language)) for link in nav), nav[:5]
    footer = page.locator(".md-copyright").inner_text()
    assert ("contributors" in footer) == (language == "en"), footer
    results = search(page, SEARCH_WORDS[language])
    assert results
    others = [f"{site_url}{lang}/" for lang in LANGUAGES if lang not in ("en", language)]
    assert all(link.startswith(home(site_url, language)) for link in results), results[:5]
    assert not any(link.startswith(tuple(others)) for link in results), results[:5]
    homes = page.locator("article a[hreflang]").evaluate_all(
        "links => links.map(a => [a.hreflang, a.href])"
    )
    assert dict(homes) == {lang: home(site_url, lang) for lang in LANGUAGES}


LOGO_PIXELS = """img => {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 48;
  const context = canvas.getContext('2d');
  context.drawImage(img, 0, 0, 48, 48);
  const data = context.getImageData(0, 0, 48, 48).data;
  const drawn = [];
  for (let i = 0; i < data.length; i += 4) {
    if (data[i + 3] > 128) drawn.push((data[i] + data[i + 1] + data[i + 2]) / 3);
  }
  return drawn;
}"""


@pytest.mark.parametrize("path", ["", "ja/sessions/", "zh/ref/session/"])
def test_the_logo_is_white_on_the_header(page: Any, site_url: str, path: str) -> None:
    page.goto(site_url + path)
    logo = page.locator(".md-header .md-logo img")
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=logo.element_handle())
    drawn = logo.evaluate(LOGO_PIXELS)
    assert drawn, "the logo draws nothing"
    assert min(drawn) > 200, f"the logo's strokes are dark (darkest {min(drawn)})"


def test_without_javascript_the_404_page_still_offers_every_home(
    browser: Any, site_url: str
) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        response = page.goto(site_url + "ja/no/such/page/")
        assert response is not None
        assert response.status == 404
        links = page.locator("article a[hreflang]").evaluate_all(
            "links => links.map(a => [a.hreflang, a.href])"
        )
        assert dict(links) == {lang: home(site_url, lang) for lang in LANGUAGES}
    finally:
        context.close()


# A line that ends and a line that starts with a Hangul syllable: a word cut in two.
BROKEN_KOREAN_WORDS = """() => {
  const hangul = /[\\uac00-\\ud7a3]/;
  const broken = [];
  for (const block of document.querySelectorAll('article p, article li')) {
    const walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
    let top = null, last = '', context = '';
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.textContent;
      for (let i = 0; i < text.length; i++) {
        const range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const rect = range.getClientRects()[0];
        if (!rect || !text[i].trim()) { last = text[i]; continue; }
        if (top !== null && rect.top > top + 2 && hangul.test(last) && hangul.test(text[i])) {
          broken.push(context.slice(-6) + ' / ' + text.slice(i, i + 6));
        }
        top = rect.top; last = text[i]; context += text[i];
      }
    }
  }
  return broken;
}"""


@pytest.mark.parametrize("width", [390, 768, 1280])
@pytest.mark.parametrize("path", ["ko/", "ko/sessions/", "ko/compaction/"])
def test_korean_lines_break_between_words(
    browser: Any, site_url: str, path: str, width: int
) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        page.goto(site_url + path)
        page.locator("article p").first.wait_for()
        broken = page.evaluate(BROKEN_KOREAN_WORDS)
        assert not broken, broken[:5]
    finally:
        context.close()


@pytest.mark.parametrize(
    ("language", "query"),
    [
        ("en", "sequenceDiagram"),  # Mermaid source
        ("ko", "sequenceDiagram"),  # Mermaid source (the changelog names participants in prose)
        ("en", "get_weather"),  # only in example scripts
        ("ko", "get_weather"),  # English scripts in Korean results
    ],
)
def test_search_finds_no_diagram_or_listing_source(
    page: Any, site_url: str, language: str, query: str
) -> None:
    page.goto(home(site_url, language))
    hrefs = search(page, query)
    assert not hrefs, hrefs[:3]


@pytest.mark.parametrize(
    ("language", "query"), [("ja", "圧縮"), ("ko", "컴팩션"), ("en", "Session.pop_item")]
)
def test_search_marks_no_synonym_or_name_part_as_missing(
    page: Any, site_url: str, language: str, query: str
) -> None:
    page.goto(home(site_url, language))
    hrefs = search(page, query)
    assert hrefs
    missing = page.locator(".md-search-result__terms").all_inner_texts()
    assert not missing, missing[:3]


@pytest.mark.parametrize(
    ("language", "query", "expected"),
    [("en", "compaction", "compaction/"), ("ja", "履歴", None), ("ko", "세션", None)],
)
def test_search_ranks_a_matching_guide_before_the_reference_and_changelog(
    page: Any, site_url: str, language: str, query: str, expected: str | None
) -> None:
    page.goto(home(site_url, language))
    hrefs = search(page, query)
    root = home(site_url, language)
    first = unquote(hrefs[0])
    assert first.startswith(root), hrefs[:3]
    assert not re.match(r"(ref|changelog)/", first[len(root) :]), hrefs[:3]
    if expected is not None:
        assert first.startswith(root + expected), hrefs[:3]
    # The first result's page title or one of its section headings holds the word searched for.
    titles = page.locator(".md-search-result__item").first.locator("h1, h2").all_inner_texts()
    marked = page.locator(".md-search-result__item").first.locator("h1 mark, h2 mark").count()
    assert marked, titles


def test_wide_tables_show_they_scroll_on_a_phone(browser: Any, site_url: str) -> None:
    context = browser.new_context(viewport={"width": 375, "height": 812}, is_mobile=True)
    try:
        page = context.new_page()
        page.goto(site_url + "ref/backends/#turnstore.extensions.memory.SQLAlchemySession.from_url")
        page.locator("article table").first.wait_for()
        index = page.evaluate(
            """() => [...document.querySelectorAll('article .md-typeset__scrollwrap')]
                .findIndex(w => w.scrollWidth > w.clientWidth + 1)"""
        )
        assert index >= 0, "no table is wider than a phone here: the test proves nothing"
        wrap = page.locator("article .md-typeset__scrollwrap").nth(index)
        wrap.scroll_into_view_if_needed()
        wrap.evaluate("w => { w.scrollLeft = 0; }")
        with_hint = wrap.screenshot()
        page.add_style_tag(
            content=".md-typeset__scrollwrap { background: none !important; }"
            " .md-typeset__scrollwrap table { background: var(--md-default-bg-color) !important; }"
        )
        without_hint = wrap.screenshot()
        assert with_hint != without_hint, "nothing on the table shows that it scrolls"
    finally:
        context.close()


@pytest.mark.parametrize("path", ["ref/sqlite/", "ja/ref/sqlite/"])
def test_contents_show_every_api_name_whole(page: Any, site_url: str, path: str) -> None:
    page.goto(site_url + path)
    toc = page.locator(".md-sidebar--secondary nav.md-nav--secondary")
    toc.wait_for()
    entries = toc.locator(".md-nav__link .md-ellipsis").evaluate_all(
        """spans => spans.map(s => [s.innerText.trim(), s.scrollWidth > s.clientWidth + 1
            || s.scrollHeight > s.clientHeight + 1 || getComputedStyle(s).textOverflow])"""
    )
    names = [name.replace("\n", "") for name, _ in entries]
    assert "create_branch_from_turn" in names
    assert "create_branch_from_content" in names
    cut = [name for name, overflow in entries if overflow is True or overflow == "ellipsis"]
    assert not cut, cut
