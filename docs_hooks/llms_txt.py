"""Write `llms.txt` and `llms-full.txt` for each language, at build time.

`llms.txt` (the llms.txt convention: a Markdown file at the site root) gives a language model the
site's name, its one-line description and a link to every page, in the order and sections of the
navigation. `llms-full.txt` holds the pages themselves: the Markdown of each guide (snippets such
as the changelog and the examples expanded) and the text of each API reference page (source
listings left out). Each language gets its own pair under its prefix (`/ja/llms.txt`, ...); the
API reference is in English in every language.
"""

from __future__ import annotations

import html
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.nav import Navigation, Section
from mkdocs.structure.pages import Page
from mkdocs.utils import write_file

FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
SNIPPET = re.compile(
    r'^(?P<indent>[ \t]*)--8<-- "(?P<path>[^":]+)(?::(?P<start>\d+):)?"[ \t]*$', re.M
)
HEADING_ID = re.compile(r"\s*\{#[^}]*\}")
SOURCE_BLOCK = re.compile(r"<details class=\"mkdocstrings-source\".*?</details>", re.S)
# The translated reference's "this page is in English" notice (docs_hooks/i18n_ref_once.py).
REF_NOTICE = re.compile(r'<div class="admonition note reference-language-notice".*?</div>', re.S)
PERMALINK = re.compile(r'<a [^>]*class="headerlink"[^>]*>.*?</a>', re.S)
TAG = re.compile(r"<[^>]+>")
BLOCK_END = re.compile(r"</(?:p|h[1-6]|li|tr|pre|div|table|details|summary)>|<br\s*/?>")


@dataclass
class PageText:
    """What the files say about one page."""

    title: str
    url: str
    summary: str
    text: str


@dataclass
class LanguageSite:
    """One language build: its sections (title -> page URLs, in nav order) and its pages."""

    sections: list[tuple[str, list[str]]] = field(default_factory=list)
    pages: dict[str, PageText] = field(default_factory=dict)


_sites: dict[str, LanguageSite] = {}
# The text of each API page, by source path: the same English text in every language.
_api_text: dict[str, str] = {}


def _language(config: MkDocsConfig) -> str:
    return str(config.plugins["i18n"].current_language)


def _language_root(config: MkDocsConfig) -> str:
    i18n = config.plugins["i18n"]
    language = i18n.current_language
    return "" if language == i18n.default_language else f"{language}/"


def expand_snippets(markdown: str, root: Path) -> str:
    """Replace `--8<-- "file"` lines (optionally `"file:N:"`) with the file's lines."""

    def include(match: re.Match[str]) -> str:
        path = root / match["path"]
        if not path.is_file():
            return match.group(0)
        lines = path.read_text(encoding="utf-8").splitlines()
        start = int(match["start"]) - 1 if match["start"] else 0
        return "\n".join(match["indent"] + line if line else line for line in lines[start:])

    return SNIPPET.sub(include, markdown)


