"""Meaning checks and the review loop, proven with a model that injects faults and a fake
reviewer (both in echo_translator.py), through the real pipeline and the real openai client."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from translation_support import RunSite

from docs_i18n.checks import check_meaning, numbers, untranslated_runs
from docs_i18n.manifest import Manifest
from docs_i18n.prompt import Glossary
from docs_i18n.review import Finding, parse_review, verify_findings
from echo_translator import MEANING_FAULTS, EchoTranslator
from turnstore.testing import FakeOpenAIServer, FakeReply, text_response

PAGE = "faults.md"
FAULT_PAGE = """\
# Limits

The history holds at most 20 items per read. Older items are not deleted. A writer keeps
one queue per file, and each batch is committed together.

## Retries

A request is retried 6 times at most. The session never retries a write on its own, so a
failed write is reported to the caller. Each retry waits longer than the one before.

- The first retry waits 1 second.
- A rate-limited request does not hold its slot.
- Timeouts are retried like errors.
"""

# The fault page's glossary: "writer" must be rendered as the glossary says, and one wrong
# rendering per language is forbidden.
REQUIRE = {lang: ["writer"] for lang in ("ja", "ko", "zh")}
FORBID = {"ja": {"writer": ["書き手"]}, "ko": {"writer": ["작성자"]}, "zh": {"writer": ["作者"]}}

# Which part of the pipeline each fault kind must be caught by.
CAUGHT_BY = {
    "drop_sentence": "review",
    "drop_list_item": "checks",
    "change_number": "checks",
    "flip_negation": "review",
    "untranslated_paragraph": "checks",
    "forbidden_term": "checks",
    "swap_sections": "checks",
}


# What the failure must say for each fault kind (so a fault caught for another reason, or not
# at all, does not count).
WHY = {
    "drop_sentence": "a review blocker survived the repair",
    "drop_list_item": "list items differ",
    "change_number": "the number 20 appears 1 time(s) in the English but 0",
    "flip_negation": "a review blocker survived the repair",
    "untranslated_paragraph": "untranslated English text",
    "forbidden_term": "is a forbidden rendering of 'writer'",
    "swap_sections": "section 0: its translation and that of section 1 look swapped",
}


@pytest.fixture
def fault_site(site: Path) -> Path:
    (site / "docs" / PAGE).write_text(FAULT_PAGE, encoding="utf-8")
    glossary = site / "i18n" / "glossary.yml"
    data = yaml.safe_load(glossary.read_text(encoding="utf-8"))
    assert all(data["terms"][lang]["writer"] for lang in REQUIRE)
    data.update(require=REQUIRE, forbid=FORBID)
    glossary.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return site


@pytest.mark.parametrize("fault", sorted(MEANING_FAULTS))
async def test_each_meaning_fault_is_caught_and_repaired(
    fault: str,
    fault_site: Path,
    echo: EchoTranslator,
    run_site: RunSite,
    fake_openai: FakeOpenAIServer,
) -> None:
    echo.fault("ja", PAGE, fault)
    outcome = await run_site(languages=["ja"], files=[PAGE])
    assert outcome.code == 0, outcome.output
    assert [c[:2] for c in echo.calls] == [("ja", PAGE)] * 2  # the draft and one repair
    bodies = [r.body for r in fake_openai.requests_to("/v1/responses")]
    repair = bodies[-1]["input"][-1]["content"] if "text" not in bodies[-1] else None
    if CAUGHT_BY[fault] == "checks":
        assert "draft failed" in outcome.output
        assert len(echo.reviews) == 1  # the faulty draft never reached the reviewer
        line = next(x for x in outcome.output.splitlines() if "draft failed" in x)
        counted = int(line.split("draft failed ")[1].split(" ")[0])
        shown = re.findall(r"(?:: |; )section \d+: ", line.split("asking for repair 1/2")[1])
        assert len(shown) == counted  # the progress line shows every finding it counts
        repair = next(b for b in bodies if len(b["input"]) == 3)["input"][2]["content"]
        assert "failed these automatic checks" in repair
    else:
        assert "review found 1 blocker(s)" in outcome.output
        assert len(echo.reviews) == 2  # the faulty draft, then the repaired one
        repair = next(b for b in bodies if len(b["input"]) == 3)["input"][2]["content"]
        assert "A reviewer compared your translation" in repair
        assert "[omission, blocker]" in repair or "[meaning, blocker]" in repair
    written = (fault_site / "docs" / "ja" / PAGE).read_text(encoding="utf-8")
    assert "ない" in written
    assert "20" in written
    assert "書き手" not in written


async def test_caught_per_fault_kind(
    fault_site: Path, echo: EchoTranslator, run_site: RunSite, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every fault kind, injected once in each language's draft, stops that draft; the table
    (caught/injected per kind) is printed for the record."""
    caught: dict[str, int] = {}
    for fault in sorted(MEANING_FAULTS):
        langs = ["ja", "ko", "zh"]
        for lang in langs:
            # It never gets it right: a fault in every call the page gets (the draft and two
            # repairs for a code check, the draft and one repair for the review).
            calls = 3 if CAUGHT_BY[fault] == "checks" else 2
            echo.fault(lang, PAGE, *[fault] * calls)
        echo.calls.clear()
        outcome = await run_site(languages=langs, files=[PAGE])
        failed = {key for key, why in outcome.reporter.totals.failed if WHY[fault] in why}
        caught[fault] = len(failed & {f"{lang}/{PAGE}" for lang in langs})
        assert caught[fault] == len(langs), outcome.output
        for lang in langs:
            assert not (fault_site / "docs" / lang / PAGE).exists()
    with capsys.disabled():
        print("\ncaught/injected:", json.dumps({k: f"{v}/{v}" for k, v in caught.items()}))


