"""Benchmark: what a one-section edit costs, against the OpenAI Agents SDK's translation script.

For every English page of this repository's docs/, one section is edited (a sentence is added
at its end), then:

- ours: `scripts/docs_i18n` brings the ja, ko and zh translations up to date (made beforehand,
  untimed), review pass included;
- the SDK's: its `docs/scripts/translate_docs.py` (from the `openai-agents` source package, run
  unchanged as a subprocess with `--mode full --file PAGE`, which is what it does for a changed
  page) retranslates the page into the same three languages.

Both talk to the fake OpenAI server (the echo translator and fake reviewer for ours; an echo of
the chunk for the SDK's, which sends the whole protected page). Cost is counted the way the
issue asks: characters sent (instructions and input) plus four times the characters the model
writes back. Every character of a request's `instructions`, `input` (text content in any
form) and `text.format` (the review's JSON schema) counts. Prints each page's figures, with
how much of ours is fixed instructions, and the total ratio; the target is <= 0.15 on every
page, and a page that misses it prints a FAIL line. `--every-section` also edits each section
of each page in turn (the preamble included) and prints the mean and the worst ratio against
the SDK's run of the middle edit (its cost hardly depends on where the sentence is added).
`--cases` measures the edits of `CASES` instead (whitespace and a cut-and-paste: no call; a
heading renamed, a one-word typo in the longest section: <= 0.15 each). A page whose first
translation by the echo translator fails the checks prints a SKIP line: it is not measured.

What a small edit sends: the changed paragraphs only (for a change inside one paragraph whose
sentences line up with its translation, the changed sentences only, the rest of the paragraph
as context), with the kept paragraph on each side of them (a long one clipped to its lines
nearest the change) and the neighbouring sections' headings as context; the rules its text
needs (the short never-translate rule when it has no links, HTML or icons); one request for the
three languages. A small patch (`SELF_REVIEW_CHARS`, and no negation or obligation word)
reviews itself in that request; a larger one gets one review of the three languages, with a
shorter list of what to look for. What is left is mostly fixed: the instructions, each
language's rules and the JSON schema of the reply.

    pip download --no-deps --no-binary :all: openai-agents==0.24.0 -d /tmp/sdk
    tar xzf /tmp/sdk/openai_agents-0.24.0.tar.gz -C /tmp/sdk
    PYTHONPATH=scripts .venv/bin/python bench/bench_translate_cost.py \\
        --sdk-script /tmp/sdk/openai_agents-0.24.0/docs/scripts/translate_docs.py [--cases]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from turnstore.testing import (
    FakeOpenAIServer,
    FakeReply,
    RecordedRequest,
    text_response,
)

REPO = Path(__file__).resolve().parents[1]

try:
    from docs_i18n.planning import Options
    from docs_i18n.report import Reporter
    from docs_i18n.runner import translate
    from echo_translator import EchoTranslator
except ModuleNotFoundError as exc:
    raise SystemExit(f"{exc}: run it with PYTHONPATH=scripts (make bench does)") from exc


LANGS = ["ja", "ko", "zh"]
ADDED = "\nThis sentence was added to measure what a one-section edit costs.\n"


def _pages() -> list[str]:
    return sorted(
        p.relative_to(REPO / "docs").as_posix()
        for p in (REPO / "docs").rglob("*.md")
        if p.relative_to(REPO / "docs").parts[0] not in ("ref", "ja", "ko", "zh")
    )


def _sections(text: str) -> int:
    """How many sections an edit can land in: the preamble and each `## ` section."""
    return 1 + len(re.findall(r"(?m)^## ", text))


def _edit(text: str, section: int | None = None) -> str:
    """Add a sentence at the end of a section: the middle `## ` one unless `section` is given.

    `section` counts like the pipeline: 0 is the preamble, n the n-th `## ` section.
    """
    starts = [m.start() for m in re.finditer(r"(?m)^## ", text)]
    if section is None:
        if not starts:
            return text + ADDED
        section = len(starts) // 2 + 1
    bounds = [0, *starts, len(text)]
    end = bounds[section + 1]
    body = text[:end].rstrip("\n")
    return body + "\n" + ADDED + "\n" + text[end:].lstrip("\n")


def _bounds(text: str) -> list[int]:
    """Where each section starts (the preamble at 0, then each `## ` heading), and the end."""
    return [0, *(m.start() for m in re.finditer(r"(?m)^## ", text)), len(text)]


def _middle(text: str) -> int:
    """The number of the middle `## ` section (as `_edit` picks it), or 0 without one."""
    return (len(_bounds(text)) - 2) // 2 + 1 if len(_bounds(text)) > 2 else 0


def _whitespace(text: str) -> str:
    """Trailing spaces on every line of the middle section, two more blank lines at its end."""
    bounds = _bounds(text)
    n = _middle(text)
    start, end = bounds[n], bounds[n + 1]
    body = text[start:end].rstrip("\n")
    spaced = "\n".join(line + "  " if line.strip() else line for line in body.split("\n"))
    return text[:start] + spaced + "\n\n\n\n" + text[end:].lstrip("\n")


def _reorder(text: str) -> str | None:
    """The last section cut and pasted above the section before it (`None`: too few). Each of
    the two then ends differently (blank lines) than before."""
    bounds = _bounds(text)
    n = len(bounds) - 2
    if n < 2:
        return None
    above = text[bounds[n - 1] : bounds[n]]
    moved = text[bounds[n] :]
    return text[: bounds[n - 1]] + moved.rstrip("\n") + "\n\n" + above.rstrip("\n") + "\n"


def _rename(text: str) -> str | None:
    """The middle section's heading renamed (a word added)."""
    bounds = _bounds(text)
    n = _middle(text)
    if n == 0:
        return None
    start = bounds[n]
    line_end = text.index("\n", start)
    heading = re.sub(r"\s*\{[^}]*\}\s*$", "", text[start:line_end])
    attrs = text[start + len(heading) : line_end]
    return text[:start] + heading + " in practice" + attrs + text[line_end:]


