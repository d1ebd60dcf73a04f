"""The site as a reader of each language meets it in Chromium.

No request leaves 127.0.0.1 and none fails; the switcher keeps the #anchor and the object; the
reference keeps a translated reader in their language; search ranks an object's own entry first
and knows the glossary's synonyms; code and tables fit at 1280 px and scroll inside themselves at
390 px. Screenshots of each page at both widths go to artifacts/screenshots/ (kept by CI).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

import pytest
from playwright.sync_api import expect
from site_support import SCREENSHOTS

pytestmark = pytest.mark.browser

# (page, name of its screenshots)
PAGES = [
    ("", "home-en"),
    ("ja/", "home-ja"),
    ("ko/", "home-ko"),
    ("zh/", "home-zh"),
    ("sessions/", "sessions-en"),
    ("ko/sessions/", "sessions-ko"),
    (
        "ref/backends/#turnstore.extensions.memory.SQLAlchemySession.from_url",
        "ref-backends-from-url",
    ),
    ("ja/ref/session/", "ref-session-ja"),
    ("zh/examples/", "examples-zh"),
    ("changelog/", "changelog-en"),
    ("404.html", "not-found-en"),
    ("ja/404.html", "not-found-ja"),
    ("ko/404.html", "not-found-ko"),
    ("zh/404.html", "not-found-zh"),
]
WIDTHS = (1280, 390)


def search(page: Any, query: str) -> list[str]:
    """Type `query` into Material's search box; return the result links, best first."""
    page.locator("label.md-search__icon, .md-search__input").first.click()
    box = page.locator("input.md-search__input")
    box.fill(query)
    box.press("End")  # fill() sends no keyup for CJK text; Material's search listens to keyup
    results = page.locator(".md-search-result__item > a")
    results.first.wait_for()
    hrefs: list[str] = results.evaluate_all("links => links.map(a => a.href)")
    return hrefs


def result_titles(page: Any) -> list[str]:
    titles: list[str] = page.locator(
        ".md-search-result__item > a h1, .md-search-result__item > a h2"
    ).evaluate_all("els => els.map(e => e.innerText)")
    return titles


@pytest.fixture
def phone(browser: Any) -> Any:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    try:
        tab = context.new_page()
        tab.set_default_timeout(15_000)
        yield tab
    finally:
        context.close()


def test_no_request_leaves_the_site_and_none_fails(browser: Any, site_url: str) -> None:
    # Every page of the tour, at both widths, with search used: a request to any other host
    # (fonts, a CDN, the GitHub API) or any failed request (a sitemap.xml beside an alternate
    # URL) fails the test. Screenshots are saved on the way.
    outside: list[str] = []
    failed: list[str] = []
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for width in WIDTHS:
        context = browser.new_context(viewport={"width": width, "height": 900})
        try:
            tab = context.new_page()
            tab.set_default_timeout(15_000)
            tab.on(
                "request", lambda r: None if r.url.startswith(site_url) else outside.append(r.url)
            )
            tab.on(
                "response",
                lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None,
            )
            tab.on("requestfailed", lambda r: failed.append(f"failed {r.url}"))
            for path, name in PAGES:
                tab.goto(site_url + path)
                tab.wait_for_load_state("networkidle")
                tab.screenshot(path=str(SCREENSHOTS / f"{name}-{width}.png"))
            if width == 1280:
                tab.goto(site_url + "ja/")
                search(tab, "圧縮")
                tab.wait_for_load_state("networkidle")
        finally:
            context.close()
    assert not outside, outside[:10]
    assert not failed, failed[:10]


