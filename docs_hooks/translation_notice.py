"""Show a notice on machine-translated pages, with a link to the English original.

Also translates the tooltip of heading permalinks in translated builds, so no English label is
left on a translated page.

A translated page whose front matter has `machine_translated: true` (written by
scripts/translate_docs.py) gets, under its title, a short notice in the page's language that says
so and links to the English page. The notice is added after the search plugin has indexed the
page, so it does not show up in search results.
"""

from __future__ import annotations

import html
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.nav import Navigation
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url

# The `toc` extension's tooltip on heading permalinks, per language (English is the default).
PERMALINK_TITLES: dict[str, str] = {
    "ja": "この見出しへのリンク",
    "ko": "이 제목으로 연결되는 링크",
    "zh": "指向此标题的链接",
}
ENGLISH_PERMALINK_TITLE = 'title="Permanent link"'

# language -> (title, sentence with {link} where the link to the English page goes, link text)
NOTICES: dict[str, tuple[str, str, str]] = {
    "ja": ("機械翻訳", "このページは{link}から機械翻訳されたものです。", "英語の原文"),
    "ko": ("기계 번역", "이 페이지는 {link}을 기계 번역한 것입니다.", "영어 원문"),
    "zh": ("机器翻译", "本页由{link}机器翻译而成。", "英文原文"),
}


def notice_html(language: str, english_href: str) -> str:
    """Return the notice for `language`, linking to `english_href`."""
    title, sentence, link_text = NOTICES[language]
    link = (
        f'<a href="{html.escape(english_href)}" hreflang="en" class="translation-notice__link">'
        f"{html.escape(link_text)}</a>"
    )
    return (
        f'<div class="admonition info translation-notice" lang="{language}">'
        f'<p class="admonition-title">{html.escape(title)}</p>'
        f"<p>{sentence.format(link=link)}</p></div>"
    )


def insert_after_title(content: str, block: str) -> str:
    """Insert `block` after the page's first `<h1>`, or at the top when there is none."""
    end = content.find("</h1>")
    if end < 0:
        return block + content
    end += len("</h1>")
    return content[:end] + block + content[end:]


def on_page_content(html_text: str, page: Page, config: MkDocsConfig, **kwargs: Any) -> str:
    """Give heading permalinks a tooltip in the language being built."""
    language = config.plugins["i18n"].current_language
    if language not in PERMALINK_TITLES:
        return html_text
    title = html.escape(PERMALINK_TITLES[language], quote=True)
    return html_text.replace(ENGLISH_PERMALINK_TITLE, f'title="{title}"')


@event_priority(-10)  # after the search plugin (0) has indexed the page
def on_page_context(
    context: dict[str, Any], page: Page, config: MkDocsConfig, nav: Navigation
) -> dict[str, Any]:
    """Add the notice to a machine-translated page."""
    language = getattr(page.file, "locale", None)
    if not page.meta.get("machine_translated") or language not in NOTICES or not page.content:
        return context
    prefix = f"{language}/"
    english = page.url[len(prefix) :] if page.url.startswith(prefix) else page.url
    href = get_relative_url(english or ".", page.url or ".")
    if not href.endswith("/") and (english == "" or english.endswith("/")):
        href += "/"
    page.content = insert_after_title(page.content, notice_html(language, href))
    return context
