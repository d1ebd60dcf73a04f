"""The modes of the command: translate, --check, --adopt and --dry-run.

Each works on plans (docs_i18n.manifest.plan_page): one per English page and language. A
problem is reported once per page, as `docs/<lang>/<page>.md:<line>: <finding>` with further
findings of the same page after `; `.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .checks import check_section
from .glossary import Glossary
from .manifest import Manifest, Plan, plan_page, record_of
from .model import LANGUAGES, Translator
from .pages import read_page, refresh_code, write_atomic

__all__ = ["Options", "adopt", "check", "dry_run", "english_pages", "translate"]

NEW_FRONT = "---\nmachine_translated: true\n---\n\n"
_STALE = {
    "changed": "the English changed",
    "revised": "the English changed after a hand edit",
    "new": "to translate",
    "glossary": "the glossary changed",
    "code": "the English code changed",
}


@dataclass
class Options:
    """What a run works on."""

    root: Path
    files: list[str] = field(default_factory=list)  # English pages relative to docs/
    langs: list[str] = field(default_factory=lambda: list(LANGUAGES))
    force: bool = False
    keep: bool = False  # --adopt --keep: the stale sections' translation still holds

    @property
    def docs(self) -> Path:
        """The docs folder."""
        return self.root / "docs"


def english_pages(docs: Path) -> list[str]:
    """Every English page to translate (docs/ref/ and the translations aside), relative."""
    skip = ("ref", "i18n", *LANGUAGES)
    return sorted(
        path.relative_to(docs).as_posix()
        for path in docs.rglob("*.md")
        if path.relative_to(docs).parts[0] not in skip
    )


def plans(options: Options, manifest: Manifest, glossary: Glossary) -> Iterable[Plan]:
    """A plan for each selected page and language."""
    for page in options.files or english_pages(options.docs):
        english = read_page(options.docs / page)
        assert english is not None
        for lang in options.langs:
            translation = read_page(options.docs / lang / page)
            yield plan_page(
                page, lang, english, translation, manifest, glossary, options.docs, options.force
            )


def _say(path: str, problems: list[tuple[int, str]]) -> None:
    """Print one line naming the page: its first problem's line, every problem."""
    if problems:
        problems = sorted(set(problems))
        first = problems[0][0]
        rest = [problems[0][1]] + [f"line {line}: {message}" for line, message in problems[1:]]
        print(f"{path}:{first}: " + "; ".join(rest), file=sys.stderr)


def _line(plan: Plan, index: int | None, offset: int = 0) -> int:
    """The line in the translated file of a section's line (1 without a translation)."""
    if plan.translation is None or index is None:
        return 1
    return plan.translation.section_lines()[index] + offset


def page_problems(plan: Plan, glossary: Glossary, docs: Path) -> list[tuple[int, str]]:
    """What `--check` says about a translated page (an empty list: current and sound)."""
    if plan.translation is None:
        return [(1, "no translation yet: run scripts/translate_docs.py")]
    problems: list[tuple[int, str]] = []
    statuses = [s.status for s in plan.sections]
    if "unrecorded" in statuses:
        problems.append((1, "not recorded for this English: check the page and run --adopt"))
    elif not plan.recorded:
        problems.append((1, "its sections do not pair with the English: run the tool"))
    for status, note in _STALE.items():
        count = statuses.count(status)
        if count and plan.recorded:
            sections = f"{count} section{'s' if count > 1 else ''}"
            action = "run scripts/translate_docs.py"
            if status == "revised":
                action += ", or --adopt if the edit already follows the new English"
            if status == "changed":
                action += f", or --adopt --keep --file docs/{plan.page} if it still holds"
            problems.append((1, f"stale, {note} ({sections}): {action}"))
    if len(plan.translation.sections) > len(plan.sections) and plan.recorded:
        problems.append((1, "stale, sections were removed in English: run the tool"))
    order = [s.index for s in plan.sections if s.index is not None]
    if order != sorted(order) and plan.recorded:
        problems.append((1, "stale, sections moved in English: run the tool (no model call)"))
    for section in plan.sections:
        if section.status == "edited":
            line = _line(plan, section.index)
            problems.append((line, "edited by hand, not adopted: check it and run --adopt"))
        if section.status in ("current", "edited", "unrecorded") and section.translation:
            findings = check_section(section.english, section.translation, plan.lang, glossary)
            problems.extend((_line(plan, section.index, f.line), f.message) for f in findings)
    return problems


def check(options: Options, manifest: Manifest, glossary: Glossary) -> int:
    """`--check`: report stale, unsound, unadopted and inconsistent pages; 1 if any."""
    bad = 0
    for plan in plans(options, manifest, glossary):
        problems = page_problems(plan, glossary, options.docs)
        _say(f"docs/{plan.lang}/{plan.page}", problems)
        bad += bool(problems)
    if not options.files:
        pages = set(english_pages(options.docs))
        for lang in options.langs:
            for path in sorted((options.docs / lang).rglob("*.md")):
                page = path.relative_to(options.docs / lang).as_posix()
                if page not in pages:
                    _say(f"docs/{lang}/{page}", [(1, f"no English page docs/{page}: remove it")])
                    bad += 1
    print("all translations are current and sound" if not bad else f"{bad} pages to fix")
    return 1 if bad else 0


