"""Replace code by placeholders before translation and restore it from the English source after.

Fenced code blocks (backtick or tilde fences of any length, at any indentation, so inside
admonitions, lists and tabs too) become one placeholder line `<indent>@@BLOCK_n@@`; inline code
spans become `@@CODE_n@@`. The model never sees code, so it cannot translate or break it, and the
translated page gets the English code back byte for byte.

Mermaid diagrams are code whose labels are prose. A ```` ```mermaid ```` block is masked like
any block, and its labels (participant aliases, message texts, `loop`/`alt`/`Note` texts,
flowchart node and edge labels) are listed for translation right under its placeholder::

    @@BLOCK_4@@
    <!-- i18n:mermaid 4
    1: Your code
    2: history
    -->

`unmask` rebuilds the diagram from the English code with the (translated) labels put back at
their places, so the diagram's code itself never goes through the model.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

__all__ = [
    "MERMAID_LABELS_RE",
    "PLACEHOLDER_RE",
    "Masked",
    "block_placeholder",
    "inline_placeholder",
    "mask",
    "mermaid_labels",
    "mermaid_skeleton",
    "unmask",
]

PLACEHOLDER_RE = re.compile(r"@@(?:BLOCK|CODE)_\d+@@")
"""Matches any placeholder, block or inline."""

_OPEN_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)$")
# A code span: a run of N backticks, then anything on the same line, then exactly N backticks.
_CODE_SPAN = re.compile(r"(?<!`)(?P<ticks>`+)(?!`)(?P<body>[^\n]*?[^`\n]|[^`\n])(?P=ticks)(?!`)")


MERMAID_LABELS_RE = re.compile(
    r"^(?P<indent>[ \t]*)<!-- i18n:mermaid (?P<n>\d+)[ \t]*\n"
    r"(?P<labels>(?:(?P=indent)\d+: [^\n]*\n)*)(?P=indent)-->[ \t]*$\n?",
    re.M,
)
"""Matches the label list of a Mermaid block in masked text."""

_MERMAID_LABELS = [
    re.compile(r"^\s*(?:participant|actor)\s+\S+\s+as\s+(?P<label>.+?)\s*$"),
    re.compile(r"^\s*[^\s:>-]+\s*--?(?:>>|>|x|\))[+-]?\s*[^\s:]+\s*:\s*(?P<label>.+?)\s*$"),
    re.compile(r"^\s*(?:loop|alt|else|opt|par|and|critical|break)\s+(?P<label>.+?)\s*$"),
    re.compile(r"^\s*Note\s+(?:over|left of|right of)\s+[^:]+:\s*(?P<label>.+?)\s*$"),
]
_FLOWCHART_LABEL = re.compile(r"\[(?P<a>[^\]\n]+)\]|\|(?P<b>[^|\n]+)\||\{(?P<c>[^}\n]+)\}")


def mermaid_labels(code: str) -> list[tuple[int, int]]:
    """Return the (start, end) offsets of the prose labels in a Mermaid block's code."""
    spans: list[tuple[int, int]] = []
    lines = code.splitlines(keepends=True)
    sequence = len(lines) > 1 and lines[1].strip().startswith("sequenceDiagram")
    offset = len(lines[0]) if lines else 0
    for line in lines[1:-1]:
        if sequence:
            for pattern in _MERMAID_LABELS:
                found = pattern.match(line)
                if found:
                    spans.append((offset + found.start("label"), offset + found.end("label")))
                    break
        elif not line.lstrip().startswith(("%%", "classDef", "class ", "style", "linkStyle")):
            for found in _FLOWCHART_LABEL.finditer(line):
                group = next(g for g in ("a", "b", "c") if found[g] is not None)
                text = found[group].strip('"')
                if text:
                    start = found.start(group) + found[group].index(text)
                    spans.append((offset + start, offset + start + len(text)))
        offset += len(line)
    return spans


def mermaid_skeleton(code: str) -> str:
    """A Mermaid block's code with every label blanked (what must not change in translation)."""
    for start, end in reversed(mermaid_labels(code)):
        code = code[:start] + "\x00" + code[end:]
    return code


def _is_mermaid(opening: str) -> bool:
    return opening.strip().lstrip("`~").strip().split(" ")[0].strip("{}.") == "mermaid"


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
            if _is_mermaid(body) and mermaid_labels(masked.code[name]):
                code = masked.code[name]
                labels = [code[a:b] for a, b in mermaid_labels(code)]
                indent = opened["indent"]
                out.append(f"{indent}<!-- i18n:mermaid {counter - 1}\n")
                out += [f"{indent}{n}: {label}\n" for n, label in enumerate(labels, 1)]
                out.append(f"{indent}-->{newline or chr(10)}")
            i = end + 1
            continue
        out.append(_CODE_SPAN.sub(_inline, line))
        i += 1
    masked.text = "".join(out)
    found = PLACEHOLDER_RE.findall(masked.text)
    seen = Counter(found)
    clashes = sorted(name for name, n in seen.items() if name not in masked.code or n > 1)
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

    if "<!-- i18n:mermaid" not in text:  # no label list: the code as it is
        return _unmask_code(text, code)
    relabelled = dict(code)

    def _labels(match: re.Match[str]) -> str:
        name = block_placeholder(int(match["n"]))
        if name in code:
            given = re.findall(r"(?m)^[ \t]*(\d+): ([^\n]*)$", match["labels"])
            spans = mermaid_labels(code[name])
            if [int(n) for n, _ in given] == list(range(1, len(spans) + 1)):
                block = code[name]
                for (start, end), (_, label) in reversed(list(zip(spans, given, strict=True))):
                    block = block[:start] + label.strip() + block[end:]
                relabelled[name] = block
        return ""

    return _unmask_code(MERMAID_LABELS_RE.sub(_labels, text), relabelled)


_BLOCK_LINE = re.compile(r"(?m)^[ \t]*(?P<name>@@BLOCK_\d+@@)[ \t]*$")


def _unmask_code(text: str, code: dict[str, str]) -> str:
    """Replace each placeholder of `code` in `text` (a block placeholder with its line)."""
    if "@@" not in text:
        return text

    def _block(match: re.Match[str]) -> str:
        return code.get(match["name"], match.group(0))

    if "@@BLOCK_" in text:
        text = _BLOCK_LINE.sub(_block, text)
    return PLACEHOLDER_RE.sub(lambda m: code.get(m.group(0), m.group(0)), text)
