"""Benchmark: a full translation of the real docs into ja, ko and zh, parallel vs sequential,
and against the OpenAI Agents SDK's translation script.

The fake OpenAI server answers every call after a fixed latency (the echo translator plays the
model), so the time is dominated by waiting on the model, as in a real run. The server runs in a
process of its own (this script with `--serve`), for our runs as for the SDK's: neither side pays
for the fake model's CPU time, as neither would pay for a real model's. The echo translator's
work (translating and reviewing whole pages in Python, one request at a time under the GIL) is
done in the untimed warm-up run, whose replies the timed runs' servers answer from, keyed by the
request's exact body (a request not seen in the warm-up is worked out as before): otherwise
33 whole-page replies worked out one after the other would be timed as model latency, while
the SDK's fake model only echoes. Each run works on a fresh temp copy of this repository's
docs/ and i18n/ prompts. Prints both times and the ratio; the target is parallel <= 1/8 of
sequential.

With `--sdk-script`, the SDK's `docs/scripts/translate_docs.py` (from the `openai-agents`
source package, run unchanged as a subprocess with `--mode full` and every page in
`--file-list`) translates the same pages into the same three languages against the same fake
server at the same latency (each call echoes its input back). Both sides are timed alike, from
their first request to the last file they write (the model server notes the first request's
time; the files' modification times give the last write): neither side's start-up (the
interpreter, the imports, reading and planning the pages) is counted, and both sides' work
after the last reply (checks, restoring the code, writing the pages) is. The SDK's script sends one
request per page and language, whose prompt has the model review its own draft; ours does the
same with `--no-review` (plus the code checks and their repairs), and must then be at least 5
times faster. Our default run is printed too: its separate review call follows each draft, so
two model latencies in a row bound it at SDK / (2 x latency).

    PYTHONPATH=scripts .venv/bin/python bench/bench_translate.py [--latency 2.0]
    PYTHONPATH=scripts .venv/bin/python bench/bench_translate.py --latency 1 \\
        --sdk-script /tmp/sdk/openai_agents-0.24.0/docs/scripts/translate_docs.py
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai

from turnstore.testing import FakeOpenAIServer, FakeReply, RecordedRequest, text_response

REPO = Path(__file__).resolve().parents[1]

try:
    from docs_i18n.planning import Options
    from docs_i18n.report import Reporter
    from docs_i18n.runner import translate
    from echo_translator import EchoTranslator
except ModuleNotFoundError as exc:
    raise SystemExit(f"{exc}: run it with PYTHONPATH=scripts (make bench does)") from exc


def _copy_repo(root: Path) -> None:
    shutil.copytree(REPO / "docs", root / "docs", ignore=shutil.ignore_patterns("ja", "ko", "zh"))
    (root / "i18n").mkdir()
    shutil.copytree(REPO / "i18n" / "prompts", root / "i18n" / "prompts")
    shutil.copy(REPO / "i18n" / "glossary.yml", root / "i18n" / "glossary.yml")


class _Stats:
    """What the model server in its own process saw: its calls, the most in flight at once,
    and when the first request came (`time.time`, comparable with the files' modification
    times)."""

    def __init__(self, translator: EchoTranslator | None) -> None:
        self.translator = translator
        self.calls = 0
        self.remembered = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.first: float | None = None
        self._lock = threading.Lock()

    def started(self) -> float:
        with self._lock:
            now = time.monotonic()
            self.calls += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if self.first is None:
                self.first = time.time()
            return now

    def remember(self) -> None:
        """Count a request answered from the warm-up's replies."""
        with self._lock:
            self.remembered += 1

    def answered(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def __call__(self, request: RecordedRequest) -> dict[str, Any]:
        echo = self.translator  # it counts a request for several languages once per language
        with self._lock:
            return {
                "calls": (
                    len(echo.calls) + len(echo.reviews) + self.remembered if echo else self.calls
                ),
                "remembered": self.remembered,
                "max_in_flight": self.max_in_flight,
                "first": self.first,
            }


def _body_key(request: RecordedRequest) -> str:
    text = json.dumps(request.body, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _serve(kind: str, latency: float, memo: Path | None) -> None:
    """Serve the fake model in this process until stdin closes (`--serve`).

    `translator` is the echo translator (ours: it understands our requests and plays the
    reviewer); `echo` answers every call with its own input (the SDK's model). Either answers
    `latency` seconds after the request arrived, the fake model's own work done within that
    time, as a real model's is within its latency. `GET /bench/stats` returns the `_Stats`.

    With `memo` (a JSON file: request body hash -> reply), a request seen before is answered
    with its reply from the file, and the replies worked out are added to it at the end.
    """
    remembered: dict[str, Any] = (
        json.loads(memo.read_text(encoding="utf-8")) if memo and memo.exists() else {}
    )
    with FakeOpenAIServer() as server:
        translator = EchoTranslator(latency=0) if kind == "translator" else None
        stats = _Stats(translator)

        def _answer(request: RecordedRequest) -> FakeReply | dict[str, Any] | None:
            arrived = stats.started()
            key = _body_key(request) if memo else ""
            reply: FakeReply | dict[str, Any] | None
            if key in remembered:
                reply = remembered[key]
                stats.remember()
            elif translator is not None:
                reply = translator(request)
                if memo and isinstance(reply, dict):
                    remembered[key] = reply
            else:
                reply = text_response(str(request.body.get("input") or ""))
            time.sleep(max(0.0, arrived + latency - time.monotonic()))
            stats.answered()
            return reply

        server.route("GET", "/bench/stats", stats)
        server.route("POST", "/v1/responses", _answer)
        print(server.base_url, flush=True)
        sys.stdin.read()
    if memo is not None:
        memo.write_text(json.dumps(remembered), encoding="utf-8")


@contextlib.contextmanager
def _model_server(
    kind: str, latency: float, memo: Path | None = None
) -> Iterator[tuple[str, Callable[[], Any]]]:
    """Run the fake model (`_serve`) in a process of its own: neither side of a comparison
    pays for the fake model's CPU time. Yields its base URL and a function that reads its
    stats."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "scripts")}
    remember = ["--memo", str(memo)] if memo is not None else []
    with subprocess.Popen(
        [sys.executable, __file__, "--serve", kind, "--latency", str(latency), *remember],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    ) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        if not base_url:
            raise SystemExit("the fake model server did not start")

        def _stats() -> Any:
            with urllib.request.urlopen(base_url.removesuffix("/v1") + "/bench/stats") as reply:
                return json.loads(reply.read())

        try:
            yield base_url, _stats
        finally:
            process.stdin.close()
            process.wait(timeout=30)


def _cold_caches() -> None:
    """Empty the caches of `docs_i18n` (patterns, prose, the English side of the checks): each
    run starts as cold as a run of the CLI in a process of its own, not with what the warm-up
    worked out about the same pages."""
    for name, module in list(sys.modules.items()):
        if name == "docs_i18n" or name.startswith("docs_i18n."):
            for value in vars(module).values():
                clear = getattr(value, "cache_clear", None)
                if callable(clear):
                    clear()


def _last_write(root: Path) -> float:
    """When the run's last file was written (`time.time`): a translation or the manifest."""
    written = [p for lang in ("ja", "ko", "zh") for p in (root / "docs" / lang).rglob("*.md")]
    written += [p for p in [root / "i18n" / "manifest.json"] if p.exists()]
    if not written:
        raise SystemExit("the run wrote no translation")
    return max(p.stat().st_mtime_ns for p in written) / 1e9


async def _one_run(
    concurrency: int | None, latency: float, memo: Path, *, review: bool = True
) -> tuple[float, float, int, int, int]:
    """One run of ours: its whole time, the time from its first request to its last file
    written (as `_sdk_run` times the SDK's), its calls, the most in flight, and the calls
    answered from the warm-up's replies."""
    _cold_caches()
    with tempfile.TemporaryDirectory() as tmp, _model_server("translator", latency, memo) as served:
        base_url, stats = served
        root = Path(tmp)
        _copy_repo(root)
        options = Options(root=root, languages=["ja", "ko", "zh"], review=review)
        if concurrency is not None:
            options.concurrency = concurrency
        reporter = Reporter(io.StringIO(), bar=False)
        client = openai.AsyncOpenAI(
            api_key="sk-bench", base_url=base_url, max_retries=0, timeout=60
        )
        async with client:
            start = time.perf_counter()
            code = await translate(options, client, reporter)
            elapsed = time.perf_counter() - start
        if code != 0:
            raise SystemExit(f"run failed: {reporter.summary(options.model)}")
        seen = stats()
        span = _last_write(root) - seen["first"]
        return elapsed, span, seen["calls"], seen["max_in_flight"], seen["remembered"]


def _sdk_run(script: Path, pages: list[str], latency: float) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp, _model_server("echo", latency) as served:
        base_url, stats = served
        root = Path(tmp)
        _copy_repo(root)
        (root / "pages.txt").write_text("\n".join(pages) + "\n", encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        env.update(OPENAI_API_KEY="sk-bench", OPENAI_BASE_URL=base_url, OPENAI_MODEL="o3")
        result = subprocess.run(
            [sys.executable, str(script), "--mode", "full", "--file-list", "pages.txt"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=1200,
            check=False,
        )
        seen = stats()
        if result.returncode != 0 or seen["first"] is None:
            raise SystemExit(f"the SDK's script failed: {result.stderr[-2000:]}")
        return _last_write(root) - seen["first"], seen["calls"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=2.0, help="seconds per model call")
    parser.add_argument("--sdk-script", type=Path, help="the SDK's translate_docs.py (the peer)")
    parser.add_argument("--serve", choices=["translator", "echo"], help=argparse.SUPPRESS)
    parser.add_argument("--memo", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(args.serve, args.latency, args.memo)
        return 0
    with tempfile.TemporaryDirectory() as memo_dir:
        return _compare(args, Path(memo_dir) / "replies.json")


def _compare(args: argparse.Namespace, memo: Path) -> int:
    pages = sorted(
        p.relative_to(REPO / "docs").as_posix()
        for p in (REPO / "docs").rglob("*.md")
        if p.relative_to(REPO / "docs").parts[0] not in ("ref", "ja", "ko", "zh")
    )
    print(f"pages: {len(pages)} ({', '.join(pages)}) x 3 languages, {args.latency} s per call")
    # Warm-up, untimed: the first request of a process pays ~1 s of one-time set-up in the
    # openai client (lazy imports, response models); neither timed run should carry it.
    # The warm-up's replies are remembered (`memo`): the fake model's work is not timed.
    asyncio.run(_one_run(None, 0.0, memo))
    parallel, parallel_span, calls, peak, hits = asyncio.run(_one_run(None, args.latency, memo))
    print(
        f"default concurrency ({Options(root=REPO, languages=[]).concurrency}): "
        f"{parallel:.2f} s ({parallel_span:.2f} s from the first request to the last file), "
        f"{calls} calls ({hits} answered from the warm-up's replies), at most {peak} in flight"
    )
    ok = True
    if args.sdk_script is not None:
        _, alone, alone_calls, _, _ = asyncio.run(_one_run(None, args.latency, memo, review=False))
        print(
            f"the same with --no-review (one call per page and language, which reviews its own "
            f"draft, as the SDK's script does): {alone:.2f} s, {alone_calls} calls"
        )
        sdk, sdk_calls = _sdk_run(args.sdk_script, pages, args.latency)
        print(f"the SDK's script: {sdk:.2f} s, {sdk_calls} calls")
        print("(each side from its first request to its last file written)")
        speedup = sdk / alone
        ok = speedup >= 5
        verdict = "PASS" if ok else "FAIL"
        print(f"{verdict}  like for like: SDK / ours --no-review {speedup:.2f} >= 5")
        print(
            f"      with the review pass: SDK / ours {sdk / parallel_span:.2f} (a draft and its "
            f"review are two calls in a row: at most {sdk / (2 * args.latency):.2f} at this "
            "latency)"
        )
    sequential, _, calls, peak, _ = asyncio.run(_one_run(1, args.latency, memo))
    print(f"concurrency 1: {sequential:.2f} s, {calls} calls, at most {peak} in flight")
    ratio = parallel / sequential
    print(f"ratio parallel/sequential: {ratio:.3f} (1/{1 / ratio:.1f})")
    fast = ratio <= 1 / 8
    print(f"{'PASS' if fast else 'FAIL'}  parallel / sequential {ratio:.3f} <= 1/8")
    return 0 if ok and fast else 1


if __name__ == "__main__":
    raise SystemExit(main())
