"""The commands that need no model: `--check`, `--adopt` and `--dry-run`."""

from __future__ import annotations

from .checks import verify_page
from .manifest import Manifest, ManifestEntry
from .pages import EnglishPage, translated_pages, translation_path
from .planning import Options, plan, read_text, select_pages
from .prompt import PromptSet
from .tokens import estimate_cost, estimate_output_tokens, estimate_tokens

__all__ = ["adopt", "check", "dry_run"]


def check(options: Options) -> tuple[int, list[str]]:
    """Report missing, stale, orphaned, unadopted and structurally broken translations.

    Returns:
        The exit code (0 when everything is current and sound, else 1) and one line per problem.
    """
    manifest = Manifest.load(options.manifest_path)
    selected = select_pages(options)
    problems: list[str] = []
    for rel in selected:
        english = read_text(options.docs / rel)
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
            findings = verify_page(english, read_text(target))
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
    for rel in select_pages(options):
        english = read_text(options.docs / rel)
        page = EnglishPage.parse(rel, english)
        for lang in options.languages:
            target = translation_path(options.docs, lang, rel)
            where = f"docs/{lang}/{rel}"
            if not target.exists():
                continue
            if manifest.get(rel, lang) is not None and not options.force:
                continue
            findings = verify_page(english, read_text(target))
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
