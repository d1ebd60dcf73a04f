"""Split a page body at `## ` headings and hash each section.

Splitting happens on the masked text, so a `## ` line inside a code block never starts a
section; the hash is taken over the section's original English text, code included, so a code
change also marks its section as changed.
"""

from __future__ import annotations

import hashlib
import itertools
import re

from .markdown_mask import unmask

__all__ = ["HEADING_RE", "section_hash", "split_sections"]

HEADING_RE = re.compile(
    r"^(?P<indent> {0,3})(?P<hashes>#{1,6})(?:[ \t]+(?P<text>[^\n]*?))?[ \t]*$", re.M
)
"""An ATX heading line (at most three spaces of indentation)."""


def split_sections(masked_body: str) -> list[str]:
    """Split a masked body into sections: the preamble, then one section per `## ` heading.

    The sections concatenate back to `masked_body` exactly. The preamble (everything before the
    first `## ` heading, usually the `# Title` and an introduction) is always present, possibly
    empty. A section starts at a level-2 heading as `headings.find_headings` finds them (ATX or
    setext, never one inside an HTML comment).
    """
    from .headings import find_headings  # headings imports this module

    starts = sorted(h.index for h in find_headings(masked_body) if h.level == 2)
    lines = masked_body.split("\n")
    if not starts:
        return [masked_body]
    # Joined once per section: adding line by line to the last section costs a copy per line.
    bounds = [0, *starts, len(lines)]
    sections = [
        "\n".join(lines[a:b]) + "\n" if b > a else "" for a, b in itertools.pairwise(bounds)
    ]
    sections[-1] = sections[-1][:-1]  # the last line has no newline of its own
    return sections


def section_hash(masked_section: str, code: dict[str, str]) -> str:
    """Return the hash of a section's English text (placeholders restored)."""
    digest = hashlib.sha256(unmask(masked_section, code).encode("utf-8")).hexdigest()
    return f"sha256:{digest[:32]}"
