"""Run a plan: ask the model, check, review and repair drafts, write pages and the manifest.

Requests run concurrently up to `Options.concurrency`; each page and language is one job:

1. draft: the changed sections, checked by code (structure and meaning-bearing tokens); a draft
   that fails goes back with the findings, up to `Options.max_repairs` times;
2. review (unless `--no-review`): a second call reads the English and the draft side by side and
   returns structured findings; those whose quotes do not occur are discarded. A small patch
   (`Job.self_review`) is reviewed in its translate request instead, unless its draft needed a
   repair;
3. one repair round for the blocking findings, checked by code and reviewed again;
4. write, two-phase with the manifest, so that a run killed anywhere can be resumed.

A job whose draft still fails, or whose blocker survives the repair, writes nothing.

The jobs of one page that send the same English (a section edit in several languages) are run
together, one language being a group of one: one request translates the English into all their
languages (`batch_format`: one field per language and section) and one request reviews all the
drafts (each finding names its language). Each language's draft is then checked, its findings
verified against its own draft, repaired in its own conversation and written as soon as it is
done. A shared request that fails falls back to one per language; a language missing from its
reply asks alone, the others keep their part. The model calls hold a slot of the concurrency
limiter only while in flight. The drafts' code checks run as the drafts arrive, in worker
processes for a run of many drafts, else in a worker thread of their own (`_DraftChecks`); the
writes and a review's instructions run in other worker threads, never queued behind them.
Nothing waits for the other pages: a page's review goes out as soon as its own draft is
checked, and when every slot is taken, the reviews and repairs waiting go before the first
drafts waiting (`Slots`), so pages are finished, written and recorded one after the other, not
all at the end.
"""

from __future__ import annotations

import asyncio
import gc
import json
import multiprocessing
import os
import signal
import sys
import threading
import warnings
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

import openai

from .atomic import atomic_write_text, remove_file, sweep_temp_files
from .checks import check_meaning, check_section, page_form_findings, swapped_sections
from .front_matter import translated_front_matter
from .headings import pin_heading_ids
from .manifest import Manifest, ManifestEntry, locked, text_hash
from .markdown_mask import unmask
from .pages import EnglishPage, translation_path
from .planning import (
    Job,
    Options,
    blocks,
    find_moves,
    glossary_digests,
    groups,
    plan,
    translated_hashes,
)
from .prompt import Glossary, PromptSet, batch_format, parse_batch_reply, parse_reply
from .report import Reporter
from .review import (
    REVIEW_FORMAT,
    Finding,
    ReviewError,
    parse_review,
    review_format,
    verify_findings,
)
from .slots import FOLLOW_UP, OPENING, Slots
from .translator import Deferred, EndpointUnreachable, ModelCallError, ModelReply, call_model

__all__ = ["render", "translate"]


def _fit(section: str, english: str) -> str:
    """Give a translated section the English section's leading and trailing blank lines."""
    core = section.strip("\n")
    lead = english[: len(english) - len(english.lstrip("\n"))]
    tail = english[len(english.rstrip("\n")) :]
    if not english.strip():
        return english
    return f"{lead}{core}{tail}"


def _full_draft(job: Job, n: int, reply: str) -> str:
    """The whole masked translated section `n` from the model's reply for `job.source(n)`.

    For a patched section the reply translates the changed blocks only; the kept translated
    blocks are put around it, each in the place of its English block, with the English
    section's blank lines between blocks. For a patch of some sentences of a paragraph, the
    reply goes between the kept translation of that paragraph's other sentences.
    """
    english = job.page.sections[n]
    patch = job.patches.get(n)
    if patch is None:
        return _fit(reply, english)
    spans = blocks(english)
    pieces = [*patch.before, patch.head + reply.strip("\n") + patch.tail, *patch.after]
    owners = [*range(patch.first), patch.first, *range(patch.last, len(spans))]
    out: list[str] = []
    cursor = 0
    for piece, j in zip(pieces, owners, strict=True):
        start = spans[j][0]
        end = spans[patch.last - 1][1] if j == patch.first else spans[j][1]
        out += [english[cursor:start], piece]
        cursor = end
    return "".join(out) + english[cursor:]


