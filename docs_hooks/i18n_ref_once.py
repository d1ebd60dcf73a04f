"""Render the API reference once, in English, and link every language to it.

The API reference (docs/ref/) is generated from English docstrings and is not translated. Left
alone, mkdocs-static-i18n would build an English copy of every ref page for each translated
language, and mkdocstrings would load and render the whole API again each time: slow, and those
copies would carry another language's labels.

In a translated build (ja, ko, zh) this hook marks the fallback copies of ref/ pages as excluded,
so they are neither rendered nor written, and points their URL at the English page: nav entries
and Markdown links to them then lead to /ref/... . Cross-references to API names keep working
because mkdocs-autorefs remembers the anchors of the English build (resolve_closest: true).

It relies on attributes that mkdocs-static-i18n sets on files (`locale`, `norm_src_uri`,
`alternates`) and on the plugin's `current_language` and `i18n_files_per_language`: the plugin's
version is pinned in pyproject.toml.
"""

from __future__ import annotations

import os
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.files import Files, InclusionLevel
from mkdocs.structure.nav import Navigation

REF_PREFIX = "ref/"
# DOCS_REF_ONCE=false switches the hook off (bench/bench_docs_build.py --naive measures that).
ENABLED = os.environ.get("DOCS_REF_ONCE", "true").lower() != "false"


def i18n_plugin(config: MkDocsConfig) -> Any:
    """Return the mkdocs-static-i18n plugin instance."""
    return config.plugins["i18n"]


def english_url(url: str, language: str) -> str:
    """Return the English URL of a page URL of `language` (`ja/ref/x/` -> `ref/x/`)."""
    prefix = f"{language}/"
    return url[len(prefix) :] if url.startswith(prefix) else url


def is_shared_ref_copy(file: Any, language: str, default: str) -> bool:
    """True for a ref/ page that a translated build would copy from English."""
    norm = getattr(file, "norm_src_uri", file.src_uri)
    return (
        ENABLED
        and language != default
        and norm.startswith(REF_PREFIX)
        and getattr(file, "locale", default) == default
        and file.is_documentation_page()
    )


@event_priority(-110)  # after mkdocs-static-i18n (-100) has localised the files
def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Exclude the English copies of ref/ pages from a translated build.

    In the English build, the ref/ pages lose their alternates in other languages (which would
    be those excluded copies): the language switcher then leads to each language's home page,
    and the sitemap lists no translated API page.
    """
    plugin = i18n_plugin(config)
    language, default = plugin.current_language, plugin.default_language
    for file in files:
        if not ENABLED or not file.is_documentation_page():
            continue
        if language == default and getattr(file, "norm_src_uri", "").startswith(REF_PREFIX):
            file.alternates = {default: file}
        elif is_shared_ref_copy(file, language, default):
            file.inclusion = InclusionLevel.EXCLUDED
            file.url = english_url(file.url, language)
    # The sitemap lists each language's pages from this record: leave the copies out.
    pages = plugin.i18n_files_per_language.get(language)
    if pages is not None:
        plugin.i18n_files_per_language[language] = [
            page for page in pages if not is_shared_ref_copy(page, language, default)
        ]
    return files


@event_priority(-110)
def on_nav(nav: Navigation, config: MkDocsConfig, files: Files) -> Navigation:
    """Keep the English ref pages in a translated nav, under their nav titles."""
    plugin = i18n_plugin(config)
    language, default = plugin.current_language, plugin.default_language
    for page in nav.pages:
        if is_shared_ref_copy(page.file, language, default) and not page.title:
            # An excluded page is never read, so only a nav title can name it.
            page.title = page.file.name.replace("_", " ").capitalize()
    return nav
