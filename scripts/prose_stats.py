"""Prose statistics of the docs pages: words, average sentence length, long sentences.

Usage: python scripts/prose_stats.py [PAGE.md ...]
(default: README.md, CHANGELOG.md, docs/*.md and docs/{ja,ko,zh}/*.md)

Prose is the text outside front matter, code blocks, tables, headings, HTML and snippet lines;
admonition markers are dropped, their text is kept. Inline code counts as one word, a link as its
text. English sentences end at . ? ! followed by a space or a line end; Chinese, Japanese and
Korean ones also at 。！？. A paragraph or list item always ends a sentence. On CJK pages every
Han, kana or hangul character counts as one word (Korean, written with spaces, is counted by its
space-separated words instead), so compare a translation with its own earlier figures, not
with the English.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LONG = 35
FENCE = re.compile(r"^\s*(```|~~~)")
ADMONITION = re.compile(r'^\s*(!!!|\?\?\?\+?)\s*\w+(\s+"[^"]*")?\s*$')
ITEM = re.compile(r"^\s*([-*+]|\d+\.)\s+")
CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
SENTENCE_END = re.compile(r"(?<=[.?!])\s+|(?<=[。！？])\s*")


def prose_blocks(text: str) -> list[str]:
    """The page's paragraphs and list items, as plain text."""
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":  # front matter
        end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), 0)
        lines = lines[end + 1 :]
    blocks: list[str] = []
    current: list[str] = []
    fence: str | None = None

    def close() -> None:
        if current:
            blocks.append(" ".join(current))
            current.clear()

    for line in lines:
        stripped = line.strip()
        match = FENCE.match(line)
        if fence is not None:
            if match and stripped.startswith(fence):
                fence = None
            continue
        if match:
            close()
            fence = match.group(1)
            continue
        if (
            not stripped
            or stripped.startswith(("#", "|", "<", "--8<--", "[^", "*[", ":::"))
            or ADMONITION.match(line)
        ):
            close()
            continue
        if ITEM.match(line):
            close()
            stripped = ITEM.sub("", line).strip()
        current.append(stripped)
    close()
    return [clean(block) for block in blocks if clean(block)]


def clean(block: str) -> str:
    block = re.sub(r"`[^`]+`", "CODE", block)  # inline code: one word
    block = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", block)  # [text](url)
    block = re.sub(r"\[([^\]]*)\]\[[^\]]*\]", r"\1", block)  # [text][ref]
    block = re.sub(r"\{[#.][^}]*\}", "", block)  # attribute lists
    block = re.sub(r"[*_]{1,3}(?=\S)|(?<=\S)[*_]{1,3}", "", block)  # emphasis
    return block.strip()


def words(sentence: str, korean: bool) -> int:
    if korean:
        return len(sentence.split())
    cjk = len(CJK_CHAR.findall(sentence))
    latin = len(CJK_CHAR.sub(" ", sentence).split())
    return cjk + latin


def stats(path: Path) -> tuple[int, int, float, int]:
    korean = "/ko/" in path.as_posix()
    counts = [
        words(sentence, korean)
        for block in prose_blocks(path.read_text(encoding="utf-8"))
        for sentence in SENTENCE_END.split(block)
        if sentence.strip()
    ]
    counts = [n for n in counts if n]
    total = sum(counts)
    average = total / len(counts) if counts else 0.0
    return total, len(counts), average, sum(n > LONG for n in counts)


def main(argv: list[str]) -> int:
    root = Path(__file__).resolve().parents[1] / "docs"
    paths = [Path(a).resolve() for a in argv] or [
        root.parent / "README.md",
        root.parent / "CHANGELOG.md",
        *sorted(root.glob("*.md")),
        *(p for lang in ("ja", "ko", "zh") for p in sorted((root / lang).glob("*.md"))),
    ]
    print(f"| Page | Prose words | Sentences | Avg words/sentence | > {LONG} words |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for path in paths:
        total, sentences, average, long = stats(path)
        name = path.relative_to(root.parent) if path.is_relative_to(root.parent) else path
        print(f"| {name} | {total:,} | {sentences} | {average:.1f} | {long} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
