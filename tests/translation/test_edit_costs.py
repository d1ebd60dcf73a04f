"""Edits cost what they change: whitespace, code, deleted paragraphs, moved sections and moved
pages keep their translations without a model call; a shared reply missing one language asks
only that language again."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from translation_support import SCRIPT, RunSite

from docs_i18n.manifest import Manifest
from echo_translator import EchoTranslator
from turnstore.testing import FakeOpenAIServer, RecordedRequest, text_response

PAGE = "guide/backends.md"
LANGS = ["ja", "ko", "zh"]


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _edit(site: Path, old: str, new: str, page: str = PAGE) -> None:
    path = site / "docs" / page
    text = _read(path)
    assert old in text, old
    _write(path, text.replace(old, new, 1))


async def _rerun_costs_nothing(echo: EchoTranslator, run_site: RunSite) -> None:
    echo.calls.clear()
    echo.reviews.clear()
    outcome = await run_site()
    assert outcome.code == 0, outcome.output
    assert echo.calls == []
    assert echo.reviews == []


def _check(site: Path) -> None:
    checked = subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(site), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


async def test_whitespace_edits_cost_no_call(
    site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    assert (await run_site()).code == 0
    before = {lang: _read(site / "docs" / lang / PAGE) for lang in LANGS}
    _edit(site, "## SQLite\n", "## SQLite\n\n\n")  # blank lines at the start of a section
    _edit(site, "when the turn ends.\n", "when the turn ends.\n\n\n")  # and at its end
    _edit(site, "at your server:", "at your server:   ")  # trailing spaces
    _edit(site, "\n\n    The key expires", "\n\n\n    The key expires")  # an extra blank line
    await _rerun_costs_nothing(echo, run_site)
    for lang in LANGS:
        assert _read(site / "docs" / lang / PAGE) == before[lang]
    await _rerun_costs_nothing(echo, run_site)
    _check(site)


async def test_a_code_only_edit_costs_no_call_and_brings_the_new_code(
    site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    assert (await run_site()).code == 0
    _edit(site, "ttl=3600)", "ttl=7200)")  # inside a code block
    _edit(site, "`get_items()` once", "`get_items(limit=None)` once")  # an inline code span
    await _rerun_costs_nothing(echo, run_site)
    for lang in LANGS:
        text = _read(site / "docs" / lang / PAGE)
        assert "ttl=7200)" in text
        assert "ttl=3600" not in text
        assert "`get_items(limit=None)`" in text
    await _rerun_costs_nothing(echo, run_site)
    _check(site)


WAL_NOTE = """??? note "Why WAL mode?"
    With WAL, readers never block the writer. The session enables it once:

    ```sql
    PRAGMA journal_mode=WAL;
    ```

"""


async def test_deleting_paragraphs_costs_no_call_and_keeps_a_hand_fix(
    site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    assert (await run_site()).code == 0
    target = site / "docs" / "ko" / PAGE
    text = _read(target)
    start = text.index("{#sqlite}")
    fixed = text[:start] + text[start:].replace("there어.", "거기서.", 1)  # a hand fix
    assert fixed != text
    _write(target, fixed)
    _edit(site, WAL_NOTE, "")
    await _rerun_costs_nothing(echo, run_site)
    for lang in LANGS:
        translated = _read(site / "docs" / lang / PAGE)
        assert "PRAGMA journal_mode=WAL;" not in translated
        assert "Why WAL mode?" not in translated
        assert "conversations.db" in translated  # the rest of the section stays
    assert "거기서." in _read(target)[start:]
    _check(site)


def _move_to_end(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.index("\n## ", start + 1) + 1
    section = text[start:end]
    return text[:start] + text[end:].rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n"


async def test_sections_cut_and_pasted_cost_no_call(
    site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    assert (await run_site()).code == 0
    english = site / "docs" / PAGE
    # the first "Example" moves after "Limits": the moved section and the one that becomes
    # the last change only in their trailing blank lines, and the headings' ids swap
    _write(english, _move_to_end(_read(english), "## Example\n\nThe first"))
    await _rerun_costs_nothing(echo, run_site)
    for lang in LANGS:
        translated = _read(site / "docs" / lang / PAGE)
        first = translated.index("{#example}")
        second = translated.index("{#example_1}")
        limits = translated.index("{#history-limits")
        assert first < limits < second
        assert "suffix" in translated[first:limits]
        assert "first" in translated[second:]
        assert not translated.endswith("\n\n")
    await _rerun_costs_nothing(echo, run_site)
    _check(site)


async def test_a_page_moved_and_edited_keeps_its_translations_and_hand_fixes(
    site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    assert (await run_site()).code == 0
    old = site / "docs" / "ko" / PAGE
    fixed = _read(old).replace("그 ", "해당 ", 1)
    _write(old, fixed)  # a hand fix, which must move too
    english = site / "docs" / PAGE
    text = _read(english).replace("The second example, with", "The second example, now with")
    _write(site / "docs" / "guide" / "storage.md", text)
    english.unlink()
    echo.calls.clear()
    outcome = await run_site()
    assert outcome.code == 0, outcome.output
    assert sorted(echo.calls) == [(lang, "guide/storage.md", [5]) for lang in LANGS]
    for lang in LANGS:
        assert not (site / "docs" / lang / PAGE).exists()
        assert (site / "docs" / lang / "guide" / "storage.md").exists()
    assert _read(site / "docs" / "ko" / "guide" / "storage.md").count("해당 ") == 1
    manifest = Manifest.load(site / "i18n" / "manifest.json")
    assert PAGE not in manifest.pages
    assert sorted(manifest.pages["guide/storage.md"]) == LANGS
    assert f"moved ko/{PAGE} -> ko/guide/storage.md" in outcome.output
    await _rerun_costs_nothing(echo, run_site)
    _check(site)


def _without(lang: str, echo: EchoTranslator) -> Any:
    """The echo translator, whose replies for several languages lack `lang`'s fields."""

    def _route(request: RecordedRequest) -> Any:
        reply = echo(request)
        fmt = (request.body.get("text") or {}).get("format", {})
        if fmt.get("name") != "translation_batch" or not isinstance(reply, dict):
            return reply
        fields = json.loads(reply["output"][0]["content"][0]["text"])
        kept = {name: value for name, value in fields.items() if not name.startswith(lang)}
        return text_response(json.dumps(kept, ensure_ascii=False))

    return _route


async def test_a_shared_reply_missing_one_language_asks_only_that_language_again(
    site: Path, run_site: RunSite, fake_openai: FakeOpenAIServer
) -> None:
    echo = EchoTranslator()
    fake_openai.route("POST", "/v1/responses", _without("ko", echo))
    assert (await run_site()).code == 0
    _edit(site, "Install the extra and point", "Install the redis extra, point")
    echo.calls.clear()
    echo.batches.clear()
    outcome = await run_site()
    assert outcome.code == 0, outcome.output
    assert echo.batches == [(LANGS, PAGE, [3])]
    # ja and zh use the shared reply; only ko asks again, alone
    assert echo.calls == [(lang, PAGE, [3]) for lang in LANGS] + [("ko", PAGE, [3])]
    assert "the reply has no text for ko; asking it alone" in outcome.output
    for lang in LANGS:
        assert re.search(r"redis", _read(site / "docs" / lang / PAGE))
