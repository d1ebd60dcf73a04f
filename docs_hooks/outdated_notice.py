"""Tell readers when a translated page is older than its English page.

At build time, from the translation manifest (`docs/i18n/manifest.json`, written by
scripts/translate_docs.py): a translated page whose manifest entry was made from another
English text than the one being built (its `source` hash differs from the English page's hash
now) gets, under its title, a notice in the page's language that the English page changed since
it was translated, with a link to the English page. A page without an entry (not adopted) is
left alone: nothing says what it was translated from. The notice is added after the search
plugin has indexed the page, so it does not show up in search results.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.nav import Navigation
from mkdocs.structure.pages import Page
from page_notice import english_link, insert_after_title, notice_html

MANIFEST = Path("docs") / "i18n" / "manifest.json"

# language -> (title, sentence with {link} where the link to the English page goes, link text)
NOTICES: dict[str, tuple[str, str, str]] = {
    "ja": (
        "翻訳が古くなっています",
        "このページの翻訳後に英語版が更新されました。最新の内容は{link}をご覧ください。",
        "英語版のページ",
    ),
    "ko": (
        "오래된 번역",
        "이 페이지가 번역된 뒤 영어 원문이 변경되었습니다. 최신 내용은 {link}를 참고하십시오.",
        "영어 페이지",
    ),
    "zh": (
        "翻译已过时",
        "本页翻译之后，英文原文已有更新。最新内容请参阅{link}。",
        "英文页面",
    ),
}

_sources: dict[tuple[str, str], str] = {}


def page_hash(text: str) -> str:
    """The manifest's hash of a whole English page (as scripts/docs_i18n computes it)."""
    return f"sha256:{hashlib.sha256(text.encode('utf-8')).hexdigest()[:32]}"


def recorded_sources(manifest: Path) -> dict[tuple[str, str], str]:
    """(English page, language) -> the hash of the English text its translation was made from."""
    if not manifest.is_file():
        return {}
    data: Any = json.loads(manifest.read_text(encoding="utf-8"))
    found: dict[tuple[str, str], str] = {}
    for page, langs in (data.get("pages") or {}).items():
        for lang, entry in langs.items():
            if isinstance(entry, dict) and isinstance(entry.get("source"), str):
                found[(page, lang)] = entry["source"]
    return found


def is_outdated(docs: Path, page: str, lang: str, sources: dict[tuple[str, str], str]) -> bool:
    """Whether the `lang` translation of `page` was made from another English text."""
    recorded = sources.get((page, lang))
    english = docs / page
    if recorded is None or not english.is_file():
        return False
    return recorded != page_hash(english.read_text(encoding="utf-8"))


def on_config(config: MkDocsConfig) -> None:
    """Read the manifest once per build."""
    root = Path(config.config_file_path or ".").resolve().parent
    _sources.clear()
    _sources.update(recorded_sources(root / MANIFEST))


@event_priority(-20)  # after the search plugin (0) and the machine-translation notice (-10)
def on_page_context(
    context: dict[str, Any], page: Page, config: MkDocsConfig, nav: Navigation
) -> dict[str, Any]:
    """Add the notice to a translated page whose English changed since its translation."""
    language = getattr(page.file, "locale", None)
    if language not in NOTICES or not page.content:
        return context
    prefix = f"{language}/"
    source = page.file.src_uri
    if not source.startswith(prefix):
        return context  # an English fallback page, not a translation
    english_page = source[len(prefix) :]
    if not is_outdated(Path(config.docs_dir), english_page, language, _sources):
        return context
    title, sentence, link_text = NOTICES[language]
    link = english_link(page, language, link_text, "outdated-notice__link")
    block = notice_html(
        language,
        kind="warning",
        css_class="outdated-notice",
        title=title,
        body_html=sentence.format(link=link),
    )
    page.content = insert_after_title(page.content, block)
    return context
