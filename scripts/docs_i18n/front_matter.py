"""Split YAML front matter from a page, and build the front matter of a translated page."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = ["MACHINE_TRANSLATED_KEY", "FrontMatter", "split_front_matter", "translated_front_matter"]

MACHINE_TRANSLATED_KEY = "machine_translated"
"""The front matter key that marks a page as machine-translated (the site shows a notice)."""

_FRONT_MATTER = re.compile(
    r"\A---[ \t]*\r?\n(?P<yaml>.*?)(?:\r?\n)?^---[ \t]*(?:\r?\n|\Z)", re.S | re.M
)


_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""The safe loader, in C (libyaml) where PyYAML has it: each page and prompt file has a front
matter, read before the first request goes out."""


@dataclass
class FrontMatter:
    """A page split into its front matter and its body.

    Attributes:
        raw: The YAML between the `---` lines (no delimiters), or `""` when there is none.
        data: The parsed YAML mapping (empty when there is none).
        body: Everything after the closing `---` line.
    """

    raw: str
    data: dict[str, Any]
    body: str


def split_front_matter(text: str) -> FrontMatter:
    """Split `text` into front matter and body.

    Raises:
        ValueError: The front matter is not a YAML mapping.
    """
    match = _FRONT_MATTER.match(text)
    if not match:
        return FrontMatter(raw="", data={}, body=text)
    raw = match["yaml"]
    try:
        data = (
            yaml.load(raw + "\n", Loader=_YAML_LOADER) if raw.strip() else {}
        )  # a last "|" block keeps its newline
    except yaml.YAMLError as exc:
        raise ValueError(f"front matter is not valid YAML: {exc}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError("front matter is not a YAML mapping")
    return FrontMatter(raw=raw, data=data, body=text[match.end() :])


def translated_front_matter(english: FrontMatter) -> str:
    """Return the front matter block of a translation: the English keys plus the machine mark.

    The English YAML is kept verbatim (so every English key stays) and `machine_translated: true`
    is appended unless the English page already sets it.
    """
    lines = english.raw.rstrip("\r\n")
    if MACHINE_TRANSLATED_KEY not in english.data:
        lines = (
            f"{lines}\n{MACHINE_TRANSLATED_KEY}: true"
            if lines
            else f"{MACHINE_TRANSLATED_KEY}: true"
        )
    return f"---\n{lines}\n---\n"
