"""Decide what a run must do: which pages and languages need the model, and for which sections.

`plan` compares every selected English page with the manifest and the translations on disk:
a translation whose English is unchanged is current; otherwise the sections whose hash is in the
manifest keep their translated text byte for byte and only the others go to the model, with the
current translation as context.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .checks import align_code
from .front_matter import split_front_matter
from .manifest import Manifest, ManifestEntry
from .markdown_mask import mask, unmask
from .pages import EnglishPage, english_pages, translated_pages, translation_path
from .sections import split_sections
from .translator import RetryPolicy

__all__ = [
    "CONTEXT_BLOCKS",
    "Job",
    "Options",
    "Plan",
    "excerpt",
    "plan",
    "read_text",
    "select_pages",
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
        max_repairs: Repair rounds for a draft that fails the code checks.
        timeout: Seconds before a request times out.
        retry: The retry policy of each call.
        review: Whether a second model call reviews each draft that passes the code checks.
        review_model: The reviewer's model.
        report: Where to write the run's JSON report, or `None`.
    """

    root: Path
    languages: list[str]
    files: list[str] | None = None
    model: str = "o3"
    effort: str | None = "medium"
    concurrency: int = 32
    force: bool = False
    max_repairs: int = 2
    timeout: float = 900.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    review: bool = True
    review_model: str = "o3"
    report: Path | None = None

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
        context: Section number -> the current translation (masked with the English placeholder
            names) of the unchanged sections next to a changed one, sent as context.
    """

    page: EnglishPage
    lang: str
    todo: list[int]
    reuse: dict[int, str]
    context: dict[int, str] | None

    @property
    def key(self) -> str:
        """`lang/page`, for messages."""
        return f"{self.lang}/{self.page.path}"

    @property
    def edit(self) -> bool:
        """Whether only some sections go to the model (others keep their translated text)."""
        return any(self.page.sections[n].strip() for n in self.reuse)


@dataclass
class Plan:
    """What a run will do."""

    jobs: list[Job]
    current: list[str]
    unadopted: list[str]
    orphans: list[tuple[str, str]]
    pages: dict[str, EnglishPage]


def select_pages(options: Options) -> list[str]:
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


def read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def plan(options: Options, manifest: Manifest) -> Plan:
    """Decide what each selected page and language needs.

    Raises:
        ValueError: A `--file` is not an English page, or a page's front matter is malformed.
    """
    selected = select_pages(options)
    pages: dict[str, EnglishPage] = {}
    for rel in selected:
        try:
            pages[rel] = EnglishPage.parse(rel, read_text(options.docs / rel))
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
                job = _incremental_job(page, lang, read_text(target), entry)
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
    source_of: dict[int, int] = {}
    for n, digest in enumerate(page.hashes):
        if available.get(digest):
            old = available[digest].pop(0)
            source_of[n] = old
            reuse[n] = unmask(tr_sections[old], tr_masked.code)
        elif _blank(page.sections[n]):
            reuse[n] = unmask(page.sections[n], page.masked.code)
        else:
            todo.append(n)
    context: dict[int, str] | None = None
    if todo and source_of:
        aligned, leftovers, _ = align_code(page.masked, tr_masked)
        aligned = re.sub(r"@@X\w+@@", lambda m: leftovers.get(m.group(0), m.group(0)), aligned)
        old_sections = split_sections(aligned)
        wanted = {m for n in todo for m in (n - 1, n + 1)} - set(todo)
        context = {
            m: excerpt(old_sections[source_of[m]], tail=m < min(todo, key=lambda n: abs(n - m)))
            for m in sorted(wanted)
            if m in source_of
        }
    return Job(page=page, lang=lang, todo=todo, reuse=reuse, context=context)


CONTEXT_BLOCKS = 2
"""How many blocks (paragraphs, lists, tables) of a neighbouring section are sent as context."""


def excerpt(section: str, *, tail: bool) -> str:
    """The part of a neighbouring section's translation that borders a changed section.

    Its heading and the `CONTEXT_BLOCKS` blocks nearest the changed section (the last ones of the
    section before it, the first ones of the section after it), with `...` for what is left out.
    Enough to keep the wording and terms consistent; the rest would only cost tokens.
    """
    blocks = [b for b in re.split(r"\n[ \t]*\n", section.strip("\n")) if b.strip()]
    heading = blocks[:1] if blocks and blocks[0].lstrip().startswith("#") else []
    body = blocks[len(heading) :]
    if len(body) <= CONTEXT_BLOCKS:
        return section
    kept = body[-CONTEXT_BLOCKS:] if tail else body[:CONTEXT_BLOCKS]
    parts = [*heading, "...", *kept] if tail else [*heading, *kept, "..."]
    return "\n\n".join(parts) + "\n"
