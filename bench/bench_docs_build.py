"""Time the documentation build: English only against all four languages.

The budget: the four-language build takes at most 1.3x the English-only build (issues 15 and 26;
the API reference is rendered once and shown in every language, docs_hooks/i18n_ref_once.py).
Both are strict builds of the real mkdocs.yml, measured in the same run, interleaved, each the
best of `--repeat` runs; the wall time decides, the CPU time (less sensitive to a busy machine)
is printed beside it, and the medians of both below them (on a machine shared with other work
the best runs of each build can fall into different quiet moments: compare the medians over
several runs there). `--naive` also times the four-language build with the API reference
rendered again for every language (docs_hooks/i18n_ref_once.py switched off), to show what the
hook saves.

    .venv/bin/python bench/bench_docs_build.py [--repeat 3] [--naive]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUDGET = 1.3


@dataclass
class Timing:
    """The wall and CPU times (user + sys of the build process) of each run."""

    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)

    @property
    def wall(self) -> float:
        """The best wall time."""
        return min(self.walls)

    @property
    def cpu(self) -> float:
        """The best CPU time."""
        return min(self.cpus)


def build_once(env_overrides: dict[str, str], timing: Timing) -> None:
    """Run one strict build with these environment variables and record its times."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", **env_overrides}
    with tempfile.TemporaryDirectory(prefix="docs-bench-") as site:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", site],
            cwd=ROOT,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    timing.walls.append(wall)
    timing.cpus.append(cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per build (best and median are shown)"
    )
    parser.add_argument(
        "--naive", action="store_true", help="also time the build that renders the API per language"
    )
    args = parser.parse_args()

    variants = {
        "English only (DOCS_TRANSLATIONS=false)": {"DOCS_TRANSLATIONS": "false"},
        "en + ja + ko + zh": {"DOCS_TRANSLATIONS": "true"},
    }
    if args.naive:
        variants["en + ja + ko + zh, API per language"] = {
            "DOCS_TRANSLATIONS": "true",
            "DOCS_REF_ONCE": "false",
        }
    timings = {name: Timing() for name in variants}
    # Interleaved, so a burst of load on the machine hits every variant alike.
    for _ in range(args.repeat):
        for name, env in variants.items():
            build_once(env, timings[name])
    english = timings["English only (DOCS_TRANSLATIONS=false)"]
    print(f"{'build':40} {'wall s':>7} {'ratio':>6} {'CPU s':>7} {'ratio':>6}")
    for name, timing in timings.items():
        print(
            f"{name:40} {timing.wall:7.2f} {timing.wall / english.wall:5.2f}x"
            f" {timing.cpu:7.2f} {timing.cpu / english.cpu:5.2f}x"
        )
    print(f"median of {args.repeat} runs")
    english_wall, english_cpu = statistics.median(english.walls), statistics.median(english.cpus)
    for name, timing in timings.items():
        wall, cpu = statistics.median(timing.walls), statistics.median(timing.cpus)
        print(
            f"{name:40} {wall:7.2f} {wall / english_wall:5.2f}x"
            f" {cpu:7.2f} {cpu / english_cpu:5.2f}x"
        )
    ratio = timings["en + ja + ko + zh"].wall / english.wall
    ok = ratio <= BUDGET
    print(f"{'PASS' if ok else 'FAIL'}  four languages / English (wall) {ratio:.2f}x <= {BUDGET}x")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
