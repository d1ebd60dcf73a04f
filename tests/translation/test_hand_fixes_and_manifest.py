"""Hand fixes that survive, glossary changes that retranslate only what they touch, moved pages,
heading ids, and the manifest shared by two runs or written by hand."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from translation_support import SCRIPT, InProcess, RunSite

from docs_i18n.manifest import Manifest
from echo_translator import EchoTranslator
from turnstore.testing import FakeOpenAIServer

PAGE = "guide/backends.md"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _redis_section(text: str) -> str:
    start = text.index("{#redis}")
    return text[start : text.index("{#example}", start)]


def _task_messages(server: FakeOpenAIServer, first: int) -> list[str]:
    return [
        r.body["input"][0]["content"]
        for r in server.requests_to("/v1/responses")[first:]
        if "text" not in r.body  # not a review
    ]


async def test_a_hand_fix_survives_reruns_edits_elsewhere_and_whitespace_edits(
    site: Path,
    echo: EchoTranslator,
    run_site: RunSite,
    fake_openai: FakeOpenAIServer,
    run_main: InProcess,
) -> None:
    assert (await run_site(languages=["ko"])).code == 0
    target = site / "docs" / "ko" / PAGE
    english = site / "docs" / PAGE
    text = _read(target)
    start = text.index("{#redis}")
    fixed = text[:start] + text[start:].replace("그 ", "해당 ", 1)  # a native speaker's fix
    assert fixed != text
    _write(target, fixed)

    echo.calls.clear()
    assert (await run_site(languages=["ko"])).code == 0
    assert echo.calls == []
    assert _read(target) == fixed
    checked = run_main("--check", "--lang", "ko")
    assert checked.returncode == 0, checked.stdout
    assert (
        f"edited    docs/ko/{PAGE}: edited by hand (section(s) 3), not adopted: run --adopt "
        f"--lang ko --file docs/{PAGE}"
    ) in checked.stdout
    assert "stale" not in checked.stdout

    # an English edit in another section
    _write(english, _read(english).replace("saved when the turn ends", "saved once the turn ends"))
    assert (await run_site(languages=["ko"])).code == 0
    assert echo.calls == [("ko", PAGE, [1])]
    assert "해당 " in _redis_section(_read(target))

    # a whitespace-only edit of the fixed section's English: no call, the fix stays
    echo.calls.clear()
    _write(english, _read(english).replace("extra and point the", "extra and point\nthe"))
    assert (await run_site(languages=["ko"])).code == 0
    assert echo.calls == []
    assert "해당 " in _redis_section(_read(target))

    # another paragraph of the fixed section changes: the fixed paragraph is kept
    _write(english, _read(english).replace("after the last write", "after its last write"))
    first = len(fake_openai.requests_to("/v1/responses"))
    assert (await run_site(languages=["ko"])).code == 0
    assert echo.calls == [("ko", PAGE, [3])]
    assert "해당 " in _redis_section(_read(target))
    # the section's hand-fixed text went with the request as the translation to keep
    task = _task_messages(fake_openai, first)[0]
    kept = task.split("<translation_to_keep>\n")[1].split("</translation_to_keep>")[0]
    assert "<!-- section 3 -->" in kept
    assert "해당 " in kept


async def test_check_names_a_hand_edit_never_adopted_until_it_is_adopted(
    site: Path, echo: EchoTranslator, run_site: RunSite, run_main: InProcess
) -> None:
    assert (await run_site(languages=["ja"])).code == 0
    target = site / "docs" / "ja" / PAGE
    text = _read(target)
    _write(target, text.replace("その", "この", 1))
    checked = run_main("--check", "--lang", "ja")
    assert checked.returncode == 0
    assert "edited by hand" in checked.stdout
    assert "not adopted: run --adopt" in checked.stdout
    adopted = run_main("--adopt", "--lang", "ja", "--file", PAGE)
    assert adopted.returncode == 0, adopted.stdout
    checked = run_main("--check", "--lang", "ja")
    assert checked.returncode == 0
    assert "edited by hand" not in checked.stdout


async def test_a_glossary_change_retranslates_only_the_sections_using_the_term(
    site: Path,
    echo: EchoTranslator,
    run_site: RunSite,
    fake_openai: FakeOpenAIServer,
    run_main: InProcess,
) -> None:
    assert (await run_site()).code == 0
    glossary = site / "i18n" / "glossary.yml"
    text = _read(glossary)
    # a new Japanese term: only the SQLite section of backends.md says "file systems"
    _write(
        glossary,
        text.replace(
            "    session: セッション\n",
            "    session: セッション\n    file system: ファイルシステム\n",
            1,
        ),
    )
    checked = run_main("--check")
    assert checked.returncode == 1
    assert (
        f"stale     docs/ja/{PAGE}: glossary entries its English uses changed (section(s) 2)"
        in checked.stdout
    )
    echo.calls.clear()
    first = len(fake_openai.requests_to("/v1/responses"))
    assert (await run_site()).code == 0
    assert echo.calls == [("ja", PAGE, [2])]
    assert "ファイルシステム" in _read(site / "docs" / "ja" / PAGE)
    task = _task_messages(fake_openai, first)[0]
    assert "<translation_to_keep>" in task
    assert run_main("--check").returncode == 0
    # a changed rendering touches the same section, in that language only
    _write(
        glossary,
        _read(glossary).replace("file system: ファイルシステム", "file system: ファイル システム"),
    )
    echo.calls.clear()
    assert (await run_site()).code == 0
    assert echo.calls == [("ja", PAGE, [2])]
    echo.calls.clear()
    assert (await run_site()).code == 0
    assert echo.calls == []


async def test_a_moved_english_page_moves_its_translations(
    site: Path, echo: EchoTranslator, run_site: RunSite, run_main: InProcess
) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(site), *args], check=True, capture_output=True)

    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "docs")
    assert (await run_site(languages=["ko"])).code == 0
    old = site / "docs" / "ko" / "guide" / "custom.md"
    fixed = _read(old).replace("그 ", "해당 ", 1)
    _write(old, fixed)  # a hand fix, which must move too
    git("mv", "docs/guide/custom.md", "docs/guide/extending.md")
    before = run_main("--check", "--lang", "ko")
    assert before.returncode == 1
    assert (
        "moved     docs/ko/guide/custom.md -> docs/ko/guide/extending.md: its English page moved"
        in before.stdout
    )
    assert "missing" not in before.stdout
    assert "orphaned" not in before.stdout
    echo.calls.clear()
    outcome = await run_site(languages=["ko"])
    assert outcome.code == 0, outcome.output
    assert echo.calls == []
    assert not old.exists()
    assert _read(site / "docs" / "ko" / "guide" / "extending.md") == fixed
    manifest = Manifest.load(site / "i18n" / "manifest.json")
    assert "guide/custom.md" not in manifest.pages
    assert "ko" in manifest.pages["guide/extending.md"]
    assert "moved ko/guide/custom.md -> ko/guide/extending.md" in outcome.output
    assert "stale" not in run_main("--check", "--lang", "ko").stdout


ANCHORS = """# Anchors

