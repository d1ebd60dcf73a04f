"""Which English pages exist, how they split, and where their translations live."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from .front_matter import FrontMatter, split_front_matter
from .headings import Heading, english_heading_ids, find_headings
from .markdown_mask import Masked, mask
from .sections import section_hash, split_sections

__all__ = [
    "TRANSLATED_DIRS",
    "EnglishPage",
    "english_pages",
    "translated_pages",
    "translation_path",
]

TRANSLATED_DIRS = ("ja", "ko", "zh")
"""Folders under docs/ that hold translations (never translated themselves)."""

_EXCLUDED_DIRS = (*TRANSLATED_DIRS, "ref")


def english_pages(docs: Path) -> list[str]:
    """Return the English pages to translate, as paths relative to `docs` (POSIX style).

    Every `.md` file under `docs` except those under `ref/` (API stubs) and the translated
    folders.
    """
    found = []
    for path in docs.rglob("*.md"):
        rel = path.relative_to(docs)
        if rel.parts[0] in _EXCLUDED_DIRS or not path.is_file():
            continue
        found.append(rel.as_posix())
    return sorted(found)


def translated_pages(docs: Path, lang: str) -> list[str]:
    """Return the translated pages that exist for `lang`, relative to `docs/<lang>`."""
    root = docs / lang
    if not root.is_dir():
        return []
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md") if p.is_file())


def translation_path(docs: Path, lang: str, page: str) -> Path:
    """Return where the `lang` translation of `page` lives."""
    return docs / lang / page


@dataclass
class EnglishPage:
    """An English page split and hashed for translation.

    Attributes:
        path: Relative to docs/ (POSIX style).
        text: The full text.
        front_matter: The split front matter.
        masked: The masked body.
        sections: The masked sections (preamble first).
        hashes: The hash of each section's English text.
        source_hash: The hash of the whole page.
        headings: The headings of each section.
        heading_ids: The English ids of each section's headings.
    """

    path: str
    text: str
    front_matter: FrontMatter
    masked: Masked
    sections: list[str]
    hashes: list[str]
    source_hash: str
    headings: list[list[Heading]]
    heading_ids: list[list[str]]

    @classmethod
    def parse(cls, path: str, text: str) -> EnglishPage:
        """Split and hash `text`, the English page at `path`.

        Raises:
            ValueError: The front matter is malformed.
        """
        front_matter = split_front_matter(text)
        masked = mask(front_matter.body)
        sections = split_sections(masked.text)
        all_ids = english_heading_ids(masked.text, masked.code)
        headings = [find_headings(s) for s in sections]
        ids: list[list[str]] = []
        position = 0
        for section_headings in headings:
            ids.append(all_ids[position : position + len(section_headings)])
            position += len(section_headings)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return cls(
            path=path,
            text=text,
            front_matter=front_matter,
            masked=masked,
            sections=sections,
            hashes=[section_hash(s, masked.code) for s in sections],
            source_hash=f"sha256:{digest[:32]}",
            headings=headings,
            heading_ids=ids,
        )
