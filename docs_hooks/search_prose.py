"""Search indexes the prose: diagrams, code listings and API source stay out of the index.

Material's search indexes every piece of a page's text, so the source of a Mermaid diagram
(`sequenceDiagram participant App as ...`), whole example scripts and the API's source listings
came up as results (English scripts inside Korean results, source filling a third of the index
and pushing guides and objects down). This hook marks those blocks with `data-search-exclude`,
which Material's search plugin skips: Mermaid diagrams (`<pre class="mermaid">`), fenced code
blocks (`<div class="language-... highlight">`) and mkdocstrings' source blocks. Inline code,
API signatures and the text around a listing stay searchable.

Material's parser still walks every tag inside an excluded block (each token of a highlighted
listing is a `<span>`), which took two thirds of its time. So the index is given the page with
the insides of those blocks set aside (an HTML comment holds each one's place; the opening
and closing tags stay, excluded as before), and they are put back as soon as the index has
read it: the index's entries and the written page are what they were.
"""

from __future__ import annotations

import re
from typing import Any
from uuid import uuid4

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import CombinedEvent, event_priority
from mkdocs.structure.nav import Navigation
from mkdocs.structure.pages import Page

EXCLUDE = "data-search-exclude"
# The opening tags of blocks that are source, not prose.
LISTING = re.compile(
    r'<(?:pre class="mermaid"|div class="language-[\w+-]+ highlight"'
    r'|details class="mkdocstrings-source")(?=>)'
)
# An excluded block's opening tag (as exclude_listings writes it), its name in group 1.
EXCLUDED_BLOCK = re.compile(rf"<(pre|div|details)\b[^<>]*\s{EXCLUDE}>")
# A comment that holds an excluded block's place while the index reads the page: a token new in
# each build, so page text can never look like one.
_MARK = f"search-prose-{uuid4().hex}"
HEADING = re.compile(r"<h[1-6]\b")
_TAG_CACHE: dict[str, re.Pattern[str]] = {}
# The insides set aside from the page being indexed: (page, the insides in order)
_set_aside: tuple[Page, list[str]] | None = None


def exclude_listings(content: str) -> str:
    """Mark every diagram, code listing and API source block as excluded from search."""
    return LISTING.sub(lambda match: f"{match.group(0)} {EXCLUDE}", content)


@event_priority(-50)  # after the hooks that write blocks (source_links.py), before search indexes
def on_page_content(html_text: str, page: Page, config: MkDocsConfig, **kwargs: Any) -> str:
    """Keep the page's listings out of the search index."""
    return exclude_listings(html_text)


def _tags_of(name: str) -> re.Pattern[str]:
    """Opening or closing tags of element `name` (group 1 is "/" for a closing one)."""
    if name not in _TAG_CACHE:
        _TAG_CACHE[name] = re.compile(rf"<(/?){name}\b[^<>]*>")
    return _TAG_CACHE[name]


def set_listings_aside(content: str) -> tuple[str, list[str]]:
    """The content with each excluded block's inside replaced by a comment, and the insides.

    A block ends at its element's matching closing tag (nested elements of the same name are
    counted). A block without one, or with a heading inside (Material's parser starts a section
    at a heading even in an excluded block), is left as it is.
    """
    parts: list[str] = []
    insides: list[str] = []
    pos = 0
    for match in EXCLUDED_BLOCK.finditer(content):
        if match.start() < pos:
            continue  # inside a block already set aside
        depth = 1
        tags = _tags_of(match.group(1))
        for tag in tags.finditer(content, match.end()):
            depth += -1 if tag.group(1) else 1
            if depth == 0:
                break
        else:
            continue
        if HEADING.search(content, match.end(), tag.start()):
            continue
        parts.append(content[pos : match.end()])
        parts.append(f"<!--{_MARK}-->")
        insides.append(content[match.end() : tag.start()])
        pos = tag.start()
    if not insides:
        return content, insides
    parts.append(content[pos:])
    return "".join(parts), insides


def put_listings_back(content: str, insides: list[str]) -> str:
    """Undo `set_listings_aside` on `content` (which the index may have edited around them)."""
    pieces = content.split(f"<!--{_MARK}-->")
    if len(pieces) != len(insides) + 1:
        raise RuntimeError("search_prose: a listing set aside for the search index went missing")
    out = [pieces[0]]
    for inside, piece in zip(insides, pieces[1:], strict=True):
        out += [inside, piece]
    return "".join(out)


@event_priority(1)  # just before Material's search (0) indexes the page
def set_aside(
    context: dict[str, Any], page: Page, config: MkDocsConfig, nav: Navigation
) -> dict[str, Any]:
    """Hand the index the page without the insides of its excluded blocks."""
    global _set_aside
    _set_aside = None
    if page.content and EXCLUDE in page.content:
        page.content, insides = set_listings_aside(page.content)
        if insides:
            _set_aside = (page, insides)
    return context


@event_priority(-1)  # just after Material's search (0) has indexed the page
def put_back(
    context: dict[str, Any], page: Page, config: MkDocsConfig, nav: Navigation
) -> dict[str, Any]:
    """Put the insides back."""
    global _set_aside
    if _set_aside is not None and _set_aside[0] is page and page.content is not None:
        page.content = put_listings_back(page.content, _set_aside[1])
    _set_aside = None
    return context


on_page_context = CombinedEvent(set_aside, put_back)
