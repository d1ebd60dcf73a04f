"""Time the documentation build: English only against all four languages.

The issue's budget: the four-language build takes at most 2.5x the English-only build. Both are
strict builds of the real mkdocs.yml, measured in the same run, each the best of `--repeat`
runs. `--naive` also times the four-language build with the API reference rendered again for
every language (docs_hooks/i18n_ref_once.py switched off), to show what the hook saves.

    .venv/bin/python bench/bench_docs_build.py [--repeat 3] [--naive]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUDGET = 2.5


def build_seconds(env_overrides: dict[str, str], repeat: int) -> float:
    """Return the best wall time of `repeat` strict builds with these environment variables."""
    best = float("inf")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", **env_overrides}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="docs-bench-") as site:
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", site],
                cwd=ROOT,
                env=env,
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per build (best is kept)")
    parser.add_argument(
        "--naive", action="store_true", help="also time the build that renders the API per language"
    )
    args = parser.parse_args()

    english = build_seconds({"DOCS_TRANSLATIONS": "false"}, args.repeat)
    full = build_seconds({"DOCS_TRANSLATIONS": "true"}, args.repeat)
    ratio = full / english
    print(f"English only (DOCS_TRANSLATIONS=false): {english:6.2f} s")
    print(f"en + ja + ko + zh:                      {full:6.2f} s")
    print(f"ratio: {ratio:.2f}x (budget {BUDGET}x) -> {'OK' if ratio <= BUDGET else 'OVER BUDGET'}")
    if args.naive:
        naive = build_seconds({"DOCS_TRANSLATIONS": "true", "DOCS_REF_ONCE": "false"}, args.repeat)
        print(f"en + ja + ko + zh, API per language:    {naive:6.2f} s ({naive / english:.2f}x)")
    return 0 if ratio <= BUDGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
