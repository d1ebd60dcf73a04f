"""Search indexes the prose: diagrams, code listings and API source stay out of the index.

Material's search indexes every piece of a page's text, so the source of a Mermaid diagram,
whole example scripts and the API's source listings came up as results (source filled a third
of the index and pushed guides and objects down). This hook marks those blocks with
`data-search-exclude`, which Material's search plugin skips: Mermaid diagrams, fenced code
blocks and mkdocstrings' source blocks. Inline code, API signatures and the text around a
listing stay searchable.
"""

from __future__ import annotations

import re
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.pages import Page

EXCLUDE = "data-search-exclude"
# The opening tags of blocks that are source, not prose.
LISTING = re.compile(
    r'<(?:pre class="mermaid"|div class="language-[\w+-]+ highlight"'
    r'|details class="mkdocstrings-source")(?=>)'
)


def exclude_listings(content: str) -> str:
    """Mark every diagram, code listing and API source block as excluded from search."""
    return LISTING.sub(lambda match: f"{match.group(0)} {EXCLUDE}", content)


@event_priority(-50)  # after the hooks that write blocks (source_links.py), before search indexes
def on_page_content(html_text: str, page: Page, config: MkDocsConfig, **kwargs: Any) -> str:
    """Keep the page's listings out of the search index."""
    return exclude_listings(html_text)
