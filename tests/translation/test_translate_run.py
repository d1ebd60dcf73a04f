"""Whole runs against the fake server with the real openai client: incremental, faults, retries."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
from pathlib import Path
from typing import Any

import pytest
from translation_support import RunSite

from docs_i18n import manifest as manifest_module
from docs_i18n import runner
from docs_i18n.checks import verify_page
from docs_i18n.front_matter import split_front_matter
from docs_i18n.manifest import Manifest
from docs_i18n.planning import Options
from docs_i18n.prompt import PATCH_GAP
from docs_i18n.status import adopt, check, dry_run
from docs_i18n.translator import RetryPolicy
from echo_translator import EchoTranslator
from turnstore.testing import FakeOpenAIServer, FakeReply, text_response

PAGES = ["guide/backends.md", "guide/custom.md", "index.md"]
LANGS = ["ja", "ko", "zh"]


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _snapshot(site: Path) -> dict[str, str]:
    return {
        p.relative_to(site).as_posix(): _read(p)
        for p in sorted(site.rglob("*"))
        if p.is_file() and p.suffix in (".md", ".json")
    }


def _temp_files(site: Path) -> list[Path]:
    return list(site.rglob("*.tmp"))


async def test_full_run_translates_every_page_into_every_language(
    site: Path, echo: EchoTranslator, run_site: RunSite, fake_openai: FakeOpenAIServer
) -> None:
    outcome = await run_site()
    assert outcome.code == 0, outcome.output
    assert sorted((lang, page) for lang, page, _ in echo.calls) == sorted(
        (lang, page) for lang in LANGS for page in PAGES
    )
    for lang in LANGS:
        assert not (site / "docs" / lang / "ref").exists()
        for page in PAGES:
            english = _read(site / "docs" / page)
            translated = _read(site / "docs" / lang / page)
            assert verify_page(english, translated) == []
            front = split_front_matter(translated).data
            assert front["machine_translated"] is True
            for key, value in split_front_matter(english).data.items():
                assert front[key] == value
    ja = _read(site / "docs" / "ja" / "guide" / "backends.md")
    assert "## Example語 （訳） {#example_1}" in ja
    assert "## 上限 （訳） {#history-limits .advanced}" in ja
    body = fake_openai.requests_to("/v1/responses")[0].body
    assert body["model"] == "o3"
    assert body["reasoning"] == {"effort": "medium"}
    assert "# Workflow" in body["instructions"]
    manifest = json.loads(_read(site / "i18n" / "manifest.json"))
    assert sorted(manifest["pages"]) == PAGES
    assert "translated: 9, kept: 0, failed: 0" in outcome.output
    assert "API calls: 9" in outcome.output
    assert "estimated cost: $" in outcome.output
    assert "review calls: 9, tokens in: " in outcome.output
    assert "findings: 0 blocker(s), 0 minor, 0 discarded" in outcome.output


async def test_a_page_write_saves_the_manifest_once_its_entry_pending_before_the_page(
    site: Path, echo: EchoTranslator, run_site: RunSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest_path = site / "i18n" / "manifest.json"
    pending_at_write: list[bool] = []
    saves: list[Path] = []
    write_page, write_manifest = runner.atomic_write_text, manifest_module.atomic_write_text

    def _page(path: Path, text: str) -> None:
        lang, rel = path.relative_to(site / "docs").as_posix().split("/", 1)
        on_disk = json.loads(_read(manifest_path))
        pending_at_write.append("pending" in on_disk["pages"][rel][lang])
        write_page(path, text)

    def _manifest(path: Path, text: str) -> None:
        saves.append(path)
        write_manifest(path, text)

    monkeypatch.setattr(runner, "atomic_write_text", _page)
    monkeypatch.setattr(manifest_module, "atomic_write_text", _manifest)
    outcome = await run_site()
    assert outcome.code == 0, outcome.output
    # Phase one is on disk before every page; each commit goes out with the next save, the
    # last one at the end of the run. Pages handed over while another is being written share
    # one save: never more saves than pages, plus the last.
    assert pending_at_write == [True] * 9
    assert saves == [manifest_path] * len(saves)
    assert 2 <= len(saves) <= 9 + 1
    entries = json.loads(_read(manifest_path))["pages"]
    assert all("pending" not in entry[lang] for entry in entries.values() for lang in LANGS)


async def test_a_page_that_cannot_be_written_is_not_recorded_and_the_others_are(
    site: Path, echo: EchoTranslator, run_site: RunSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest_path = site / "i18n" / "manifest.json"
    broken = site / "docs" / "ko" / "guide" / "custom.md"
    write_page = runner.atomic_write_text

    def _page(path: Path, text: str) -> None:
        if path == broken:
            raise OSError(28, "No space left on device")
        write_page(path, text)

    monkeypatch.setattr(runner, "atomic_write_text", _page)
    with pytest.raises(ExceptionGroup) as raised:
        await run_site()
    assert raised.group_contains(OSError, match="No space left")
    # The pages written before or beside the failure (in one group or not) are recorded; the
    # failed one is not, and nothing of it is on disk.
    manifest = Manifest.load(manifest_path)
    assert not broken.exists()
    assert manifest.get("guide/custom.md", "ko") is None
    for lang in LANGS:
        for page in PAGES:
            if (site / "docs" / lang / page).exists():
                assert manifest.get(page, lang) is not None, f"{lang}/{page}"
    # Once the disk has room, the next run settles what is pending and writes the missing page.
    monkeypatch.setattr(runner, "atomic_write_text", write_page)
    again = await run_site()
    assert again.code == 0, again.output
    assert broken.exists()
    manifest = Manifest.load(manifest_path)
    assert all(manifest.get(page, lang) is not None for page in PAGES for lang in LANGS)


async def test_second_run_makes_zero_calls_and_changes_nothing(
    site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    assert (await run_site()).code == 0
    before = _snapshot(site)
    calls = len(echo.calls)
    outcome = await run_site()
    assert outcome.code == 0
    assert len(echo.calls) == calls
    assert _snapshot(site) == before
    assert "translated: 0, kept: 9" in outcome.output
    assert "API calls: 0" in outcome.output


async def test_editing_one_section_sends_only_that_section(
    site: Path, echo: EchoTranslator, run_site: RunSite, fake_openai: FakeOpenAIServer
) -> None:
    assert (await run_site()).code == 0
    old = {lang: _read(site / "docs" / lang / "guide" / "backends.md") for lang in LANGS}
    page = site / "docs" / "guide" / "backends.md"
    _write(
        page, _read(page).replace("Install the extra and point", "Install the redis extra, point")
    )
    echo.calls.clear()
    first_new = len(fake_openai.requests_to("/v1/responses"))
    outcome = await run_site()
    assert outcome.code == 0, outcome.output
    assert sorted(echo.calls) == [(lang, "guide/backends.md", [3]) for lang in LANGS]
    for request in fake_openai.requests_to("/v1/responses")[first_new:]:
        if "text" in request.body:
            continue  # a review
        task = request.body["input"][0]["content"]
        source = task.rsplit("<source>\n", 1)[1]
        assert "Install the redis extra" in source
        assert "## SQLite" not in source
        context = task.split("<current_translation>\n")[1].split("</current_translation>")[0]
        assert re.search(r"(?m)^## SQLite \S+ \{#sqlite\}$", context)  # the neighbours
        assert re.search(r"(?m)^## Example\S+ \S+ \{#example\}$", context)
        assert "{#how-it-works}" not in context  # not a neighbour
        assert "{#history-limits" not in context
        instructions = request.body["instructions"]
        assert "- Redis\n" in instructions  # the glossary entries the section uses
        assert "- SQLiteSession" not in instructions
    for lang in LANGS:
        new = _read(site / "docs" / lang / "guide" / "backends.md")
        old_parts, new_parts = _split(old[lang]), _split(new)
        assert len(old_parts) == len(new_parts)
        changed = [n for n, (a, b) in enumerate(zip(old_parts, new_parts, strict=True)) if a != b]
        assert changed == [3]
        assert re.search(r"Install\S+ \S+ redis\S+ extra\S+[,，] point", new_parts[3])


@pytest.mark.parametrize(
    "text",
    ["[" * 5000 + "]" * 5000, json.dumps({f"{lang}.3": "\ud800 x" for lang in LANGS})],
    ids=["nested-too-deep", "lone-surrogate"],
)
async def test_an_unreadable_reply_for_all_languages_falls_back_to_each_alone(
    text: str, site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    assert (await run_site()).code == 0
    page = site / "docs" / "guide" / "backends.md"
    _write(
        page, _read(page).replace("Install the extra and point", "Install the redis extra, point")
    )
    echo.fault("ja", "guide/backends.md", FakeReply(body=text_response(text)))
    echo.calls.clear()
    outcome = await run_site()
    assert outcome.code == 0, outcome.output
    assert "the request for all languages failed" in outcome.output
    assert len(echo.batches) == 1  # then one request per language
    assert sorted(echo.calls) == sorted([(lang, "guide/backends.md", [3]) for lang in LANGS] * 2)
    assert _temp_files(site) == []


def _split(text: str) -> list[str]:
    return re.split(r"(?m)^(?=## )", text)


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


async def test_front_matter_change_rewrites_without_a_call(
    site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    assert (await run_site()).code == 0
    page = site / "docs" / "index.md"
    _write(page, _read(page).replace("description: Session memory", "description: Memory"))
    echo.calls.clear()
    assert (await run_site()).code == 0
    assert echo.calls == []
    assert "description: Memory for LLM agents." in _read(site / "docs" / "zh" / "index.md")


async def test_deleting_a_page_removes_its_translations(
    site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    assert (await run_site()).code == 0
    (site / "docs" / "guide" / "custom.md").unlink()
    options = Options(root=site, languages=LANGS)
    code, problems = check(options)
    assert code == 1
    assert sorted(problems) == [
        f"orphaned  docs/{lang}/guide/custom.md: docs/guide/custom.md does not exist"
        for lang in LANGS
    ]
    echo.calls.clear()
    outcome = await run_site()
    assert outcome.code == 0
    assert echo.calls == []
    for lang in LANGS:
        assert not (site / "docs" / lang / "guide" / "custom.md").exists()
        assert (site / "docs" / lang / "guide" / "backends.md").exists()
    assert "guide/custom.md" not in Manifest.load(site / "i18n" / "manifest.json").pages
    assert "removed ja/guide/custom.md" in outcome.output
    assert check(options) == (0, [])


async def test_check_reports_missing_stale_orphaned_unadopted_and_invalid(
    site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    options = Options(root=site, languages=["ja"])
    code, problems = check(options)
    assert code == 1
    assert sorted(problems) == [f"missing   docs/ja/{p}" for p in PAGES]
    assert (await run_site(languages=["ja"])).code == 0
    assert check(options) == (0, [])
    page = site / "docs" / "index.md"
    _write(page, _read(page).replace("Install the package:", "Install it:"))
    _write(site / "docs" / "ja" / "old.md", "# 古い\n")
    (site / "docs" / "ja" / "guide" / "custom.md").unlink()
    manifest = Manifest.load(site / "i18n" / "manifest.json")
    manifest.remove("guide/backends.md", "ja")
    manifest.save(site / "i18n" / "manifest.json")
    broken = site / "docs" / "ja" / "guide" / "backends.md"
    _write(broken, _read(broken).replace("]: ../ref/settings.md#limit", "]: ../ref/settings.md#x"))
    code, problems = check(options)
    assert code == 1
    text = "\n".join(problems)
    assert "missing   docs/ja/guide/custom.md" in text
    assert "stale     docs/ja/index.md: the English page changed (1 section(s))" in text
    assert "orphaned  docs/ja/old.md" in text
    assert "unadopted docs/ja/guide/backends.md" in text
    assert re.search(
        r"^invalid   docs/ja/guide/backends\.md: line \d+: section 6: reference definition",
        text,
        re.M,
    )


async def test_adopt_records_sound_translations_and_reports_broken_ones(
    site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    assert (await run_site(languages=["ja"])).code == 0
    (site / "i18n" / "manifest.json").unlink()
    broken = site / "docs" / "ja" / "index.md"
    _write(broken, _read(broken).replace("{#quick-start}", ""))
    options = Options(root=site, languages=["ja"])
    code, lines = adopt(options)
    assert code == 1
    assert any(line.startswith("adopted docs/ja/guide/backends.md") for line in lines)
    assert "not adopted docs/ja/index.md:" in lines
    assert any("lacks the English id: add `{#quick-start}`" in line for line in lines)
    manifest = Manifest.load(site / "i18n" / "manifest.json")
    assert sorted(manifest.pages) == ["guide/backends.md", "guide/custom.md"]
    # A normal run leaves the unadopted page alone and says so.
    echo.calls.clear()
    outcome = await run_site(languages=["ja"])
    assert echo.calls == []
    assert outcome.code == 0
    assert "not adopted ja/index.md" in outcome.output


@pytest.mark.parametrize("fault", ["drop_code", "change_link", "lose_heading", "garbage"])
async def test_a_broken_draft_is_repaired(
    fault: str,
    site: Path,
    echo: EchoTranslator,
    run_site: RunSite,
    fake_openai: FakeOpenAIServer,
) -> None:
    echo.fault("ja", "index.md", fault)
    outcome = await run_site(languages=["ja"])
    assert outcome.code == 0, outcome.output
    assert [c[:2] for c in echo.calls].count(("ja", "index.md")) == 2
    assert [c[:2] for c in echo.reviews].count(("ja", "index.md")) == 1  # only sound drafts
    assert (
        verify_page(_read(site / "docs" / "index.md"), _read(site / "docs" / "ja" / "index.md"))
        == []
    )
    repair = next(
        r.body for r in fake_openai.requests_to("/v1/responses") if len(r.body["input"]) == 3
    )
    assert repair["input"][1]["role"] == "assistant"
    assert "failed these automatic checks" in repair["input"][2]["content"]
    assert "draft failed" in outcome.output


async def test_a_draft_that_stays_broken_is_not_written(
    site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    assert (await run_site(languages=["ja"])).code == 0
    page = site / "docs" / "guide" / "custom.md"
    _write(page, _read(page).replace("Each method is", "Every method is"))
    before = _read(site / "docs" / "ja" / "guide" / "custom.md")
    manifest_before = _read(site / "i18n" / "manifest.json")
    echo.fault("ja", "guide/custom.md", "garbage", "garbage", "garbage")
    index = site / "docs" / "index.md"
    _write(index, _read(index).replace("Install the package:", "Install it:"))
    outcome = await run_site(languages=["ja"])
    assert outcome.code == 1
    assert (
        "FAILED ja/guide/custom.md: still failing after 2 repair(s), not written" in outcome.output
    )
    assert _read(site / "docs" / "ja" / "guide" / "custom.md") == before
    manifest = Manifest.load(site / "i18n" / "manifest.json")
    assert manifest.get("guide/custom.md", "ja") == Manifest.loads(manifest_before).get(
        "guide/custom.md", "ja"
    )
    assert "Install語 it語" in _read(site / "docs" / "ja" / "index.md")  # other pages go on
    assert _temp_files(site) == []


@pytest.mark.parametrize(
    "reply",
    [
        FakeReply(status=429, headers={"Retry-After": "0"}),
        FakeReply(status=500),
        FakeReply(status=503, headers={"retry-after-ms": "10"}),
        FakeReply(status=200, delay=6.0),  # answered after the client's timeout
    ],
    ids=["429", "500", "503", "timeout"],
)
async def test_transient_failures_are_retried(
    reply: FakeReply, site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    echo.fault("ko", "index.md", reply, reply)
    # A client timeout only where it is the fault, and long enough that no other call, slowed
    # by a busy machine, runs into it.
    outcome = await run_site(languages=["ko"], timeout=2.0 if reply.delay else 5.0)
    assert outcome.code == 0, outcome.output
    assert [c[:2] for c in echo.calls].count(("ko", "index.md")) == 3
    assert "retry 1 in" in outcome.output
    assert "retry 2 in" in outcome.output
    assert (
        verify_page(_read(site / "docs" / "index.md"), _read(site / "docs" / "ko" / "index.md"))
        == []
    )


async def test_retry_after_is_honoured(site: Path, echo: EchoTranslator, run_site: RunSite) -> None:
    echo.fault("zh", "index.md", FakeReply(status=429, headers={"Retry-After": "0.25"}))
    outcome = await run_site(languages=["zh"], retry=RetryPolicy(base_delay=30.0))
    assert outcome.code == 0
    assert "zh/index.md: HTTP 429, retry 1 in 0.2s" in outcome.output or (
        "zh/index.md: HTTP 429, retry 1 in 0.3s" in outcome.output
    )


async def test_out_of_retries_leaves_the_page_untouched_and_named(
    site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    echo.fault("ja", "index.md", *[FakeReply(status=429, headers={"Retry-After": "0"})] * 4)
    outcome = await run_site(languages=["ja"])
    assert outcome.code == 1
    assert "FAILED ja/index.md: the model call failed: HTTP 429 after 4 attempts" in outcome.output
    assert not (site / "docs" / "ja" / "index.md").exists()
    assert Manifest.load(site / "i18n" / "manifest.json").get("index.md", "ja") is None
    assert (site / "docs" / "ja" / "guide" / "backends.md").exists()


async def test_a_client_error_is_not_retried(
    site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    echo.fault("ja", "index.md", FakeReply(status=400, body={"error": {"message": "bad model"}}))
    outcome = await run_site(languages=["ja"])
    assert outcome.code == 1
    assert [c[:2] for c in echo.calls].count(("ja", "index.md")) == 1
    assert "FAILED ja/index.md: the model call failed: HTTP 400" in outcome.output


async def test_concurrency_is_bounded(
    site: Path, fake_openai: FakeOpenAIServer, run_site: RunSite
) -> None:
    echo = EchoTranslator(latency=0.2).install(fake_openai)
    assert (await run_site(concurrency=2)).code == 0
    assert echo.max_in_flight == 2
    for page in PAGES:
        (site / "docs" / page).write_text(
            _read(site / "docs" / page) + "\nMore.\n", encoding="utf-8"
        )
    assert (await run_site(concurrency=9)).code == 0
    assert echo.max_in_flight > 2


def test_dry_run_lists_calls_tokens_and_cost(site: Path) -> None:
    lines = dry_run(Options(root=site, languages=LANGS))
    calls = [line for line in lines if line.startswith("would translate")]
    assert len(calls) == 9
    assert re.match(
        r"9 call\(s\), ~\d+ tokens in \(~\d+ from the prompt cache\), ~\d+ tokens out .*"
        r"cost ~\$\d+\.\d+ \(~\$\d+\.\d+ with --batch\)",
        lines[-2],
    )
    assert re.match(r"review: 9 call\(s\) .*, ~\d+ tokens in, .*cost ~\$\d", lines[-1])
    verbose = dry_run(Options(root=site, languages=["ja"], files=["index.md"]), verbose=True)
    assert "--- instructions ---" in verbose
    assert any("<source>" in line for line in verbose)


async def test_dry_run_counts_one_request_for_a_section_edit_in_three_languages(
    site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    assert (await run_site()).code == 0
    page = site / "docs" / "guide" / "backends.md"
    _write(
        page, _read(page).replace("Install the extra and point", "Install the redis extra, point")
    )
    lines = dry_run(Options(root=site, languages=LANGS))
    calls = [line for line in lines if line.startswith("would translate")]
    assert len(calls) == 1
    assert calls[0].startswith("would translate ja+ko+zh/guide/backends.md: sections 3 of ")
    assert "one request for all these languages" in calls[0]
    assert re.match(r"1 call\(s\), ", lines[-2])
    assert re.match(r"review: 1 call\(s\) ", lines[-1])
    alone = dry_run(Options(root=site, languages=["ja"]))
    assert next(line for line in alone if line.startswith("would translate")).startswith(
        "would translate ja/guide/backends.md: sections 3 of "
    )


async def test_changed_code_alone_costs_no_call_and_with_prose_sends_only_the_changed_blocks(
    site: Path, echo: EchoTranslator, run_site: RunSite, fake_openai: FakeOpenAIServer
) -> None:
    assert (await run_site(languages=["ja"])).code == 0
    page = site / "docs" / "index.md"
    _write(page, _read(page).replace("pip install turnstore\n", "pip install -U turnstore\n"))
    echo.calls.clear()
    assert (await run_site(languages=["ja"])).code == 0
    assert echo.calls == []  # the code is restored from the English, no model needed
    translated = _read(site / "docs" / "ja" / "index.md")
    assert "pip install -U turnstore" in translated
    assert "pip install turnstore\n" not in translated

    _write(
        page,
        _read(page)
        .replace("Install the package:", "Install the package with pip:")
        .replace("pip install -U turnstore\n", "pip install --upgrade turnstore\n"),
    )
    seen = len(fake_openai.requests_to("/v1/responses"))
    assert (await run_site(languages=["ja"])).code == 0
    assert echo.calls == [("ja", "index.md", [1])]
    task = fake_openai.requests_to("/v1/responses")[seen].body["input"][0]["content"]
    context = task.split("<current_translation>\n")[1].split("</current_translation>")[0]
    assert "@@X" not in context
    assert "<!-- section 0 -->" in context  # the neighbours
    assert "<!-- section 2 -->" in context
    # Only the changed paragraph and code block are sent; the rest of the section keeps its
    # translation and is shown around the place where they go.
    source = task.split("<source>\n", 1)[1].split("</source>", 1)[0]
    assert re.fullmatch(
        r"<!-- i18n:section 1 -->\nInstall the package with pip:\n\n@@BLOCK_\d+@@\n", source
    )
    assert PATCH_GAP in context.split("<!-- section 1 -->\n")[1]
    assert "pip install --upgrade turnstore" in _read(site / "docs" / "ja" / "index.md")


async def test_a_cut_off_reply_is_named_in_the_findings(
    site: Path, echo: EchoTranslator, run_site: RunSite, fake_openai: FakeOpenAIServer
) -> None:
    cut = text_response("<!-- i18n:section 0 -->\n# turnstore")
    cut.update(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    echo.fault("ja", "index.md", FakeReply(body=cut))
    outcome = await run_site(languages=["ja"], files=["index.md"])
    assert outcome.code == 0, outcome.output
    repair = fake_openai.requests_to("/v1/responses")[1].body["input"][2]["content"]
    assert "the reply was cut off (max_output_tokens)" in repair


async def test_adopt_vouches_only_for_sections_whose_english_is_unchanged(
    site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    assert (await run_site(languages=["ja"])).code == 0
    page, ja = site / "docs" / "index.md", site / "docs" / "ja" / "index.md"
    # A hand edit of a section whose English did not change is adopted.
    _write(ja, _read(ja).replace("Then語", "そして"))
    options = Options(root=site, languages=["ja"], force=True)
    assert adopt(options) == (0, ["adopted docs/ja/index.md (English unchanged)"])
    assert check(options) == (0, [])
    # The English of the quick start changes; the translation is not updated.
    _write(page, _read(page).replace("Install the package:", "Install the package first:"))
    code, lines = adopt(options)  # --force alone vouches for nothing
    assert code == 1
    assert lines[0].startswith("refused docs/ja/index.md section 1 (#quick-start)")
    assert "--section quick-start" in lines[0]
    assert "    -Install the package:" in lines
    assert "    +Install the package first:" in lines
    code, problems = check(options)
    assert problems == ["stale     docs/ja/index.md: the English page changed (1 section(s))"]
    # The next run retranslates exactly that section.
    echo.calls.clear()
    assert (await run_site(languages=["ja"], files=["index.md"])).code == 0
    assert echo.calls == [("ja", "index.md", [1])]
    # Named by the maintainer, a changed section is adopted.
    _write(page, _read(page).replace("Install the package first:", "Install it:"))
    _write(ja, _read(ja).replace("Install語 その package語 first語:", "インストールします:"))
    code, lines = adopt(options, ["quick-start"])
    assert (code, lines) == (0, ["adopted docs/ja/index.md (named: 1)"])
    assert check(options) == (0, [])
    manifest = Manifest.load(site / "i18n" / "manifest.json")
    entry = manifest.get("index.md", "ja")
    assert entry is not None
    assert any("Install it:" in manifest.english[h] for h in entry.sections)


async def test_adopt_refuses_an_unknown_section_name(
    site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    assert (await run_site(languages=["ja"])).code == 0
    code, lines = adopt(Options(root=site, languages=["ja"]), ["nope"])
    assert code == 1
    assert lines == [
        "--section nope: no selected translation has a changed section, or a section split "
        "into other paragraphs, by that name"
    ]


async def test_a_run_translates_mermaid_labels_and_keeps_the_diagram_code(
    site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    diagram = (
        "# Flow\n\nHow a run goes:\n\n```mermaid\nsequenceDiagram\n"
        "    participant App as Your code\n    App->>Runner: load the history\n```\n"
    )
    _write(site / "docs" / "flow.md", diagram)
    outcome = await run_site(languages=["ja"], files=["flow.md"])
    assert outcome.code == 0, outcome.output
    ja = _read(site / "docs" / "ja" / "flow.md")
    assert "```mermaid\nsequenceDiagram\n    participant App as Your語 code語\n" in ja
    assert "    App->>Runner: load語 その 履歴\n```\n" in ja
    assert "i18n:mermaid" not in ja


@pytest.mark.parametrize("where", ["processes", "thread"])
async def test_a_broken_draft_is_caught_by_the_checks_in_processes_as_in_the_thread(
    where: str,
    site: Path,
    echo: EchoTranslator,
    run_site: RunSite,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The fixture site has 9 drafts in three languages: enough for worker processes on a
    # machine with more than one CPU; with the threshold raised they are checked in the thread.
    if where == "processes":
        monkeypatch.setattr(runner, "_cpus", lambda: 2)
    else:
        monkeypatch.setattr(runner, "PROCESS_CHECKS_FROM", 10_000)
    echo.fault("ko", "index.md", "drop_code")
    outcome = await run_site()
    assert outcome.code == 0, outcome.output
    assert [c[:2] for c in echo.calls].count(("ko", "index.md")) == 2
    assert "ko/index.md: draft failed" in outcome.output
    for lang in LANGS:
        for page in PAGES:
            english = _read(site / "docs" / page)
            assert verify_page(english, _read(site / "docs" / lang / page)) == [], f"{lang}/{page}"


async def test_a_killed_checks_worker_leaves_the_checks_to_the_thread(
    site: Path, echo: EchoTranslator, run_site: RunSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "_cpus", lambda: 2)

    checks = runner._draft_findings

    def _dies_in_a_worker(*args: Any) -> list[str]:
        if multiprocessing.parent_process() is not None:
            os._exit(1)  # a worker process killed (out of memory, a signal) mid-check
        return checks(*args)

    monkeypatch.setattr(runner, "_draft_findings", _dies_in_a_worker)  # workers fork with it
    echo.fault("zh", "index.md", "drop_code")
    outcome = await run_site()
    assert outcome.code == 0, outcome.output
    assert [c[:2] for c in echo.calls].count(("zh", "index.md")) == 2
    assert "zh/index.md: draft failed" in outcome.output  # still caught, by the thread
    assert all((site / "docs" / lang / page).exists() for lang in LANGS for page in PAGES)
