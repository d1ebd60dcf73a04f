"""Notices under the title of translated pages, in the page's language, linking to the English.

- A page whose front matter says `machine_translated: true` (scripts/translate_docs.py writes it)
  says it was machine-translated.
- A translation made from another English text than the one being built (its `source` hash in
  docs/i18n/manifest.json differs from the English page's hash now) says the English page changed
  since; a page without a manifest entry is left alone.
- An API reference page in a translated build (the English page, the fallback of every language)
  says the reference is in English: it is generated from the docstrings.

The notices are added after the search plugin (0) has indexed the page, so search never finds
them. Heading permalinks get their tooltip in the language too.
"""

from __future__ import annotations

import hashlib
import html
import json
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url

MANIFEST = Path("docs") / "i18n" / "manifest.json"
# language -> kind -> (title, sentence; {link} is the link to the English page, titled by the third)
NOTICES: dict[str, dict[str, tuple[str, str, str]]] = {
    "ja": {
        "machine": ("機械翻訳", "このページは{link}から機械翻訳されたものです。", "英語の原文"),
        "outdated": (
            "翻訳が古くなっています",
            "このページの翻訳後に英語版が更新されました。最新の内容は{link}をご覧ください。",
            "英語版のページ",
        ),
        "reference": (
            "英語のリファレンス",
            "API リファレンスはソースコードの docstring から生成されるため、"
            "英語のみで提供しています。",
            "",
        ),
    },
    "ko": {
        "machine": ("기계 번역", "이 페이지는 {link}을 기계 번역한 것입니다.", "영어 원문"),
        "outdated": (
            "오래된 번역",
            "이 페이지가 번역된 뒤 영어 원문이 변경되었습니다. 최신 내용은 {link}를 참고하십시오.",
            "영어 페이지",
        ),
        "reference": (
            "영어 레퍼런스",
            "API 레퍼런스는 소스 코드의 docstring에서 생성되므로 영어로만 제공됩니다.",
            "",
        ),
    },
    "zh": {
        "machine": ("机器翻译", "本页由{link}机器翻译而成。", "英文原文"),
        "outdated": (
            "翻译已过时",
            "本页翻译之后，英文原文已有更新。最新内容请参阅{link}。",
            "英文页面",
        ),
        "reference": ("英文参考", "API 参考由源代码中的 docstring 生成，因此仅提供英文版。", ""),
    },
}
# kind -> (admonition type, CSS class)
STYLES = {
    "machine": ("info", "translation-notice"),
    "outdated": ("warning", "outdated-notice"),
    "reference": ("note", "reference-language-notice"),
}
PERMALINK_TITLES = {
    "ja": "この見出しへのリンク",
    "ko": "이 제목으로 연결되는 링크",
    "zh": "指向此标题的链接",
}

_sources: dict[tuple[str, str], str] = {}


def page_hash(text: str) -> str:
    """The manifest's hash of a whole English page (as scripts/docs_i18n computes it)."""
    return f"sha256:{hashlib.sha256(text.encode('utf-8')).hexdigest()[:32]}"


def _language(config: MkDocsConfig) -> str:
    return str(config.plugins["i18n"].current_language)


def on_config(config: MkDocsConfig) -> None:
    """Read the manifest: (English page, language) -> the hash its translation was made from."""
    path = Path(config.config_file_path or ".").resolve().parent / MANIFEST
    data: Any = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    _sources.clear()
    for page, langs in (data.get("pages") or {}).items():
        for lang, entry in langs.items():
            if isinstance(entry, dict) and isinstance(entry.get("source"), str):
                _sources[(page, lang)] = entry["source"]


def kinds_of(page: Page, language: str, docs: Path) -> list[str]:
    """The notices a page of the `language` build gets."""
    source = page.file.src_uri
    prefix = f"{language}/"
    if not source.startswith(prefix):  # an English page: the fallback of this language
        return ["reference"] if source.startswith("ref/") else []
    kinds = ["machine"] if page.meta.get("machine_translated") else []
    english = docs / source[len(prefix) :]
    recorded = _sources.get((source[len(prefix) :], language))
    if recorded and english.is_file() and recorded != page_hash(english.read_text("utf-8")):
        kinds.append("outdated")
    return kinds


def notice(page: Page, language: str, kind: str) -> str:
    """The notice's HTML: an admonition in `language`, with the link to the English page."""
    title, sentence, link_text = NOTICES[language][kind]
    admonition, css = STYLES[kind]
    english = page.url.removeprefix(f"{language}/")
    href = get_relative_url(english or ".", page.url or ".")
    if not href.endswith("/") and (english == "" or english.endswith("/")):
        href += "/"
    link = (
        f'<a href="{html.escape(href)}" hreflang="en" class="{css}__link">'
        f"{html.escape(link_text)}</a>"
    )
    return (
        f'<div class="admonition {admonition} {css}" lang="{language}">'
        f'<p class="admonition-title">{html.escape(title)}</p>'
        f"<p>{html.escape(sentence).replace('{link}', link)}</p></div>"
    )


def on_page_content(html_text: str, page: Page, config: MkDocsConfig, **kwargs: Any) -> str:
    """Give heading permalinks a tooltip in the language being built."""
    title = PERMALINK_TITLES.get(_language(config))
    if title is None:
        return html_text
    return html_text.replace('title="Permanent link"', f'title="{html.escape(title)}"')


@event_priority(-10)  # after the search plugin (0) has indexed the page
def on_page_context(context: dict[str, Any], page: Page, config: MkDocsConfig, nav: Any) -> Any:
    """Add the page's notices under its title (at the top when it has none)."""
    language = _language(config)
    if language not in NOTICES or not page.content:
        return context
    kinds = kinds_of(page, language, Path(config.docs_dir))
    blocks = "".join(notice(page, language, kind) for kind in kinds)
    end = page.content.find("</h1>")
    end = 0 if end < 0 else end + len("</h1>")
    page.content = page.content[:end] + blocks + page.content[end:]
    return context
