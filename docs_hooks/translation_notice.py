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
from page_notice import english_link, insert_after_title, notice_html

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
    title, sentence, link_text = NOTICES[language]
    link = english_link(page, language, link_text, "translation-notice__link")
    block = notice_html(
        language,
        kind="info",
        css_class="translation-notice",
        title=title,
        body_html=sentence.format(link=link),
    )
    page.content = insert_after_title(page.content, block)
    return context
