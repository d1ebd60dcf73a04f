"""The commands that need no model: `--check`, `--adopt` and `--dry-run`."""

from __future__ import annotations

import difflib

from .checks import (
    align_page,
    paragraph_split_only,
    prose,
    term_uses,
    unrendered_blocks,
    verify_page,
)
from .manifest import Manifest, ManifestEntry, text_hash
from .markdown_mask import unmask
from .pages import EnglishPage, translated_pages, translation_path
from .planning import (
    Options,
    find_moves,
    glossary_digests,
    glossary_touched,
    groups,
    hand_edited,
    plan,
    read_text,
    select_pages,
    translated_hashes,
)
from .prompt import Glossary, PromptSet
from .tokens import cached_prefix_tokens, estimate_cost, estimate_output_tokens, estimate_tokens

__all__ = ["adopt", "check", "dry_run", "section_names", "terms_report"]

UNRECORDED = "sha256:unrecorded"
"""The hash recorded for a section whose translation no English text vouches for yet."""


def _glossary_prompts(options: Options) -> PromptSet:
    return PromptSet.load(options.root / "i18n", options.languages)


def _load(options: Options) -> Manifest:
    manifest = Manifest.load(options.manifest_path)
    manifest.resolve(options.docs)  # in memory: what a killed run left
    return manifest


def check(options: Options) -> tuple[int, list[str]]:
    """Report missing, stale, orphaned, unadopted and invalid translations.

    A current translation is checked for structure and for the meaning-bearing tokens
    (numbers, paragraphs, untranslated text, glossary). A translation edited by hand since it
    was recorded is reported as such ("edited by hand, not adopted: run --adopt"), a note that
    does not fail the check; one whose glossary entries changed is stale.

    Returns:
        The exit code (0 when everything is current and sound, else 1) and one line per problem.
    """
    manifest = _load(options)
    glossary = _glossary_prompts(options).glossary
    selected = select_pages(options)
    problems: list[str] = []
    notes: list[str] = []
    moves = find_moves(options.docs, manifest, options.languages) if options.files is None else []
    moved_to = {(lang, new) for lang, _, new in moves}
    moved_from = {(lang, old) for lang, old, _ in moves}
    problems += [
        f"moved     docs/{lang}/{old} -> docs/{lang}/{new}: its English page moved; the next "
        "run moves the translation and its manifest entry"
        for lang, old, new in moves
    ]
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
                if (lang, rel) not in moved_to:
                    problems.append(f"missing   {where}")
                continue
            if entry is None:
                problems.append(f"unadopted {where}: not in the manifest (run --adopt)")
            elif entry.source != page.source_hash:
                changed = len(_changed_sections(page, entry))
                problems.append(
                    f"stale     {where}: the English page changed ({changed} section(s))"
                )
                continue  # its structure is checked again when it is retranslated
            translated = read_text(target)
            if entry is not None:
                touched = glossary_touched(entry, page, glossary_digests(page, lang, glossary))
                if touched:
                    problems.append(
                        f"stale     {where}: glossary entries its English uses changed "
                        f"(section(s) {', '.join(map(str, touched))})"
                    )
                edited = hand_edited(entry, translated)
                if edited:
                    which = f" (section(s) {', '.join(map(str, edited))})" if edited != [-1] else ""
                    notes.append(
                        f"edited    {where}: edited by hand{which}, not adopted: run --adopt "
                        f"--lang {lang} --file docs/{rel}"
                    )
            resplit = (
                set()
                if entry is None
                else entry.vouched_splits(translated_hashes(translated), page.hashes)
            )
            findings = verify_page(english, translated, lang, glossary, resplit=resplit)
            problems += [f"invalid   {where}: {f}" for f in findings]
    if options.files is None:
        for lang in options.languages:
            for rel in translated_pages(options.docs, lang):
                if not (options.docs / rel).exists() and (lang, rel) not in moved_from:
                    problems.append(f"orphaned  docs/{lang}/{rel}: docs/{rel} does not exist")
            for rel, langs in manifest.pages.items():
                gone = not (options.docs / rel).exists()
                if (
                    gone
                    and lang in langs
                    and not translation_path(options.docs, lang, rel).exists()
                ):
                    problems.append(f"orphaned  manifest entry {lang}/{rel}")
    return (1 if problems else 0), problems + notes


