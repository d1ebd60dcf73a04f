"""The built site in a real browser (system Chromium through Playwright), served over http."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect
from site_support import LANGUAGES, SCREENSHOTS

pytestmark = pytest.mark.browser

HOME_HEADINGS = {"en": "Quick start"}


def heading_text(locator: Any) -> str:
    """A heading's text without its permalink sign."""
    return str(locator.inner_text()).replace("¶", "").strip()


def search(page: Any, query: str) -> list[str]:
    """Type `query` into Material's search box and return the result links, best first."""
    page.locator("label.md-search__icon, .md-search__input").first.click()
    box = page.locator("input.md-search__input")
    box.fill(query)
    # fill() sends no keyup for CJK text and Material's search listens to keyup.
    box.press("End")
    results = page.locator(".md-search-result__item > a")
    results.first.wait_for()
    hrefs: list[str] = results.evaluate_all("links => links.map(a => a.href)")
    return hrefs


@pytest.mark.parametrize("language", LANGUAGES)
def test_home_page_renders_in_each_language(page: Any, site_url: str, language: str) -> None:
    path = "" if language == "en" else f"{language}/"
    response = page.goto(site_url + path)
    assert response is not None
    assert response.ok
    assert page.locator("html").get_attribute("lang") == language
    heading = page.locator("article h2#quick-start")
    heading.wait_for()
    if language == "en":
        assert heading_text(heading) == HOME_HEADINGS["en"]
    else:
        assert heading_text(heading) != HOME_HEADINGS["en"]
        notice = page.locator(f".translation-notice[lang={language}] a[hreflang=en]")
        assert notice.is_visible()
    # The page's scripts ran (Material adds the copy button to code blocks).
    page.locator('article pre button[data-md-type="copy"]').first.wait_for(state="attached")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"home-{language}.png"), full_page=False)


def test_language_switcher_goes_to_the_same_page(page: Any, site_url: str) -> None:
    page.goto(site_url + "sessions/")
    page.locator(".md-header__option .md-select").hover()
    page.locator('.md-select__link[hreflang="ja"]').click()
    page.wait_for_url(site_url + "ja/sessions/")
    assert page.locator("html").get_attribute("lang") == "ja"
    page.locator(".md-header__option .md-select").hover()
    page.locator('.md-select__link[hreflang="ko"]').click()
    page.wait_for_url(site_url + "ko/sessions/")
    page.locator(".md-header__option .md-select").hover()
    page.locator('.md-select__link[hreflang="en"]').click()
    page.wait_for_url(site_url + "sessions/")
    # Every language has the API reference (English docstrings in its own chrome): the
    # switcher stays on the same object.
    page.goto(site_url + "ref/session/#turnstore.Session.pop_item")
    page.locator(".md-header__option .md-select").hover()
    page.locator('.md-select__link[hreflang="zh"]').click()
    page.wait_for_url(site_url + "zh/ref/session/#turnstore.Session.pop_item")
    assert page.locator("html").get_attribute("lang") == "zh"
    expect(page.locator('[id="turnstore.Session.pop_item"]')).to_be_in_viewport()


def test_search_in_english_finds_the_page(page: Any, site_url: str) -> None:
    page.goto(site_url)
    hrefs = search(page, "conformance")
    assert hrefs[0].startswith(site_url + "sessions/")
    assert not [h for h in hrefs if re.match(re.escape(site_url) + r"(ja|ko|zh)/", h)]


@pytest.mark.parametrize(
    ("language", "query"), [("ja", "セッション"), ("ko", "세션"), ("zh", "会话")]
)
def test_search_in_a_translation_finds_its_own_pages(
    page: Any, site_url: str, language: str, query: str
) -> None:
    page.goto(site_url + f"{language}/")
    hrefs = search(page, query)
    assert hrefs[0].startswith(site_url + f"{language}/")
    others = "|".join(lang for lang in LANGUAGES if lang not in ("en", language))
    assert not [h for h in hrefs if re.match(re.escape(site_url) + f"({others})/", h)]


def test_search_on_a_translated_page_finds_the_english_api(page: Any, site_url: str) -> None:
    page.goto(site_url + "ja/")
    hrefs = search(page, "await_session_mutation")
    assert hrefs[0].startswith(site_url + "ja/ref/session/")