def _draft_findings(
    job: Job, sections: dict[int, str], shape: list[str], prompts: PromptSet
) -> list[str]:
    findings = list(shape)
    missing = [n for n in job.todo if n not in sections]
    extra = [n for n in sections if n not in job.todo]
    if missing:
        findings.append(f"sections missing from the reply: {', '.join(map(str, missing))}")
    if extra:
        findings.append(f"sections not asked for: {', '.join(map(str, extra))}")
    drafts: dict[int, str] = {}
    for n in job.todo:
        if n in sections:
            english = job.page.sections[n]
            draft = drafts[n] = _full_draft(job, n, sections[n])
            found = check_section(english, draft)
            found += check_meaning(english, draft, job.lang, prompts.glossary)
            findings += [f"section {n}: {f}" for f in found]
    numbers = sorted(drafts)
    pairs = [(job.page.sections[n], drafts[n]) for n in numbers]
    for i, j in swapped_sections(pairs, prompts.glossary):
        findings.append(
            f"section {numbers[i]}: its translation and that of section {numbers[j]} look "
            "swapped, each matches the other's English (numbers, code, links, names): put each "
            "under its own marker"
        )
    rules = prompts.glossary.rules.get(job.lang)
    if rules is not None and drafts:
        page = [drafts.get(n, job.reuse.get(n, "")) for n in range(len(job.page.sections))]
        for group, places in page_form_findings(page, rules):
            forms = ", ".join(
                f"{name!r} ({'draft' if any(n in drafts for n, _ in where) else 'kept sections'})"
                for name, where in places.items()
            )
            findings.append(
                f"{group} are written in more than one form on this page: {forms}: "
                "use the form of the kept sections, one form per page"
            )
    return findings


def render(job: Job, drafts: dict[int, str]) -> str:
    """Assemble the translated page: front matter, kept sections and checked drafts."""
    page = job.page
    parts: list[str] = []
    for n in range(len(page.sections)):
        if n in job.reuse:
            parts.append(job.reuse[n])
            continue
        draft = _full_draft(job, n, drafts[n])
        draft = pin_heading_ids(draft, page.headings[n], page.heading_ids[n])
        parts.append(unmask(draft, page.masked.code))
    return translated_front_matter(page.front_matter) + "".join(parts)


