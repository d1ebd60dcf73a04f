"""Plan and run a translation of the docs: what changed, what to send, what to write.

`plan` compares every English page with the manifest and the translations on disk and decides,
per page and language, which sections need the model. `translate` runs the plan with bounded
concurrency; `check` and `adopt` need no model at all.
"""

from __future__ import annotations

import asyncio
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

import openai

from .atomic import atomic_write_text, remove_file
from .checks import align_code, check_section, verify_page
from .front_matter import split_front_matter, translated_front_matter
from .headings import pin_heading_ids
from .manifest import Manifest, ManifestEntry
from .markdown_mask import mask, unmask
from .pages import EnglishPage, english_pages, translated_pages, translation_path
from .prompt import PromptSet, parse_reply
from .report import Reporter
from .sections import split_sections
from .tokens import estimate_output_tokens, estimate_tokens
from .translator import ModelCallError, RetryPolicy, call_model

__all__ = [
    "Job",
    "Options",
    "adopt",
    "check",
    "dry_run",
    "plan",
    "translate",
]


@dataclass
class Options:
    """Everything a run needs to know.

    Attributes:
        root: The repository root (holding `docs/` and `i18n/`).
        languages: Target language codes.
        files: English pages to limit the run to (relative to docs/), or `None` for all.
        model: The model name.
        effort: The reasoning effort, or `None`.
        concurrency: Requests in flight at most.
        force: Retranslate every selected page, even if current.
        max_repairs: Repair rounds for a draft that fails the checks.
        timeout: Seconds before a request times out.
        retry: The retry policy of each call.
    """

    root: Path
    languages: list[str]
    files: list[str] | None = None
    model: str = "o3"
    effort: str | None = "medium"
    concurrency: int = 16
    force: bool = False
    max_repairs: int = 2
    timeout: float = 900.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    @property
    def docs(self) -> Path:
        """The docs folder."""
        return self.root / "docs"

    @property
    def manifest_path(self) -> Path:
        """The manifest file."""
        return self.root / "i18n" / "manifest.json"


@dataclass
class Job:
    """One translation to bring up to date (page x language).

    Attributes:
        page: The English page.
        lang: The target language.
        todo: Section numbers that need the model.
        reuse: Section number -> the current translated text kept byte for byte.
        context: The current translation (masked with the English placeholder names) to send
            as context when only some sections changed.
    """

    page: EnglishPage
    lang: str
    todo: list[int]
    reuse: dict[int, str]
    context: str | None

    @property
    def key(self) -> str:
        """`lang/page`, for messages."""
        return f"{self.lang}/{self.page.path}"


@dataclass
class Plan:
    """What a run will do."""

    jobs: list[Job]
    current: list[str]
    unadopted: list[str]
    orphans: list[tuple[str, str]]
    pages: dict[str, EnglishPage]


def _select_pages(options: Options) -> list[str]:
    available = english_pages(options.docs)
    if options.files is None:
        return available
    chosen = []
    for name in options.files:
        path = Path(name)
        if path.is_absolute() and path.resolve().is_relative_to(options.docs.resolve()):
            path = path.resolve().relative_to(options.docs.resolve())
        rel = path.as_posix().removeprefix("./").removeprefix("docs/")
        if rel not in available:
            raise ValueError(
                f"{name}: not an English page under docs/ (ref/ and translated folders excluded)"
            )
        chosen.append(rel)
    return sorted(set(chosen))


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def plan(options: Options, manifest: Manifest) -> Plan:
    """Decide what each selected page and language needs.

    Raises:
        ValueError: A `--file` is not an English page, or a page's front matter is malformed.
    """
    selected = _select_pages(options)
    pages: dict[str, EnglishPage] = {}
    for rel in selected:
        try:
            pages[rel] = EnglishPage.parse(rel, _read(options.docs / rel))
        except ValueError as exc:
            raise ValueError(f"docs/{rel}: {exc}") from exc
    jobs: list[Job] = []
    current: list[str] = []
    unadopted: list[str] = []
    for rel, page in pages.items():
        for lang in options.languages:
            target = translation_path(options.docs, lang, rel)
            entry = manifest.get(rel, lang)
            key = f"{lang}/{rel}"
            exists = target.exists()
            if exists and entry is None and not options.force:
                unadopted.append(key)
                continue
            if exists and entry is not None and not options.force:
                if entry.source == page.source_hash:
                    current.append(key)
                    continue
                job = _incremental_job(page, lang, _read(target), entry)
            else:
                job = _full_job(page, lang)
            jobs.append(job)
    orphans: list[tuple[str, str]] = []
    if options.files is None:
        for lang in options.languages:
            for rel in translated_pages(options.docs, lang):
                if not (options.docs / rel).exists():
                    orphans.append((lang, rel))
            for rel in list(manifest.pages):
                gone = not (options.docs / rel).exists()
                if gone and (lang, rel) not in orphans and manifest.get(rel, lang) is not None:
                    orphans.append((lang, rel))
    return Plan(jobs=jobs, current=current, unadopted=unadopted, orphans=orphans, pages=pages)


