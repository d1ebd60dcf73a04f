"""The command line as CI runs it: exit codes, environment, what it writes, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from translation_support import SCRIPT, InProcess

from docs_i18n.checks import verify_page
from echo_translator import EchoTranslator
from turnstore.testing import FakeOpenAIServer, FakeReply, text_response


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(extra)
    return env


def _run(site: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(site), *args],
        capture_output=True,
        text=True,
        env=_env(**env),
        timeout=120,
        check=False,
    )


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_missing_key_is_one_line_and_exit_2(run_main: InProcess) -> None:
    result = run_main()
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "OPENAI_API_KEY is not set" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_glossary_left_with_a_merge_conflict_is_one_line_naming_it(
    site: Path, run_main: InProcess
) -> None:
    glossary = site / "i18n" / "glossary.yml"
    text = glossary.read_text(encoding="utf-8")
    glossary.write_text(text + "<<<<<<< HEAD\n# one\n=======\n# two\n>>>>>>> branch\n")
    for mode in ("--check", "--dry-run", "--adopt"):
        result = run_main(mode)
        assert result.returncode == 2, (mode, result.stdout)
        assert f"{glossary} is not valid YAML (line" in result.stderr
        assert "Traceback" not in result.stderr


def test_check_and_dry_run_need_no_key(site: Path, run_main: InProcess) -> None:
    checked = run_main("--check")
    assert checked.returncode == 1
    assert "missing   docs/ja/index.md" in checked.stdout
    dry = run_main("--dry-run", "--lang", "ja")
    assert dry.returncode == 0, dry.stderr
    assert "would translate ja/index.md" in dry.stdout
    assert "estimated cost ~$" in dry.stdout
    assert not (site / "docs" / "ja").exists()


def test_bad_file_is_a_usage_error(run_main: InProcess) -> None:
    result = run_main("--file", "docs/nope.md", OPENAI_API_KEY="sk-test")
    assert result.returncode == 2
    assert "docs/nope.md: not an English page under docs/" in result.stderr
    assert "Traceback" not in result.stderr


def test_ci_run_honours_base_url_and_writes_only_translations(
    site: Path, fake_openai: FakeOpenAIServer, run_main: InProcess
) -> None:
    # The script as CI starts it, a child given only its environment; the check after it runs
    # in process.
    EchoTranslator().install(fake_openai)
    before = _files(site)
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_openai.base_url, "CI": "true"}
    custom = str(site / "docs" / "guide" / "custom.md")  # an absolute path works too
    result = _run(site, "--file", "index.md", "--file", custom, **env)
    assert result.returncode == 0, result.stderr
    assert "translated: 6, kept: 0, failed: 0" in result.stdout
    assert "\r" not in result.stderr  # plain lines in CI, no progress bar
    assert "[6/6]" in result.stderr
    after = _files(site)
    changed = {k for k in after if before.get(k) != after[k]}
    changed.discard("i18n/manifest.json.lock")  # the manifest's lock file (git-ignored)
    assert changed == {
        "i18n/manifest.json",
        *(
            f"docs/{lang}/{page}"
            for lang in ("ja", "ko", "zh")
            for page in ("index.md", "guide/custom.md")
        ),
    }
    again = run_main("--check", "--file", "index.md", "--file", "guide/custom.md")
    assert again.returncode == 0, again.stdout


# A shell job started with `&` runs with SIGINT ignored: `trap "" INT` sets SIG_IGN, which exec
# keeps; the script must still stop on Ctrl-C.
SIGINT_IGNORED = ["bash", "-c", 'trap "" INT; exec "$@"', "bash"]


@pytest.mark.parametrize("sigint_ignored", [False, True], ids=["shell", "sigint-ignored-job"])
def test_ctrl_c_leaves_every_file_old_or_new(
    site: Path, fake_openai: FakeOpenAIServer, sigint_ignored: bool
) -> None:
    echo = EchoTranslator(latency=0.4).install(fake_openai)
    env = _env(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=fake_openai.base_url, CI="true")
    process = subprocess.Popen(
        [
            *(SIGINT_IGNORED if sigint_ignored else []),
            sys.executable,
            str(SCRIPT),
            "--root",
            str(site),
            "--concurrency",
            "2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while not list((site / "docs").glob("*/index.md")) and not list(
            (site / "docs").glob("*/guide/*.md")
        ):
            assert time.monotonic() < deadline, "no translation was written"
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert "translated: " in stdout  # the summary of what was done before the interruption
    assert "interrupted" in stderr
    assert "Traceback" not in stderr
    assert len(echo.calls) + len(echo.reviews) < 18  # stopped before the end
    assert list(site.rglob("*.tmp")) == []
    manifest = json.loads((site / "i18n" / "manifest.json").read_text(encoding="utf-8"))
    written = 0
    for lang in ("ja", "ko", "zh"):
        for path in (site / "docs" / lang).rglob("*.md") if (site / "docs" / lang).exists() else []:
            page = path.relative_to(site / "docs" / lang).as_posix()
            english = (site / "docs" / page).read_text(encoding="utf-8")
            assert verify_page(english, path.read_text(encoding="utf-8")) == []
            assert lang in manifest["pages"][page]
            written += 1
    assert 1 <= written < 9


_GOOD = json.dumps(text_response("x"))


@pytest.mark.parametrize(
    "reply",
    [
        FakeReply(raw=b"<html>bad gateway</html>"),
        FakeReply(raw=_GOOD[: len(_GOOD) // 2].encode()),
        FakeReply(raw=b"[]"),
        FakeReply(
            raw=_GOOD.replace(
                '"annotations": []', '"annotations": ' + "[" * 5000 + "]" * 5000
            ).encode()
        ),
        FakeReply(raw=_GOOD.replace('"x"', '"\\ud800"').encode()),
    ],
    ids=["not-json", "truncated", "a-list", "nested-too-deep", "lone-surrogate"],
)
def test_a_malformed_reply_fails_its_page_and_the_command_goes_on(
    reply: FakeReply, site: Path, fake_openai: FakeOpenAIServer, run_main: InProcess
) -> None:
    echo = EchoTranslator().install(fake_openai)
    echo.fault("ja", "index.md", reply)
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_openai.base_url, "CI": "true"}
    result = run_main("--lang", "ja", **env)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "ja/index.md: failed (the model call failed: malformed reply" in result.stderr
    assert "translated: 2, kept: 0, failed: 1" in result.stdout
    assert not (site / "docs" / "ja" / "index.md").exists()
    assert list(site.rglob("*.tmp")) == []
    # The rerun translates the failed page alone, and then every translation is sound.
    echo.calls.clear()
    result = run_main("--lang", "ja", **env)
    assert result.returncode == 0, result.stderr
    assert {page for _, page, _ in echo.calls} == {"index.md"}
    assert run_main("--check", "--lang", "ja").returncode == 0


def test_refused_connection_names_the_url_and_stops_at_once(
    site: Path, run_main: InProcess
) -> None:
    url = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there
    result = run_main("--max-retries", "6", OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=url)
    assert result.returncode == 2, result.stderr
    assert f"cannot connect to {url}" in result.stderr
    assert "connection refused" in result.stderr
    # Each retry prints "retry N in X s" on stderr: none means it stopped at the first refusal
    # (with 6 retries it would wait 1+2+...+32 s).
    assert "retry" not in result.stderr
    assert "Traceback" not in result.stderr
    assert not (site / "docs" / "ja").exists()


def test_kill_after_a_page_is_written_resumes_on_rerun(
    site: Path, fake_openai: FakeOpenAIServer, run_main: InProcess
) -> None:
    echo = EchoTranslator().install(fake_openai)
    marker = site / "paused"
    env = _env(
        OPENAI_API_KEY="sk-test",
        OPENAI_BASE_URL=fake_openai.base_url,
        CI="true",
        PAUSE_MARKER=str(marker),
        PYTHONPATH=str(SCRIPT.parent),
    )
    wrapper = Path(__file__).resolve().parent / "pause_after_page.py"
    process = subprocess.Popen(
        [sys.executable, str(wrapper), "--root", str(site), "--lang", "ja", "--concurrency", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the page was never written"
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    written = Path(marker.read_text(encoding="utf-8"))
    page = written.relative_to(site / "docs" / "ja").as_posix()
    manifest = json.loads((site / "i18n" / "manifest.json").read_text(encoding="utf-8"))
    assert "pending" in manifest["pages"][page]["ja"]  # killed between the two phases
    # A temporary file as a kill inside a write would leave it.
    (site / "docs" / "ja" / ".index.md.abc123.tmp").write_text("half", encoding="utf-8")
    echo.calls.clear()
    result = run_main(
        "--lang", "ja", OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=fake_openai.base_url
    )
    assert result.returncode == 0, result.stderr
    assert page not in {p for _, p, _ in echo.calls}  # the written page was kept, not redone
    assert len({p for _, p, _ in echo.calls}) == 2
    assert list(site.rglob("*.tmp")) == []
    manifest = json.loads((site / "i18n" / "manifest.json").read_text(encoding="utf-8"))
    assert all("pending" not in entry["ja"] for entry in manifest["pages"].values())
    checked = run_main("--check", "--lang", "ja")
    assert checked.returncode == 0, checked.stdout


def test_no_review_and_report_on_the_command_line(
    site: Path, fake_openai: FakeOpenAIServer, run_main: InProcess
) -> None:
    echo = EchoTranslator().install(fake_openai)
    report = site / "run-report.json"
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_openai.base_url, "CI": "true"}
    args = ("--lang", "ja", "--file", "index.md", "--report", str(report))
    result = run_main(*args, "--no-review", **env)
    assert result.returncode == 0, result.stderr
    assert echo.reviews == []
    assert "review calls" not in result.stdout
    assert json.loads(report.read_text(encoding="utf-8"))["review"]["calls"] == 0
    # a negation: a small edit that is still reviewed by a call of its own (`Job.self_review`)
    added = "\nA session is never shared between runners.\n"
    (site / "docs" / "index.md").write_text(
        (site / "docs" / "index.md").read_text(encoding="utf-8") + added, encoding="utf-8"
    )
    result = run_main(*args, "--review-model", "o4-mini", **env)
    assert result.returncode == 0, result.stderr
    assert len(echo.reviews) == 1
    assert "review calls: 1, tokens in: " in result.stdout
    assert json.loads(report.read_text(encoding="utf-8"))["review"]["calls"] == 1
    assert run_main("--section", "x").returncode == 2  # --section goes with --adopt only
