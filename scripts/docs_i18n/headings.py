"""English heading ids, and pinning them on translated headings (`## 見出し {#english-id}`).

MkDocs gives a heading the id computed by Python-Markdown's `toc` extension (its default
`slugify`, made unique within the page with `_1`, `_2` suffixes) unless the heading sets one
with `attr_list` (`## Title {#my-id}`). We compute the English ids with that very extension, so
they match the English page, and pin them on the translation, where the default slug of CJK text
would be `_1`, `_2` and every `#anchor` link would break.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import markdown

from .markdown_mask import unmask
from .sections import HEADING_RE

__all__ = ["Heading", "english_heading_ids", "find_headings", "pin_heading_ids"]

_ATTR_LIST = re.compile(r"[ \t]*\{:?(?P<attrs>[^{}\n]*)\}[ \t]*$")
_CLOSING_HASHES = re.compile(r"[ \t]+#+[ \t]*$")
_ANY_ATTR_LIST = re.compile(r"[ \t]*\{:?[ \t]*[#.][^{}\n]*\}")
_ID_ATTR = re.compile(r"(?:^|\s)#(?P<id>[^\s}]+)")


@dataclass
class Heading:
    """One ATX heading line.

    Attributes:
        level: 1 to 6.
        text: The heading text without closing hashes or attribute list.
        attrs: The attribute list's content (between the braces), or `None`.
        explicit_id: The id set in the attribute list, or `None`.
        line: The full line (without newline).
    """

    level: int
    text: str
    attrs: str | None
    explicit_id: str | None
    line: str


def _parse(match: re.Match[str]) -> Heading:
    text = match["text"] or ""
    attrs = None
    attr_match = _ATTR_LIST.search(text)
    if attr_match:
        attrs = attr_match["attrs"].strip()
        text = text[: attr_match.start()]
    text = _CLOSING_HASHES.sub("", text).strip()
    if text and set(text) == {"#"}:
        text = ""
    id_match = _ID_ATTR.search(attrs) if attrs else None
    return Heading(
        level=len(match["hashes"]),
        text=text,
        attrs=attrs,
        explicit_id=id_match["id"] if id_match else None,
        line=match.group(0),
    )


def find_headings(masked: str) -> list[Heading]:
    """Return the ATX headings of a masked text in order (code is masked, so none come from it)."""
    return [_parse(m) for m in HEADING_RE.finditer(masked)]


def english_heading_ids(masked_body: str, code: dict[str, str]) -> list[str]:
    """Return the id MkDocs gives each heading of an English page, in order.

    Args:
        masked_body: The masked English body.
        code: The placeholders' code (heading text may contain inline code).
    """
    headings = find_headings(masked_body)
    if not headings:
        return []
    doc = "\n\n".join(unmask(h.line.lstrip(), code) for h in headings)
    md = markdown.Markdown(extensions=["toc", "attr_list"])
    md.convert(doc)
    ids: list[str] = []

    def _walk(tokens: list[dict[str, object]]) -> None:
        for token in tokens:
            ids.append(str(token["id"]))
            children = token.get("children")
            if isinstance(children, list):
                _walk(children)

    _walk(md.toc_tokens)  # type: ignore[attr-defined,unused-ignore]
    if len(ids) != len(headings):  # pragma: no cover - a Markdown version change
        raise RuntimeError("could not compute the English heading ids")
    return ids


def pin_heading_ids(masked: str, english: list[Heading], ids: list[str]) -> str:
    """Give each heading of a translated (masked) text the id of its English counterpart.

    Headings are matched by position; the checks have already made sure the translation has the
    same headings (count and levels). Attribute lists the translation carries anywhere in the
    heading are dropped; the English heading's attribute list is kept (classes included), with
    the id added when it had none.
    """
    position = 0

    def _pin(match: re.Match[str]) -> str:
        nonlocal position
        if position >= len(english):
            return match.group(0)
        source, anchor = english[position], ids[position]
        position += 1
        heading = _parse(match)
        text = _ANY_ATTR_LIST.sub("", heading.text).strip()
        attrs = source.attrs if source.attrs is not None else ""
        if source.explicit_id is None:
            attrs = f"#{anchor} {attrs}".strip()
        return f"{match['indent']}{match['hashes']} {text} {{{attrs}}}".rstrip()

    return HEADING_RE.sub(_pin, masked)