class _Writer:
    """Writes pages and the manifest from worker threads, two-phase, in groups.

    A page's pending entry is saved before the page is written; its commit is saved with the
    next save or by `flush` at the end of the run. The pages handed over while another group is
    being written wait and are then written together: one save of the manifest records all their
    pending entries, then each page is written and committed. So a write costs one save of the
    manifest, shared with the writes that arrived meanwhile, not two. A run killed in between
    leaves the entries pending beside pages that match them or not, which the next run commits
    or drops (`Manifest.resolve`).
    """

    def __init__(self, options: Options, manifest: Manifest, glossary: Glossary) -> None:
        self.options = options
        self.manifest = manifest
        self.glossary = glossary
        self.lock = threading.Lock()
        self.unsaved = False
        self._queue: list[_Write] = []
        self._queue_lock = threading.Lock()

    def write(self, job: Job, text: str) -> None:
        """Write one page and record it, with any writes handed over meanwhile.

        Raises:
            OSError: The manifest or this page could not be written (the page is not recorded).
            ValueError: The manifest on disk is malformed (another run broke it).
        """
        page = job.page
        entry = ManifestEntry(
            source=page.source_hash,
            sections=list(page.hashes),
            translation=text_hash(text),
            glossary=glossary_digests(page, job.lang, self.glossary),
            translated=translated_hashes(text),
        )
        if entry.translated is not None and len(entry.translated) == len(page.sections):
            for n, digest in job.recorded.items():  # hand edits not adopted stay known
                entry.translated[n] = digest
        texts = {
            digest: unmask(section, page.masked.code)
            for digest, section in zip(page.hashes, page.sections, strict=True)
        }
        mine = _Write(job, text, entry, texts)
        with self._queue_lock:
            self._queue.append(mine)
        with self.lock:
            if not mine.done:
                with self._queue_lock:
                    group, self._queue = self._queue, []
                self._write_group(group)
        if mine.error is not None:
            raise mine.error

    def _write_group(self, group: list[_Write]) -> None:
        """Save the group's pending entries at once, then write and commit each page."""
        try:
            for w in group:
                w.entry.carry_splits(self.manifest.get(w.job.page.path, w.job.lang))
                self.manifest.begin(w.job.page.path, w.job.lang, w.entry, w.texts)
            self.manifest.save(self.options.manifest_path)
        except Exception as exc:  # each writer of the group raises it in its own thread
            for w in group:
                w.done, w.error = True, exc
            return
        for w in group:
            path = translation_path(self.options.docs, w.job.lang, w.job.page.path)
            try:
                atomic_write_text(path, w.text)
            except Exception as exc:
                w.error = exc  # its entry stays pending: the next run drops it
            else:
                self.manifest.commit(w.job.page.path, w.job.lang)
                self.unsaved = True
            w.done = True

    def flush(self) -> None:
        """Save the commits not saved yet."""
        with self.lock:
            if self.unsaved:
                self.manifest.save(self.options.manifest_path)
                self.unsaved = False

    def move(self, lang: str, old: str, new: str) -> None:
        """Move a translation and its manifest entry after its English page moved."""
        with self.lock:
            source = translation_path(self.options.docs, lang, old)
            atomic_write_text(translation_path(self.options.docs, lang, new), source.read_text())
            entry = self.manifest.get(old, lang)
            assert entry is not None
            self.manifest.set(new, lang, entry)
            self.manifest.remove(old, lang)
            self.manifest.save(self.options.manifest_path)
            remove_file(source, stop_at=self.options.docs)

    def record_glossary(self, keys: list[str]) -> None:
        """Record the glossary hashes (and section hashes) of current entries lacking them.

        Entries written before the manifest kept them are taken as made with today's glossary.
        """
        changed = False
        for key in keys:
            lang, rel = key.split("/", 1)
            entry = self.manifest.get(rel, lang)
            if entry is None or entry.glossary is not None:
                continue
            page = EnglishPage.parse(rel, (self.options.docs / rel).read_text(encoding="utf-8"))
            entry.glossary = glossary_digests(page, lang, self.glossary)
            text = translation_path(self.options.docs, lang, rel).read_text(encoding="utf-8")
            if entry.translated is None and entry.translation == text_hash(text):
                entry.translated = translated_hashes(text)
            changed = True
        if changed:
            with self.lock:
                self.manifest.save(self.options.manifest_path)

    def remove(self, lang: str, rel: str) -> None:
        with self.lock:
            remove_file(translation_path(self.options.docs, lang, rel), stop_at=self.options.docs)
            self.manifest.remove(rel, lang)
            self.manifest.save(self.options.manifest_path)


@dataclass
class _Write:
    """A page handed to `_Writer.write`: its text and manifest entry, and how its write ended."""

    job: Job
    text: str
    entry: ManifestEntry
    texts: dict[str, str]
    done: bool = False
    error: Exception | None = None


class _JobFailed(Exception):
    """The job ends without writing anything; the message says why."""


PROCESS_CHECKS_FROM = 8
"""The fewest drafts a run checks in worker processes: for fewer, starting the processes would
cost more than it spares."""


def _cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_worker_prompts: PromptSet | None = None
"""The prompts of a checks worker process (`_start_checks_worker`)."""


def _start_checks_worker(prompts: PromptSet) -> None:
    """Set up a checks worker process: keep the run's prompts; leave Ctrl-C to the run, which
    stops its workers itself."""
    global _worker_prompts
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_prompts = prompts