def terms_report(options: Options) -> list[str]:
    """Per language, the renderings each glossary term has across the selected pages.

    For every term of the glossary, in the sections whose English uses it (the very check
    `--check` runs, `checks.term_uses`): how often its rendering occurs, and where each known
    variant (`forbid`) occurs, so a second rendering is seen before a reader sees it. A term
    with a variant anywhere on the site is marked `DRIFT`. Then, per language, the paragraphs
    whose English uses a term that their section renders elsewhere but which have none of its
    renderings (`checks.unrendered_blocks`): maybe an unlisted rendering, for a maintainer to
    read (a note: it does not fail the check).
    """
    glossary = _glossary_prompts(options).glossary
    lines: list[str] = []
    pages = select_pages(options)
    for lang in options.languages:
        rendered: dict[str, int] = {}
        unrendered: list[str] = []
        on_pages: dict[str, set[str]] = {}
        variants: dict[str, dict[str, list[str]]] = {}
        for rel in pages:
            target = translation_path(options.docs, lang, rel)
            if not target.exists():
                continue
            aligned = align_page(read_text(options.docs / rel), read_text(target))
            if isinstance(aligned, list) or len(aligned.english) != len(aligned.translated):
                lines.append(f"{lang}: docs/{lang}/{rel} skipped: its sections do not line up")
                continue
            for n, (en, tr) in enumerate(zip(aligned.english, aligned.translated, strict=True)):
                for term, where in unrendered_blocks(en, tr, lang, glossary).items():
                    unrendered += [f"{rel}:{aligned.at(n, line)[5:]} {term}" for line in where]
                for term, use in term_uses(prose(en), prose(tr), lang, glossary).items():
                    rendered[term] = rendered.get(term, 0) + use.rendered
                    on_pages.setdefault(term, set()).add(rel)
                    for wrong, where in use.variants.items():
                        variants.setdefault(term, {}).setdefault(wrong, []).extend(
                            f"{rel}:{aligned.at(n, line)[5:]}" for line in where
                        )
        lines.append(f"{lang}:")
        terms = glossary.terms.get(lang, {})
        for term in sorted(on_pages):
            parts = [
                f"{terms.get(term, '(no rendering)')} x{rendered[term]} "
                f"({len(on_pages[term])} page(s))"
            ]
            for wrong, places in variants.get(term, {}).items():
                shown = ", ".join(places[:8]) + (
                    f" and {len(places) - 8} more" if len(places) > 8 else ""
                )
                parts.append(f"{wrong} x{len(places)} ({shown})")
            mark = "DRIFT " if term in variants else "      "
            lines.append(f"  {mark}{term}: " + "; ".join(parts))
        if unrendered:
            lines.append(
                f"  paragraphs without the rendering their section uses elsewhere "
                f"({len(unrendered)}; read them: another wording may be a second rendering):"
            )
            lines += [f"    {place}" for place in unrendered]
    return lines


def _changed_sections(page: EnglishPage, entry: ManifestEntry) -> list[int]:
    """The sections of `page` whose English is not one the translation was recorded from."""
    available: dict[str, int] = {}
    for digest in entry.sections:
        available[digest] = available.get(digest, 0) + 1
    changed = []
    for n, digest in enumerate(page.hashes):
        if available.get(digest):
            available[digest] -= 1
        elif page.sections[n].strip():
            changed.append(n)
    return changed


def section_names(page: EnglishPage, n: int) -> list[str]:
    """The names `--section` accepts for section `n`: its number and its heading's id."""
    names = [str(n)]
    if page.heading_ids[n]:
        names.append(page.heading_ids[n][0])
    if n == 0:
        names.append("preamble")
    return names


