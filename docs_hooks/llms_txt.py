"""Write `llms.txt` and `llms-full.txt` for each language (`/llms.txt`, `/ja/llms.txt`, ...).

`llms.txt` gives the site's name, its description and a link to every page with its first
sentence, in the sections and order of the navigation; `llms-full.txt` holds the pages: each
guide's Markdown (snippets expanded) and each API page converted from its HTML to Markdown
(qualified names as headings, signatures as code blocks, tables; source listings left out).
Links are absolute: the files are read outside the site. The mkdocs-llmstxt plugin (0.5.1)
writes one root `llms.txt` under mkdocs-static-i18n (the last language wins) and warns about
every page of the other languages, which fails a strict build.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.files import Files
from mkdocs.structure.nav import Navigation, Section
from mkdocs.structure.pages import Page
from mkdocs.utils import write_file

FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
SNIPPET = re.compile(
    r'^(?P<indent>[ \t]*)--8<-- "(?P<path>[^":]+)(?::(?P<start>\d+):)?"[ \t]*$', re.M
)
HEADING_ID = re.compile(r"\s*\{#[^}]*\}")
# mkdocs-autorefs' cross-references in Markdown: [title][identifier] and [identifier][].
AUTOREF = re.compile(r"\[(?P<title>(?:[^\[\]]|\[[^\]]*\])+)\]\[(?P<identifier>[^\]\s]*)\]")
# Links to a section of the same page: [title](#anchor).
SAME_PAGE_LINK = re.compile(r"\]\((?P<anchor>#[^)\s]+)\)")
# Relative links to another page's Markdown file: [title](page.md#anchor).
MD_LINK = re.compile(r"\]\((?P<path>(?![a-z][a-z0-9+.-]*:|/|#)[^)\s]+?\.md)(?P<anchor>#[^)\s]*)?\)")


@dataclass
class _PageText:
    title: str
    url: str
    summary: str
    text: str


@dataclass
class _LanguageSite:
    sections: list[tuple[str, list[str]]] = field(default_factory=list)
    pages: dict[str, _PageText] = field(default_factory=dict)


_sites: dict[str, _LanguageSite] = {}
# The files of the language being built (to resolve relative links).
_files: Files | None = None


def _language(config: MkDocsConfig) -> str:
    return str(config.plugins["i18n"].current_language)


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


class _ApiMarkdown(HTMLParser):
    """Markdown of a rendered API page: headings, signatures as code, tables, paragraphs, links."""

    SKIP = (
        ("details", "mkdocstrings-source"),
        ("a", "headerlink"),
        ("div", "reference-language-notice"),
        ("code", "doc-symbol"),
    )
    BLOCKS = frozenset({"p", "div", "li", "dt", "dd", "ul", "ol", "dl", "summary", "details"})
    VOID = frozenset({"br", "wbr", "img", "input", "hr", "meta", "link", "source"})

    def __init__(self, page_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.page_url = page_url
        self.links: list[str | None] = []  # the open <a>s: their absolute URL, None if not kept
        self.code = 0
        self.blocks: list[str] = []
        self.inline: list[str] = []
        self.skip: list[str] = []  # tags open inside a skipped element, the skipped one first
        self.heading = 0
        self.heading_id = ""
        self.heading_labels: list[str] = []
        self.labels: list[str] | None = None
        self.pre: list[str] | None = None
        self.rows: list[list[str]] | None = None
        self.cell: list[str] | None = None

    def _flush(self, prefix: str = "") -> None:
        text = " ".join("".join(self.inline).split())
        self.inline = []
        if text:
            self.blocks.append(prefix + text)

    def _text_target(self) -> list[str]:
        if self.labels is not None:
            return self.labels
        if self.cell is not None:
            return self.cell
        return self.inline

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if self.skip:
            if tag not in self.VOID:
                self.skip.append(tag)
            return
        if any(tag == t and c in classes for t, c in self.SKIP):
            self.skip.append(tag)
            return
        if self.pre is not None:
            return
        if tag == "pre":
            self._flush()
            self.pre = []
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self._flush()
            self.heading = int(tag[1])
            self.heading_id = dict(attrs).get("id") or ""
        elif tag == "small" and "doc-label" in classes:
            self.labels = []
        elif tag == "table":
            self._flush()
            self.rows = []
        elif tag == "tr" and self.rows is not None:
            self.rows.append([])
        elif tag in ("td", "th") and self.rows is not None:
            self.cell = []
        elif tag == "code" and self.labels is None:
            self.code += 1
            self._text_target().append("`")
        elif tag == "a":
            href = dict(attrs).get("href")
            keep = href and not self.code and self.labels is None and not self.heading
            self.links.append(urljoin(self.page_url, href) if keep else None)
            if keep:
                self._text_target().append("[")
        elif tag in self.BLOCKS and self.cell is None:
            self._flush()
        elif tag in ("br",):
            self._text_target().append(" ")

    def handle_endtag(self, tag: str) -> None:
        if self.skip:
            if self.skip[-1] == tag:
                self.skip.pop()
            return
        if self.pre is not None:
            if tag == "pre":
                code = "".join(self.pre).strip("\n")
                self.blocks.append(f"```python\n{code}\n```")
                self.pre = None
            return
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6") and self.heading:
            text = " ".join("".join(self.inline).split())
            self.inline = []
            if self.heading_id.startswith("turnstore."):  # an object: its qualified name
                text = f"`{self.heading_id.removeprefix('turnstore.')}`"
            labels = f" ({', '.join(self.heading_labels)})" if self.heading_labels else ""
            self.blocks.append("#" * self.heading + " " + text + labels)
            self.heading = 0
            self.heading_labels = []
        elif tag == "small" and self.labels is not None:
            label = "".join(self.labels).strip()
            self.labels = None
            if label:
                self.heading_labels.append(label)
        elif tag in ("td", "th") and self.cell is not None and self.rows is not None:
            text = " ".join("".join(self.cell).split()).replace("|", "\\|")
            self.rows[-1].append(text)
            self.cell = None
        elif tag == "table" and self.rows is not None:
            rows = [row for row in self.rows if row]
            self.rows = None
            if rows:
                width = max(len(row) for row in rows)
                lines = ["| " + " | ".join(row + [""] * (width - len(row))) + " |" for row in rows]
                lines.insert(1, "|" + " --- |" * width)
                self.blocks.append("\n".join(lines))
        elif tag == "code" and self.labels is None:
            self.code -= 1
            self._text_target().append("`")
        elif tag == "a" and self.links:
            url = self.links.pop()
            if url is not None:
                self._text_target().append(f"]({url})")
        elif tag in self.BLOCKS and self.cell is None:
            self._flush("- " if tag == "li" else "")

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        if self.pre is not None:
            self.pre.append(data)
        else:
            self._text_target().append(data)

    def markdown(self) -> str:
        """The Markdown of everything fed so far."""
        self._flush()
        return "\n\n".join(self.blocks)


def api_markdown(content: str, page_url: str) -> str:
    """Markdown of the API page at `page_url`, without source listings or permalinks."""
    parser = _ApiMarkdown(page_url)
    parser.feed(content)
    parser.close()
    return parser.markdown()


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
        # A sentence ends at . ! ? before a space (not inside `RunResultStreaming.stream_events`)
        # or at a full-width 。！？.
        return re.split(r"(?<=[.!?])\s+|(?<=[。！？])", text, maxsplit=1)[0]
    return ""


def on_env(env: Any, config: MkDocsConfig, files: Files) -> Any:
    """Keep this build's files: relative links are resolved against them."""
    global _files
    _files = files
    return env