def _checked_in_worker(job: Job, sections: dict[int, str], shape: list[str]) -> list[str]:
    """`_draft_findings` in a checks worker process, with the prompts it was started with."""
    assert _worker_prompts is not None, "not a checks worker process"
    return _draft_findings(job, sections, shape, _worker_prompts)


class _DraftChecks:
    """Where the drafts' code checks run: never on the event loop, each draft as it arrives.

    A run with many drafts (`PROCESS_CHECKS_FROM`) on a Linux machine with more than one CPU
    checks them in worker processes, one per CPU (at most 4), forked as the run begins (a fork
    has every module and the prompts already loaded, so it starts in milliseconds): drafts that
    arrive together are checked side by side instead of one after the other under one
    interpreter lock. Otherwise (elsewhere a fork is unsafe or missing), or when a worker
    process cannot be started or dies, they are checked one after the other in a worker thread
    of their own. Either way the findings are the same (`_draft_findings`), and the short work
    the other jobs hand to `asyncio.to_thread` (a review's instructions, a write) never queues
    behind them.
    """

    def __init__(self, prompts: PromptSet, drafts: int) -> None:
        self.prompts = prompts
        self.thread = ThreadPoolExecutor(1, thread_name_prefix="draft-checks")
        workers = min(_cpus(), 4)
        many = drafts >= PROCESS_CHECKS_FROM and workers > 1 and sys.platform == "linux"
        self.processes = _checks_processes(prompts, workers) if many else None

    async def run(self, job: Job, sections: dict[int, str], shape: list[str]) -> list[str]:
        """The findings of one draft."""
        loop = asyncio.get_running_loop()
        if self.processes is not None:
            try:
                return await loop.run_in_executor(
                    self.processes, _checked_in_worker, job, sections, shape
                )
            except BrokenProcessPool:
                self.processes = None  # a worker was killed: check in the thread from now on
        return await loop.run_in_executor(
            self.thread, _draft_findings, job, sections, shape, self.prompts
        )

    def shutdown(self) -> None:
        """Stop the workers without waiting: the checks of a finished run are all done."""
        self.thread.shutdown(wait=False, cancel_futures=True)
        if self.processes is not None:
            self.processes.shutdown(wait=False, cancel_futures=True)


def _checks_processes(prompts: PromptSet, workers: int) -> ProcessPoolExecutor | None:
    """Start `workers` checks worker processes, or return `None` where processes cannot be."""
    # Frozen while they fork, the objects of this process are never traversed by a worker's
    # garbage collector, which would copy every page of them into the worker (a second or more
    # of a worker's first check, in a large process).
    gc.freeze()
    try:
        context = multiprocessing.get_context("fork")
        pool = ProcessPoolExecutor(
            workers, mp_context=context, initializer=_start_checks_worker, initargs=(prompts,)
        )
        with warnings.catch_warnings():
            # Python 3.12+ warns that a fork of a process with threads may deadlock in the child
            # on a lock another thread held: a worker runs only the checks, which take none.
            warnings.filterwarnings(
                "ignore", "This process .* is multi-threaded", DeprecationWarning
            )
            pool.submit(int)  # with fork, the first task forks every worker: now, not on a draft
    except OSError:  # a sandbox that forbids new processes, or no memory left for one
        return None
    finally:
        gc.unfreeze()
    return pool