def _english_diff(old: str | None, new: str, where: str) -> list[str]:
    if old is None:
        return [
            "    (the English this section was translated from is not in the manifest: it was "
            "recorded before the manifest kept English text, or the section is new; see "
            "`git log -p` of the English page)"
        ]
    diff = difflib.unified_diff(
        old.splitlines(), new.splitlines(), "recorded English", "current English", lineterm=""
    )
    return [f"    {line}" for line in diff] or [f"    (no textual change in {where})"]


def adopt(options: Options, named: list[str] | None = None) -> tuple[int, list[str]]:
    """Record hand-edited translations as current, only where their English is vouched for.

    Each selected translation must pass the structure and meaning checks. A section whose
    English is unchanged since the manifest recorded the translation is adopted. A section whose
    English changed is refused, with the English diff, unless the maintainer names it in
    `named` (its heading id or number): naming it says "the translation says what the new
    English says". A refused section keeps its old record, so the page stays stale and the next
    run retranslates exactly those sections. A translation with no manifest entry has no recorded
    English to compare with: it is adopted whole once it passes the checks. A translation whose
    text and English are unchanged but whose glossary entries changed (`--check` calls it stale)
    is checked against the current glossary and, when it passes, recorded with the new
    glossary digests: the maintainer changed the glossary and fixed or confirmed the
    translation by hand. A record made before the manifest kept glossary digests gets them the
    same way, so that the next glossary change marks exactly the sections it touches stale.

    Args:
        options: The run's options (pages and languages).
        named: Sections vouched for by the maintainer (`--section`).

    Returns:
        The exit code (1 when a translation failed the checks or a section was refused) and
        the lines to print.
    """
    named_set = set(named or [])
    manifest = _load(options)
    glossary = _glossary_prompts(options).glossary
    lines: list[str] = []
    failed = False
    used_names: set[str] = set()
    for rel in select_pages(options):
        english = read_text(options.docs / rel)
        page = EnglishPage.parse(rel, english)
        texts = {
            digest: unmask(section, page.masked.code)
            for digest, section in zip(page.hashes, page.sections, strict=True)
        }
        for lang in options.languages:
            target = translation_path(options.docs, lang, rel)
            where = f"docs/{lang}/{rel}"
            if not target.exists():
                continue
            translated = read_text(target)
            entry = manifest.get(rel, lang)
            digests = glossary_digests(page, lang, glossary)
            retermed = [] if entry is None else glossary_touched(entry, page, digests)
            if (
                entry is not None
                and entry.source == page.source_hash
                and entry.translation == text_hash(translated)
                and entry.glossary == digests
            ):
                continue  # recorded as it is, with the current glossary: nothing to adopt
            splits = _paragraph_splits(english, translated)
            now = translated_hashes(translated)
            recorded = set() if entry is None else entry.vouched_splits(now, page.hashes)
            named_splits = {n for n in splits if named_set.intersection(section_names(page, n))}
            for n in named_splits:
                used_names.update(named_set.intersection(section_names(page, n)))
            resplit = (recorded | named_splits) & splits
            findings = verify_page(english, translated, lang, glossary, resplit=resplit)
            if findings:
                failed = True
                lines.append(f"not adopted {where}:")
                lines += [f"    {f}" for f in findings]
                lines += _split_hints(page, english, translated, lang, glossary, splits - resplit)
                continue
            if entry is None:
                manifest.set(
                    rel,
                    lang,
                    ManifestEntry(
                        source=page.source_hash,
                        sections=list(page.hashes),
                        translation=text_hash(translated),
                        glossary=digests,
                        translated=now,
                        split=_vouched(now, page.hashes, resplit),
                    ),
                    texts,
                )
                lines.append(f"adopted {where} (no earlier record: the whole page)")
                continue
            changed = _changed_sections(page, entry)
            for n in retermed:  # vouched for by passing the checks: naming them is allowed
                used_names.update(named_set.intersection(section_names(page, n)))
            refused: list[int] = []
            vouched: list[int] = []
            for n in changed:
                names = section_names(page, n)
                if named_set.intersection(names):
                    used_names.update(named_set.intersection(names))
                    vouched.append(n)
                else:
                    refused.append(n)
            sections = list(page.hashes)
            same_shape = len(entry.sections) == len(page.hashes)
            for n in refused:
                old = entry.sections[n] if same_shape else None
                sections[n] = old if old is not None else UNRECORDED
                names = section_names(page, n)
                label = f"section {n}" + (f" (#{names[1]})" if len(names) > 1 else "")
                lines.append(
                    f"refused {where} {label}: its English changed since the translation was "
                    "recorded. If the translation now says what the current English says, "
                    f"name it: --section {names[-1] if len(names) > 1 else n}"
                )
                old_text = manifest.english.get(old) if old is not None else None
                lines += _english_diff(old_text, texts[page.hashes[n]], label)
            failed = failed or bool(refused)
            manifest.set(
                rel,
                lang,
                ManifestEntry(
                    source=entry.source if refused else page.source_hash,
                    sections=sections,
                    translation=text_hash(translated),
                    glossary=digests,
                    translated=now,
                    split=_vouched(now, sections, resplit),
                ),
                texts,
            )
            detail = "English unchanged" if not changed else ""
            if vouched:
                detail = "named: " + ", ".join(str(n) for n in vouched)
            if named_splits:
                detail += ("; " if detail else "") + (
                    "paragraph split vouched for in section(s) "
                    + ", ".join(map(str, sorted(named_splits)))
                )
            if retermed:
                detail += (
                    ("; " if detail else "")
                    + "checked against the changed glossary entries of section(s) "
                    + ", ".join(map(str, retermed))
                )
            elif entry.glossary is None:
                detail += ("; " if detail else "") + "glossary entries recorded"
            if refused:
                lines.append(
                    f"adopted {where} except section(s) {', '.join(map(str, refused))} "
                    "(still stale)"
                )
            else:
                lines.append(f"adopted {where}" + (f" ({detail})" if detail else ""))
    unknown = sorted(named_set - used_names)
    if unknown:
        failed = True
        lines.append(
            f"--section {', '.join(unknown)}: no selected translation has a changed section, "
            "or a section split into other paragraphs, by that name"
        )
    manifest.save(options.manifest_path)
    return (1 if failed else 0), lines


