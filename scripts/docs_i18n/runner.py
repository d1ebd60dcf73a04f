"""Run a plan: ask the model, check and repair drafts, write pages and the manifest.

Requests run concurrently up to `Options.concurrency`; each page and language is one job, and
a job whose draft still fails the checks after the repairs writes nothing.
"""

from __future__ import annotations

import asyncio
import threading

import openai

from .atomic import atomic_write_text, remove_file
from .checks import check_section
from .front_matter import translated_front_matter
from .headings import pin_heading_ids
from .manifest import Manifest, ManifestEntry
from .markdown_mask import unmask
from .pages import translation_path
from .planning import Job, Options, plan
from .prompt import PromptSet, parse_reply
from .report import Reporter
from .translator import ModelCallError, call_model

__all__ = ["render", "translate"]


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