def html_to_text(content: str) -> str:
    """Plain text of rendered HTML (an API page), without source listings or permalinks."""
    content = REF_NOTICE.sub("", SOURCE_BLOCK.sub("", content))
    content = PERMALINK.sub("", content)
    content = BLOCK_END.sub("\n", content)
    text = html.unescape(TAG.sub("", content))
    lines = [line.rstrip() for line in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def summary_of(markdown: str) -> str:
    """The first sentence of the page's first paragraph (empty when there is none)."""
    for block in re.split(r"\n\s*\n", FRONT_MATTER.sub("", markdown)):
        block = block.strip()
        if not block or block.startswith(
            ("#", "```", "!!!", "???", "|", "-", "<", ":::", "--8<--")
        ):
            continue
        text = " ".join(block.split())
        text = re.sub(r"\[([^\]]+)\]\[[^\]]*\]|\[([^\]]+)\]\([^)]*\)", r"\1\2", text)
        sentence = re.split(r"(?<=[.!?。！？])\s*", text, maxsplit=1)[0]
        return sentence[:200]
    return ""


def on_pre_build(config: MkDocsConfig) -> None:
    """The English build (the first) reads the API pages afresh (`mkdocs serve` rebuilds)."""
    i18n = config.plugins["i18n"]
    if i18n.current_language == i18n.default_language:
        _api_text.clear()


@event_priority(-150)  # after mkdocs-static-i18n (-100) has translated the nav titles
def on_nav(nav: Navigation, config: MkDocsConfig, files: Any) -> Navigation:
    """Record the sections and the order of this language's pages."""
    site = LanguageSite()
    loose: list[str] = []
    for item in nav.items:
        if isinstance(item, Section):
            urls = [p.url for p in _pages_of(item)]
            site.sections.append((str(item.title), urls))
        elif isinstance(item, Page):
            loose.append(item.url)
    site.sections.insert(0, ("", loose))
    _sites[_language(config)] = site
    return nav


def _pages_of(section: Section) -> list[Page]:
    pages: list[Page] = []
    for child in section.children:
        if isinstance(child, Section):
            pages += _pages_of(child)
        elif isinstance(child, Page):
            pages.append(child)
    return pages


@event_priority(-30)  # after docs_hooks/i18n_ref_once.py has given translated ref pages content
def on_page_context(
    context: dict[str, Any], page: Page, config: MkDocsConfig, nav: Navigation
) -> dict[str, Any]:
    """Keep each page's title, summary and text."""
    site = _sites.get(_language(config))
    if site is None:
        return context
    root = Path(config.config_file_path or ".").resolve().parent
    is_api = "doc doc-object" in (page.content or "")
    if is_api:
        key = str(getattr(page.file, "norm_src_uri", page.file.src_uri))
        text = _api_text.get(key) or _api_text.setdefault(key, html_to_text(page.content or ""))
        summary = summary_of(text.split("\n", 1)[1] if "\n" in text else "")
    else:
        markdown = expand_snippets(FRONT_MATTER.sub("", page.markdown or ""), root)
        text = HEADING_ID.sub("", markdown).strip()
        summary = summary_of(markdown)
    site.pages[page.url] = PageText(str(page.title or ""), page.url, summary, text)
    return context


def llms_txt(config: MkDocsConfig, site: LanguageSite, language_root: str) -> str:
    """The `llms.txt` of one language."""
    base = (config.site_url or "/").rstrip("/") + "/"
    out = [f"# {config.site_name}", "", f"> {config.site_description or ''}", ""]
    out += [f"[llms-full.txt]({base}{language_root}llms-full.txt)", ""]
    for title, urls in site.sections:
        pages = [site.pages[url] for url in urls if url in site.pages]
        if not pages:
            continue
        out += [f"## {title or config.site_name}", ""]
        for page in pages:
            line = f"- [{page.title}]({base}{page.url})"
            out.append(f"{line}: {page.summary}" if page.summary else line)
        out.append("")
    return "\n".join(out)


def llms_full_txt(config: MkDocsConfig, site: LanguageSite) -> str:
    """The `llms-full.txt` of one language: every page, in navigation order."""
    base = (config.site_url or "/").rstrip("/") + "/"
    parts = [f"# {config.site_name}\n\n> {config.site_description or ''}\n"]
    for _, urls in site.sections:
        for url in urls:
            page = site.pages.get(url)
            if page is not None:
                parts.append(f"<!-- {base}{page.url} -->\n\n{page.text}\n")
    return "\n".join(parts)


@event_priority(40)  # in each language's build, before mkdocs-static-i18n starts the next
def on_post_build(config: MkDocsConfig) -> None:
    """Write this language's `llms.txt` and `llms-full.txt`."""
    site = _sites.pop(_language(config), None)
    if site is None:
        return
    root = _language_root(config)
    folder = os.path.join(config.site_dir, root)
    write_file(llms_txt(config, site, root).encode("utf-8"), os.path.join(folder, "llms.txt"))
    write_file(llms_full_txt(config, site).encode("utf-8"), os.path.join(folder, "llms-full.txt"))