def _vouched(
    now: list[str] | None, english_of: list[str], resplit: set[int]
) -> dict[str, str] | None:
    """The manifest's record of the vouched splits: translated hash -> English hash."""
    if now is None or len(now) != len(english_of):
        return None
    return {now[n]: english_of[n] for n in sorted(resplit)} or None


def _paragraph_splits(english: str, translated: str) -> set[int]:
    """The sections of a translation that differ from their English in their paragraph split
    only (`checks.paragraph_split_only`)."""
    aligned = align_page(english, translated)
    if isinstance(aligned, list) or len(aligned.english) != len(aligned.translated):
        return set()
    return {
        n
        for n, (en, tr) in enumerate(zip(aligned.english, aligned.translated, strict=True))
        if paragraph_split_only(en, tr)
    }


def _split_hints(
    page: EnglishPage,
    english: str,
    translated: str,
    lang: str,
    glossary: Glossary,
    splits: set[int],
) -> list[str]:
    """How to vouch for each section whose paragraph split differs from its English's."""
    if not splits:
        return []
    clean = not verify_page(english, translated, lang, glossary, resplit=splits)
    lines = []
    for n in sorted(splits):
        names = section_names(page, n)
        label = f"section {n}" + (f" (#{names[1]})" if len(names) > 1 else "")
        lines.append(
            f"    {label}: its paragraph count differs from the English only because its "
            "paragraphs are split differently (headings, code, lists, tables and admonitions "
            "stand where the English has them). If that split is right, vouch for it: "
            f"--section {names[-1] if len(names) > 1 else n}"
            + ("" if clean else " (and fix the other findings)")
        )
    return lines