def _blank(section: str) -> bool:
    return not section.strip()


def _full_job(page: EnglishPage, lang: str) -> Job:
    todo = [n for n, s in enumerate(page.sections) if not _blank(s)]
    reuse = {n: unmask(s, page.masked.code) for n, s in enumerate(page.sections) if _blank(s)}
    return Job(page=page, lang=lang, todo=todo, reuse=reuse, context=None)


def _incremental_job(page: EnglishPage, lang: str, translated: str, entry: ManifestEntry) -> Job:
    try:
        body = split_front_matter(translated).body
        tr_masked = mask(body, start=len(page.masked.code) + 1)
    except ValueError:
        return _full_job(page, lang)  # unreadable as a translation: start over
    tr_sections = split_sections(tr_masked.text)
    if len(tr_sections) != len(entry.sections):
        return _full_job(page, lang)  # the file no longer matches its record: start over
    available: dict[str, list[int]] = {}
    for n, digest in enumerate(entry.sections):
        available.setdefault(digest, []).append(n)
    todo: list[int] = []
    reuse: dict[int, str] = {}
    for n, digest in enumerate(page.hashes):
        if available.get(digest):
            old = available[digest].pop(0)
            reuse[n] = unmask(tr_sections[old], tr_masked.code)
        elif _blank(page.sections[n]):
            reuse[n] = unmask(page.sections[n], page.masked.code)
        else:
            todo.append(n)
    context = None
    if todo and reuse:
        aligned, leftovers, _ = align_code(page.masked, tr_masked)
        context = re.sub(r"@@X\w+@@", lambda m: leftovers.get(m.group(0), m.group(0)), aligned)
    return Job(page=page, lang=lang, todo=todo, reuse=reuse, context=context)


def _fit(section: str, english: str) -> str:
    """Give a translated section the English section's leading and trailing blank lines."""
    core = section.strip("\n")
    lead = english[: len(english) - len(english.lstrip("\n"))]
    tail = english[len(english.rstrip("\n")) :]
    if not english.strip():
        return english
    return f"{lead}{core}{tail}"


def _draft_findings(job: Job, sections: dict[int, str], shape: list[str]) -> list[str]:
    findings = list(shape)
    missing = [n for n in job.todo if n not in sections]
    extra = [n for n in sections if n not in job.todo]
    if missing:
        findings.append(f"sections missing from the reply: {', '.join(map(str, missing))}")
    if extra:
        findings.append(f"sections not asked for: {', '.join(map(str, extra))}")
    for n in job.todo:
        if n in sections:
            draft = _fit(sections[n], job.page.sections[n])
            findings += [f"section {n}: {f}" for f in check_section(job.page.sections[n], draft)]
    return findings


def render(job: Job, drafts: dict[int, str]) -> str:
    """Assemble the translated page: front matter, kept sections and checked drafts."""
    page = job.page
    parts: list[str] = []
    for n, english in enumerate(page.sections):
        if n in job.reuse:
            parts.append(job.reuse[n])
            continue
        draft = _fit(drafts[n], english)
        draft = pin_heading_ids(draft, page.headings[n], page.heading_ids[n])
        parts.append(unmask(draft, page.masked.code))
    return translated_front_matter(page.front_matter) + "".join(parts)


class _Writer:
    """Writes pages and the manifest from worker threads, one at a time."""

    def __init__(self, options: Options, manifest: Manifest) -> None:
        self.options = options
        self.manifest = manifest
        self.lock = threading.Lock()

    def write(self, job: Job, text: str) -> None:
        with self.lock:
            atomic_write_text(translation_path(self.options.docs, job.lang, job.page.path), text)
            self.manifest.set(
                job.page.path,
                job.lang,
                ManifestEntry(source=job.page.source_hash, sections=list(job.page.hashes)),
            )
            self.manifest.save(self.options.manifest_path)

    def remove(self, lang: str, rel: str) -> None:
        with self.lock:
            remove_file(translation_path(self.options.docs, lang, rel), stop_at=self.options.docs)
            self.manifest.remove(rel, lang)
            self.manifest.save(self.options.manifest_path)


