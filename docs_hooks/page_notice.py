"""What the notice hooks share: a notice under a page's title, and the link to its English page.

Not a hook (mkdocs.yml lists the hooks): `translation_notice.py`, `outdated_notice.py` and
`i18n_ref_once.py` import it; MkDocs puts a hook's folder on the import path while it loads it.
"""

from __future__ import annotations

import html

from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url


def notice_html(language: str, *, kind: str, css_class: str, title: str, body_html: str) -> str:
    """An admonition of `kind` in `language`; `body_html` is inserted as it is (escape it first)."""
    return (
        f'<div class="admonition {kind} {css_class}" lang="{language}">'
        f'<p class="admonition-title">{html.escape(title)}</p>'
        f"<p>{body_html}</p></div>"
    )


def english_link(page: Page, language: str, text: str, css_class: str) -> str:
    """A link from a page of the `language` build to the same page in English."""
    prefix = f"{language}/"
    english = page.url[len(prefix) :] if page.url.startswith(prefix) else page.url
    href = get_relative_url(english or ".", page.url or ".")
    if not href.endswith("/") and (english == "" or english.endswith("/")):
        href += "/"
    return (
        f'<a href="{html.escape(href)}" hreflang="en" class="{css_class}">{html.escape(text)}</a>'
    )


def insert_after_title(content: str, block: str) -> str:
    """Insert `block` after the page's first `<h1>`, or at the top when there is none."""
    end = content.find("</h1>")
    if end < 0:
        return block + content
    end += len("</h1>")
    return content[:end] + block + content[end:]