@dataclass
class _Run:
    """What every request of a run shares."""

    options: Options
    prompts: PromptSet
    client: openai.AsyncOpenAI
    limiter: Slots
    writer: _Writer
    reporter: Reporter
    checks: _DraftChecks

    async def check(self, job: Job, sections: dict[int, str], shape: list[str]) -> list[str]:
        """A draft's findings (`_draft_findings`), worked out off the event loop
        (`_DraftChecks`)."""
        return await self.checks.run(job, sections, shape)

    async def call(
        self,
        key: str,
        instructions: str,
        messages: list[dict[str, str]],
        *,
        review: bool,
        text_format: dict[str, Any] | None = None,
        opening: bool = False,
    ) -> ModelReply:
        """One model call (`call_model`), counted in the run's totals; `key` names it in notes.

        `opening` marks a job's first draft: waiting for a slot, it lets the other jobs'
        reviews and repairs go first (`Slots`).

        Raises:
            _JobFailed: The call failed for good.
            EndpointUnreachable: The endpoint refused the connection.
        """

        def _on_retry(reason: str, delay: float, number: int) -> None:
            what = "review: " if review else ""
            self.reporter.note(f"{key}: {what}{reason}, retry {number} in {delay:.1f}s")

        try:
            reply = await call_model(
                self.client,
                model=self.options.review_model if review else self.options.model,
                effort=self.options.effort,
                instructions=instructions,
                messages=messages,
                policy=self.options.retry,
                limiter=self.limiter.slot(OPENING if opening else FOLLOW_UP),
                on_retry=_on_retry,
                text_format=text_format,
                book=self.options.replies,
            )
        except EndpointUnreachable:
            raise
        except ModelCallError as exc:
            what = "the review call" if review else "the model call"
            raise _JobFailed(f"{what} failed: {exc}") from exc
        self.reporter.totals.count(reply, review=review)
        return reply

    def failed(self, job: Job, exc: _JobFailed) -> None:
        self.reporter.finished(job.key, "failed", str(exc))

    async def write(self, job: Job, drafts: dict[int, str]) -> None:
        """Render and write one translation (in a worker thread), and report it."""
        await asyncio.to_thread(lambda: self.writer.write(job, render(job, drafts)))
        if job.todo:
            self.reporter.finished(
                job.key, "translated", f"{len(job.todo)} of {len(job.page.sections)} section(s)"
            )
        else:
            self.reporter.finished(
                job.key, "kept", "rewritten without the model (front matter or order)"
            )