_PROSE_LINE = re.compile(r"^[A-Za-z][^`\[\]()|@<>*_{}]*$")


def _typo(text: str) -> str | None:
    """One word of the longest section misspelt (two letters swapped): a one-word typo fix."""
    bounds = _bounds(text)
    n = max(range(len(bounds) - 1), key=lambda i: bounds[i + 1] - bounds[i])
    start, end = bounds[n], bounds[n + 1]
    fenced = False
    lines = text[start:end].split("\n")
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if fenced or not _PROSE_LINE.match(line):
            continue
        words = re.findall(r"\b[a-z]{6,}\b", line)
        if words:
            word = words[len(words) // 2]
            lines[i] = line.replace(word, word[:2] + word[3] + word[2] + word[4:], 1)
            return text[:start] + "\n".join(lines) + text[end:]
    return None


CASES: dict[str, Any] = {
    "whitespace": _whitespace,
    "reorder": _reorder,
    "heading rename": _rename,
    "one-word typo": _typo,
}
"""The edits `--cases` measures, each on every page where it applies."""

ONE_SECTION = 0.15
"""The most a one-section edit may cost, as a share of the SDK's run (review included)."""


def _content_chars(content: Any) -> int:
    """Characters of a message's content: a string, or a list of parts with text."""
    if isinstance(content, str):
        return len(content)
    return sum(len(str(part.get("text") or "")) for part in content or [])


def _fixed_chars(body: Any) -> int:
    """Characters of a request's instructions and response format (the fixed part)."""
    text = body.get("text") or {}
    fmt = json.dumps(text["format"], separators=(",", ":")) if "format" in text else ""
    return len(str(body.get("instructions") or "")) + len(fmt)


def _request_chars(body: Any) -> int:
    items = body.get("input")
    if isinstance(items, str):
        return _fixed_chars(body) + len(items)
    return _fixed_chars(body) + sum(_content_chars(item.get("content")) for item in items or [])


def _reply_chars(body: dict[str, Any]) -> int:
    return sum(
        len(part.get("text", ""))
        for item in body.get("output", [])
        for part in item.get("content", [])
    )


class _Meter:
    """Wraps a route and counts the characters of each request and reply."""

    def __init__(self, route: Any) -> None:
        self.route = route
        self.sent = 0
        self.fixed = 0
        self.written = 0
        self.calls = 0

    def __call__(self, request: RecordedRequest) -> FakeReply | dict[str, Any] | None:
        reply = self.route(request)
        body = reply.body if isinstance(reply, FakeReply) else reply
        if isinstance(body, dict):
            self.calls += 1
            self.sent += _request_chars(request.body)
            self.fixed += _fixed_chars(request.body)
            self.written += _reply_chars(body)
        return reply

    @property
    def cost(self) -> int:
        return self.sent + 4 * self.written


def _copy_repo(root: Path) -> None:
    shutil.copytree(REPO / "docs", root / "docs", ignore=shutil.ignore_patterns("ja", "ko", "zh"))
    (root / "i18n").mkdir()
    shutil.copytree(REPO / "i18n" / "prompts", root / "i18n" / "prompts")
    shutil.copy(REPO / "i18n" / "glossary.yml", root / "i18n" / "glossary.yml")


class _Unmeasured(Exception):
    """The echo translator's first translation of a page failed the checks: nothing to edit."""


async def _ours(page: str, section: int | None = None, edit: Any = None) -> _Meter:
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer() as server:
        root = Path(tmp)
        _copy_repo(root)
        meter = _Meter(EchoTranslator())
        server.route("POST", "/v1/responses", meter)
        options = Options(root=root, languages=LANGS, files=[page])
        async with server.async_client(timeout=60) as client:
            reporter = Reporter(io.StringIO(), bar=False)
            if await translate(options, client, reporter) != 0:
                raise _Unmeasured(f"first run failed: {reporter.summary('o3', 'o3')}")
            path = root / "docs" / page
            text = path.read_text(encoding="utf-8")
            path.write_text(edit(text) if edit else _edit(text, section), encoding="utf-8")
            meter.sent = meter.fixed = meter.written = meter.calls = 0
            reporter = Reporter(io.StringIO(), bar=False)
            if await translate(options, client, reporter) != 0:
                raise SystemExit(f"edit run failed: {reporter.summary('o3', 'o3')}")
        return meter


def _echo_chunk(request: RecordedRequest) -> dict[str, Any]:
    return text_response(str(request.body.get("input") or ""))


def _sdk(page: str, script: Path) -> _Meter:
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer() as server:
        root = Path(tmp)
        _copy_repo(root)
        path = root / "docs" / page
        path.write_text(_edit(path.read_text(encoding="utf-8")), encoding="utf-8")
        meter = _Meter(_echo_chunk)
        server.route("POST", "/v1/responses", meter)
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        env.update(OPENAI_API_KEY="sk-bench", OPENAI_BASE_URL=server.base_url, OPENAI_MODEL="o3")
        result = subprocess.run(
            [sys.executable, str(script), "--mode", "full", "--file", page],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if result.returncode != 0:
            raise SystemExit(f"the SDK's script failed on {page}: {result.stderr[-2000:]}")
        return meter


def _run_cases(script: Path) -> list[str]:
    """Measure each edit of `CASES` on every page; print them; return the misses."""
    missed: list[str] = []
    sdk: dict[str, _Meter] = {}
    for name, edit in CASES.items():
        total_ours = total_sdk = 0
        worst = (0.0, "")
        for page in _pages():
            text = (REPO / "docs" / page).read_text(encoding="utf-8")
            if edit(text) is None:
                continue
            try:
                ours = asyncio.run(_ours(page, edit=edit))
            except _Unmeasured as exc:
                print(f"  SKIP  {name}: {page}: {str(exc).splitlines()[-1]}")
                continue
            if page not in sdk:
                sdk[page] = _sdk(page, script)
            total_ours += ours.cost
            total_sdk += sdk[page].cost
            ratio = ours.cost / sdk[page].cost
            worst = max(worst, (ratio, page))
            print(
                f"  {name}: {page}: ours {ours.cost} ({ours.calls} calls), "
                f"SDK {sdk[page].cost} ({sdk[page].calls} calls), ratio {ratio:.3f}"
            )
        limit = 0.0 if name in ("whitespace", "reorder") else ONE_SECTION
        ok = worst[0] <= limit
        print(
            f"{'PASS' if ok else 'FAIL'}  {name}: ours {total_ours}, SDK {total_sdk}, "
            f"ratio {total_ours / total_sdk:.3f}, worst {worst[0]:.3f} ({worst[1]}), "
            f"target <= {limit}"
        )
        if not ok:
            missed.append(name)
    return missed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdk-script", type=Path, help="its translate_docs.py")
    parser.add_argument(
        "--every-section",
        action="store_true",
        help="also edit each section of each page in turn and print the mean and worst ratio",
    )
    parser.add_argument(
        "--cases",
        action="store_true",
        help="measure only the edits of CASES (whitespace, reorder, heading rename, typo)",
    )
    args = parser.parse_args()
    if args.sdk_script is None:
        # `make bench` runs every benchmark without arguments: say what this one needs.
        print("SKIP  needs the SDK's script: --sdk-script PATH (see this file's docstring)")
        return 0
    print("cost = request characters + 4 x characters written back, 3 languages per page")
    if args.cases:
        missed = _run_cases(args.sdk_script)
        print(f"{'PASS' if not missed else 'FAIL'}  {len(missed)} of {len(CASES)} case(s) missed")
        return 1 if missed else 0
    print("(fixed = instructions and response format; 'without fixed' is ours minus them)")
    total_ours = total_sdk = 0
    missed: list[str] = []
    for page in _pages():
        try:
            ours = asyncio.run(_ours(page))
        except _Unmeasured as exc:
            print(f"SKIP  {page}: {str(exc).splitlines()[-1]}")
            continue
        sdk = _sdk(page, args.sdk_script)
        total_ours += ours.cost
        total_sdk += sdk.cost
        ratio = ours.cost / sdk.cost
        print(
            f"{page}: ours {ours.cost} ({ours.calls} calls: {ours.sent} sent of which "
            f"{ours.fixed} fixed, {ours.written} written), SDK {sdk.cost} ({sdk.calls} calls: "
            f"{sdk.sent} sent, {sdk.written} written), ratio {ratio:.3f} "
            f"(without fixed {(ours.cost - ours.fixed) / sdk.cost:.3f})"
        )
        if args.every_section:
            count = _sections((REPO / "docs" / page).read_text(encoding="utf-8"))
            each = [asyncio.run(_ours(page, n)).cost / sdk.cost for n in range(count)]
            print(
                f"  every section ({count}): mean {sum(each) / count:.3f}, "
                f"best {min(each):.3f}, worst {max(each):.3f}"
            )
        if ratio > ONE_SECTION:
            missed.append(page)
            print(f"FAIL  {page}: ours / SDK cost {ratio:.3f} > {ONE_SECTION}")
    ratio = total_ours / total_sdk
    print(f"total: ours {total_ours}, SDK {total_sdk}, ratio {ratio:.3f}")
    ok = ratio <= ONE_SECTION and not missed
    print(
        f"{'PASS' if ok else 'FAIL'}  ours / SDK cost {ratio:.3f} overall, "
        f"{len(missed)} of {len(_pages())} page(s) above {ONE_SECTION}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