def dry_run(options: Options, *, verbose: bool = False) -> list[str]:
    """Describe what a run would send, with estimated tokens and cost; no API call.

    The review pass (unless `options.review` is off) is estimated as one call per request that
    sends sections: the English and the drafts in, a short list of findings out; a small patch
    reviews itself in its request (`Job.self_review`). A section edit in several languages is
    one request and one review (`planning.groups`).
    """
    manifest = _load(options)
    the_plan = plan(options, manifest)
    prompts = PromptSet.load(options.root / "i18n", options.languages)
    lines: list[str] = []
    total_in = total_out = review_in = review_out = total_cached = 0
    calls = 0
    sent: list[str] = []
    for jobs in groups(the_plan.jobs):
        job = jobs[0]
        langs = [j.lang for j in jobs]
        sections = {n: job.source(n) for n in job.todo}
        english = "".join(sections.values())
        contexts = {j.lang: (j.context, j.patch_context()) for j in jobs}
        keep = job.keep if len(jobs) == 1 else None
        instructions = prompts.instructions(
            langs, english, edit=job.edit, self_review=job.self_review
        )
        task = prompts.task_message(langs, job.page.path, sections, contexts, keep)
        review = prompts.review_instructions(langs, english, edit=job.edit)
        tokens_in = estimate_tokens(instructions) + estimate_tokens(task) if job.todo else 0
        if job.todo:
            total_cached += cached_prefix_tokens(instructions + task, sent)
            sent.append(instructions + task)
        source = sum(estimate_tokens(s) for s in sections.values())
        tokens_out = len(jobs) * estimate_output_tokens(source, options.effort or "medium")
        tokens_out = tokens_out if job.todo else 0
        total_in += tokens_in
        total_out += tokens_out
        calls += 1 if job.todo else 0
        if job.todo and options.review and not job.self_review:
            review_in += estimate_tokens(review)
            review_in += source + tokens_out // 3
            review_out += estimate_output_tokens(
                len(jobs) * source // 4, options.effort or "medium"
            )
        what = (
            f"sections {', '.join(map(str, job.todo))} of {len(job.page.sections)}"
            if job.todo
            else "no call (rewrite only)"
        )
        key = f"{'+'.join(langs)}/{job.page.path}" if len(jobs) > 1 else job.key
        shared = " (one request for all these languages)" if len(jobs) > 1 else ""
        lines.append(
            f"would translate {key}: {what}{shared}, ~{tokens_in} tokens in, ~{tokens_out} out"
        )
        if verbose and job.todo:
            lines += ["--- instructions ---", instructions, "--- input ---", task, "---"]
    lines += [f"current {key}" for key in the_plan.current]
    lines += [f"not adopted {key} (run --adopt)" for key in the_plan.unadopted]
    lines += [f"would remove docs/{lang}/{rel}" for lang, rel in the_plan.orphans]
    cost = estimate_cost(options.model, total_in, total_out, cached_tokens=total_cached)
    batch = estimate_cost(
        options.model, total_in, total_out, cached_tokens=total_cached, batch=True
    )
    cost_text = (
        f"~${cost:.2f} (~${batch:.2f} with --batch)"
        if cost is not None and batch is not None
        else f"unknown (no price for {options.model})"
    )
    lines.append(
        f"{calls} call(s), ~{total_in} tokens in (~{total_cached} from the prompt cache), "
        f"~{total_out} tokens out (reasoning included, estimated), estimated cost {cost_text} "
        f"with {options.model}"
    )
    if options.review and calls:
        cost = estimate_cost(options.review_model, review_in, review_out)
        unknown = f"unknown (no price for {options.review_model})"
        cost_text = f"~${cost:.2f}" if cost is not None else unknown
        lines.append(
            f"review: {calls} call(s) (more after a repair), ~{review_in} tokens in, "
            f"~{review_out} tokens out, estimated cost {cost_text} with {options.review_model}"
        )
    return lines
