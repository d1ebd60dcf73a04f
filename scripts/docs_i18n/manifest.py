"""The manifest (docs/i18n/manifest.json) and what each section of a translation needs.

For each English page and language the manifest records the hash of the whole English page
(`source`, read by the site's outdated-page notice) and, per section in order, three hashes:
`en` (the English section, whitespace and code contents aside), `glossary` (the glossary
entries the section uses) and `tr` (the translated section as written). Comparing them with
the pages on disk says, for every section, whether it is current, changed in English, changed
in the glossary, or edited by hand. A page moved with its translations (`git mv`) finds its
entry again: the translated sections' hashes are the same under the new path.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .glossary import Glossary
from .pages import Page, anchor_ids, norm_hash, refresh_code, text_hash, write_atomic

__all__ = ["Manifest", "Plan", "Section", "plan_page", "record_of", "source_hash"]


def source_hash(text: str) -> str:
    """The hash of a whole English page, as the outdated-page notice computes it."""
    return f"sha256:{hashlib.sha256(text.encode('utf-8')).hexdigest()[:32]}"


class Manifest:
    """The manifest file: page -> language -> {source, sections: [{en, glossary, tr}]}."""

    def __init__(self, path: Path) -> None:
        self.path = path
        data: Any = {}
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except ValueError as exc:
                raise ValueError(f"{path}: not valid JSON ({exc}); restore it from git") from exc
        if data and data.get("version") != 3:
            raise ValueError(f"{path}: not a manifest of this tool (version 3 expected)")
        self.pages: dict[str, dict[str, Any]] = data.get("pages", {})

    def entry(self, page: str, lang: str) -> dict[str, Any] | None:
        """The entry of `page` in `lang`, or None."""
        return self.pages.get(page, {}).get(lang)

    def moved_entry(self, lang: str, translation: Page, docs: Path) -> dict[str, Any] | None:
        """The entry of a page that is gone whose translation is now `translation` (a move)."""
        hashes = {h for section in translation.sections for h in _tr_hashes(section)}
        for page, langs in self.pages.items():
            entry = langs.get(lang)
            if entry is None or (docs / page).is_file():
                continue
            recorded = [s["tr"] for s in entry["sections"]]
            if recorded and sum(h in hashes for h in recorded) * 2 >= len(recorded):
                return entry
        return None

    def record(
        self, page: str, lang: str, english: str, sections: list[dict[str, str]], moved: Any = None
    ) -> None:
        """Record the translation of `page` in `lang` (and drop the `moved` entry it came from)."""
        for langs in self.pages.values():
            if moved is not None and langs.get(lang) is moved:
                del langs[lang]
        self.pages.setdefault(page, {})[lang] = {
            "source": source_hash(english),
            "sections": sections,
        }
        self.pages = {page: langs for page, langs in self.pages.items() if langs}

    def forget_missing(self, docs: Path) -> list[str]:
        """Drop the entries of pages whose English page is gone; their names."""
        gone = [page for page in self.pages if not (docs / page).is_file()]
        for page in gone:
            del self.pages[page]
        return gone

    def save(self) -> None:
        """Write the manifest atomically."""
        data = {"version": 3, "pages": dict(sorted(self.pages.items()))}
        write_atomic(self.path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")


@dataclass
class Section:
    """One English section and what its translation needs."""

    english: str
    translation: str | None  # the current translated section (the text to keep), if any
    # current, edited, code, changed, revised (changed, and edited by hand since recorded), new,
    # glossary, unrecorded
    status: str
    entry: dict[str, str] | None = None
    index: int | None = None  # the translated section's place in the translation file

    @property
    def needs_model(self) -> bool:
        """Whether the section must be sent to the model."""
        return self.status in ("changed", "revised", "new", "glossary")


@dataclass
class Plan:
    """A page in one language: its sections, and whether its translation can be paired."""

    page: str
    lang: str
    english: Page
    translation: Page | None
    sections: list[Section] = field(default_factory=list)
    recorded: bool = False
    moved_from: dict[str, Any] | None = None

    def needs_model(self) -> list[int]:
        """The indices of the sections to send."""
        return [i for i, s in enumerate(self.sections) if s.needs_model]


def plan_page(
    page: str,
    lang: str,
    english: Page,
    translation: Page | None,
    manifest: Manifest,
    glossary: Glossary,
    docs: Path,
    force: bool = False,
) -> Plan:
    """Pair the English sections with the translated ones and the manifest's records."""
    plan = Plan(page, lang, english, translation)
    entry = manifest.entry(page, lang)
    if entry is None and translation is not None:
        entry = plan.moved_from = manifest.moved_entry(lang, translation, docs)
    old = entry["sections"] if entry else []
    plan.recorded = entry is not None
    tr_sections = translation.sections if translation else []
    en_hashes = [norm_hash(s) for s in english.sections]
    by_id = _pair_by_id(english, translation)
    if by_id is not None:
        # The translation pins the English heading ids: each section pairs with the translated
        # section of its id and finds its record by the translation's or the English hash, so a
        # section moved in English keeps its record.
        spare = list(old)
        for j, i in enumerate(by_id):
            kept = tr_sections[i] if i is not None else None
            record = _find(spare, "tr", _tr_hashes(kept)) if kept else None
            record = record or _find(spare, "en", {en_hashes[j]})
            if kept is None:
                status = "new"
            elif entry is None:
                status = "unrecorded"
            elif record is None:
                status = "revised"  # moved and rewritten: send it with the text to keep, or adopt
            elif record["en"] == en_hashes[j]:
                status = "current"
            else:
                status = "changed" if record["tr"] in _tr_hashes(kept) else "revised"
            plan.sections.append(Section(english.sections[j], kept, status, record, i))
    elif entry is None or len(old) != len(tr_sections):
        # Not recorded, or rewritten by hand to another shape: sections pair by position when the
        # counts agree, and --adopt records them after the checks.
        same = translation is not None and len(tr_sections) == len(english.sections)
        for i, text in enumerate(english.sections):
            status = "unrecorded" if same else "new"
            kept = tr_sections[i] if same else None
            plan.sections.append(Section(text, kept, status, None, i if same else None))
        plan.recorded = plan.recorded and len(old) == len(tr_sections)
    else:
        matcher = difflib.SequenceMatcher(None, [s["en"] for s in old], en_hashes, autojunk=False)
        for op, a0, a1, b0, b1 in matcher.get_opcodes():
            for k, j in enumerate(range(b0, b1)):
                i = a0 + k if a0 + k < a1 else None
                kept = tr_sections[i] if i is not None else None
                record = old[i] if i is not None else None
                status = "current" if op == "equal" else ("changed" if kept else "new")
                if status == "changed" and record and record["tr"] not in _tr_hashes(kept or ""):
                    status = "revised"  # a person edited it: maybe already for the new English
                plan.sections.append(Section(english.sections[j], kept, status, record, i))
    for section in plan.sections:
        if section.status not in ("current", "unrecorded") or section.translation is None:
            continue
        if section.entry and section.entry["glossary"] != glossary.entries_hash(
            section.english, lang
        ):
            section.status = "glossary"
        elif section.entry and section.entry["tr"] not in _tr_hashes(section.translation):
            section.status = "edited"
        elif (
            section.entry
            and refresh_code(section.english, section.translation) != section.translation
        ):
            section.status = "code"
    if force:
        for section in plan.sections:
            section.status, section.translation = "new", None
    return plan


