"""Let long dotted names in table cells wrap at their dots, never inside a name.

The API's parameter tables hold code such as `sqlalchemy.ext.asyncio.create_async_engine`: one
unbreakable run pushed the Default column out of the content column at desktop width, while
letting the browser break code anywhere cut names in half (`create_asy` / `nc_engine`). This hook
puts a line-break opportunity (`<wbr>`) after each `.` of long dotted code in table cells, and the
site's CSS (overrides/assets/stylesheets/turnstore.css) forbids breaks inside words in such code.
"""

from __future__ import annotations

import re
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.pages import Page

# Dotted code of at least this many characters gets break opportunities.
LONG = 24
_CELL = re.compile(r"<td\b[^>]*>.*?</td>", re.S)
_CODE = re.compile(r"<code>([^<]+)</code>")


def breakable(cell: str) -> str:
    """The cell with `<wbr>` after each dot of its long dotted code."""

    def add(match: re.Match[str]) -> str:
        text = match.group(1)
        if len(text) < LONG or "." not in text.strip("."):
            return match.group(0)
        return "<code>" + re.sub(r"\.(?=\w)", ".<wbr>", text) + "</code>"

    return _CODE.sub(add, cell)


def on_page_content(html_text: str, page: Page, config: MkDocsConfig, **kwargs: Any) -> str:
    """Add the break opportunities to every table cell of the page."""
    if "<td" not in html_text:
        return html_text
    return _CELL.sub(lambda m: breakable(m.group(0)), html_text)
