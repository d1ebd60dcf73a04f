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

Optional per-section records: `glossary` hashes, per section, the glossary entries (rendering
and forbidden variants) of the terms the section's English uses, as they were when it was
translated, so that a glossary change retranslates exactly the sections it touches;
`translated` hashes each section of the translation as recorded, so that a section edited by
hand is known (it is kept, and sent as the text to keep when its English changes); `split` maps
the hash of a translated section whose paragraph split differs from its English's, and which a
maintainer vouched for (`--adopt --section`), to the hash of the English section it was vouched
for: the checks accept that exact text against that exact English.

Two runs may share one checkout (`--lang ja` and `--lang ko` at once). `save` therefore takes an
exclusive lock (`fcntl.flock` on `manifest.json.lock` beside the file), reads the file again and
applies only this run's changes (the entries it set or removed since it read the file) before it
writes, so neither run drops the other's entries.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .atomic import atomic_write_text

__all__ = ["Manifest", "ManifestEntry", "locked", "text_hash"]

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
        glossary: Per section, the hash of the glossary entries its English used when it was
            translated (`glossary_digest`), or `None` when not recorded.
        translated: Per section, the hash of its translated text as recorded, or `None`.
        split: Translated section hash -> the English section hash its paragraph split was
            vouched for (`--adopt --section`), or `None` when there is none.
    """

    source: str
    sections: list[str]
    translation: str | None = None
    pending: ManifestEntry | None = None
    glossary: list[str] | None = None
    translated: list[str] | None = None
    split: dict[str, str] | None = None

    def vouched_splits(self, translated: list[str] | None, english: list[str]) -> set[int]:
        """The sections whose text (`translated`, per section) has a paragraph split vouched
        for against their English (`english`, per section) or the English recorded for them."""
        if not self.split or translated is None or len(translated) != len(english):
            return set()
        recorded = self.sections if len(self.sections) == len(english) else english
        return {
            n
            for n, digest in enumerate(translated)
            if self.split.get(digest) in (english[n], recorded[n])
        }

    def carry_splits(self, before: ManifestEntry | None) -> None:
        """Keep the vouched paragraph splits of `before` that this entry's sections still have
        (the same translated text for the same English)."""
        if before is None or not before.split or self.translated is None:
            return
        kept = {
            digest: before.split[digest]
            for n, digest in enumerate(self.translated)
            if n < len(self.sections) and before.split.get(digest) == self.sections[n]
        }
        self.split = kept or None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"source": self.source, "sections": self.sections}
        if self.translation is not None:
            data["translation"] = self.translation
        if self.glossary is not None:
            data["glossary"] = self.glossary
        if self.translated is not None:
            data["translated"] = self.translated
        if self.split:
            data["split"] = dict(sorted(self.split.items()))
        if self.pending is not None:
            data["pending"] = self.pending.to_json()
        return data

    @classmethod
    def from_json(cls, data: Any, where: str = "entry") -> ManifestEntry:
        """Read one entry, checking its shape.

        Raises:
            ValueError: A key is missing or of the wrong type; the message names it.
        """
        if not isinstance(data, dict):
            raise ValueError(f"{where} must be an object, not {type(data).__name__}")
        if not isinstance(data.get("source"), str):
            raise ValueError(f'{where}["source"] must be a string (the English page\'s hash)')
        for key in ("translation",):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise ValueError(f'{where}["{key}"] must be a string')
        lists: dict[str, list[str] | None] = {}
        for key in ("sections", "glossary", "translated"):
            value = data.get(key)
            if value is None and key != "sections":
                lists[key] = None
                continue
            if not isinstance(value, list) or not all(isinstance(h, str) for h in value):
                raise ValueError(
                    f'{where}["{key}"] must be a list of hashes (one per section), '
                    f"not {json.dumps(value)[:60]}"
                )
            lists[key] = list(value)
        split = data.get("split")
        if split is not None and not (
            isinstance(split, dict) and all(isinstance(h, str) for h in [*split, *split.values()])
        ):
            raise ValueError(
                f'{where}["split"] must map translated section hashes to English section hashes'
            )
        pending = data.get("pending")
        return cls(
            source=data["source"],
            sections=lists["sections"] or [],
            translation=data.get("translation"),
            pending=cls.from_json(pending, f'{where}["pending"]') if pending is not None else None,
            glossary=lists["glossary"],
            translated=lists["translated"],
            split=dict(split) if split else None,
        )


_NO_ENTRY = "none"
"""The `source` of a pending entry's placeholder when there was no entry before."""