async def test_bogus_quotes_are_discarded_and_counted(
    fault_site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    echo.review_fault("ja", PAGE, "bogus_quotes")
    outcome = await run_site(languages=["ja"], files=[PAGE])
    assert outcome.code == 0, outcome.output
    assert len(echo.calls) == 1  # no repair for an invented finding
    assert "1 discarded (quotes not found)" in outcome.output
    assert len(outcome.reporter.totals.discarded) == 1


async def test_minor_findings_go_to_the_report(
    fault_site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    report = fault_site / "report.json"
    echo.review_fault("ja", PAGE, "minor")
    outcome = await run_site(languages=["ja"], files=[PAGE], report=report)
    assert outcome.code == 0, outcome.output
    assert len(echo.calls) == 1  # a minor finding is not repaired
    assert "minor ja/faults.md: section 0 [fluency, minor]" in outcome.output
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["review"]["minor"][0]["page"] == "ja/faults.md"
    assert data["review"]["calls"] == 1


async def test_a_surviving_blocker_is_not_written_and_named(
    fault_site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    echo.review_fault("ja", PAGE, "stubborn")
    outcome = await run_site(languages=["ja"], files=[PAGE, "index.md"])
    assert outcome.code == 1
    assert "FAILED ja/faults.md: a review blocker survived the repair, not written" in (
        outcome.output
    )
    assert not (fault_site / "docs" / "ja" / PAGE).exists()
    assert (fault_site / "docs" / "ja" / "index.md").exists()  # the others go on
    assert Manifest.load(fault_site / "i18n" / "manifest.json").get(PAGE, "ja") is None


async def test_no_review_makes_no_review_call(
    fault_site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    echo.fault("ja", PAGE, "flip_negation")
    outcome = await run_site(languages=["ja"], files=[PAGE], review=False)
    assert outcome.code == 0
    assert echo.reviews == []
    assert "review calls" not in outcome.output
    # Without the review a flipped negation gets through: the review is what catches it.
    written = (fault_site / "docs" / "ja" / PAGE).read_text(encoding="utf-8")
    assert "Older語 アイテム are語 deleted語." in written


async def test_review_model_is_used(
    fault_site: Path, echo: EchoTranslator, run_site: RunSite, fake_openai: FakeOpenAIServer
) -> None:
    outcome = await run_site(languages=["ja"], files=[PAGE], review_model="o4-mini")
    assert outcome.code == 0
    reviews = [r.body for r in fake_openai.requests_to("/v1/responses") if "text" in r.body]
    assert [b["model"] for b in reviews] == ["o4-mini"]
    fmt = reviews[0]["text"]["format"]
    assert fmt["type"] == "json_schema"
    assert fmt["strict"] is True
    assert fmt["schema"]["properties"]["findings"]["items"]["required"] == [
        "section",
        "kind",
        "severity",
        "english",
        "translation",
        "problem",
    ]
    assert "with o4-mini" not in outcome.output  # the summary gives the cost, not the name
    assert "review calls: 1" in outcome.output


@pytest.mark.parametrize(
    "reply",
    [
        FakeReply(raw=b"<html>bad gateway</html>"),
        FakeReply(raw=b'{"id": "resp_1", "output": [{"type": "mess'),
        FakeReply(body={"id": "resp_1", "output": "not a list"}),
        FakeReply(body=[1, 2, 3]),
    ],
    ids=["not-json", "truncated", "wrong-shape", "a-list"],
)
async def test_a_malformed_reply_fails_that_page_and_the_run_goes_on(
    reply: FakeReply, site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    echo.fault("ja", "index.md", reply)
    outcome = await run_site(languages=["ja"])
    assert outcome.code == 1
    assert "FAILED ja/index.md: the model call failed: malformed reply" in outcome.output
    assert "translated: 2, kept: 0, failed: 1" in outcome.output
    assert not (site / "docs" / "ja" / "index.md").exists()


async def test_a_malformed_review_fails_that_page(
    fault_site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    echo.review_fault("ja", PAGE, "malformed")
    outcome = await run_site(languages=["ja"], files=[PAGE])
    assert outcome.code == 1
    assert "FAILED ja/faults.md: the review reply is malformed: the review is not JSON" in (
        outcome.output
    )


@pytest.mark.parametrize(
    "text",
    [
        "[" * 5000 + "]" * 5000,
        '{"findings": [{"section": 1, "kind": "omission", "severity": "blocker", '
        '"english": "\\ud800", "translation": "\\ud800", "problem": "\\ud800"}]}',
    ],
    ids=["nested-too-deep", "lone-surrogate"],
)
async def test_an_unreadable_review_fails_that_page_and_the_run_goes_on(
    text: str, fault_site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    echo.review_fault("ja", PAGE, FakeReply(body=text_response(text)))
    outcome = await run_site(languages=["ja"])
    assert outcome.code == 1
    assert f"FAILED ja/{PAGE}: the review reply is malformed" in outcome.output
    assert "translated: 3, kept: 0, failed: 1" in outcome.output
    assert not (fault_site / "docs" / "ja" / PAGE).exists()


def test_verify_findings_keeps_only_quotes_that_occur() -> None:
    pairs = {1: ("Older items are not\ndeleted.", "古いアイテムは削除されません。")}
    good = Finding(1, "meaning", "blocker", "Older items are not deleted.", "削除されません", "x")
    wrong_section = Finding(2, "meaning", "blocker", "Older items", "削除", "x")
    invented = Finding(1, "omission", "blocker", "Newer items", "削除", "x")
    empty = Finding(1, "omission", "blocker", "Older items", "", "x")
    kept, discarded = verify_findings([good, wrong_section, invented, empty], pairs)
    assert kept == [good]
    assert discarded == [wrong_section, invented, empty]


def test_parse_review_refuses_what_the_schema_refuses() -> None:
    assert parse_review('{"findings": []}') == []
    for bad in ["nope", '{"x": 1}', '{"findings": [{"section": 1}]}', '{"findings": [1]}']:
        with pytest.raises(ValueError, match="review"):
            parse_review(bad)
    item = {
        "section": 1,
        "kind": "vibes",
        "severity": "blocker",
        "english": "a",
        "translation": "b",
        "problem": "c",
    }
    with pytest.raises(ValueError, match="schema"):
        parse_review(json.dumps({"findings": [item]}))


@pytest.mark.parametrize(
    ("english", "draft", "expected"),
    [
        ("Wait 30 seconds.\n", "60 秒待ちます。\n", "the number 30"),
        ("Up to 1,000 items.\n", "最大 1000 件。\n", None),
        ("A.\n\nB.\n", "A と B。\n", "paragraph"),
        (
            "Text.\n",
            "This paragraph was left in English by the model for sure.\n",
            "untranslated English text",
        ),
        ("The writer waits.\n", "書き手は待ちます。\n", "forbidden rendering of 'writer'"),
        (
            "The writer waits.\n",
            "それは待ちます。\n",
            "rendering 'ライター' is not in the translation",
        ),
        ("The writer waits.\n", "ライターは待ちます。\n", None),
        (
            "Use [the docs](a.md) with SQLAlchemySession and Redis.\n",
            "[the docs](a.md) を SQLAlchemySession と Redis で使います。\n",
            None,
        ),
        (
            "Use [the docs](a.md) with SQLAlchemySession and Redis.\n",
            "[the docs](a.md) を SQLAlchemySession とレディスで使います。\n",
            "'Redis' appears 1 time(s) in the English but 0",
        ),
    ],
)
def test_meaning_checks_are_concrete(english: str, draft: str, expected: str | None) -> None:
    glossary = Glossary(
        do_not_translate=["SQLAlchemySession", "Redis"],
        terms={"ja": {"writer": "ライター"}},
        require={"ja": ["writer"]},
        forbid={"ja": {"writer": ["書き手"]}},
    )
    findings = check_meaning(english, draft, "ja", glossary)
    if expected is None:
        assert findings == []
    else:
        assert any(expected in f for f in findings), findings


def test_numbers_ignore_code_links_and_list_markers() -> None:
    assert numbers("1. Keep @@CODE_3@@ and [v2](page2.md) at 15,852 chars.\n") == {"15852": 1}
    assert untranslated_runs("see [a very long link text that is English](x.md)", []) == [
        "a very long link text that is English"
    ]


@pytest.mark.parametrize("fault", ["change_number", "flip_negation"])
async def test_a_section_edit_in_three_languages_is_one_request_and_one_review(
    fault: str,
    fault_site: Path,
    echo: EchoTranslator,
    run_site: RunSite,
    fake_openai: FakeOpenAIServer,
) -> None:
    """A one-section edit in ja, ko and zh is one translate request and one review request
    for all three; a fault in the Korean draft is caught (by the code checks or the review)
    and repaired in Korean alone, by Korean requests."""
    langs = ["ja", "ko", "zh"]
    assert (await run_site(languages=langs, files=[PAGE])).code == 0
    before = {lang: (fault_site / "docs" / lang / PAGE).read_text("utf-8") for lang in langs}
    path = fault_site / "docs" / PAGE
    old = "Each retry waits longer than the one before."
    path.write_text(
        path.read_text("utf-8").replace(old, old + " It never waits more than 60 seconds."),
        encoding="utf-8",
    )
    echo.calls.clear()
    echo.reviews.clear()
    first_new = len(fake_openai.requests_to("/v1/responses"))
    echo.fault("ko", PAGE, fault)
    outcome = await run_site(languages=langs, files=[PAGE])
    assert outcome.code == 0, outcome.output
    bodies = [r.body for r in fake_openai.requests_to("/v1/responses")[first_new:]]
    names = [(b.get("text") or {}).get("format", {}).get("name") for b in bodies]
    assert names.count("translation_batch") == 1
    assert names.count("translation_review_batch") == 1
    assert echo.batches == [(langs, PAGE, [1])]
    assert echo.review_batches == [(langs, PAGE, [1])]
    # The repair is Korean only: its own instructions and conversation.
    single = [b for b, name in zip(bodies, names, strict=True) if not name or "batch" not in name]
    assert single
    for body in single:
        assert "into Korean" in body["instructions"]
        assert "Japanese" not in body["instructions"]
    repairs = [c[0] for c in echo.calls[len(langs) :]]
    assert repairs == ["ko"]
    reviewed_alone = [r[0] for r in echo.reviews[len(langs) :]]
    assert reviewed_alone == (["ko"] if fault == "flip_negation" else [])
    if fault == "flip_negation":
        assert any("review found 1 blocker" in n for n in outcome.output.splitlines())
    for lang in langs:
        written = (fault_site / "docs" / lang / PAGE).read_text("utf-8")
        assert written != before[lang]
        assert "60" in written
        assert written.count(_NEVER[lang]) == before[lang].count(_NEVER[lang]) + 1


_NEVER = {"ja": "決して", "ko": "절대", "zh": "从不"}


def test_terms_used_finds_every_form_of_every_glossary_term_that_uses_finds() -> None:
    # `terms_used` asks for all terms at once what `uses` answers term by term: the same answer
    # for each term's own forms (plural, -ies and -ied of a term ending in consonant + y).
    glossary = Glossary.load(Path(__file__).resolve().parents[2] / "i18n" / "glossary.yml")
    terms = {t for table in (*glossary.terms.values(), *glossary.forbid.values()) for t in table}
    assert "retry" in terms
    for term in sorted(terms):
        forms = [term, term + "s"]
        if re.search(r"[^aeiou\W]y$", term):
            forms += [term[:-1] + "ies", term[:-1] + "ied"]
        for form in forms:
            text = f"Here the {form} matters."
            assert (term in glossary.terms_used(text)) == glossary.uses(text, term), (term, form)
    assert "retry" in glossary.terms_used("The next push retries only the failed page.")
