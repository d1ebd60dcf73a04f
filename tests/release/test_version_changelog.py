"""One version, written once; the changelog has an entry for it."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import turnstore

ROOT = Path(__file__).resolve().parents[2]


def test_the_version_is_written_once_and_read_by_the_metadata() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"]
    assert pyproject["project"]["dynamic"] == ["version"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "turnstore.__version__"
    }
    assert re.fullmatch(r"\d+\.\d+\.\d+", turnstore.__version__)
    assert importlib.metadata.version("turnstore") == turnstore.__version__
    literal = f'"{turnstore.__version__}"'
    holders = [
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "src").rglob("*.py")
        if literal in p.read_text(encoding="utf-8")
    ]
    assert holders == ["src/turnstore/__init__.py"]


def test_the_changelog_follows_keep_a_changelog_and_has_this_version() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog\n")
    assert "Keep a Changelog" in text
    releases = re.findall(r"^## \[([^\]]+)\] - (\S+)$", text, re.M)
    assert releases[0][0] == turnstore.__version__
    assert releases[-1] == ("0.1.0", "2026-11-29")
    for version, date in releases:
        assert date == "Unreleased" or re.fullmatch(r"\d{4}-\d{2}-\d{2}", date)
        assert re.search(rf"^\[{re.escape(version)}\]: https://", text, re.M), version
    allowed = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
    assert set(re.findall(r"^### (.+)$", text, re.M)) <= allowed
