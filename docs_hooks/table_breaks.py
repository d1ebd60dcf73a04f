"""Let long names wrap between their words, never inside one: in table cells and in the contents.

The API's parameter tables hold code such as `sqlalchemy.ext.asyncio.create_async_engine`: one
unbreakable run pushed the Default column out of the content column at desktop width, while
letting the browser break code anywhere cut names in half (`create_asy` / `nc_engine`). This hook
puts a line-break opportunity (`<wbr>`) after each `.` of long dotted code in table cells, and the
site's CSS (overrides/assets/stylesheets/turnstore.css) forbids breaks inside words in such code.

The page's contents (the right-hand table of contents) cut long object names to the sidebar's
width: `create_branch_from_turn` and `create_branch_from_content` both read
"create_branch_from…". There the entries wrap (the CSS) with a `<wbr>` after each `_` and `.`
and between the words of a CamelCase name.
"""

from __future__ import annotations

import re
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.pages import Page
from mkdocs.structure.toc import AnchorLink

# Dotted code of at least this many characters gets break opportunities.
LONG = 24
_CELL = re.compile(r"<td\b[^>]*>.*?</td>", re.S)
_CODE = re.compile(r"<code>([^<]+)</code>")
# Where a name may wrap, in text outside tags: after a `_` or `.` inside it, or between the
# words of a CamelCase name (`Advanced|SQLite|Session`).
_NAME_JOINT = re.compile(r"(?:(?<=\w)[_.](?=\w)|(?<=[a-z])(?=[A-Z]))(?![^<]*>)")
WBR = "<wbr>"


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


def breakable_title(title: str) -> str:
    """A contents entry with `<wbr>` after the `_` and `.` of its long names."""
    if WBR in title or len(title) < LONG:
        return title
    return _NAME_JOINT.sub(lambda m: m.group(0) + WBR, title)


def _break_entries(items: list[AnchorLink]) -> None:
    for item in items:
        item.title = breakable_title(item.title)
        _break_entries(item.children)


@event_priority(-10)
def on_page_context(
    context: dict[str, Any], page: Page, config: MkDocsConfig, nav: Any
) -> dict[str, Any]:
    """Add break opportunities to the page's contents."""
    _break_entries(list(page.toc))
    return context
