#!/usr/bin/env python3
"""Translate the English docs into Japanese, Korean and Simplified Chinese with an OpenAI model.

Every English page under docs/ (except docs/ref/ and the translated folders) is translated into
docs/ja/, docs/ko/ and docs/zh/. Only sections that changed since the last run (recorded in
i18n/manifest.json) are sent. See docs/translation.md for the whole story.

Exit codes: 0 success; 1 a page failed (not written), or --check/--adopt found problems;
2 bad usage or configuration (for example no OPENAI_API_KEY); 3 --batch-collect: the batch has
not ended yet; 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path

from docs_i18n.batch import collect, submit
from docs_i18n.planning import Options
from docs_i18n.prompt import LANGUAGES
from docs_i18n.report import Reporter
from docs_i18n.runner import translate
from docs_i18n.status import adopt, check, dry_run, terms_report
from docs_i18n.translator import EndpointUnreachable, RetryPolicy

ROOT = Path(__file__).resolve().parent.parent
EFFORTS = ("minimal", "low", "medium", "high")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="translate_docs.py",
        description=(
            "Translate docs/ into ja, ko and zh with an OpenAI model. Only changed sections are "
            "sent; a translation that fails the structure checks is never written."
        ),
        epilog="Environment: OPENAI_API_KEY (required to translate), OPENAI_BASE_URL (optional).",
    )
    parser.add_argument(
        "--lang",
        action="append",
        choices=sorted(LANGUAGES),
        help="a target language (repeatable; default: ja, ko and zh)",
    )
    parser.add_argument(
        "--file",
        action="append",
        metavar="PAGE",
        help="an English page, e.g. docs/index.md or index.md (repeatable; default: every page)",
    )
    parser.add_argument("--model", default="o3", help="the model (default: o3)")
    parser.add_argument(
        "--reasoning-effort",
        choices=EFFORTS,
        default="medium",
        help="the model's reasoning effort (default: medium)",
    )
    parser.add_argument(
        "--concurrency",
        type=_positive_int,
        default=64,
        help="requests in flight at most (default: 64, every page and language of this site "
        "drafted at once; 429 answers are retried without holding a slot)",
    )
    parser.add_argument(
        "--review-model",
        default="o3",
        help="the model of the review pass (default: o3)",
    )
    parser.add_argument(
        "--no-review",
        action="store_true",
        help="skip the review pass (drafts are then checked by code only)",
    )
    parser.add_argument(
        "--report",
        type=Path,
        metavar="FILE",
        help="write the run's report (outcomes, review findings, tokens) to FILE as JSON",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="retranslate the selected pages even if current (never used by --adopt)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--check",
        action="store_true",
        help=(
            "no API call, no key: list missing, stale, orphaned, unadopted and structurally "
            "invalid translations; exit 1 if there is any"
        ),
    )
    mode.add_argument(
        "--dry-run",
        action="store_true",
        help="show what would be sent, with estimated tokens and cost; no API call",
    )
    mode.add_argument(
        "--adopt",
        action="store_true",
        help=(
            "record hand-edited translations after the checks, only for sections whose English "
            "is unchanged since the manifest recorded them; a section whose English changed is "
            "refused with the English diff unless named with --section; a translation whose "
            "glossary entries changed is checked against the new glossary and recorded; "
            "exit 1 on any refusal"
        ),
    )
    mode.add_argument(
        "--batch",
        action="store_true",
        help=(
            "send the drafts through the OpenAI Batch API (half price, results within 24 h) "
            "instead of waiting for them; the batch is recorded in i18n/batch.json and "
            "--batch-collect writes its results"
        ),
    )
    mode.add_argument(
        "--batch-collect",
        action="store_true",
        help=(
            "write the translations of the batch that --batch sent, through the usual checks, "
            "review and manifest; a request the batch did not answer is sent directly; exit 3 "
            "while the batch is still running"
        ),
    )
    parser.add_argument(
        "--terms",
        action="store_true",
        help=(
            "with --check: also list, per language, the renderings each glossary term has "
            "across the pages (its rendering and any known variant, with page:line)"
        ),
    )
    parser.add_argument(
        "--section",
        action="append",
        metavar="ID",
        help=(
            "with --adopt: vouch for this section, whose English changed or whose paragraphs "
            "are split differently from the English (its heading id, e.g. quick-start, or its "
            "number; repeatable)"
        ),
    )
    parser.add_argument(
        "--verbose", action="store_true", help="with --dry-run: print the full prompts"
    )
    parser.add_argument(
        "--max-retries",
        type=int,
        default=6,
        help=(
            "retries of a request on HTTP 429, 408, 409 and 5xx, timeouts and connection "
            "errors (default: 6)"
        ),
    )
    parser.add_argument(
        "--timeout",
        type=_non_negative_float,
        default=900.0,
        help="seconds before a request times out and is retried (default: 900)",
    )
    parser.add_argument(
        "--retry-base-delay",
        type=_non_negative_float,
        default=1.0,
        help="first backoff in seconds, doubled on each retry, with jitter (default: 1)",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=ROOT,
        help="the repository root holding docs/ and i18n/ (default: this repository)",
    )
    return parser


def _fail(message: str, code: int = 2) -> int:
    print(f"translate_docs.py: error: {message}", file=sys.stderr)
    return code


async def _translate(options: Options, reporter: Reporter, how: str = "run") -> int:
    import openai

    run = {"run": translate, "batch": submit, "collect": collect}[how]
    client = openai.AsyncOpenAI(max_retries=0, timeout=options.timeout)
    async with client:
        try:
            return await run(options, client, reporter)
        except openai.OpenAIError as exc:  # model calls fail inside the run, never up here
            raise ValueError(f"the Batch API refused: {exc}") from exc


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    root: Path = args.root.resolve()
    if not (root / "docs").is_dir():
        return _fail(f"{root / 'docs'} is not a folder (use --root)")
    options = Options(
        root=root,
        languages=sorted(set(args.lang)) if args.lang else sorted(LANGUAGES),
        files=args.file,
        model=args.model,
        effort=args.reasoning_effort,
        concurrency=args.concurrency,
        force=args.force,
        timeout=args.timeout,
        retry=RetryPolicy(max_retries=args.max_retries, base_delay=args.retry_base_delay),
        review=not args.no_review,
        review_model=args.review_model,
        report=args.report.resolve() if args.report else None,
    )
    if args.section and not args.adopt:
        return _fail("--section only goes with --adopt")
    if args.terms and not args.check:
        return _fail("--terms only goes with --check")
    try:
        if args.check:
            code, lines = check(options)
            for line in lines:
                print(line)
            if args.terms:
                print("renderings of the glossary terms across the pages:")
                for line in terms_report(options):
                    print(line)
            notes = sum(1 for line in lines if line.startswith("edited "))
            if code:
                print(f"{len(lines) - notes} problem(s)" + (f", {notes} note(s)" if notes else ""))
            elif notes:
                print(
                    f"all translations are current and sound; {notes} edited by hand, not adopted"
                )
            else:
                print("all translations are current and sound")
            return code
        if args.adopt:
            code, lines = adopt(options, args.section)
            for line in lines:
                print(line)
            if not lines:
                print("nothing to adopt")
            return code
        if args.dry_run:
            for line in dry_run(options, verbose=args.verbose):
                print(line)
            return 0
        if not os.environ.get("OPENAI_API_KEY"):
            return _fail("OPENAI_API_KEY is not set (use --check or --dry-run to run without it)")
        reporter = Reporter()
        review_model = options.review_model if options.review else None
        how = "batch" if args.batch else "collect" if args.batch_collect else "run"
        try:
            code = asyncio.run(_translate(options, reporter, how))
        except KeyboardInterrupt:
            print(reporter.summary(options.model, review_model))
            raise
        except EndpointUnreachable as exc:
            print(reporter.summary(options.model, review_model))
            return _fail(f"{exc}; stopped")
        print(reporter.summary(options.model, review_model))
        return code
    except (ValueError, OSError) as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        print("translate_docs.py: interrupted; every file is either old or new", file=sys.stderr)
        return 130


if __name__ == "__main__":
    # Ctrl-C stops the run even when it was started from a process that ignores SIGINT (a shell
    # job started with `&` passes SIG_IGN on, and Python keeps it): every file stays old or new.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