@dataclass
class _Conversation:
    """One job's exchange with the translator, in its own language."""

    job: Job
    run: _Run
    messages: list[dict[str, str]] = field(default_factory=list)
    repaired: bool = False
    """Whether the last `draft` needed a repair (its first reply failed the code checks)."""

    @property
    def reviewed_in_draft(self) -> bool:
        """Whether the draft was reviewed by the translate request itself (`Job.self_review`)
        and passed the code checks at once: no review call follows. A draft that needed a
        repair is reviewed by a call of its own."""
        return self.job.self_review and not self.repaired

    @property
    def instructions(self) -> str:
        job = self.job
        english = "".join(job.source(n) for n in job.todo)
        return self.run.prompts.instructions(
            [job.lang], english, edit=job.edit, self_review=job.self_review
        )

    def start(self) -> None:
        """Begin with this job's own task message."""
        job = self.job
        sections = {n: job.source(n) for n in job.todo}
        contexts = {job.lang: (job.context, job.patch_context())}
        task = self.run.prompts.task_message(
            [job.lang], job.page.path, sections, contexts, job.keep
        )
        self.messages = [{"role": "user", "content": task}]

    async def draft(
        self, rounds: int, first: tuple[str, str | None] | None = None
    ) -> dict[int, str]:
        """Ask for the sections until the code checks pass, with up to `rounds` repairs.

        `first` is this language's part of a reply for several languages (and why it was cut
        off, if it was): it is checked as the first draft, and a repair continues in this job's
        own conversation. The checks run in a worker thread, so that other jobs' requests go
        out meanwhile.
        """
        findings: list[str] = []
        for attempt in range(rounds + 1):
            if attempt == 0 and first is not None:
                text, cut_off = first
            else:
                reply = await self.run.call(
                    self.job.key,
                    self.instructions,
                    self.messages,
                    review=False,
                    opening=len(self.messages) == 1,  # the task alone: the job's first draft
                )
                text, cut_off = reply.text, reply.cut_off
            self.messages.append({"role": "assistant", "content": text})
            sections, shape = parse_reply(text)
            findings = await self.run.check(self.job, sections, shape)
            if cut_off and findings:
                findings.insert(0, f"the reply was cut off ({cut_off}): return all of it")
            if not findings:
                self.repaired = attempt > 0
                return {n: sections[n] for n in self.job.todo}
            if attempt < rounds:
                self.run.reporter.note(
                    f"{self.job.key}: draft failed {len(findings)} check(s), asking for repair "
                    f"{attempt + 1}/{rounds}: {'; '.join(findings)}"
                )
                self.messages.append(
                    {"role": "user", "content": self.run.prompts.repair_message(findings)}
                )
        raise _JobFailed(
            f"still failing after {rounds} repair(s), not written: {'; '.join(findings)}"
        )

    def pairs(self, drafts: dict[int, str]) -> dict[int, tuple[str, str]]:
        """Section number -> (English, draft) as the reviewer sees them."""
        job = self.job
        return {n: (job.source(n), _fit(drafts[n], job.source(n))) for n in drafts}

    async def review(self, drafts: dict[int, str]) -> list[Finding]:
        """Review the drafts on their own; return the blockers."""
        return (await _review(self.run, [self], {self.job.lang: drafts}, self.job.key))[
            self.job.lang
        ]

    def sort_findings(
        self, findings: list[Finding], pairs: dict[int, tuple[str, str]]
    ) -> list[Finding]:
        """Verify the quotes of this job's findings; record minor and discarded ones; return
        the blockers."""
        job = self.job
        kept, discarded = verify_findings(findings, pairs)
        t = self.run.reporter.totals
        t.discarded += [(job.key, f.describe()) for f in discarded]
        t.minors += [(job.key, f.describe()) for f in kept if f.severity == "minor"]
        blockers = [f for f in kept if f.severity == "blocker"]
        t.blockers += [(job.key, f.describe()) for f in blockers]
        if discarded:
            self.run.reporter.note(
                f"{job.key}: review: {len(discarded)} finding(s) discarded, their quotes "
                "do not occur in the sections"
            )
        return blockers

    async def repair(self, blockers: list[Finding]) -> dict[int, str]:
        """One repair round for the review's blockers, checked by code and reviewed again."""
        job = self.job
        described = [f.describe() for f in blockers]
        self.run.reporter.note(
            f"{job.key}: review found {len(blockers)} blocker(s), asking for a repair: "
            + "; ".join(described)
        )
        self.messages.append(
            {"role": "user", "content": self.run.prompts.review_repair_message(described)}
        )
        drafts = await self.draft(self.run.options.max_repairs)
        surviving = await self.review(drafts)
        if surviving:
            raise _JobFailed(
                "a review blocker survived the repair, not written: "
                + "; ".join(f.describe() for f in surviving)
            )
        return drafts


async def _review(
    run: _Run, talks: list[_Conversation], drafts: dict[str, dict[int, str]], key: str
) -> dict[str, list[Finding]]:
    """One review request for the drafts of every language of `talks`; language -> blockers.

    Raises:
        _JobFailed: The call failed, or its reply is malformed.
    """
    langs = [talk.job.lang for talk in talks]
    head = talks[0].job
    pairs = {talk.job.lang: talk.pairs(drafts[talk.job.lang]) for talk in talks}
    english = {n: en for n, (en, _) in pairs[langs[0]].items()}
    shown = {lang: {n: tr for n, (_, tr) in pairs[lang].items()} for lang in langs}
    several = langs if len(langs) > 1 else None
    message = run.prompts.review_message(langs, head.page.path, english, shown)
    # The glossary entries the English uses are looked up in a worker thread: for a whole page
    # that takes a while, and the other jobs' requests go out meanwhile.
    instructions = await asyncio.to_thread(
        run.prompts.review_instructions, langs, "".join(english.values()), edit=head.edit
    )
    reply = await run.call(
        key,
        instructions,
        [{"role": "user", "content": message}],
        review=True,
        text_format=review_format(several) if several else REVIEW_FORMAT,
    )
    try:
        findings = parse_review(reply.text, several)
    except ReviewError as exc:
        raise _JobFailed(f"the review reply is malformed: {exc}") from exc
    return {
        talk.job.lang: talk.sort_findings(
            [f for f in findings if f.language in ("", talk.job.lang)], pairs[talk.job.lang]
        )
        for talk in talks
    }