@dataclass
class Manifest:
    """The manifest in memory. `pages[path][lang]` is a `ManifestEntry`."""

    pages: dict[str, dict[str, ManifestEntry]] = field(default_factory=dict)
    english: dict[str, str] = field(default_factory=dict)
    _base: dict[tuple[str, str], str] = field(default_factory=dict, repr=False, compare=False)
    _disk: str | None = field(default=None, repr=False, compare=False)
    """The file's text as this manifest last read or wrote it (`save` needs not parse it
    again while it is still that text)."""

    @classmethod
    def load(cls, path: Path) -> Manifest:
        """Read the manifest; a missing file is an empty manifest.

        Raises:
            ValueError: The file is not a manifest of a known version, or an entry has the
                wrong shape (the message names the file and the key).
        """
        if not path.exists():
            return cls()
        text = path.read_text(encoding="utf-8")
        manifest = cls.loads(text, where=str(path))
        manifest._base = manifest._snapshot()
        manifest._disk = text
        return manifest

    def _snapshot(self) -> dict[tuple[str, str], str]:
        return {
            (page, lang): json.dumps(entry.to_json(), sort_keys=True)
            for page, langs in self.pages.items()
            for lang, entry in langs.items()
        }

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
        raw_pages = data.get("pages", {})
        if not isinstance(raw_pages, dict):
            raise ValueError(
                f'{where}: malformed: "pages" must be an object (page -> language -> entry), '
                f"not {type(raw_pages).__name__}; restore the file from git"
            )
        for page, langs in raw_pages.items():
            if not isinstance(langs, dict):
                raise ValueError(
                    f'{where}: malformed: pages["{page}"] must be an object (language -> entry); '
                    "restore the file from git"
                )
            try:
                pages[page] = {
                    lang: ManifestEntry.from_json(e, f'pages["{page}"]["{lang}"]')
                    for lang, e in langs.items()
                }
            except ValueError as exc:
                raise ValueError(
                    f"{where}: malformed entry: {exc}; restore the file from git"
                ) from exc
        raw_english = data.get("english", {})
        if not isinstance(raw_english, dict) or not all(
            isinstance(v, str) for v in raw_english.values()
        ):
            raise ValueError(
                f'{where}: malformed: "english" must map section hashes to English text'
            )
        return cls(pages=pages, english=dict(raw_english))

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
        """Write the manifest atomically (only when its content changed), merged with the file.

        Under an exclusive lock on `path` + `.lock`, the file is read again and this manifest's
        changes since it was read (entries set, replaced or removed) are applied to it, so a
        run for another language that saved in between keeps its entries. This manifest then
        holds the merged state. While the file is still the text this manifest last read or
        wrote, no other run saved since: it holds what this manifest held then, so this
        manifest is already the merged state and the file is not parsed again.
        """
        with locked(path):
            disk = path.read_text(encoding="utf-8") if path.exists() else None
            if disk is None or disk != self._disk:
                on_disk = Manifest() if disk is None else Manifest.loads(disk, where=str(path))
                self._merge_into(on_disk)
            text = self.dumps()
            if disk != text:
                atomic_write_text(path, text)
            self._base = self._snapshot()
            self._disk = text

    def _merge_into(self, on_disk: Manifest) -> None:
        """Apply this manifest's changes since it was read to `on_disk` (the file as it is
        now), and hold the result."""
        mine = self._snapshot()
        for key in set(self._base) | set(mine):
            if self._base.get(key) == mine.get(key):
                continue
            page, lang = key
            if key in mine:
                on_disk.pages.setdefault(page, {})[lang] = self.pages[page][lang]
            else:
                on_disk.remove(page, lang)
        on_disk.english.update(self.english)
        self.pages, self.english = on_disk.pages, on_disk.english


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive `flock` on the lock file beside `path` (created when missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name(path.name + ".lock")
    with lock.open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
