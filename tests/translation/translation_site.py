"""A copy of the tool in a temporary repository, run as a command against the fake server.

Its own module (not conftest.py): `from conftest import ...` finds whichever conftest.py was
imported first when several test folders run together."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docs_i18n.model import LANGUAGES, _mask_like
from docs_i18n.pages import mask, split_page
from turnstore.testing import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"
LANGS = ("ja", "ko", "zh")


def fixture_pairs() -> dict[str, str]:
    """Every fixture section: "Language\\nmasked English" -> its masked translation."""
    pairs = {}
    for case in FIXTURES.iterdir():
        if not case.is_dir():
            continue
        english = split_page((case / "en.md").read_text(encoding="utf-8"))
        for lang in LANGS:
            page = split_page((case / f"{lang}.md").read_text(encoding="utf-8"))
            for en, tr in zip(english.sections, page.sections, strict=False):
                source = mask(en)
                pairs[f"{LANGUAGES[lang]}\n{source.text.strip()}"] = _mask_like(tr, source).strip()
    return pairs


@dataclass
class Ran:
    """What a run of the command line returned and printed."""

    returncode: int
    stdout: str
    stderr: str


class Site:
    """A repository with the tool, the real prompts, a test glossary and fixture pages."""

    def __init__(self, root: Path, server: FakeOpenAIServer) -> None:
        self.root, self.server = root, server
        shutil.copytree(
            REPO / "scripts", root / "scripts", ignore=shutil.ignore_patterns("__pycache__")
        )
        shutil.copytree(REPO / "docs" / "i18n" / "prompts", root / "docs" / "i18n" / "prompts")
        shutil.copy(FIXTURES / "glossary.yml", root / "docs" / "i18n" / "glossary.yml")

    def add(self, case: str, page: str = "page.md", translations: bool = True) -> None:
        """Copy a fixture's English page to docs/`page`, and its translations."""
        shutil.copy(FIXTURES / case / "en.md", self.root / "docs" / page)
        for lang in LANGS if translations else ():
            (self.root / "docs" / lang).mkdir(exist_ok=True)
            shutil.copy(FIXTURES / case / f"{lang}.md", self.root / "docs" / lang / page)

    def run(self, *args: str) -> Ran:
        """Run the command line in this process with `args` against the fake server."""
        import translate_docs

        out, err = io.StringIO(), io.StringIO()
        saved = {
            k: os.environ.get(k) for k in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL")
        }
        os.environ.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=self.server.base_url)
        os.environ.pop("OPENAI_MODEL", None)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = translate_docs.main(list(args), root=self.root)
                except SystemExit as exc:
                    code = int(exc.code or 0)
        finally:
            for key, value in saved.items():
                os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)
        return Ran(code, out.getvalue(), err.getvalue())

    def process(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        """Run scripts/translate_docs.py as a process with `args` against the fake server."""
        environ = {
            **os.environ,
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": self.server.base_url,
        }
        environ.pop("OPENAI_MODEL", None)
        environ.update(env)
        return subprocess.run(
            [sys.executable, str(self.root / "scripts" / "translate_docs.py"), *args],
            capture_output=True,
            text=True,
            env=environ,
            timeout=120,
            check=False,
        )

    def path(self, name: str) -> Path:
        """A file of the repository, e.g. `docs/ja/page.md`."""
        return self.root / name

    def read(self, name: str) -> str:
        """The text of a file of the repository."""
        return self.path(name).read_text(encoding="utf-8")

    def write(self, name: str, text: str) -> None:
        """Write a file of the repository."""
        self.path(name).parent.mkdir(parents=True, exist_ok=True)
        self.path(name).write_text(text, encoding="utf-8")

    def edit(self, name: str, old: str, new: str) -> None:
        """Replace `old` (which must occur) by `new` in a file."""
        text = self.read(name)
        assert old in text, f"{old!r} not in {name}"
        self.write(name, text.replace(old, new, 1))

    def manifest(self) -> dict[str, Any]:
        """The manifest as JSON."""
        return json.loads(self.read("docs/i18n/manifest.json"))

    def requests(self) -> list[dict[str, Any]]:
        """The bodies of the translation requests the server received."""
        return [r.body for r in self.server.requests_to("/v1/responses")]