async def _run_job(
    job: Job,
    options: Options,
    prompts: PromptSet,
    client: openai.AsyncOpenAI,
    limiter: asyncio.Semaphore,
    writer: _Writer,
    reporter: Reporter,
) -> None:
    drafts: dict[int, str] = {}
    if job.todo:
        instructions = prompts.instructions(job.lang)
        task = prompts.task_message(
            job.lang,
            job.page.path,
            {n: job.page.sections[n] for n in job.todo},
            job.context,
        )
        messages = [{"role": "user", "content": task}]
        findings: list[str] = []
        for attempt in range(options.max_repairs + 1):

            def _on_retry(reason: str, delay: float, number: int) -> None:
                reporter.note(f"{job.key}: {reason}, retry {number} in {delay:.1f}s")

            try:
                reply = await call_model(
                    client,
                    model=options.model,
                    effort=options.effort,
                    instructions=instructions,
                    messages=messages,
                    policy=options.retry,
                    limiter=limiter,
                    on_retry=_on_retry,
                )
            except ModelCallError as exc:
                reporter.finished(job.key, "failed", f"the model call failed: {exc}")
                return
            reporter.totals.calls += 1
            reporter.totals.input_tokens += reply.input_tokens
            reporter.totals.output_tokens += reply.output_tokens
            sections, shape = parse_reply(reply.text)
            findings = _draft_findings(job, sections, shape)
            if reply.cut_off and findings:
                findings.insert(0, f"the reply was cut off ({reply.cut_off}): return all of it")
            if not findings:
                drafts = {n: sections[n] for n in job.todo}
                break
            if attempt < options.max_repairs:
                reporter.note(
                    f"{job.key}: draft failed {len(findings)} check(s), asking for repair "
                    f"{attempt + 1}/{options.max_repairs}: {findings[0]}"
                )
                messages += [
                    {"role": "assistant", "content": reply.text},
                    {"role": "user", "content": prompts.repair_message(findings)},
                ]
        else:
            shown = "; ".join(findings[:3]) + (" ..." if len(findings) > 3 else "")
            reporter.finished(
                job.key,
                "failed",
                f"still failing after {options.max_repairs} repair(s), not written: {shown}",
            )
            return
    text = render(job, drafts)
    await asyncio.to_thread(writer.write, job, text)
    if job.todo:
        reporter.finished(
            job.key, "translated", f"{len(job.todo)} of {len(job.page.sections)} section(s)"
        )
    else:
        reporter.finished(job.key, "kept", "rewritten without the model (front matter or order)")


async def translate(options: Options, client: openai.AsyncOpenAI, reporter: Reporter) -> int:
    """Bring the selected translations up to date. Returns the exit code (0, or 1 on failures).

    Raises:
        ValueError: Bad input (unknown page, malformed front matter, manifest or glossary).
    """
    manifest = Manifest.load(options.manifest_path)
    the_plan = plan(options, manifest)
    prompts = PromptSet.load(options.root / "i18n", options.languages)
    writer = _Writer(options, manifest)
    reporter.totals.kept += the_plan.current
    reporter.totals.unadopted += the_plan.unadopted
    for lang, rel in the_plan.orphans:
        await asyncio.to_thread(writer.remove, lang, rel)
        reporter.totals.removed.append(f"{lang}/{rel}")
    reporter.start(len(the_plan.jobs))
    limiter = asyncio.Semaphore(options.concurrency)
    try:
        await asyncio.gather(
            *(
                _run_job(job, options, prompts, client, limiter, writer, reporter)
                for job in the_plan.jobs
            )
        )
    finally:
        reporter.close()
    return 1 if reporter.totals.failed else 0