def test_switcher_keeps_the_anchor(page: Any, site_url: str) -> None:
    page.goto(site_url + "sessions/#the-conformance-kit")
    page.locator(".md-header__option .md-select").hover()
    page.locator('.md-select__link[hreflang="ja"]').click()
    page.wait_for_url(site_url + "ja/sessions/#the-conformance-kit")
    assert page.locator("html").get_attribute("lang") == "ja"
    heading = page.locator("h3#the-conformance-kit")
    expect(heading).to_be_in_viewport()
    assert heading.inner_text().replace("¶", "").strip() != "The conformance kit"
    box = heading.bounding_box()
    assert box is not None
    assert 0 <= box["y"] < 300
    # The anchor followed while scrolling (navigation.tracking) is the one the switcher keeps.
    page.locator('.md-sidebar--secondary a[href="#backends"]').click()
    page.wait_for_url(re.compile(r".*#backends$"))
    page.locator(".md-header__option .md-select").hover()
    page.locator('.md-select__link[hreflang="ko"]').click()
    page.wait_for_url(site_url + "ko/sessions/#backends")
    expect(page.locator("h2#backends")).to_be_in_viewport()


def test_translated_reader_stays_in_their_language_in_the_reference(
    page: Any, site_url: str
) -> None:
    page.goto(site_url + "ja/")
    page.locator(
        ".md-sidebar--primary a.md-nav__link", has_text="セッションプロトコル"
    ).first.click()
    page.wait_for_url(site_url + "ja/ref/session/")
    assert page.locator("html").get_attribute("lang") == "ja"
    notice = page.locator('.reference-language-notice[lang="ja"]')
    expect(notice).to_be_visible()
    assert "英語" in notice.inner_text()
    assert page.locator("input.md-search__input").get_attribute("placeholder") == "検索"
    # Breadcrumbs in Japanese, the docstrings in English.
    expect(page.locator("nav.md-path")).to_contain_text("API リファレンス")
    expect(page.locator('[id="turnstore.Session.get_items"]')).to_contain_text("get_items")
    # Search from the reference finds the Japanese guides and this language's reference.
    hrefs = search(page, "セッション")
    assert hrefs[0].startswith(site_url + "ja/")
    # A link from the reference to a guide stays in Japanese.
    page.goto(site_url + "ja/ref/session/")
    page.locator('article a[href="../../sessions/"]').first.click()
    page.wait_for_url(site_url + "ja/sessions/")


@pytest.mark.parametrize(
    ("language", "query", "expected"),
    [
        ("en", "Session.pop_item", "ref/session/#turnstore.Session.pop_item"),
        ("en", "pop_item", "ref/session/#turnstore.Session.pop_item"),
        ("en", "SQLiteSession", "ref/sqlite/#turnstore.SQLiteSession"),
        ("ja", "Session.pop_item", "ja/ref/session/#turnstore.Session.pop_item"),
        ("ko", "open_session_store", "ko/ref/backends/#turnstore.admin.open_session_store"),
        ("zh", "SessionSettings", "zh/ref/settings/#turnstore.SessionSettings"),
    ],
)
def test_search_ranks_the_objects_own_entry_first(
    page: Any, site_url: str, language: str, query: str, expected: str
) -> None:
    page.goto(site_url + ("" if language == "en" else f"{language}/"))
    hrefs = search(page, query)
    # Material groups results by page: the first entry with an anchor is the best section.
    first = next(h for h in hrefs if "#" in h)
    assert re.sub(r"\?h=[^#]*", "", first) == site_url + expected, hrefs[:4]
    titles = result_titles(page)
    assert not [t for t in titles if re.search(r"\b(async|classmethod|abstractmethod)\b", t)], (
        titles
    )
    assert expected.rsplit("#turnstore.", 1)[1] in titles


@pytest.mark.parametrize(
    ("language", "query", "expected", "word"),
    [
        ("ja", "圧縮", "ja/compaction/", "コンパクション"),
        ("ja", "履歴の圧縮", "ja/", "コンパクション"),
        ("ko", "컴팩션", "ko/compaction/", "압축"),
    ],
)
def test_search_finds_glossary_synonyms(
    page: Any, site_url: str, language: str, query: str, expected: str, word: str
) -> None:
    page.goto(site_url + f"{language}/")
    hrefs = search(page, query)
    assert hrefs[0].startswith(site_url + expected), hrefs[:3]
    assert any(word in unquote(h) for h in hrefs[:3]), hrefs[:3]
    others = [h for h in hrefs if not h.startswith(site_url + f"{language}/")]
    assert not others, others[:3]