def absolute_links(markdown: str, page: Page, config: MkDocsConfig) -> str:
    """The page's Markdown with autorefs references and relative page links made absolute."""
    base = (config.site_url or "/").rstrip("/") + "/"
    page_url = urljoin(base, page.url)
    autorefs = config.plugins.get("autorefs")

    def reference(match: re.Match[str]) -> str:
        title = match["title"]
        identifier = match["identifier"] or title.strip("`")
        if autorefs is None:
            return match.group(0)
        try:
            url, _ = autorefs.get_item_url(identifier, from_url=page.url)
        except KeyError:
            return match.group(0)
        return f"[{title}]({urljoin(page_url, url)})"

    def page_link(match: re.Match[str]) -> str:
        source = posixpath.dirname(page.file.src_uri)
        target = posixpath.normpath(posixpath.join(source, match["path"]))
        file = _files.get_file_from_path(target) if _files is not None else None
        if file is None:
            return match.group(0)
        return f"]({urljoin(base, file.url)}{match['anchor'] or ''})"

    markdown = MD_LINK.sub(page_link, AUTOREF.sub(reference, markdown))
    return SAME_PAGE_LINK.sub(lambda match: f"]({page_url}{match['anchor']})", markdown)


@event_priority(-150)  # after mkdocs-static-i18n (-100) has translated the nav titles
def on_nav(nav: Navigation, config: MkDocsConfig, files: Any) -> Navigation:
    """Record the sections and the order of this language's pages."""
    site = _LanguageSite([("", [i.url for i in nav.items if isinstance(i, Page)])])
    for item in nav.items:
        if isinstance(item, Section):
            urls = [p.url for p in nav.pages if _within(p, item)]
            site.sections.append((str(item.title), urls))
    _sites[_language(config)] = site
    return nav


def _within(page: Any, section: Section) -> bool:
    while page is not None and page is not section:
        page = page.parent
    return page is section


@event_priority(-30)
def on_page_context(
    context: dict[str, Any], page: Page, config: MkDocsConfig, nav: Navigation
) -> dict[str, Any]:
    """Keep each page's title, summary and text."""
    site = _sites.get(_language(config))
    if site is None:
        return context
    root = Path(config.config_file_path or ".").resolve().parent
    if "doc doc-object" in (page.content or ""):
        base = (config.site_url or "/").rstrip("/") + "/"
        text = api_markdown(page.content or "", urljoin(base, page.url))
        summary = summary_of(text.split("\n", 1)[1] if "\n" in text else "")
    else:
        markdown = expand_snippets(FRONT_MATTER.sub("", page.markdown or ""), root)
        markdown = absolute_links(markdown, page, config)
        text = HEADING_ID.sub("", markdown).strip()
        summary = summary_of(markdown)
    site.pages[page.url] = _PageText(str(page.title or ""), page.url, summary, text)
    return context


def llms_txt(config: MkDocsConfig, site: _LanguageSite, language_root: str) -> str:
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


def llms_full_txt(config: MkDocsConfig, site: _LanguageSite) -> str:
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
    i18n = config.plugins["i18n"]
    root = "" if i18n.current_language == i18n.default_language else f"{i18n.current_language}/"
    folder = os.path.join(config.site_dir, root)
    write_file(llms_txt(config, site, root).encode("utf-8"), os.path.join(folder, "llms.txt"))
    write_file(llms_full_txt(config, site).encode("utf-8"), os.path.join(folder, "llms-full.txt"))