def _pair_by_id(english: Page, translation: Page | None) -> list[int | None] | None:
    """For each English section, the index of the translated section with its heading id.

    None when an id is missing or repeated, or the translation has an id the English lacks
    (sections then pair by the manifest's order). Section 0 (before the first `## `) pairs
    with section 0.
    """
    if translation is None:
        return None
    en_ids = [_heading_id(s, False) for s in english.sections[1:]]
    tr_ids = [_heading_id(s, True) for s in translation.sections[1:]]
    known = [i for i in en_ids + tr_ids if i is not None]
    if None in en_ids + tr_ids or len(set(en_ids)) < len(en_ids) or len(set(tr_ids)) < len(tr_ids):
        return None
    if not set(tr_ids) <= set(en_ids) or not known:
        return None
    return [0] + [tr_ids.index(i) + 1 if i in tr_ids else None for i in en_ids]


def _heading_id(section: str, explicit: bool) -> str | None:
    """The id of a section's `## ` heading: its `{#id}`, else (not `explicit`) its slug."""
    found = anchor_ids(section.split("\n", 1)[0])
    if not found or (explicit and "{#" not in section.split("\n", 1)[0]):
        return None
    return found[0][2]


def _tr_hashes(text: str) -> set[str]:
    """The hashes a record of this translated section may hold (a section moved to or from the
    end of its page changes only its trailing newlines)."""
    return {text_hash(text.rstrip("\n") + tail) for tail in ("", "\n", "\n\n")}


def _find(records: list[dict[str, str]], key: str, values: set[str]) -> dict[str, str] | None:
    """Take the first record whose `key` is one of `values` out of `records`."""
    for record in records:
        if record[key] in values:
            records.remove(record)
            return record
    return None


def record_of(english: str, translation: str, lang: str, glossary: Glossary) -> dict[str, str]:
    """The manifest's record of a translated section."""
    return {
        "en": norm_hash(english),
        "glossary": glossary.entries_hash(english, lang),
        "tr": text_hash(translation),
    }
