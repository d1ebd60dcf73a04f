#!/usr/bin/env python3
"""Translate the English docs into Japanese, Korean and Simplified Chinese with an OpenAI model.

Every English page under docs/ (docs/ref/ aside) is translated into docs/ja/, docs/ko/ and
docs/zh/, section by section: only sections whose English (or glossary entries) changed since
the manifest (docs/i18n/manifest.json) recorded them are sent. A page whose translation fails
the checks after one repair is not written. See docs/translation.md.

Exit status: 0 every page is fine; 1 a page failed (named on stderr), or --check/--adopt found
problems; 2 bad usage, or another run holds the lock; 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import os
import signal
import sys
from pathlib import Path

from docs_i18n.glossary import load_glossary
from docs_i18n.manifest import Manifest
from docs_i18n.model import LANGUAGES, Translator
from docs_i18n.run import Options, adopt, check, dry_run, english_pages, translate

ROOT = Path(__file__).resolve().parent.parent


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(
        prog="translate_docs.py",
        description="Translate docs/ into ja, ko and zh; only new or changed sections are sent.",
        epilog="Environment: OPENAI_API_KEY, OPENAI_BASE_URL (optional), OPENAI_MODEL.",
    )
    parser.add_argument("--lang", action="append", choices=sorted(LANGUAGES), help="repeatable")
    parser.add_argument(
        "--file", action="append", metavar="PAGE", help="an English page, e.g. docs/index.md"
    )
    parser.add_argument("--model", help="the model (default: $OPENAI_MODEL, else o3)")
    parser.add_argument("--force", action="store_true", help="retranslate every section")
    parser.add_argument(
        "--review", action="store_true", help="a separate review call for each draft"
    )
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight (default 8)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--check", action="store_true", help="no model: report stale, unsound, unadopted pages"
    )
    mode.add_argument("--dry-run", action="store_true", help="list what would be sent")
    mode.add_argument("--adopt", action="store_true", help="record hand edits that pass the checks")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="with --adopt and --file: the stale sections' current translation still holds",
    )
    return parser


def _files(parser: argparse.ArgumentParser, root: Path, given: list[str] | None) -> list[str]:
    """The selected English pages, relative to docs/ (an unknown page is a usage error)."""
    pages = english_pages(root / "docs")
    chosen = []
    for name in given or []:
        page = Path(name).as_posix().removeprefix("docs/")
        if page not in pages:
            parser.error(f"--file {name}: not an English page under docs/ (e.g. docs/index.md)")
        chosen.append(page)
    return chosen


def _lock(root: Path) -> int:
    """Hold docs/i18n for this run (the kernel lets go when the process ends)."""
    fd = os.open(root / "docs" / "i18n", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(
            "another translate_docs.py run is working on this checkout; try later", file=sys.stderr
        )
        raise SystemExit(2) from None
    return fd


async def _translate(args: argparse.Namespace, options: Options, manifest: Manifest) -> int:
    """The default mode: call the model for the sections that need it."""
    import openai

    glossary = load_glossary(options.root / "docs" / "i18n" / "glossary.yml")
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    async with openai.AsyncOpenAI() as client:
        model = args.model or os.environ.get("OPENAI_MODEL") or "o3"
        prompts = options.root / "docs" / "i18n" / "prompts"
        translator = Translator(client, model, prompts, glossary, review=args.review)
        return await translate(options, manifest, glossary, translator, args.concurrency)


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    """Run the command line; the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    if args.keep and not (args.adopt and args.file):
        parser.error("--keep goes with --adopt and --file PAGE (it is never done site-wide)")
    options = Options(root, _files(parser, root, args.file), args.lang or list(LANGUAGES))
    options.force, options.keep = args.force, args.keep
    try:
        glossary = load_glossary(root / "docs" / "i18n" / "glossary.yml")
        manifest = Manifest(root / "docs" / "i18n" / "manifest.json")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        return check(options, manifest, glossary)
    if args.dry_run:
        return dry_run(options, manifest, glossary)
    fd = _lock(root)
    try:
        if args.adopt:
            return adopt(options, manifest, glossary)
        if not os.environ.get("OPENAI_API_KEY"):
            parser.error("set OPENAI_API_KEY (or use --check, --dry-run or --adopt)")
        try:
            return asyncio.run(_translate(args, options, manifest))
        except (KeyboardInterrupt, asyncio.CancelledError):
            print("interrupted: the pages written so far are recorded", file=sys.stderr)
            return 130
    finally:
        os.close(fd)


if __name__ == "__main__":
    sys.exit(main())
