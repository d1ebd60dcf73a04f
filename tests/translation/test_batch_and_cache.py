"""Half-price retranslation through the Batch API (`--batch`, `--batch-collect`) and the prompt
cache's share of the bill, end to end on the fake server's Responses, Files and Batches
endpoints with the echo translator."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from translation_support import FAST_RETRY, FIXTURES, MODEL_TIMEOUT, REPO, RunSite

import translate_docs
from docs_i18n.batch import PENDING, collect, submit
from docs_i18n.planning import Options
from docs_i18n.prompt import PromptSet
from docs_i18n.report import Reporter, Totals
from docs_i18n.runner import translate
from docs_i18n.status import check, dry_run
from docs_i18n.tokens import CACHE_MIN_TOKENS, cached_prefix_tokens, estimate_cost, estimate_tokens
from docs_i18n.translator import ModelReply, RetryPolicy, call_model
from echo_translator import EchoTranslator
from turnstore.testing import FakeOpenAIServer, text_response
from turnstore.testing.fake_openai.batches import FakeBatches

RESPONSES = "/v1/responses"


def _options(site: Path) -> Options:
    return Options(root=site, languages=["ja", "ko", "zh"], retry=FAST_RETRY, timeout=MODEL_TIMEOUT)


async def _go(how: str, site: Path, server: FakeOpenAIServer) -> tuple[int, Reporter]:
    run = {"run": translate, "batch": submit, "collect": collect}[how]
    reporter = Reporter(io.StringIO(), bar=False)
    async with server.async_client(timeout=MODEL_TIMEOUT) as client:
        code = await run(_options(site), client, reporter)
    return code, reporter


def _pages(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
        for lang in ("ja", "ko", "zh")
        for p in sorted((root / "docs" / lang).rglob("*.md"))
    }


def _drafts(server: FakeOpenAIServer) -> list[object]:
    """The direct requests that draft a translation (reviews carry a JSON schema format)."""
    return [
        r
        for r in server.requests_to(RESPONSES)
        if "review" not in json.dumps(r.body.get("text", {}))
    ]


@pytest.fixture
def batches(fake_openai: FakeOpenAIServer, echo: EchoTranslator) -> FakeBatches:
    return FakeBatches().install(fake_openai)


def test_a_collected_batch_writes_what_a_direct_run_writes(
    site: Path, tmp_path: Path, fake_openai: FakeOpenAIServer, batches: FakeBatches
) -> None:
    direct = tmp_path / "direct"
    shutil.copytree(site, direct)
    code, _ = asyncio.run(_go("run", direct, fake_openai))
    assert code == 0
    direct_drafts = len(_drafts(fake_openai))
    fake_openai.requests.clear()

    code, reporter = asyncio.run(_go("batch", site, fake_openai))
    assert code == 0
    assert _pages(site) == {}  # nothing written: every job waits in the batch
    assert fake_openai.requests_to(RESPONSES) == []  # no request sent directly
    (batch_id,) = batches.ids()
    lines = batches.input_lines(batch_id)
    assert len(lines) == direct_drafts  # the same requests, one line each
    assert {line["url"] for line in lines} == {RESPONSES}
    state = json.loads((site / "i18n" / "batch.json").read_text())
    assert state["batch"] == batch_id
    assert len(state["requests"]) == len(lines)
    assert sorted(reporter.totals.queued) == sorted(
        key for keys in state["requests"].values() for key in keys.split("+")
    )

    code, reporter = asyncio.run(_go("collect", site, fake_openai))
    assert code == 0
    assert _pages(site) == _pages(direct)
    assert json.loads((site / "i18n" / "manifest.json").read_text()) == json.loads(
        (direct / "i18n" / "manifest.json").read_text()
    )
    assert _drafts(fake_openai) == []  # every draft came from the batch; reviews went direct
    assert reporter.totals.batch_calls == len(lines)
    assert not (site / "i18n" / "batch.json").exists()
    assert "answered by the batch" in reporter.summary("o3", "o3")


def test_collect_while_the_batch_runs_waits_and_keeps_everything(
    site: Path, fake_openai: FakeOpenAIServer, batches: FakeBatches
) -> None:
    batches.hold = True
    assert asyncio.run(_go("batch", site, fake_openai))[0] == 0
    state = (site / "i18n" / "batch.json").read_text()
    code, reporter = asyncio.run(_go("collect", site, fake_openai))
    assert code == PENDING
    assert "in_progress" in reporter.stream.getvalue()  # type: ignore[attr-defined]
    assert (site / "i18n" / "batch.json").read_text() == state
    assert _pages(site) == {}
    batches.finish(batches.ids()[0])
    assert asyncio.run(_go("collect", site, fake_openai))[0] == 0
    assert _drafts(fake_openai) == []
    assert len(_pages(site)) > 0


@pytest.mark.parametrize("end", ["expired", "failed"])
def test_items_the_batch_did_not_answer_are_sent_directly(
    site: Path, fake_openai: FakeOpenAIServer, batches: FakeBatches, end: str
) -> None:
    assert asyncio.run(_go("batch", site, fake_openai))[0] == 0  # ended at once: redo it
    total = len(batches.input_lines(batches.ids()[0]))
    (site / "i18n" / "batch.json").unlink()
    if end == "expired":
        batches.expire_after = 1
    else:
        batches.fail = True
    assert asyncio.run(_go("batch", site, fake_openai))[0] == 0
    assert batches.batch(batches.ids()[-1])["status"] == end
    code, reporter = asyncio.run(_go("collect", site, fake_openai))
    assert code == 0
    answered = 1 if end == "expired" else 0
    assert reporter.totals.batch_calls == answered
    assert len(_drafts(fake_openai)) == total - answered
    assert not reporter.totals.failed
    assert len(reporter.totals.translated) > 0
    check = asyncio.run(_go("run", site, fake_openai))[1]
    assert check.totals.calls == 0  # everything is current


def test_a_page_edited_after_the_batch_is_translated_from_its_new_english(
    site: Path, fake_openai: FakeOpenAIServer, batches: FakeBatches
) -> None:
    assert asyncio.run(_go("batch", site, fake_openai))[0] == 0
    index = site / "docs" / "index.md"
    index.write_text(index.read_text() + "\nA sentence added after the batch was sent.\n")
    code, reporter = asyncio.run(_go("collect", site, fake_openai))
    assert code == 0
    sent = [r for r in _drafts(fake_openai) if "index.md" in json.dumps(r.body)]
    assert sent  # the stale reply was not used: the page's new English went to the model
    assert "not used" in reporter.stream.getvalue()  # type: ignore[attr-defined]
    assert check(_options(site))[0] == 0  # every translation current with the new English


def test_a_batch_reply_that_fails_the_checks_is_repaired_like_any_draft(
    site: Path, fake_openai: FakeOpenAIServer, batches: FakeBatches, echo: EchoTranslator
) -> None:
    echo.fault("ja", "index.md", "drop_code")
    assert asyncio.run(_go("batch", site, fake_openai))[0] == 0
    code, reporter = asyncio.run(_go("collect", site, fake_openai))
    assert code == 0
    repairs = [r for r in _drafts(fake_openai) if len(r.body["input"]) > 1]
    assert len(repairs) == 1  # the broken draft from the batch went back with its findings
    assert "ja/index.md" in reporter.totals.translated


def test_a_second_batch_waits_for_the_first_to_be_collected(
    site: Path, fake_openai: FakeOpenAIServer, batches: FakeBatches
) -> None:
    batches.hold = True
    assert asyncio.run(_go("batch", site, fake_openai))[0] == 0
    with pytest.raises(ValueError, match="not collected yet"):
        asyncio.run(_go("batch", site, fake_openai))
    assert len(batches.ids()) == 1


def test_the_command_line_sends_and_collects_a_batch(
    site: Path,
    fake_openai: FakeOpenAIServer,
    batches: FakeBatches,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in [k for k in os.environ if k.startswith("OPENAI_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    batches.hold = True
    root = ["--root", str(site), "--retry-base-delay", "0"]
    assert translate_docs.main([*root, "--batch"]) == 0
    assert "queued in the batch: " in capsys.readouterr().out
    assert translate_docs.main([*root, "--batch-collect"]) == 3
    assert "run --batch-collect again later" in capsys.readouterr().err
    batches.finish(batches.ids()[0])
    assert translate_docs.main([*root, "--batch-collect"]) == 0
    out = capsys.readouterr().out
    assert "answered by the batch" in out
    assert "failed: 0" in out
    assert translate_docs.main([*root, "--batch-collect"]) == 2
    assert "no batch to collect" in capsys.readouterr().err
    (site / "i18n" / "batch.json").write_text('{"batch": 1}')
    assert translate_docs.main([*root, "--batch-collect"]) == 2
    assert "is not a batch state" in capsys.readouterr().err


def test_cached_input_is_read_from_the_usage_and_priced_at_its_rate(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.enqueue(
        text_response("done", input_tokens=2000, output_tokens=100, cached_tokens=1536)
    )

    async def _call() -> ModelReply:
        async with fake_openai.async_client() as client:
            return await call_model(
                client,
                model="o3",
                effort=None,
                instructions="i",
                messages=[{"role": "user", "content": "m"}],
                policy=RetryPolicy(max_retries=0),
                limiter=asyncio.Semaphore(1),
            )

    reply = asyncio.run(_call())
    assert reply.cached_tokens == 1536
    totals = Totals()
    totals.count(reply, review=False)
    expected = (464 * 2.00 + 1536 * 0.50 + 100 * 8.00) / 1_000_000
    assert totals.translation_cost("o3") == pytest.approx(expected)
    reporter = Reporter(io.StringIO(), bar=False)
    reporter.totals = totals
    assert "tokens in: 2000 (1536 cached)" in reporter.summary("o3")
    batched = ModelReply("x", 2000, 100, cached_tokens=1536, batched=True)
    totals.count(batched, review=False)
    assert totals.translation_cost("o3") == pytest.approx(expected * 1.5)


def test_the_cache_estimate_counts_shared_prefixes_from_1024_tokens_in_128_steps() -> None:
    fixed = "x" * 4 * 1100  # ~1,100 tokens of ASCII
    assert cached_prefix_tokens(fixed + "page one", []) == 0
    assert cached_prefix_tokens(fixed + "page two", [fixed + "page one"]) == 1024
    longer = "y" * 4 * 1300
    assert cached_prefix_tokens(longer + "b", [longer + "a"]) == 1024 + 256
    assert cached_prefix_tokens("short" + "b", ["short" + "a"]) == 0
    assert estimate_cost("o3", 1000, 0, cached_tokens=1000) == pytest.approx(0.0005)
    assert estimate_cost("o3", 1000, 1000, batch=True) == pytest.approx(0.005)


async def test_whole_page_requests_of_a_language_share_their_instructions_for_the_cache(
    site: Path, echo: EchoTranslator, run_site: RunSite, fake_openai: FakeOpenAIServer
) -> None:
    assert (await run_site(languages=["ja", "ko"])).code == 0
    drafts = _drafts(fake_openai)
    by_lang: dict[str, set[str]] = {}
    for request in drafts:
        lang = "ja" if "into Japanese" in request.body["instructions"] else "ko"
        by_lang.setdefault(lang, set()).add(request.body["instructions"])
    pages = len(drafts) // 2
    assert pages > 1
    for lang, texts in by_lang.items():
        (instructions,) = texts  # byte for byte the same for every page of the language
        # long enough for the cache (the estimate errs high, as the docs say)
        assert estimate_tokens(instructions) >= CACHE_MIN_TOKENS, lang
        # the fixed part first: the glossary, which differs by content in edits, comes last
        assert instructions.index("# Workflow") < instructions.index("# Terms")
    first, second = drafts[0].body, drafts[1].body
    assert first["input"][0]["content"] != second["input"][0]["content"]
    fresh = site.parent / "fresh"  # a site where everything is new
    shutil.copytree(FIXTURES / "docs", fresh / "docs")
    shutil.copytree(site / "i18n" / "prompts", fresh / "i18n" / "prompts")
    shutil.copy(site / "i18n" / "glossary.yml", fresh / "i18n" / "glossary.yml")
    lines = dry_run(_options(fresh))
    assert re.search(r"\(~([1-9]\d*) from the prompt cache\)", lines[-2]), lines[-2]


def test_section_edits_share_the_fixed_part_and_end_with_their_own_entries() -> None:
    prompts = PromptSet.load(REPO / "i18n", ["ja"])
    one = prompts.instructions(["ja"], "A session keeps @@CODE_1@@.", edit=True)
    two = prompts.instructions(["ja"], "The runner streams a reply.", edit=True)
    shared = next(i for i, (a, b) in enumerate(zip(one, two, strict=False)) if a != b)
    workflow = one.index("# Workflow")
    assert one[:workflow] == two[:workflow]  # role, rules, language rules: shared
    assert shared > one.index("\n\n", workflow)  # and the workflow
    assert _sorted_entries(one)
    assert _sorted_entries(two)


def _sorted_entries(instructions: str) -> bool:
    terms = instructions.split("# Terms\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    keys = [line[2:].split(" -> ")[0] for line in terms]
    return keys == sorted(keys, key=lambda k: (k.casefold(), k))
