"""Link each API entry's source to the repository.

mkdocstrings shows the source of every documented object in a collapsible block titled
"Source code in `src/...py`". This hook turns that path into a link to the file in the
repository (`repo_url`) at the release's tag once the changelog has released it, at `main`
before (docs_hooks/release.py), pointing at the object's lines (the listing is kept out of the
search index by docs_hooks/search_prose.py).
"""

from __future__ import annotations

import html
import re
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.pages import Page

from release import source_ref

_SUMMARY = re.compile(r"<summary>Source code in <code>(?P<path>[^<]+)</code></summary>")
_LINE = re.compile(r'codelineno-\d+-(\d+)"')
_BLOCK_END = "</td>"


def source_url(config: MkDocsConfig, path: str, first: int | None, last: int | None) -> str | None:
    """Return the repository URL of `path` (lines `first`-`last`), or `None` without a repo."""
    repo = (config.repo_url or "").rstrip("/")
    if not repo:
        return None
    url = f"{repo}/blob/{source_ref(config)}/{path}"
    if first is not None and last is not None:
        url += f"#L{first}-L{last}"
    return url


def link_sources(content: str, config: MkDocsConfig) -> str:
    """Wrap every "Source code in" path of an API page in a link to the repository."""
    pieces: list[str] = []
    position = 0
    for match in _SUMMARY.finditer(content):
        block_end = content.find(_BLOCK_END, match.end())
        lines = [int(n) for n in _LINE.findall(content, match.end(), max(block_end, match.end()))]
        url = source_url(
            config, match["path"], lines[0] if lines else None, lines[-1] if lines else None
        )
        pieces.append(content[position : match.start()])
        if url is None:
            pieces.append(match.group(0))
        else:
            pieces.append(
                f'<summary>Source code in <a href="{html.escape(url)}" class="source-link">'
                f"<code>{match['path']}</code></a></summary>"
            )
        position = match.end()
    pieces.append(content[position:])
    return "".join(pieces)


def on_page_content(html_text: str, page: Page, config: MkDocsConfig, **kwargs: Any) -> str:
    """Add repository links to the source blocks of API pages."""
    if "Source code in <code>" not in html_text:
        return html_text
    return link_sources(html_text, config)