Intro text here.

<!--
## Usage
-->

## Usage

Use it well.

Other part
----------

More text here.
"""


async def test_commented_and_setext_headings_get_the_english_ids(
    site: Path, echo: EchoTranslator, run_site: RunSite, run_main: InProcess
) -> None:
    _write(site / "docs" / "anchors.md", ANCHORS)
    assert (await run_site(languages=["ja"], files=["anchors.md"])).code == 0
    translated = _read(site / "docs" / "ja" / "anchors.md")
    assert re.search(r"(?m)^## \S.* \{#usage\}$", translated)
    assert re.search(r"(?m)^\S.* \{#other-part\}\n-+$", translated)
    assert "usage_1" not in translated
    assert run_main("--check", "--lang", "ja", "--file", "anchors.md").returncode == 0
    # --check computes the ids the same way: a wrong id on the setext heading is a finding
    _write(
        site / "docs" / "ja" / "anchors.md", translated.replace("{#other-part}", "{#other-part_1}")
    )
    checked = run_main("--check", "--lang", "ja", "--file", "anchors.md")
    assert checked.returncode == 1
    assert "'other-part_1' should be the English id 'other-part'" in checked.stdout


def test_two_runs_at_once_keep_both_languages(
    site: Path, fake_openai: FakeOpenAIServer, run_main: InProcess
) -> None:
    EchoTranslator(latency=0.3).install(fake_openai)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")},
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": fake_openai.base_url,
        "CI": "true",
    }
    runs = [
        subprocess.Popen(
            [sys.executable, str(SCRIPT), "--root", str(site), "--lang", lang],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for lang in ("ja", "ko")
    ]
    for run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, out + err
    manifest = Manifest.load(site / "i18n" / "manifest.json")
    for page in ("index.md", "guide/backends.md", "guide/custom.md"):
        assert sorted(manifest.pages[page]) == ["ja", "ko"]
    checked = run_main("--check", "--lang", "ja", "--lang", "ko")
    assert checked.returncode == 0, checked.stdout


def test_a_manifest_of_the_wrong_shape_is_a_clear_error(site: Path, run_main: InProcess) -> None:
    path = site / "i18n" / "manifest.json"
    _write(path, json.dumps({"version": 2, "pages": []}))
    result = run_main("--check")
    assert result.returncode == 2
    assert str(path) in result.stderr
    assert '"pages" must be an object' in result.stderr
    entry = {"source": "sha256:abc", "sections": "sha256:abc"}
    _write(path, json.dumps({"version": 2, "pages": {"index.md": {"ja": entry}}}))
    result = run_main("--check")
    assert result.returncode == 2
    assert str(path) in result.stderr
    assert 'pages["index.md"]["ja"]["sections"] must be a list of hashes' in result.stderr


async def _split_by_hand(run_site: RunSite, site: Path) -> tuple[Path, str]:
    """Translate the page into Korean, then split the paragraph of `#history-limits` in two,
    as a native speaker fixing the text would; returns the translation and its split text."""
    assert (await run_site(languages=["ko"])).code == 0
    target = site / "docs" / "ko" / PAGE
    text = _read(target)
    start = text.index("{#history-limits")
    paragraph = text.index("\n\n", start) + 2
    line_end = text.index("\n", paragraph)
    fixed = text[:line_end] + "\n\n해당" + text[line_end + 1 :]
    _write(target, fixed)
    return target, fixed


async def _kept_after_its_own_english_changes(
    site: Path, echo: EchoTranslator, run_site: RunSite, fake_openai: FakeOpenAIServer
) -> str:
    """Edit the prose of the split section's English and rerun: that section alone is sent,
    and this returns the translation it carries as the text to keep."""
    english = site / "docs" / PAGE
    _write(english, _read(english).replace("newest 20 items.", "newest 20 items only."))
    first = len(fake_openai.requests_to("/v1/responses"))
    assert (await run_site(languages=["ko"])).code == 0
    assert echo.calls[-1] == ("ko", PAGE, [6])
    task = _task_messages(fake_openai, first)[0]
    return task.split("<translation_to_keep>\n")[1].split("</translation_to_keep>")[0]


async def test_a_hand_fix_that_split_a_paragraph_survives_and_is_carried_as_the_text_to_keep(
    site: Path, echo: EchoTranslator, run_site: RunSite, fake_openai: FakeOpenAIServer
) -> None:
    # the maintainer splits the section's paragraph in two: one more paragraph than the English
    target, fixed = await _split_by_hand(run_site, site)
    english = site / "docs" / PAGE

    echo.calls.clear()
    assert (await run_site(languages=["ko"])).code == 0
    assert echo.calls == []
    assert _read(target) == fixed

    # English edits elsewhere, then only in the code of the fixed section: the split stays
    _write(english, _read(english).replace("The first example.", "The first example, edited."))
    _write(english, _read(english).replace("limit=20)", "limit=30)"))
    assert (await run_site(languages=["ko"])).code == 0
    assert echo.calls == [("ko", PAGE, [4])]
    now = _read(target)
    assert "\n\n해당" in now
    assert "limit=30)" in now

    # the prose of the fixed section changes: the split text goes as the translation to keep
    kept = await _kept_after_its_own_english_changes(site, echo, run_site, fake_openai)
    assert "<!-- section 6 -->" in kept
    assert "\n\n해당" in kept


def _adopt_split(run_main: InProcess) -> None:
    adopted = run_main(
        "--adopt", "--lang", "ko", "--file", f"docs/{PAGE}", "--section", "history-limits"
    )
    assert adopted.returncode == 0, adopted.stdout + adopted.stderr
    assert "paragraph split vouched for in section(s) 6" in adopted.stdout


async def test_adopt_refuses_a_paragraph_split_unless_the_section_is_named(
    site: Path, echo: EchoTranslator, run_site: RunSite, run_main: InProcess
) -> None:
    target, fixed = await _split_by_hand(run_site, site)
    refused = run_main("--adopt", "--lang", "ko", "--file", f"docs/{PAGE}")
    assert refused.returncode == 1
    assert "section 6: the English has 3 paragraph(s) or block(s)" in refused.stdout
    assert "the translation 4" in refused.stdout
    assert (
        "section 6 (#history-limits): its paragraph count differs from the English only "
        "because its paragraphs are split differently"
    ) in refused.stdout
    assert "vouch for it: --section history-limits\n" in refused.stdout
    assert '"split"' not in _read(site / "i18n" / "manifest.json")

    # another structural difference (the second half made a list item) stays refused even
    # when the section is named
    joined = fixed.replace("\n\n해당", "\n\n- 해당", 1)
    assert joined != fixed
    _write(target, joined)
    named = run_main(
        "--adopt", "--lang", "ko", "--file", f"docs/{PAGE}", "--section", "history-limits"
    )
    assert named.returncode == 1
    assert "not adopted" in named.stdout
    assert "paragraph(s) or block(s)" in named.stdout
    assert "list items differ" in named.stdout
    assert "vouch for it" not in named.stdout


async def test_a_vouched_paragraph_split_passes_check(
    site: Path, echo: EchoTranslator, run_site: RunSite, run_main: InProcess
) -> None:
    await _split_by_hand(run_site, site)
    before = run_main("--check", "--lang", "ko")
    assert before.returncode == 1
    assert "invalid" in before.stdout
    _adopt_split(run_main)
    checked = run_main("--check", "--lang", "ko")
    assert checked.returncode == 0, checked.stdout
    assert "invalid" not in checked.stdout
    assert "edited" not in checked.stdout


async def test_a_later_edit_of_a_vouched_split_brings_the_paragraph_check_back(
    site: Path, echo: EchoTranslator, run_site: RunSite, run_main: InProcess
) -> None:
    target, fixed = await _split_by_hand(run_site, site)
    _adopt_split(run_main)
    _write(target, fixed.replace("\n\n해당", "\n\n해당 설정", 1))
    again = run_main("--check", "--lang", "ko")
    assert again.returncode == 1
    assert "section 6: the English has 3 paragraph(s) or block(s)" in again.stdout
    assert "edited by hand (section(s) 6)" in again.stdout


async def test_a_vouched_split_survives_a_rerun_after_an_english_edit_elsewhere(
    site: Path,
    echo: EchoTranslator,
    run_site: RunSite,
    fake_openai: FakeOpenAIServer,
    run_main: InProcess,
) -> None:
    target, fixed = await _split_by_hand(run_site, site)
    _adopt_split(run_main)
    english = site / "docs" / PAGE
    _write(english, _read(english).replace("The first example.", "The first example, edited."))
    echo.calls.clear()
    assert (await run_site(languages=["ko"])).code == 0
    assert echo.calls == [("ko", PAGE, [4])]
    now = _read(target)
    section = now[now.index("{#history-limits") :]
    assert section == fixed[fixed.index("{#history-limits") :]  # byte for byte
    checked = run_main("--check", "--lang", "ko")
    assert checked.returncode == 0, checked.stdout

    # its own English changes: the vouched split text goes as the translation to keep
    kept = await _kept_after_its_own_english_changes(site, echo, run_site, fake_openai)
    assert "<!-- section 6 -->" in kept
    assert "\n\n해당" in kept
    checked = run_main("--check", "--lang", "ko")
    assert checked.returncode == 0, checked.stdout