def adopt(options: Options, manifest: Manifest, glossary: Glossary) -> int:
    """`--adopt`: record hand edits of sections whose English is current, after the checks.

    With `options.keep` (`--adopt --keep --file PAGE`), also the sections whose English changed
    and whose translation did not: their current translation still holds.
    """
    adopted, refused = [], 0
    for plan in plans(options, manifest, glossary):
        adoptable = ("edited", "revised", "unrecorded", "glossary", *("changed",) * options.keep)
        wanted = [s for s in plan.sections if s.status in adoptable]
        if not wanted or plan.translation is None:
            continue
        if not plan.recorded and any(s.status != "unrecorded" for s in plan.sections):
            _say(
                f"docs/{plan.lang}/{plan.page}", [(1, "its sections do not pair with the English")]
            )
            refused += 1
            continue
        problems = []
        for section in wanted:
            assert section.translation is not None
            findings = check_section(section.english, section.translation, plan.lang, glossary)
            problems.extend((_line(plan, section.index, f.line), f.message) for f in findings)
        if problems:
            _say(f"docs/{plan.lang}/{plan.page}", [(ln, f"not adopted: {m}") for ln, m in problems])
            refused += 1
            continue
        records = []  # in the translation's order, as the file has its sections
        for section in sorted(plan.sections, key=lambda s: -1 if s.index is None else s.index):
            if section.translation is None:
                continue  # new in English: the next run translates it
            if section.entry is not None and section not in wanted:
                records.append(section.entry)
            else:
                records.append(record_of(section.english, section.translation, plan.lang, glossary))
        english = (options.docs / plan.page).read_text(encoding="utf-8")
        manifest.record(plan.page, plan.lang, english, records, plan.moved_from)  # type: ignore[arg-type]
        adopted.append(f"docs/{plan.lang}/{plan.page}")
    manifest.save()
    for path in adopted:
        print(f"adopted {path}")
    if not adopted and not refused:
        print("nothing to adopt")
    return 1 if refused else 0


def dry_run(options: Options, manifest: Manifest, glossary: Glossary) -> int:
    """`--dry-run`: list the sections a run would send, and the pages it would touch."""
    calls = 0
    for plan in plans(options, manifest, glossary):
        send = plan.needs_model()
        code = sum(s.status == "code" for s in plan.sections)
        if send or code:
            heads = [plan.sections[i].english.split("\n", 1)[0][:50] for i in send]
            print(f"docs/{plan.lang}/{plan.page}: {len(send)} to send {heads}, {code} code-only")
        calls += len(send)
    print(f"{calls} requests (each with at most one repair request)")
    return 0


async def translate(
    options: Options,
    manifest: Manifest,
    glossary: Glossary,
    translator: Translator,
    concurrency: int,
) -> int:
    """Translate every new or changed section; write each page that passes the checks."""
    semaphore = asyncio.Semaphore(concurrency)
    all_plans = list(plans(options, manifest, glossary))
    results = await asyncio.gather(
        *(_page(plan, translator, semaphore, options, manifest, glossary) for plan in all_plans)
    )
    if not options.files:
        manifest.forget_missing(options.docs)
    manifest.save()
    calls = sum(calls for calls, _ in results)
    failed = sum(not ok for _, ok in results)
    print(f"{calls} model calls; {failed} pages failed" if failed else f"{calls} model calls")
    return 1 if failed else 0


async def _page(
    plan: Plan,
    translator: Translator,
    semaphore: asyncio.Semaphore,
    options: Options,
    manifest: Manifest,
    glossary: Glossary,
) -> tuple[int, bool]:
    """Translate one page in one language and write it; (model calls, written or current)."""
    if any(s.status == "unrecorded" for s in plan.sections):
        return 0, True  # a translation nobody recorded: --check names it, --adopt records it

    async def one(index: int) -> tuple[int, object]:
        section = plan.sections[index]
        async with semaphore:
            return index, await translator.translate(
                plan.page, section.english, section.translation, plan.lang
            )

    done = dict(await asyncio.gather(*(one(i) for i in plan.needs_model())))
    calls = sum(result.calls for result in done.values())  # type: ignore[attr-defined]
    failures = []
    texts, records = [], []
    order = [s.index for s in plan.sections if s.index is not None]
    for index, section in enumerate(plan.sections):
        result = done.get(index)
        if result is not None:
            text = result.text  # type: ignore[attr-defined]
            if text is None:
                line = _line(plan, section.index)
                failures.extend((line, m) for _, m in result.findings)  # type: ignore[attr-defined]
                continue
        else:
            assert section.translation is not None
            text = section.translation
            if order != sorted(order):  # sections moved: each takes its English place's tail
                text = text.rstrip("\n") + section.english[len(section.english.rstrip("\n")) :]
            if section.status == "code":
                text = refresh_code(section.english, text)
                findings = check_section(section.english, text, plan.lang, glossary)
                failures.extend((_line(plan, section.index, f.line), f.message) for f in findings)
        texts.append(text)
        keep = section.status == "edited" and section.entry is not None
        records.append(
            section.entry if keep else record_of(section.english, text, plan.lang, glossary)
        )
    path = f"docs/{plan.lang}/{plan.page}"
    if failures:
        _say(path, failures)
        return calls, False
    front = plan.translation.front if plan.translation else NEW_FRONT
    text = front + "".join(texts)
    if plan.translation is None or text != plan.translation.text():
        write_atomic(options.docs / plan.lang / plan.page, text)
        print(f"wrote {path}")
    english = (options.docs / plan.page).read_text(encoding="utf-8")
    manifest.record(plan.page, plan.lang, english, records, plan.moved_from)  # type: ignore[arg-type]
    manifest.save()  # no await between the page and the manifest: a cancel cannot split them
    return calls, True
