"""Benchmark: a full translation of the real docs into ja, ko and zh, parallel vs sequential.

The fake OpenAI server answers every call after 2 s (the echo translator plays the model), so
the time is dominated by waiting on the model, as in a real run. Each run works on a fresh temp
copy of this repository's docs/ and i18n/ prompts, after one untimed warm-up run. Prints both
times and the ratio; the target is parallel <= 1/8 of sequential.

    PYTHONPATH=scripts .venv/bin/python bench/bench_translate.py [--latency 2.0]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import shutil
import tempfile
import time
from pathlib import Path

from turnstore.testing import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[1]

try:
    from docs_i18n.planning import Options
    from docs_i18n.report import Reporter
    from docs_i18n.runner import translate
    from echo_translator import EchoTranslator
except ModuleNotFoundError as exc:
    raise SystemExit(f"{exc}: run it with PYTHONPATH=scripts (make bench does)") from exc


async def _one_run(concurrency: int | None, latency: float) -> tuple[float, int, int]:
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer() as server:
        root = Path(tmp)
        shutil.copytree(
            REPO / "docs", root / "docs", ignore=shutil.ignore_patterns("ja", "ko", "zh")
        )
        (root / "i18n").mkdir()
        shutil.copytree(REPO / "i18n" / "prompts", root / "i18n" / "prompts")
        shutil.copy(REPO / "i18n" / "glossary.yml", root / "i18n" / "glossary.yml")
        echo = EchoTranslator(latency=latency).install(server)
        options = Options(root=root, languages=["ja", "ko", "zh"])
        if concurrency is not None:
            options.concurrency = concurrency
        reporter = Reporter(io.StringIO(), bar=False)
        async with server.async_client(timeout=60) as client:
            start = time.perf_counter()
            code = await translate(options, client, reporter)
            elapsed = time.perf_counter() - start
        if code != 0:
            raise SystemExit(f"run failed: {reporter.summary(options.model)}")
        return elapsed, len(echo.calls), echo.max_in_flight


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=2.0, help="seconds per model call")
    args = parser.parse_args()
    pages = sorted(
        p.relative_to(REPO / "docs").as_posix()
        for p in (REPO / "docs").rglob("*.md")
        if p.relative_to(REPO / "docs").parts[0] not in ("ref", "ja", "ko", "zh")
    )
    print(f"pages: {len(pages)} ({', '.join(pages)}) x 3 languages, {args.latency} s per call")
    # Warm-up, untimed: the first request of a process pays ~1 s of one-time set-up in the
    # openai client (lazy imports, response models); neither timed run should carry it.
    asyncio.run(_one_run(None, 0.0))
    parallel, calls, peak = asyncio.run(_one_run(None, args.latency))
    print(
        f"default concurrency ({Options(root=REPO, languages=[]).concurrency}): "
        f"{parallel:.2f} s, {calls} calls, at most {peak} in flight"
    )
    sequential, calls, peak = asyncio.run(_one_run(1, args.latency))
    print(f"concurrency 1: {sequential:.2f} s, {calls} calls, at most {peak} in flight")
    ratio = parallel / sequential
    print(f"ratio parallel/sequential: {ratio:.3f} (1/{1 / ratio:.1f})")
    ok = ratio <= 1 / 8
    print(f"{'PASS' if ok else 'FAIL'}  parallel / sequential {ratio:.3f} <= 1/8")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