def check(options: Options) -> tuple[int, list[str]]:
    """Report missing, stale, orphaned, unadopted and structurally broken translations.

    Returns:
        The exit code (0 when everything is current and sound, else 1) and one line per problem.
    """
    manifest = Manifest.load(options.manifest_path)
    selected = _select_pages(options)
    problems: list[str] = []
    for rel in selected:
        english = _read(options.docs / rel)
        try:
            page = EnglishPage.parse(rel, english)
        except ValueError as exc:
            problems.append(f"invalid   docs/{rel}: {exc}")
            continue
        for lang in options.languages:
            target = translation_path(options.docs, lang, rel)
            entry = manifest.get(rel, lang)
            where = f"docs/{lang}/{rel}"
            if not target.exists():
                problems.append(f"missing   {where}")
                continue
            if entry is None:
                problems.append(f"unadopted {where}: not in the manifest (run --adopt)")
            elif entry.source != page.source_hash:
                changed = sum(
                    1
                    for n, digest in enumerate(page.hashes)
                    if n >= len(entry.sections) or entry.sections[n] != digest
                )
                problems.append(
                    f"stale     {where}: the English page changed ({changed} section(s))"
                )
                continue  # its structure is checked again when it is retranslated
            findings = verify_page(english, _read(target))
            problems += [f"invalid   {where}: {f}" for f in findings]
    if options.files is None:
        for lang in options.languages:
            for rel in translated_pages(options.docs, lang):
                if not (options.docs / rel).exists():
                    problems.append(f"orphaned  docs/{lang}/{rel}: docs/{rel} does not exist")
            for rel, langs in manifest.pages.items():
                gone = not (options.docs / rel).exists()
                if (
                    gone
                    and lang in langs
                    and not translation_path(options.docs, lang, rel).exists()
                ):
                    problems.append(f"orphaned  manifest entry {lang}/{rel}")
    return (1 if problems else 0), problems


def adopt(options: Options) -> tuple[int, list[str]]:
    """Record existing translations that pass the structure checks in the manifest.

    Translations already in the manifest are left as they are unless `options.force`.

    Returns:
        The exit code (1 when some translation failed the checks) and one line per page.
    """
    manifest = Manifest.load(options.manifest_path)
    lines: list[str] = []
    failed = False
    for rel in _select_pages(options):
        english = _read(options.docs / rel)
        page = EnglishPage.parse(rel, english)
        for lang in options.languages:
            target = translation_path(options.docs, lang, rel)
            where = f"docs/{lang}/{rel}"
            if not target.exists():
                continue
            if manifest.get(rel, lang) is not None and not options.force:
                continue
            findings = verify_page(english, _read(target))
            if findings:
                failed = True
                lines.append(f"not adopted {where}:")
                lines += [f"    {f}" for f in findings]
                continue
            manifest.set(
                rel, lang, ManifestEntry(source=page.source_hash, sections=list(page.hashes))
            )
            lines.append(f"adopted {where}")
    manifest.save(options.manifest_path)
    return (1 if failed else 0), lines


def dry_run(options: Options, *, verbose: bool = False) -> list[str]:
    """Describe what a run would send, with estimated tokens and cost; no API call."""
    from .tokens import estimate_cost

    manifest = Manifest.load(options.manifest_path)
    the_plan = plan(options, manifest)
    prompts = PromptSet.load(options.root / "i18n", options.languages)
    lines: list[str] = []
    total_in = total_out = 0
    for job in the_plan.jobs:
        instructions = prompts.instructions(job.lang)
        sections = {n: job.page.sections[n] for n in job.todo}
        task = prompts.task_message(job.lang, job.page.path, sections, job.context)
        tokens_in = estimate_tokens(instructions) + estimate_tokens(task) if job.todo else 0
        source = sum(estimate_tokens(s) for s in sections.values())
        tokens_out = estimate_output_tokens(source, options.effort or "medium") if job.todo else 0
        total_in += tokens_in
        total_out += tokens_out
        what = (
            f"sections {', '.join(map(str, job.todo))} of {len(job.page.sections)}"
            if job.todo
            else "no call (rewrite only)"
        )
        lines.append(
            f"would translate {job.key}: {what}, ~{tokens_in} tokens in, ~{tokens_out} out"
        )
        if verbose and job.todo:
            lines += ["--- instructions ---", instructions, "--- input ---", task, "---"]
    lines += [f"current {key}" for key in the_plan.current]
    lines += [f"not adopted {key} (run --adopt)" for key in the_plan.unadopted]
    lines += [f"would remove docs/{lang}/{rel}" for lang, rel in the_plan.orphans]
    cost = estimate_cost(options.model, total_in, total_out)
    cost_text = f"~${cost:.2f}" if cost is not None else f"unknown (no price for {options.model})"
    calls = sum(1 for job in the_plan.jobs if job.todo)
    lines.append(
        f"{calls} call(s), ~{total_in} tokens in, ~{total_out} tokens out "
        f"(reasoning included, estimated), estimated cost {cost_text} with {options.model}"
    )
    return lines
