"""Replace code by placeholders before translation and restore it from the English source after.

Fenced code blocks (backtick or tilde fences of any length, at any indentation, so inside
admonitions, lists and tabs too) become one placeholder line `<indent>@@BLOCK_n@@`; inline code
spans become `@@CODE_n@@`. The model never sees code, so it cannot translate or break it, and the
translated page gets the English code back byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "PLACEHOLDER_RE",
    "Masked",
    "block_placeholder",
    "inline_placeholder",
    "mask",
    "unmask",
]

PLACEHOLDER_RE = re.compile(r"@@(?:BLOCK|CODE)_\d+@@")
"""Matches any placeholder, block or inline."""

_OPEN_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)$")
# A code span: a run of N backticks, then anything on the same line, then exactly N backticks.
_CODE_SPAN = re.compile(r"(?<!`)(?P<ticks>`+)(?!`)(?P<body>[^\n]*?[^`\n]|[^`\n])(?P=ticks)(?!`)")


def block_placeholder(n: int) -> str:
    """Return the placeholder text of fenced block number `n`."""
    return f"@@BLOCK_{n}@@"


def inline_placeholder(n: int) -> str:
    """Return the placeholder text of inline code span number `n`."""
    return f"@@CODE_{n}@@"


@dataclass
class Masked:
    """A Markdown text with its code replaced by placeholders.

    Attributes:
        text: The masked text.
        code: The original code for each placeholder, in order of appearance. A block's value
            is its full fence (opening line to closing line, original indentation, no final
            newline); an inline span's value includes its backticks.
        indents: The indentation of each block placeholder's line.
    """

    text: str
    code: dict[str, str] = field(default_factory=dict)
    indents: dict[str, str] = field(default_factory=dict)


def _is_closing(line: str, char: str, length: int) -> bool:
    stripped = line.strip()
    return len(stripped) >= length and set(stripped) == {char}


def mask(text: str, *, start: int = 1) -> Masked:
    """Mask the fenced code blocks and inline code of `text`.

    Args:
        text: Markdown, without front matter.
        start: The first placeholder number (to keep numbers unique across calls).

    Returns:
        The masked text with the code for each placeholder.

    Raises:
        ValueError: The text holds a placeholder-like string (`@@CODE_1@@`) outside code.

    Example:
        >>> m = mask("Call `run()`:\\n\\n```py\\nrun()\\n```\\n")
        >>> m.text
        'Call @@CODE_1@@:\\n\\n@@BLOCK_2@@\\n'
    """
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    masked = Masked(text="")
    counter = start

    def _inline(match: re.Match[str]) -> str:
        nonlocal counter
        name = inline_placeholder(counter)
        counter += 1
        masked.code[name] = match.group(0)
        return name

    i = 0
    while i < len(lines):
        line = lines[i]
        body = line.rstrip("\r\n")
        opened = _OPEN_FENCE.match(body)
        if opened and not (opened["fence"][0] == "`" and "`" in opened["info"]):
            char, length = opened["fence"][0], len(opened["fence"])
            j = i + 1
            while j < len(lines) and not _is_closing(lines[j].rstrip("\r\n"), char, length):
                j += 1
            end = min(j, len(lines) - 1)  # an unclosed fence runs to the end of the text
            block = "".join(lines[i : end + 1])
            newline = block[len(block.rstrip("\r\n")) :]
            name = block_placeholder(counter)
            counter += 1
            masked.code[name] = block[: len(block) - len(newline)]
            masked.indents[name] = opened["indent"]
            out.append(f"{opened['indent']}{name}{newline}")
            i = end + 1
            continue
        out.append(_CODE_SPAN.sub(_inline, line))
        i += 1
    masked.text = "".join(out)
    found = PLACEHOLDER_RE.findall(masked.text)
    clashes = sorted({name for name in found if name not in masked.code or found.count(name) > 1})
    if clashes:
        raise ValueError(
            f"the text {clashes[0]} appears outside code, but it is the form of a translation "
            "placeholder: put it in backticks"
        )
    return masked


def unmask(text: str, code: dict[str, str]) -> str:
    """Put the code back in place of its placeholders.

    A block placeholder is replaced with its whole line, so the English fence comes back with its
    original indentation whatever the translation did to the placeholder's line.

    Args:
        text: Masked text (for example a checked translation).
        code: The placeholders' code, from `mask` of the English source.

    Returns:
        The text with every known placeholder replaced.
    """

    def _block(match: re.Match[str]) -> str:
        return code.get(match["name"], match.group(0))

    text = re.sub(r"(?m)^[ \t]*(?P<name>@@BLOCK_\d+@@)[ \t]*$", _block, text)
    return PLACEHOLDER_RE.sub(lambda m: code.get(m.group(0), m.group(0)), text)
