"""The committed manifest `i18n/manifest.json`: which English text each translation came from.

Shape (keys sorted, so diffs stay small)::

    {
      "version": 2,
      "pages": {
        "index.md": {
          "ja": {
            "source": "sha256:...",
            "sections": ["sha256:...", "sha256:..."],
            "translation": "sha256:..."
          }
        }
      },
      "english": {"sha256:...": "## Quick start\n..."}
    }

`source` hashes the whole English page (front matter included); `sections` hashes, in order,
the English section (preamble first, then one per `## ` heading) that each section of the
translation was made from (an unchanged English section has the same hash, a section whose
English changed since keeps its old hash); `translation` hashes the translated file as written.
`english` keeps the text of every recorded English section, so that `--adopt` can show what
changed in the English since a translation was recorded.

A write is two-phase, so a run killed at any point leaves a state a rerun resumes from: the entry
is first saved as `pending` (beside the entry it replaces), then the page is written, then the
entry is committed. `resolve` settles a pending entry left by a killed run: when the file on
disk is the one the pending entry describes it is committed, otherwise it is dropped.
Version 1 manifests (no `translation`, no `english`) are read and saved as version 2.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .atomic import atomic_write_text

__all__ = ["Manifest", "ManifestEntry", "text_hash"]

_VERSION = 2
_READABLE = (1, 2)


def text_hash(text: str) -> str:
    """Return the manifest's hash of `text` (`sha256:` and 32 hex digits)."""
    return f"sha256:{hashlib.sha256(text.encode('utf-8')).hexdigest()[:32]}"


@dataclass
class ManifestEntry:
    """What one translation (page x language) was made from.

    Attributes:
        source: The hash of the whole English page it was made from.
        sections: Per translated section, the hash of the English section it was made from.
        translation: The hash of the translated file as recorded, or `None` (version 1).
        pending: An entry being written (see the module docstring), or `None`.
    """

    source: str
    sections: list[str]
    translation: str | None = None
    pending: ManifestEntry | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"source": self.source, "sections": self.sections}
        if self.translation is not None:
            data["translation"] = self.translation
        if self.pending is not None:
            data["pending"] = self.pending.to_json()
        return data

    @classmethod
    def from_json(cls, data: Any) -> ManifestEntry:
        pending = data.get("pending")
        translation = data.get("translation")
        return cls(
            source=str(data["source"]),
            sections=[str(h) for h in data["sections"]],
            translation=str(translation) if translation is not None else None,
            pending=cls.from_json(pending) if pending is not None else None,
        )


_NO_ENTRY = "none"
"""The `source` of a pending entry's placeholder when there was no entry before."""


@dataclass
class Manifest:
    """The manifest in memory. `pages[path][lang]` is a `ManifestEntry`."""

    pages: dict[str, dict[str, ManifestEntry]] = field(default_factory=dict)
    english: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Manifest:
        """Read the manifest; a missing file is an empty manifest.

        Raises:
            ValueError: The file is not a manifest of a known version.
        """
        if not path.exists():
            return cls()
        return cls.loads(path.read_text(encoding="utf-8"), where=str(path))

    @classmethod
    def loads(cls, text: str, *, where: str = "manifest") -> Manifest:
        """Parse manifest JSON text.

        Raises:
            ValueError: The text is not a manifest of a known version.
        """
        try:
            data: Any = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{where} is not valid JSON: {exc}") from exc
        if not isinstance(data, dict) or data.get("version") not in _READABLE:
            raise ValueError(f'{where}: expected a manifest with "version": {_VERSION}')
        pages: dict[str, dict[str, ManifestEntry]] = {}
        try:
            for page, langs in (data.get("pages") or {}).items():
                pages[page] = {lang: ManifestEntry.from_json(e) for lang, e in langs.items()}
            english = {str(k): str(v) for k, v in (data.get("english") or {}).items()}
        except (AttributeError, KeyError, TypeError) as exc:
            raise ValueError(f"{where}: malformed page entry ({exc!r})") from exc
        return cls(pages=pages, english=english)

    def get(self, page: str, lang: str) -> ManifestEntry | None:
        """Return the committed entry of `page` in `lang`, or `None`."""
        entry = self.pages.get(page, {}).get(lang)
        if entry is None or entry.source == _NO_ENTRY:
            return None
        return entry

    def set(
        self, page: str, lang: str, entry: ManifestEntry, texts: dict[str, str] | None = None
    ) -> None:
        """Record `entry` for `page` in `lang`, with the English text of its sections.

        Args:
            page: The English page (relative to docs/).
            lang: The language code.
            entry: The entry.
            texts: Section hash -> English section text, for the hashes of `entry`.
        """
        self.pages.setdefault(page, {})[lang] = entry
        self.english.update(texts or {})

    def begin(
        self, page: str, lang: str, entry: ManifestEntry, texts: dict[str, str] | None = None
    ) -> None:
        """Record `entry` as pending for `page` in `lang` (phase one of a write)."""
        current = self.pages.get(page, {}).get(lang)
        holder = current or ManifestEntry(source=_NO_ENTRY, sections=[])
        holder.pending = entry
        self.pages.setdefault(page, {})[lang] = holder
        self.english.update(texts or {})

    def commit(self, page: str, lang: str) -> None:
        """Make the pending entry of `page` in `lang` the entry (phase two of a write)."""
        holder = self.pages[page][lang]
        if holder.pending is not None:
            self.pages[page][lang] = holder.pending

    def resolve(self, docs: Path) -> list[str]:
        """Settle the pending entries a killed run left; return the `lang/page` keys settled.

        A pending entry whose `translation` hash is the file's on disk is committed (the file
        was written); otherwise it is dropped (the file was not written).
        """
        settled: list[str] = []
        for page, langs in list(self.pages.items()):
            for lang, holder in list(langs.items()):
                if holder.pending is None:
                    continue
                target = docs / lang / page
                on_disk = text_hash(target.read_text(encoding="utf-8")) if target.exists() else None
                if on_disk is not None and on_disk == holder.pending.translation:
                    langs[lang] = holder.pending
                elif holder.source == _NO_ENTRY:
                    del langs[lang]
                else:
                    holder.pending = None
                settled.append(f"{lang}/{page}")
            if not langs:
                del self.pages[page]
        return settled

    def remove(self, page: str, lang: str) -> None:
        """Forget `page` in `lang` (and the page when no language is left)."""
        langs = self.pages.get(page)
        if langs is not None:
            langs.pop(lang, None)
            if not langs:
                del self.pages[page]

    def _referenced(self) -> frozenset[str]:
        used: list[str] = []
        for langs in self.pages.values():
            for entry in langs.values():
                used += entry.sections
                if entry.pending is not None:
                    used += entry.pending.sections
        return frozenset(used)

    def dumps(self) -> str:
        """Return the manifest as stable, sorted JSON text (unreferenced English dropped)."""
        pages = {
            page: {lang: e.to_json() for lang, e in sorted(langs.items())}
            for page, langs in sorted(self.pages.items())
        }
        used = self._referenced()
        english = {h: t for h, t in sorted(self.english.items()) if h in used}
        data = {"version": _VERSION, "pages": pages, "english": english}
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"

    def save(self, path: Path) -> None:
        """Write the manifest atomically (only when its content changed)."""
        text = self.dumps()
        if path.exists() and path.read_text(encoding="utf-8") == text:
            return
        atomic_write_text(path, text)
