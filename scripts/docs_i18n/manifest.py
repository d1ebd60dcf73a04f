"""The committed manifest `i18n/manifest.json`: which English text each translation came from.

Shape (keys sorted, so diffs stay small)::

    {
      "version": 1,
      "pages": {
        "index.md": {
          "ja": {"source": "sha256:...", "sections": ["sha256:...", "sha256:..."]}
        }
      }
    }

`source` hashes the whole English page (front matter included); `sections` hashes each English
section (preamble first, then one per `## ` heading) in order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .atomic import atomic_write_text

__all__ = ["Manifest", "ManifestEntry"]

_VERSION = 1


@dataclass
class ManifestEntry:
    """What one translation (page x language) was made from."""

    source: str
    sections: list[str]


@dataclass
class Manifest:
    """The manifest in memory. `pages[path][lang]` is a `ManifestEntry`."""

    pages: dict[str, dict[str, ManifestEntry]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Manifest:
        """Read the manifest; a missing file is an empty manifest.

        Raises:
            ValueError: The file is not a manifest of this version.
        """
        if not path.exists():
            return cls()
        return cls.loads(path.read_text(encoding="utf-8"), where=str(path))

    @classmethod
    def loads(cls, text: str, *, where: str = "manifest") -> Manifest:
        """Parse manifest JSON text.

        Raises:
            ValueError: The text is not a manifest of this version.
        """
        try:
            data: Any = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{where} is not valid JSON: {exc}") from exc
        if not isinstance(data, dict) or data.get("version") != _VERSION:
            raise ValueError(f'{where}: expected a manifest with "version": {_VERSION}')
        pages: dict[str, dict[str, ManifestEntry]] = {}
        try:
            for page, langs in (data.get("pages") or {}).items():
                pages[page] = {
                    lang: ManifestEntry(
                        source=str(e["source"]), sections=[str(h) for h in e["sections"]]
                    )
                    for lang, e in langs.items()
                }
        except (AttributeError, KeyError, TypeError) as exc:
            raise ValueError(f"{where}: malformed page entry ({exc!r})") from exc
        return cls(pages=pages)

    def get(self, page: str, lang: str) -> ManifestEntry | None:
        """Return the entry of `page` in `lang`, or `None`."""
        return self.pages.get(page, {}).get(lang)

    def set(self, page: str, lang: str, entry: ManifestEntry) -> None:
        """Record `entry` for `page` in `lang`."""
        self.pages.setdefault(page, {})[lang] = entry

    def remove(self, page: str, lang: str) -> None:
        """Forget `page` in `lang` (and the page when no language is left)."""
        langs = self.pages.get(page)
        if langs is not None:
            langs.pop(lang, None)
            if not langs:
                del self.pages[page]

    def dumps(self) -> str:
        """Return the manifest as stable, sorted JSON text."""
        pages = {
            page: {
                lang: {"source": e.source, "sections": e.sections}
                for lang, e in sorted(langs.items())
            }
            for page, langs in sorted(self.pages.items())
        }
        return (
            json.dumps({"version": _VERSION, "pages": pages}, indent=2, ensure_ascii=False) + "\n"
        )

    def save(self, path: Path) -> None:
        """Write the manifest atomically (only when its content changed)."""
        text = self.dumps()
        if path.exists() and path.read_text(encoding="utf-8") == text:
            return
        atomic_write_text(path, text)