@pytest.mark.parametrize(
    "path",
    ["", "sessions/", "running_agents/", "compaction/", "backends/", "extensions/", "examples/"],
)
def test_code_examples_fit_the_content_column_at_desktop_width(
    page: Any, site_url: str, path: str
) -> None:
    page.goto(site_url + path)
    # The Examples page shows each script in a collapsed block: open them all.
    page.evaluate("() => document.querySelectorAll('article details').forEach(d => d.open = true)")
    page.locator("article pre > code").first.wait_for()
    scrolling = page.evaluate(
        """() => [...document.querySelectorAll('article div:not(.language-json) > pre > code')]
            .filter(code => code.offsetParent !== null && code.scrollWidth > code.clientWidth + 1)
            .map(code => code.innerText.split('\\n').sort((a, b) => b.length - a.length)[0])"""
    )
    assert not scrolling, scrolling


@pytest.mark.parametrize("path", ["ref/backends/", "ref/sqlite/", "ref/runner/", "backends/", ""])
def test_tables_fit_at_desktop_width(page: Any, site_url: str, path: str) -> None:
    page.goto(site_url + path)
    page.locator("article").wait_for()
    wide = page.evaluate(
        """() => { const right = document.querySelector('article').getBoundingClientRect().right;
            return [...document.querySelectorAll('article table')]
              .filter(t => t.getBoundingClientRect().right > right + 1)
              .map(t => t.innerText.slice(0, 80)) }"""
    )
    assert not wide, wide
    # Code in a cell never breaks inside a word (source listings are tables of another kind).
    broken = page.evaluate(
        """() => [...document.querySelectorAll('article table:not([class]) td code')]
            .filter(code => {
              const style = getComputedStyle(code);
              return style.wordBreak === 'break-all' || style.overflowWrap === 'anywhere'
                || style.overflowWrap === 'break-word' || style.wordBreak === 'break-word';
            }).length"""
    )
    assert broken == 0


def test_tables_scroll_inside_themselves_on_a_phone(phone: Any, site_url: str) -> None:
    phone.goto(site_url + "ref/backends/#turnstore.extensions.memory.SQLAlchemySession.from_url")
    phone.locator("article table").first.wait_for()
    # The page itself never scrolls sideways ...
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    # ... a wide table scrolls inside its own box.
    scrollable = phone.evaluate(
        """() => [...document.querySelectorAll('article .md-typeset__scrollwrap')]
            .filter(w => w.scrollWidth > w.clientWidth + 1)
            .map(w => getComputedStyle(w).overflowX)"""
    )
    assert scrollable, "no table is wider than a phone here: the test proves nothing"
    assert set(scrollable) <= {"auto", "scroll"}, scrollable


@pytest.mark.parametrize("path", ["", "ja/", "zh/running_agents/"])
def test_tables_of_prose_wrap_on_a_phone(phone: Any, site_url: str, path: str) -> None:
    # A table whose cells can wrap fits the phone's width: no sentence runs off the screen
    # (the home page's "Method / What it does" table scrolled sideways in every language).
    phone.goto(site_url + path)
    phone.locator("article table").first.wait_for()
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    overflowing = phone.evaluate(
        """() => [...document.querySelectorAll('article .md-typeset__scrollwrap')]
            .filter(w => w.scrollWidth > w.clientWidth + 1)
            .map(w => w.querySelector('tr').innerText.slice(0, 40))"""
    )
    assert not overflowing, overflowing


def test_root_404_offers_every_language_home(page: Any, site_url: str) -> None:
    page.goto(site_url + "404.html")
    assert page.locator("html").get_attribute("lang") == "en"
    page.locator('article a[hreflang="ja"]').click()
    page.wait_for_url(site_url + "ja/")
    assert page.locator("html").get_attribute("lang") == "ja"
    page.goto(site_url + "ko/404.html")
    assert page.locator("html").get_attribute("lang") == "ko"
    expect(page.locator("article h1")).to_have_text("페이지를 찾을 수 없습니다")
