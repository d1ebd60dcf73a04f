"""The site's "outdated translation" notice, computed at build time from the manifest: a real
strict MkDocs build (i18n plugin, the hook from docs_hooks/) of a small site."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from translation_support import REPO

MKDOCS_YML = """\
site_name: outdated
site_url: http://127.0.0.1:8000/
theme:
  name: material
markdown_extensions:
  - attr_list
  - toc
hooks:
  - {hook}
plugins:
  - i18n:
      docs_structure: folder
      fallback_to_default: true
      languages:
        - {{locale: en, name: English, default: true, build: true}}
        - {{locale: ja, name: 日本語, build: true}}
        - {{locale: ko, name: 한국어, build: true}}
        - {{locale: zh, name: 中文, build: true}}
nav:
  - Home: index.md
  - Guide: guide.md
"""


def _hash(text: str) -> str:
    return f"sha256:{hashlib.sha256(text.encode('utf-8')).hexdigest()[:32]}"


def test_only_translations_older_than_their_english_get_the_notice(tmp_path: Path) -> None:
    hook = REPO / "docs_hooks" / "outdated_notice.py"
    (tmp_path / "mkdocs.yml").write_text(MKDOCS_YML.format(hook=hook), encoding="utf-8")
    docs = tmp_path / "docs"
    pages = {"index.md": "# Home\n\nHello.\n", "guide.md": "# Guide\n\nRead this.\n"}
    for lang in ("", "ja", "ko", "zh"):
        for name, text in pages.items():
            path = docs / lang / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text.replace("Home", f"Home {lang}") if lang else text, "utf-8")
    old_guide = "# Guide\n\nRead that.\n"
    entries: dict[str, dict[str, dict[str, object]]] = {
        "guide.md": {
            "ja": {"source": _hash(old_guide), "sections": []},  # the English changed since
            "ko": {"source": _hash(pages["guide.md"]), "sections": []},
        },  # zh/guide.md has no entry: nothing says what it came from
    }
    entries["index.md"] = {
        "ja": {"source": _hash(pages["index.md"]), "sections": []},
        "ko": {"source": _hash(pages["index.md"]), "sections": []},
    }
    (tmp_path / "i18n").mkdir()
    (tmp_path / "i18n" / "manifest.json").write_text(
        json.dumps({"version": 2, "pages": entries, "english": {}}), encoding="utf-8"
    )
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    site = tmp_path / "site"

    def _html(path: str) -> str:
        return (site / path / "index.html").read_text(encoding="utf-8")

    ja_guide = _html("ja/guide")
    assert 'class="admonition warning outdated-notice" lang="ja"' in ja_guide
    assert "翻訳が古くなっています" in ja_guide
    assert 'href="../../guide/" hreflang="en"' in ja_guide
    for current in ("ko/guide", "zh/guide", "ja", "ko", "guide", ""):
        assert "outdated-notice" not in _html(current), current
