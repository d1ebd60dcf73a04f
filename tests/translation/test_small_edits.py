"""Small edits: a few sentences of one paragraph are sent alone, and review themselves.

The requests are read as the fake server received them, and the pages as written: a typo sends
its sentence only and no review call; a small patch whose draft the code checks catch is
repaired and then reviewed by a call of its own; a language whose sentences do not line up
makes every language send the paragraph.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from translation_support import RunSite

from docs_i18n.pages import EnglishPage
from docs_i18n.planning import Job, Patch, _same_sentences, groups, sentence_spans
from docs_i18n.prompt import SENTENCE_GAP
from echo_translator import EchoTranslator
from turnstore.testing import FakeOpenAIServer

LANGS = ["ja", "ko", "zh"]
PAGE = "guide/backends.md"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _format(body: dict[str, Any]) -> str:
    return str((body.get("text") or {}).get("format", {}).get("name", ""))


async def _edit(
    site: Path, run_site: RunSite, fake_openai: FakeOpenAIServer, old: str, new: str
) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Translate the site, replace `old` by `new` in `PAGE`; return the translations of
    `PAGE` before the edit and the requests of the run after it (not yet run)."""
    assert (await run_site()).code == 0
    before = {lang: _read(site / "docs" / lang / PAGE) for lang in LANGS}
    path = site / "docs" / PAGE
    text = _read(path)
    assert text.count(old) == 1
    path.write_text(text.replace(old, new), encoding="utf-8")
    return before, []


def _new_bodies(fake_openai: FakeOpenAIServer, first: int) -> list[dict[str, Any]]:
    return [r.body for r in fake_openai.requests_to("/v1/responses")[first:]]


def test_sentences_split_at_full_stops_in_every_script() -> None:
    text = "One. Two `a.b` ok? Three\nwraps.\n"
    expected = ["One.", "Two `a.b` ok?", "Three\nwraps."]
    assert [text[a:b] for a, b in sentence_spans(text)] == expected
    ja = "一つ目です。二つ目です（例）。三つ目"
    expected = ["一つ目です。", "二つ目です（例）。", "三つ目"]
    assert [ja[a:b] for a, b in sentence_spans(ja)] == expected
    zh = "第一句。 Second 句，1.5 倍！"
    assert [zh[a:b] for a, b in sentence_spans(zh)] == ["第一句。", "Second 句，1.5 倍！"]


async def test_a_one_word_edit_sends_its_sentence_only_and_reviews_itself(
    site: Path, echo: EchoTranslator, run_site: RunSite, fake_openai: FakeOpenAIServer
) -> None:
    typo = "A backend keeps the items of each session."
    before, _ = await _edit(
        site, run_site, fake_openai, "A backend stores the items of each session.", typo
    )
    first = len(fake_openai.requests_to("/v1/responses"))
    outcome = await run_site()
    assert outcome.code == 0, outcome.output
    bodies = _new_bodies(fake_openai, first)
    # One request for the three languages, and no review call: it reviewed itself.
    assert [_format(b) for b in bodies] == ["translation_batch"]
    (body,) = bodies
    assert "No reviewer follows" in body["instructions"]
    task = body["input"][0]["content"]
    assert task.split("<source>\n", 1)[1] == f"<!-- i18n:section 0 -->\n{typo}\n</source>\n"
    assert "holds only those sentences" in task
    for lang in LANGS:
        context = task.split(f"<{lang}>\n")[1].split(f"</{lang}>")[0]
        # the paragraph's other sentence, as translated, after the place of the changed one
        assert f"{SENTENCE_GAP} All" in context
        after = _read(site / "docs" / lang / PAGE)
        changed = [
            line
            for line in difflib.ndiff(before[lang].splitlines(), after.splitlines())
            if line[:1] in "+-"
        ]
        # one line changed: the first sentence; the rest of the paragraph is kept byte for byte
        assert len(changed) == 2, changed
        old_line, new_line = changed[0][2:], changed[1][2:]
        assert "keeps" in new_line
        assert "keeps" not in old_line
        kept = old_line[sentence_spans(old_line)[1][0] :]
        assert kept.startswith("All")
        assert new_line.endswith(kept)
        assert len(sentence_spans(new_line)) == len(sentence_spans(old_line))


async def test_a_bad_small_patch_is_caught_repaired_and_then_reviewed(
    site: Path, echo: EchoTranslator, run_site: RunSite, fake_openai: FakeOpenAIServer
) -> None:
    """The draft of a small patch reviews itself, but the code checks still run on it: a
    Korean draft that changed a number is caught, repaired in Korean, and the repaired draft
    is reviewed by a call of its own; Japanese and Chinese, sound at once, are not."""
    await _edit(site, run_site, fake_openai, "read only the newest 20", "read only the latest 20")
    echo.reviews.clear()
    echo.fault("ko", PAGE, "change_number")
    echo.review_fault("ko", PAGE, "stubborn")  # the reviewer is really asked, and is heard
    first = len(fake_openai.requests_to("/v1/responses"))
    outcome = await run_site()
    bodies = _new_bodies(fake_openai, first)
    names = [_format(b) for b in bodies]
    assert names.count("translation_batch") == 1
    assert "translation_review_batch" not in names
    reviews = [b for b in bodies if _format(b) == "translation_review"]
    assert reviews
    assert all("into Korean" in b["instructions"] for b in reviews)
    assert [lang for lang, _, _ in echo.reviews] == ["ko"] * len(echo.reviews)
    # The number was caught by the code checks; the stubborn reviewer's blocker stops the page.
    assert "ko/guide/backends.md: draft failed" in outcome.output
    assert "the number 20" in outcome.output
    assert outcome.code == 1
    assert "FAILED ko/guide/backends.md: a review blocker survived" in outcome.output
    for lang in ("ja", "zh"):
        assert "latest" in _read(site / "docs" / lang / PAGE)
    assert "latest" not in _read(site / "docs" / "ko" / PAGE)


def test_the_languages_of_a_page_send_the_same_sentences_or_the_paragraph() -> None:
    """A language whose sentences did not line up sends the paragraph: the others send it
    too, so one request still serves them all (`groups`)."""
    page = EnglishPage.parse("p.md", "# Title\n\nOne sentence. Two sentences.\n")
    wide = Patch(first=1, last=2, english="One sentence. Two sentences.", before=["# T"], after=[])
    narrow = Patch(
        first=1, last=2, english="One sentence.", before=["# T"], after=[], tail=" 二。", wide=wide
    )

    def _jobs(*patches: Patch) -> list[Job]:
        return [
            Job(page=page, lang=lang, todo=[0], reuse={}, context=None, patches={0: patch})
            for lang, patch in zip(LANGS, patches, strict=False)
        ]

    same = _jobs(narrow, narrow, narrow)
    _same_sentences(same)
    assert [job.source(0) for job in same] == ["One sentence."] * 3
    assert len(groups(same)) == 1
    mixed = _jobs(narrow, wide, narrow)
    _same_sentences(mixed)
    assert [job.source(0) for job in mixed] == ["One sentence. Two sentences."] * 3
    assert len(groups(mixed)) == 1