async def _run_jobs(run: _Run, jobs: list[Job]) -> None:
    """Bring the translations of one page that send the same English up to date.

    Several languages share one translate request and one review request (`groups`); the code
    checks, the quote verification, any repair and the write are per language, and each
    language is written as soon as it is done. A shared request that fails, or whose reply
    cannot be read, falls back to one request per language.
    """
    if not jobs[0].todo:
        await run.write(jobs[0], {})
        return
    key = f"{'+'.join(job.lang for job in jobs)}/{jobs[0].page.path}"
    talks = [_Conversation(job, run) for job in jobs]
    for talk in talks:
        talk.start()
    firsts = await _translate_together(run, talks, key) if len(talks) > 1 else {}

    async def _draft(talk: _Conversation) -> dict[int, str] | None:
        try:
            return await talk.draft(run.options.max_repairs, firsts.get(talk.job.lang))
        except _JobFailed as exc:
            run.failed(talk.job, exc)
            return None

    drafted = await asyncio.gather(*(_draft(talk) for talk in talks))
    done = {t.job.lang: (t, d) for t, d in zip(talks, drafted, strict=True) if d is not None}
    # a small patch whose draft passed the code checks at once was reviewed in its request
    blockers: dict[str, list[Finding]] = {
        lang: [] for lang, (t, _) in done.items() if t.reviewed_in_draft
    }
    unreviewed = {lang: d for lang, d in done.items() if lang not in blockers}
    if run.options.review and unreviewed:
        talks_left = [t for t, _ in unreviewed.values()]
        blockers |= await _review_all(run, talks_left, unreviewed, key)

    async def _finish(talk: _Conversation, drafts: dict[int, str]) -> None:
        try:
            if run.options.review:
                if talk.job.lang not in blockers:
                    return  # its review failed (reported)
                if blockers[talk.job.lang]:
                    drafts = await talk.repair(blockers[talk.job.lang])
        except _JobFailed as exc:
            run.failed(talk.job, exc)
            return
        await run.write(talk.job, drafts)

    await asyncio.gather(*(_finish(talk, drafts) for talk, drafts in done.values()))


async def _translate_together(
    run: _Run, talks: list[_Conversation], key: str
) -> dict[str, tuple[str, str | None]]:
    """One translate request for every language of `talks`: language -> its part of the reply
    (empty when the request fails: each language then asks on its own)."""
    head = talks[0].job
    langs = [talk.job.lang for talk in talks]
    sections = {n: head.source(n) for n in head.todo}
    contexts = {talk.job.lang: (talk.job.context, talk.job.patch_context()) for talk in talks}
    prompts = run.prompts
    try:
        reply = await run.call(
            key,
            prompts.instructions(
                langs, "".join(sections.values()), edit=True, self_review=head.self_review
            ),
            [
                {
                    "role": "user",
                    "content": prompts.task_message(langs, head.page.path, sections, contexts),
                }
            ],
            review=False,
            text_format=batch_format(langs, head.todo),
            opening=True,
        )
        if reply.cut_off:
            raise ValueError(f"the reply was cut off ({reply.cut_off})")
        parts = parse_batch_reply(reply.text, langs, head.todo)
        alone = [lang for lang in langs if lang not in parts]
        if alone:
            run.reporter.note(
                f"{key}: the reply has no text for {', '.join(alone)}; asking it alone"
            )
    except (_JobFailed, ValueError) as exc:
        run.reporter.note(f"{key}: the request for all languages failed ({exc}); asking each alone")
        return {}
    return {lang: (text, None) for lang, text in parts.items()}


