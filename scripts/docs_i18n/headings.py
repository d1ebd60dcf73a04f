"""English heading ids, and pinning them on translated headings (`## 見出し {#english-id}`).

MkDocs gives a heading the id computed by Python-Markdown's `toc` extension (its default
`slugify`, made unique within the page with `_1`, `_2` suffixes) unless the heading sets one
with `attr_list` (`## Title {#my-id}`). We compute the English ids with that very extension, so
they match the English page, and pin them on the translation, where the default slug of CJK text
would be `_1`, `_2` and every `#anchor` link would break.

`find_headings` is the one place that says what a heading is, for the ids, the pinning and the
checks alike: ATX lines (`## Usage`) and setext headings (`Usage` over `---` or `===`, the first
line of a block), never a line inside an HTML comment or a fenced code block.
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


_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(?P<mark>=+|-+)[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})")
_NOT_SETEXT_TEXT = re.compile(
    r"^(?: {4}|\t| {0,3}(?:[-*+>|]|\d+[.)]|@@|<|!!!|\?\?\?|===|\[\^?[^\]]*\]:))"
)
"""Lines that are not paragraph text, so never a setext heading's text."""


@dataclass
class Heading:
    """One heading: an ATX line or a setext heading (its text line; the underline follows).

    Attributes:
        level: 1 to 6.
        text: The heading text without closing hashes or attribute list.
        attrs: The attribute list's content (between the braces), or `None`.
        explicit_id: The id set in the attribute list, or `None`.
        line: The heading as an ATX line (without newline); a setext heading's text line is
            given its level's hashes.
        index: The number of its (text) line in the text, from 0.
        setext: Whether it is a setext heading.
    """

    level: int
    text: str
    attrs: str | None
    explicit_id: str | None
    line: str
    index: int = 0
    setext: bool = False


def _parse(match: re.Match[str], index: int = 0) -> Heading:
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
        index=index,
    )


def find_headings(text: str) -> list[Heading]:
    """Return the headings of a (masked or plain) Markdown text in order.

    ATX and setext headings count; lines inside an HTML comment (`<!-- ... -->`) or a fenced
    code block do not, so a commented-out `## Usage` shifts no id.
    """
    lines = text.split("\n")
    headings: list[Heading] = []
    in_comment = False
    fence: str | None = None
    for i, line in enumerate(lines):
        if fence is not None:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            continue
        if in_comment:
            if "-->" in line:
                in_comment = False
            continue
        if "<!--" in line and "-->" not in line[line.index("<!--") :]:
            in_comment = True  # from here on; the text before `<!--` is still read
            if line.lstrip().startswith("<!--"):
                continue
        elif line.lstrip().startswith("<!--") and line.rstrip().endswith("-->"):
            continue
        opened = _FENCE.match(line)
        if opened:
            fence = opened["fence"]
            continue
        match = HEADING_RE.fullmatch(line)
        if match:
            headings.append(_parse(match, i))
            continue
        underline = _SETEXT_UNDERLINE.match(lines[i + 1]) if i + 1 < len(lines) else None
        starts_block = i == 0 or not lines[i - 1].strip()
        if underline and starts_block and line.strip() and not _NOT_SETEXT_TEXT.match(line):
            hashes = "#" if underline["mark"][0] == "=" else "##"
            atx = HEADING_RE.fullmatch(f"{hashes} {line.strip()}")
            if atx is not None:
                heading = _parse(atx, i)
                heading.setext = True
                headings.append(heading)
    return headings


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
    lines = masked.split("\n")
    for heading, source, anchor in zip(find_headings(masked), english, ids, strict=False):
        text = _ANY_ATTR_LIST.sub("", heading.text).strip()
        attrs = source.attrs if source.attrs is not None else ""
        if source.explicit_id is None:
            attrs = f"#{anchor} {attrs}".strip()
        line = lines[heading.index]
        if heading.setext:
            indent = line[: len(line) - len(line.lstrip())]
            lines[heading.index] = f"{indent}{text} {{{attrs}}}".rstrip()
        else:
            match = HEADING_RE.fullmatch(line)
            assert match is not None
            lines[heading.index] = f"{match['indent']}{match['hashes']} {text} {{{attrs}}}".rstrip()
    return "\n".join(lines)
