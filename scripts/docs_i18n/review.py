"""The review pass: a second model call reads the English and the draft side by side.

The reviewer answers with Structured Outputs (`REVIEW_SCHEMA`): a list of findings, each with
its section, kind, severity and a literal quote from the English and from the translation.
Code, not trust, decides what counts: `verify_findings` keeps only findings whose quotes really
occur in the sections they name (the rest are discarded and counted), so a reviewer cannot
invent a problem it cannot point at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .translator import load_reply_json

__all__ = [
    "KINDS",
    "REVIEW_FORMAT",
    "REVIEW_SCHEMA",
    "Finding",
    "ReviewError",
    "parse_review",
    "review_format",
    "verify_findings",
]

KINDS = ("omission", "addition", "meaning", "number", "terminology", "fluency")
"""The kinds of finding a reviewer may report."""

REVIEW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["findings"],
    "properties": {
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["section", "kind", "severity", "english", "translation", "problem"],
                "properties": {
                    "section": {"type": "integer"},
                    "kind": {"type": "string", "enum": list(KINDS)},
                    "severity": {"type": "string", "enum": ["blocker", "minor"]},
                    "english": {"type": "string"},
                    "translation": {"type": "string"},
                    "problem": {"type": "string"},
                },
            },
        }
    },
}
"""The JSON schema of a review reply (the reviewer's instructions say how to quote)."""

REVIEW_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "name": "translation_review",
    "strict": True,
    "schema": REVIEW_SCHEMA,
}
"""The `text.format` of a review request (Structured Outputs)."""


def review_format(langs: list[str]) -> dict[str, Any]:
    """The `text.format` of a review of drafts in several languages: each finding also names
    the `language` (one of `langs`) of the translation it quotes."""
    item = REVIEW_SCHEMA["properties"]["findings"]["items"]
    findings = {
        **item,
        "required": ["language", *item["required"]],
        "properties": {"language": {"type": "string", "enum": list(langs)}, **item["properties"]},
    }
    schema = {
        **REVIEW_SCHEMA,
        "properties": {"findings": {"type": "array", "items": findings}},
    }
    return {**REVIEW_FORMAT, "name": "translation_review_batch", "schema": schema}


class ReviewError(ValueError):
    """A review reply that does not match `REVIEW_SCHEMA`."""


@dataclass(frozen=True)
class Finding:
    """One problem a reviewer found in a section of a draft.

    Attributes:
        section: The section number.
        kind: One of `KINDS`.
        severity: `"blocker"` or `"minor"`.
        english: A literal quote from the English section.
        translation: A literal quote from the translated section.
        problem: What is wrong.
        language: The language code of the quoted translation, in a review of several
            languages; empty in a review of one.
    """

    section: int
    kind: str
    severity: str
    english: str
    translation: str
    problem: str
    language: str = ""

    def describe(self) -> str:
        """One line for the repair message and the run's report."""
        return (
            f"section {self.section} [{self.kind}, {self.severity}]: {self.problem} "
            f"(English: {self.english!r}; translation: {self.translation!r})"
        )


def parse_review(text: str, langs: list[str] | None = None) -> list[Finding]:
    """Read a review reply; with `langs`, a review of several languages (`review_format`).

    Raises:
        ReviewError: The reply is not JSON of the review schema.
    """
    try:
        data: Any = load_reply_json(text)
    except ValueError as exc:
        raise ReviewError(f"the review is not JSON ({exc}): {text[:80]!r}") from exc
    items = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ReviewError(f"the review has no findings list: {text[:80]!r}")
    findings: list[Finding] = []
    for item in items:
        if not isinstance(item, dict):
            raise ReviewError(f"a review finding is not an object: {item!r}")
        try:
            finding = Finding(
                section=item["section"],
                kind=item["kind"],
                severity=item["severity"],
                english=item["english"],
                translation=item["translation"],
                problem=item["problem"],
                language=item["language"] if langs is not None else "",
            )
        except KeyError as exc:
            raise ReviewError(f"a review finding lacks {exc.args[0]!r}: {item!r}") from exc
        if (
            not isinstance(finding.section, int)
            or finding.kind not in KINDS
            or finding.severity not in ("blocker", "minor")
            or (langs is not None and finding.language not in langs)
            or not all(
                isinstance(v, str) for v in (finding.english, finding.translation, finding.problem)
            )
        ):
            raise ReviewError(f"a review finding does not match the schema: {item!r}")
        findings.append(finding)
    return findings


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _occurs(quote: str, text: str) -> bool:
    quote = _normal(quote)
    return bool(quote) and quote in _normal(text)


def verify_findings(
    findings: list[Finding], pairs: dict[int, tuple[str, str]]
) -> tuple[list[Finding], list[Finding]]:
    """Keep the findings whose quotes occur in the sections they name.

    Whitespace is normalised (a quote may wrap differently); nothing else is. A finding must
    name a reviewed section, and both its quotes must be non-empty and occur: the English quote
    in the English section, the translation quote in the draft section.

    Args:
        findings: The reviewer's findings.
        pairs: Section number -> (English, draft) as sent for review.

    Returns:
        The verified findings and the discarded ones.
    """
    kept: list[Finding] = []
    discarded: list[Finding] = []
    for finding in findings:
        pair = pairs.get(finding.section)
        if (
            pair is not None
            and _occurs(finding.english, pair[0])
            and _occurs(finding.translation, pair[1])
        ):
            kept.append(finding)
        else:
            discarded.append(finding)
    return kept, discarded
