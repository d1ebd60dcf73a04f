"""Pages: front matter, sections, code masked as placeholders, hashes, atomic writes.

A page is its front matter and its sections. Section 0 is everything before the first `## `
heading; each other section starts at a `## ` heading outside code. Code (fenced blocks,
inline code, mkdocstrings `::: identifier` blocks, snippet lines) is masked as placeholders
(`@@B0@@` for a block, on a line of its own; `@@C0@@` inline), so the model never sees it and
the checks compare prose with prose.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "Masked",
    "Page",
    "anchor_ids",
    "mask",
    "norm_hash",
    "prose_lines",
    "read_page",
    "refresh_code",
    "slugify",
    "split_page",
    "text_hash",
    "write_atomic",
]

_FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,})(.*)$")
_MKDOCSTRINGS = re.compile(r"^([ \t]*):::[ \t]+\S")
_SNIPPET = re.compile(r"^([ \t]*)-+8<-+")
_INLINE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
_PLACEHOLDER = re.compile(r"@@([BC])(\d+)@@")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)(?:[ \t]+\{#([^}\s]+)\})?[ \t]*$")


@dataclass
class Masked:
    """A text with its code replaced by placeholders, and the code they stand for."""

    text: str
    codes: list[str] = field(default_factory=list)

    def restore(self, text: str | None = None) -> str:
        """Put the code back into `text` (default: the masked text itself)."""

        def block(match: re.Match[str]) -> str:
            indent = match.group(1)
            code = self.codes[int(match.group(2))]
            return "\n".join(indent + line if line else "" for line in code.split("\n"))

        text = self.text if text is None else text
        text = re.sub(r"^([ \t]*)@@B(\d+)@@[ \t]*$", block, text, flags=re.M)
        return _PLACEHOLDER.sub(lambda m: self.codes[int(m.group(2))], text)


def _block_end(lines: list[str], start: int) -> int:
    """The index after the code block that starts at `lines[start]` (a fence or `:::`)."""
    fence = _FENCE.match(lines[start])
    if fence:
        mark = fence.group(2)
        for end in range(start + 1, len(lines)):
            close = re.match(r"^[ \t]*(`{3,}|~{3,})[ \t]*$", lines[end])
            if close and close.group(1)[0] == mark[0] and len(close.group(1)) >= len(mark):
                return end + 1
        return len(lines)
    if _SNIPPET.match(lines[start]):
        return start + 1
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = start + 1
    while end < len(lines) and (
        not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent
    ):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return end


def mask(text: str) -> Masked:
    """Mask code blocks, mkdocstrings blocks, snippet lines and inline code.

    A ```` ```mermaid ```` diagram is left in the text: its labels are prose.
    """
    masked = Masked("")
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        start = fence or _MKDOCSTRINGS.match(line) or _SNIPPET.match(line)
        if start and not (fence and fence.group(3).strip().lower().startswith("mermaid")):
            end = _block_end(lines, i)
            indent = start.group(1)
            body = [ln[len(indent) :] if ln.startswith(indent) else ln for ln in lines[i:end]]
            out.append(f"{indent}@@B{len(masked.codes)}@@")
            masked.codes.append("\n".join(body))
            i = end
            continue
        if fence:  # mermaid: kept whole, not searched for inline code
            end = _block_end(lines, i)
            out.extend(lines[i:end])
            i = end
            continue
        out.append(line)
        i += 1

    def inline(match: re.Match[str]) -> str:
        if "\n\n" in match.group(0) or ("\n" in match.group(0) and len(match.group(1)) > 2):
            return match.group(0)
        masked.codes.append(match.group(0))
        return f"@@C{len(masked.codes) - 1}@@"

    masked.text = _INLINE.sub(inline, "\n".join(out))
    return masked


def text_hash(text: str) -> str:
    """A short hash of `text` exactly as written."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def norm_hash(section: str) -> str:
    """The hash of an English section that decides whether it must be translated again.

    Whitespace and the content of code do not count: reflowing a paragraph or editing a code
    block costs no model call (the code is copied into the translations).
    """
    text = _PLACEHOLDER.sub("@@", mask(section).text)
    return text_hash(" ".join(text.split()))


def slugify(title: str) -> str:
    """The heading id Python-Markdown's toc extension gives `title` (ASCII, lower, dashes)."""
    text = re.sub(r"<[^>]+>", "", title.replace("`", ""))
    text = re.sub(r"\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])", r"\1", text)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def prose_lines(lines: list[str]) -> list[int]:
    """The indices of the lines outside code blocks (a mermaid diagram counts as code here)."""
    found, i = [], 0
    while i < len(lines):
        if _FENCE.match(lines[i]) or _MKDOCSTRINGS.match(lines[i]) or _SNIPPET.match(lines[i]):
            i = _block_end(lines, i)
            continue
        found.append(i)
        i += 1
    return found


def anchor_ids(text: str) -> list[tuple[int, str, str]]:
    """The headings of a page outside code: (line index, marks and title, id) in order.

    The id is the explicit `{#id}` or the slug of the title, numbered like the toc extension
    numbers repeated ids (`_1`, `_2`).
    """
    seen: dict[str, int] = {}
    found: list[tuple[int, str, str]] = []
    lines = text.split("\n")
    for index in prose_lines(lines):
        match = _HEADING.match(lines[index])
        if not match:
            continue
        ident = match.group(3) or slugify(match.group(2))
        if ident in seen and not match.group(3):
            seen[ident] += 1
            ident = f"{ident}_{seen[ident]}"
        else:
            seen[ident] = 0
        found.append((index, f"{match.group(1)} {match.group(2)}", ident))
    return found


def refresh_code(english: str, translation: str) -> str:
    """Copy the English code into `translation` where only the code changed.

    Code the translation has as the English has it stays; the other spans are replaced, in
    order, by the English spans the translation lacks. Nothing changes when the counts differ.
    """
    en, tr = mask(english), mask(translation)
    if len(en.codes) != len(tr.codes) or sorted(en.codes) == sorted(tr.codes):
        return translation
    spare = list(en.codes)
    for code in tr.codes:
        if code in spare:
            spare.remove(code)
    codes = [code if code in en.codes else spare.pop(0) for code in tr.codes]
    return Masked(tr.text, codes).restore()


@dataclass
class Page:
    """A page split into front matter and sections (each ends with its trailing newlines)."""

    front: str
    sections: list[str]

    @property
    def body(self) -> str:
        """The page without its front matter."""
        return "".join(self.sections)

    def text(self) -> str:
        """The whole page."""
        return self.front + self.body

    def section_lines(self) -> list[int]:
        """The 1-based line number where each section starts in the file."""
        line = self.front.count("\n") + 1
        starts = []
        for section in self.sections:
            starts.append(line)
            line += section.count("\n")
        return starts


def split_page(text: str) -> Page:
    """Split a page's text into its front matter and its sections."""
    front = ""
    match = re.match(r"---\n.*?\n---\n+", text, re.S)
    if match:
        front, text = match.group(0), text[match.end() :]
    lines = text.split("\n")
    starts = [0] + [i for i in prose_lines(lines) if i and lines[i].startswith("## ")]
    ends = [*starts[1:], len(lines)]
    sections = ["\n".join(lines[a:b]) for a, b in zip(starts, ends, strict=True)]
    return Page(front, [s + "\n" for s in sections[:-1]] + [sections[-1]])


def read_page(path: Path) -> Page | None:
    """The page at `path`, or None when there is no such file."""
    try:
        return split_page(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` in one step, keeping the existing file's mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