def test_api_page_shows_get_items_with_its_signature(page: Any, site_url: str) -> None:
    page.goto(site_url + "ref/session/")
    heading = page.locator('[id="turnstore.Session.get_items"]')
    heading.wait_for()
    assert "get_items" in heading.inner_text()
    entry = page.locator('div.doc-object:has(> [id="turnstore.Session.get_items"])')
    signature = " ".join(entry.locator(".doc-signature").first.inner_text().split())
    signature = re.sub(r",?\s*\)", ")", re.sub(r"\(\s+", "(", signature))  # one line
    assert signature == "get_items(limit: int | None = None) -> list[TResponseInputItem]"


def test_anchor_on_a_translated_page_lands_on_the_heading(page: Any, site_url: str) -> None:
    page.goto(site_url + "ja/#what-is-inside")
    heading = page.locator("h2#what-is-inside")
    heading.wait_for()
    assert heading_text(heading) != "What is inside"
    box = heading.bounding_box()
    assert box is not None
    assert 0 <= box["y"] < 300, f"the heading is at y={box['y']}, not at the top"
    # A link to an anchor (here the table of contents) lands on it too.
    page.goto(site_url + "ja/")
    page.locator('.md-sidebar--secondary a[href="#where-to-go-next"]').click()
    page.wait_for_url(re.compile(r".*#where-to-go-next$"))
    expect(page.locator("h2#where-to-go-next")).to_be_in_viewport()
    assert page.evaluate("window.scrollY") > 0


def test_in_page_link_on_a_translated_guide_lands_on_the_heading(page: Any, site_url: str) -> None:
    page.goto(site_url + "ja/sessions/")
    assert page.locator("html").get_attribute("lang") == "ja"
    page.locator('article a[href="#backends"]').first.click()
    page.wait_for_url(re.compile(r".*/ja/sessions/#backends$"))
    heading = page.locator("h2#backends")
    expect(heading).to_be_in_viewport()
    assert heading_text(heading) != "Backends"


def test_translation_notice_links_to_the_english_original(page: Any, site_url: str) -> None:
    page.goto(site_url + "ko/sessions/")
    page.locator(".translation-notice a[hreflang=en]").click()
    page.wait_for_url(site_url + "sessions/")
    assert page.locator("html").get_attribute("lang") == "en"


@pytest.mark.parametrize(
    ("language", "query", "expected", "highlight"),
    [
        ("ja", "適合性キット", "ja/sessions/", "適合性 キット"),
        ("ja", "ツール呼び出し", "ja/", "ツール 呼び出し"),
        ("ja", "セッションの設定", "ja/", "セッション"),
        ("zh", "会话", "zh/sessions/", "会话"),
        ("zh", "智能体", "zh/", "智能体"),
    ],
)
def test_japanese_and_chinese_words_are_found(
    page: Any, site_url: str, language: str, query: str, expected: str, highlight: str
) -> None:
    # The index is split into words ("適合性", "キット"; "会话"); so must the query be, and
    # a result highlights the words searched for ("会话", not "会").
    page.goto(site_url + f"{language}/sessions/")
    hrefs = search(page, query)
    assert hrefs[0].startswith(site_url + expected), hrefs[:3]
    highlighted = [parse_qs(urlsplit(h).query).get("h", [""])[0] for h in hrefs[:3]]
    assert any(set(highlight.split()) <= set(h.split()) for h in highlighted), highlighted
    if query == "適合性キット":
        assert any(h.endswith("#the-conformance-kit") for h in hrefs[:3]), hrefs[:3]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_diagram_renders_without_a_cdn(page: Any, site_url: str, language: str) -> None:
    # Mermaid is served with the site: no request leaves 127.0.0.1 for it, the diagram is drawn
    # (Material swaps the source <pre class="mermaid"> for a rendered <div class="mermaid">) and
    # the page's search still starts.
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url) if "mermaid" in r.url else None)
    path = "" if language == "en" else f"{language}/"
    page.goto(site_url + path + "sessions/")
    page.locator("article div.mermaid").first.wait_for(state="attached")
    assert page.locator("article pre.mermaid").count() == 0
    box = page.locator("article div.mermaid").first.bounding_box()
    assert box is not None
    assert box["height"] > 200
    assert requests
    assert all(url.startswith(site_url) for url in requests), requests
    hrefs = search(page, "compaction" if language == "en" else "压缩")
    assert hrefs[0].startswith(site_url + path)