async def _review_all(
    run: _Run,
    talks: list[_Conversation],
    done: dict[str, tuple[_Conversation, dict[int, str]]],
    key: str,
) -> dict[str, list[Finding]]:
    """Review the drafts of `talks`: language -> blockers, for the languages whose review
    could be done (a job whose own review fails is reported as failed). Several languages
    are reviewed with one request; when it fails, each language is reviewed on its own."""
    drafts = {lang: d for lang, (_, d) in done.items()}
    if len(talks) > 1:
        try:
            return await _review(run, talks, drafts, key)
        except _JobFailed as exc:
            run.reporter.note(
                f"{key}: the review of all languages failed ({exc}); reviewing each alone"
            )
    found: dict[str, list[Finding]] = {}
    for talk in talks:
        try:
            found[talk.job.lang] = await talk.review(drafts[talk.job.lang])
        except _JobFailed as exc:
            run.failed(talk.job, exc)
    return found


async def _unless_deferred(jobs: list[Job], work: Any, reporter: Reporter) -> None:
    """Await `work` (the jobs' run); a request recorded for the Batch API ends them as queued."""
    try:
        await work
    except Deferred as deferred:
        reporter.totals.queued_requests[deferred.request] = [job.key for job in jobs]
        for job in jobs:
            reporter.finished(job.key, "queued", "its request waits in the batch")


def _sweep_i18n(options: Options) -> None:
    """Remove leftover temporary files of `i18n/`, under the manifest's lock: a run for another
    language may be writing the manifest right now (its temporary file is not a leftover)."""
    with locked(options.manifest_path):
        sweep_temp_files(options.root / "i18n")


def _write_report(options: Options, reporter: Reporter) -> None:
    if options.report is not None:
        text = json.dumps(reporter.report(), indent=2, ensure_ascii=False) + "\n"
        atomic_write_text(options.report, text)


async def translate(options: Options, client: openai.AsyncOpenAI, reporter: Reporter) -> int:
    """Bring the selected translations up to date. Returns the exit code (0, or 1 on failures).

    A run first settles what a killed run left: temporary files are removed and a pending
    manifest entry is committed or dropped (see `Manifest.resolve`).

    Raises:
        ValueError: Bad input (unknown page, malformed front matter, manifest or glossary).
        EndpointUnreachable: The API endpoint refused the connection; the run stopped.
    """
    await asyncio.to_thread(_sweep_i18n, options)
    for folder in (options.docs / lang for lang in options.languages):
        await asyncio.to_thread(sweep_temp_files, folder)
    manifest = Manifest.load(options.manifest_path)
    settled = manifest.resolve(options.docs)
    if settled:
        manifest.save(options.manifest_path)
        reporter.totals.settled += settled
    prompts = PromptSet.load(options.root / "i18n", options.languages)
    writer = _Writer(options, manifest, prompts.glossary)
    if options.files is None:
        for lang, old, new in find_moves(options.docs, manifest, options.languages):
            await asyncio.to_thread(writer.move, lang, old, new)
            reporter.totals.moved.append(f"{lang}/{old} -> {lang}/{new}")
    the_plan = plan(options, manifest, prompts.glossary)
    await asyncio.to_thread(writer.record_glossary, the_plan.current)
    reporter.totals.kept += the_plan.current
    reporter.totals.unadopted += the_plan.unadopted
    for lang, rel in the_plan.orphans:
        await asyncio.to_thread(writer.remove, lang, rel)
        reporter.totals.removed.append(f"{lang}/{rel}")
    reporter.start(len(the_plan.jobs))
    drafts = sum(1 for job in the_plan.jobs if job.todo)
    run = _Run(
        options,
        prompts,
        client,
        Slots(options.concurrency),
        writer,
        reporter,
        _DraftChecks(prompts, drafts),
    )
    try:
        async with asyncio.TaskGroup() as group:
            for jobs in groups(the_plan.jobs):
                group.create_task(_unless_deferred(jobs, _run_jobs(run, jobs), reporter))
    except ExceptionGroup as group:
        unreachable = group.subgroup(EndpointUnreachable)
        if unreachable is None:
            raise
        raise unreachable.exceptions[0] from None
    finally:
        run.checks.shutdown()
        await asyncio.to_thread(writer.flush)
        reporter.close()
        _write_report(options, reporter)
    return 1 if reporter.totals.failed else 0
