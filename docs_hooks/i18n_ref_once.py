"""Render the API reference once, in English, and show it in every language's pages.

The API reference (docs/ref/) is generated from English docstrings and is not translated. Left
alone, mkdocs-static-i18n would build an English copy of every ref page for each translated
language, and mkdocstrings would load and render the whole API again each time: slow, and those
copies would carry another language's labels.

So the English build renders the API (mkdocstrings, then mkdocs-autorefs' cross-references) and
this hook keeps each ref page's finished content and table of contents. A translated build
(ja, ko, zh) still writes its ref pages, `ja/ref/session/` and so on, with that language's
navigation, header, search and language switcher, but never renders the API again: the page's
Markdown is replaced by its title alone, and its content by the English one, under a short notice
in the page's language saying that the reference is in English. Object ids are the same in every
language, so the switcher keeps the reader on the same object, and translated guides link to
their own language's reference (the anchors are registered with autorefs for each language).

It relies on attributes that mkdocs-static-i18n sets on files (`locale`, `norm_src_uri`) and on the
plugin's `current_language` and `default_language`, and on mkdocs-autorefs' `_primary_url_map`:
both versions are pinned in pyproject.toml.
"""

from __future__ import annotations

import copy
import html
import os
from dataclasses import dataclass
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import CombinedEvent, event_priority
from mkdocs.structure.files import Files
from mkdocs.structure.nav import Navigation
from mkdocs.structure.pages import Page
from mkdocs.structure.toc import TableOfContents
from page_notice import insert_after_title, notice_html

REF_PREFIX = "ref/"
# DOCS_REF_ONCE=false switches the hook off (bench/bench_docs_build.py --naive measures that).
ENABLED = os.environ.get("DOCS_REF_ONCE", "true").lower() != "false"

# language -> (title, sentence) of the notice on translated reference pages
NOTICES: dict[str, tuple[str, str]] = {
    "ja": (
        "英語のリファレンス",
        "API リファレンスはソースコードの docstring から生成されるため、英語のみで提供しています。",
    ),
    "ko": (
        "영어 레퍼런스",
        "API 레퍼런스는 소스 코드의 docstring에서 생성되므로 영어로만 제공됩니다.",
    ),
    "zh": ("英文参考", "API 参考由源代码中的 docstring 生成，因此仅提供英文版。"),
}


@dataclass(frozen=True)
class RenderedRef:
    """An English ref page as the English build finished it."""

    title: str
    content: str
    toc: TableOfContents


# norm_src_uri ("ref/session.md") -> the English page, filled by the English build
_rendered: dict[str, RenderedRef] = {}
# autorefs URLs added for translated ref pages, removed again after the last build
_added_urls: list[tuple[str, str]] = []


def i18n_plugin(config: MkDocsConfig) -> Any:
    """Return the mkdocs-static-i18n plugin instance."""
    return config.plugins["i18n"]


def _norm(file: Any) -> str:
    return str(getattr(file, "norm_src_uri", file.src_uri))


def is_shared_ref_copy(file: Any, language: str, default: str) -> bool:
    """True for a ref/ page that a translated build copies from English."""
    return (
        ENABLED
        and language != default
        and _norm(file).startswith(REF_PREFIX)
        and getattr(file, "locale", default) == default
        and file.is_documentation_page()
    )


def is_english_ref(file: Any, language: str, default: str) -> bool:
    """True for a ref/ page of the English build."""
    return language == default and _norm(file).startswith(REF_PREFIX)


def reference_notice(language: str) -> str:
    """The notice that a translated reference page is in English."""
    title, sentence = NOTICES[language]
    return notice_html(
        language,
        kind="note",
        css_class="reference-language-notice",
        title=title,
        body_html=html.escape(sentence),
    )


@event_priority(100)  # before mkdocstrings and autorefs see the page
def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """A translated ref page is not rendered again: its Markdown is its title alone."""
    plugin = i18n_plugin(config)
    if not is_shared_ref_copy(page.file, plugin.current_language, plugin.default_language):
        return markdown
    english = _rendered.get(_norm(page.file))
    if english is None:  # the English build did not render it (DOCS_REF_ONCE off, or a new page)
        return markdown
    # Its entries come from the English index (docs_hooks/i18n_search.py), not from this copy.
    page.meta["search"] = {"exclude": True}
    return f"# {english.title}\n"


@event_priority(0)  # before autorefs (-50) resolves the references of this build's pages
def on_env(env: Any, config: MkDocsConfig, files: Files) -> Any:
    """Register the English reference's anchors under this language's ref pages too."""
    plugin = i18n_plugin(config)
    language = plugin.current_language
    if not ENABLED or language == plugin.default_language:
        return env
    autorefs = config.plugins.get("autorefs")
    url_map: dict[str, list[str]] | None = getattr(autorefs, "_primary_url_map", None)
    if url_map is None:
        return env
    for identifier, urls in url_map.items():
        for url in list(urls):
            translated = f"{language}/{url}"
            if url.startswith(REF_PREFIX) and translated not in urls:
                urls.append(translated)
                _added_urls.append((identifier, translated))
    return env


@event_priority(-20)  # after search (0) indexed the page and the translation notice (-10)
def on_page_context(
    context: dict[str, Any], page: Page, config: MkDocsConfig, nav: Navigation
) -> dict[str, Any]:
    """Keep the English ref pages; give the translated ones their content and notice."""
    plugin = i18n_plugin(config)
    language, default = plugin.current_language, plugin.default_language
    if not ENABLED:
        return context
    if is_english_ref(page.file, language, default) and page.content is not None:
        _rendered[_norm(page.file)] = RenderedRef(
            page.title or "", page.content, copy.deepcopy(page.toc)
        )
    elif is_shared_ref_copy(page.file, language, default):
        english = _rendered.get(_norm(page.file))
        if english is not None:
            block = reference_notice(language) if language in NOTICES else ""
            page.content = insert_after_title(english.content, block)
            page.toc = copy.deepcopy(english.toc)
    return context


@event_priority(-200)  # after mkdocs-static-i18n has built every language
def forget_translated_urls(config: MkDocsConfig) -> None:
    """Drop the translated URLs from autorefs' map, so a rebuild (mkdocs serve) starts clean."""
    if i18n_plugin(config).building:
        return
    url_map = getattr(config.plugins.get("autorefs"), "_primary_url_map", None)
    if url_map is not None:
        for identifier, url in _added_urls:
            urls = url_map.get(identifier)
            if urls and url in urls:
                urls.remove(url)
    _added_urls.clear()


on_post_build = CombinedEvent(forget_translated_urls)
