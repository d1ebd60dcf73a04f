"""Decide what a run must do: which pages and languages need the model, and for which sections.

`plan` compares every selected English page with the manifest and the translations on disk:
a translation whose English is unchanged is current; otherwise the sections whose hash is in the
manifest keep their translated text byte for byte and only the others go to the model, with the
current translation as context. A changed section whose translation lines up block for block
with its recorded English sends only its changed blocks (`Patch`); the rest keeps its text.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

from .checks import align_code
from .front_matter import split_front_matter
from .headings import pin_heading_ids
from .manifest import Manifest, ManifestEntry, text_hash
from .markdown_mask import PLACEHOLDER_RE, Masked, block_placeholder, mask, unmask
from .pages import EnglishPage, english_pages, translated_pages, translation_path
from .prompt import PATCH_GAP, SENTENCE_GAP, Glossary
from .sections import section_hash, split_sections
from .translator import ReplyBook, RetryPolicy

__all__ = [
    "CONTEXT_BLOCKS",
    "SELF_REVIEW_CHARS",
    "Job",
    "Options",
    "Patch",
    "Plan",
    "blocks",
    "excerpt",
    "find_moves",
    "glossary_digests",
    "glossary_touched",
    "groups",
    "hand_edited",
    "plan",
    "read_text",
    "select_pages",
    "translated_hashes",
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
        concurrency: Requests in flight at most: 64 drafts every page and language of this
            site (33 jobs) at once, where 32 left one job a whole model latency behind.
        force: Retranslate every selected page, even if current.
        max_repairs: Repair rounds for a draft that fails the code checks.
        timeout: Seconds before a request times out.
        retry: The retry policy of each call.
        review: Whether a second model call reviews each draft that passes the code checks.
        review_model: The reviewer's model.
        report: Where to write the run's JSON report, or `None`.
        replies: With the Batch API: records the first request of each job instead of sending
            it (`--batch`), or answers requests with the batch's replies (`--batch-collect`).
    """

    root: Path
    languages: list[str]
    files: list[str] | None = None
    model: str = "o3"
    effort: str | None = "medium"
    concurrency: int = 64
    force: bool = False
    max_repairs: int = 2
    timeout: float = 900.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    review: bool = True
    review_model: str = "o3"
    report: Path | None = None
    replies: ReplyBook | None = None

    @property
    def docs(self) -> Path:
        """The docs folder."""
        return self.root / "docs"

    @property
    def manifest_path(self) -> Path:
        """The manifest file."""
        return self.root / "i18n" / "manifest.json"


@dataclass(frozen=True)
class Patch:
    """The paragraphs of a changed section that need the model; the others keep their translation.

    A section's translation keeps the English section's blocks (paragraphs, lists, tables,
    code placeholders) one for one, which the checks enforce, so when the English of a section
    changes in some blocks only, the unchanged blocks before and after keep their translated
    text and only the changed run of blocks (`english`) is translated. The code checks and the
    review still see the whole assembled section.

    Attributes:
        first: The index of the first changed block of the new English section.
        last: One past the index of the last changed block.
        english: The masked English of the changed blocks, as it stands in the section; empty
            when blocks were only deleted (`first == last`: nothing to translate).
        before: The translated blocks before them (masked with the page's placeholder names).
        after: The translated blocks after them.
        head: For a patch of some sentences of one paragraph (`_sentence_patch`), the kept
            translation of that paragraph before them, with the space after it.
        tail: Likewise, the kept translation of the paragraph after them.
        wide: For a patch of some sentences, the patch of their whole paragraph (sent instead
            when the languages of a page would not send the same English).
    """

    first: int
    last: int
    english: str
    before: list[str]
    after: list[str]
    head: str = ""
    tail: str = ""
    wide: Patch | None = None


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
        patches: Section number -> the part of a changed section that needs the model, when
            the rest of it keeps its translation (`Patch`).
        keep: Section number -> the current translation (masked with the English placeholder
            names) of a section sent whole whose translation was edited by hand, or made with
            glossary entries that changed: the request carries it as the translation to keep.
        recorded: Section number -> the recorded hash of a kept section edited by hand and not
            adopted, written again to the manifest so the edit stays known (`hand_edited`).
    """

    page: EnglishPage
    lang: str
    todo: list[int]
    reuse: dict[int, str]
    context: dict[int, str] | None
    patches: dict[int, Patch] = field(default_factory=dict)
    keep: dict[int, str] = field(default_factory=dict)
    recorded: dict[int, str] = field(default_factory=dict)

    def patch_context(self) -> dict[int, str]:
        """Section number -> the kept translation around its changed blocks, with `PATCH_GAP`
        where their translation goes.

        Like `excerpt`: the section's heading and the `PATCH_CONTEXT_BLOCKS` blocks nearest the
        change on each side (a long one clipped to its lines nearest the change,
        `PATCH_CONTEXT_CHARS`), with `...` for what is left out. For a patch of some sentences,
        their paragraph with `SENTENCE_GAP` in their place, and no other block.
        """
        context: dict[int, str] = {}
        for n, patch in self.patches.items():
            sentences = patch.wide is not None
            keep = 0 if sentences else PATCH_CONTEXT_BLOCKS
            before = patch.before
            heading = before[:1] if before and before[0].lstrip().startswith("#") else []
            near = [
                _clip(b, tail=True)
                for b in before[len(heading) :][len(before) - len(heading) - keep :]
            ]
            gap = ["..."] if len(before) - len(heading) > len(near) else []
            after = [_clip(b, tail=False) for b in patch.after[:keep]]
            more = ["..."] if len(patch.after) > len(after) else []
            middle = f"{patch.head}{SENTENCE_GAP}{patch.tail}" if sentences else PATCH_GAP
            parts = [*heading, *gap, *near, middle, *after, *more]
            context[n] = "\n\n".join(p for p in parts if p.strip()) + "\n"
        return context

    def source(self, n: int) -> str:
        """The masked English the model translates for section `n`: its changed blocks or all."""
        patch = self.patches.get(n)
        return patch.english if patch else self.page.sections[n]

    @property
    def key(self) -> str:
        """`lang/page`, for messages."""
        return f"{self.lang}/{self.page.path}"

    @property
    def self_review(self) -> bool:
        """Whether the translate request reviews its own draft, with no review call after it.

        So it is for a small patch: every section sent is a patch (some paragraphs or
        sentences of a section, the rest kept) and the English sent is at most
        `SELF_REVIEW_CHARS` characters, where a review call's fixed instructions and schema
        would cost more than the patch, and says nothing the code checks cannot see changed
        (`_REVIEWED_WORDS`: a negation, an obligation, a condition). The code checks still
        run on the draft; a draft that fails them is repaired and then reviewed by a call of
        its own.
        """
        sources = [self.source(n) for n in self.todo]
        return (
            bool(self.todo)
            and all(n in self.patches for n in self.todo)
            and sum(map(len, sources)) <= SELF_REVIEW_CHARS
            and not any(map(_REVIEWED_WORDS.search, sources))
        )

    @property
    def edit(self) -> bool:
        """Whether only part of the page goes to the model (the rest keeps its translation)."""
        return bool(self.patches) or any(self.page.sections[n].strip() for n in self.reuse)


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


def plan(options: Options, manifest: Manifest, glossary: Glossary | None = None) -> Plan:
    """Decide what each selected page and language needs (with `glossary`, the run's loaded
    glossary; without, it is read from `i18n/glossary.yml`).

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
    if glossary is None:
        glossary = Glossary.load(options.root / "i18n" / "glossary.yml")
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
                digests = glossary_digests(page, lang, glossary)
                touched = set(glossary_touched(entry, page, digests))
                if entry.source == page.source_hash and not touched:
                    current.append(key)
                    continue
                job = _incremental_job(
                    page, lang, read_text(target), entry, manifest.english, touched
                )
            else:
                job = _full_job(page, lang)
            jobs.append(job)
    _same_sentences(jobs)
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


def _same_sentences(jobs: list[Job]) -> None:
    """Widen a patch of some sentences to its paragraph when the languages of its page would
    not all send the same sentences, so that one request still serves them all (`groups`)."""
    sources: dict[tuple[str, int], set[str]] = {}
    for job in jobs:
        for n, patch in job.patches.items():
            sources.setdefault((job.page.path, n), set()).add(patch.english)
    for job in jobs:
        for n, patch in job.patches.items():
            if patch.wide is not None and len(sources[(job.page.path, n)]) > 1:
                job.patches[n] = patch.wide


def _blank(section: str) -> bool:
    return not section.strip()


def glossary_digests(page: EnglishPage, lang: str, glossary: Glossary) -> list[str]:
    """Per section of `page`, the hash of the glossary entries of `lang` its English uses."""
    return [glossary.digest(lang, unmask(s, page.masked.code)) for s in page.sections]


def glossary_touched(entry: ManifestEntry, page: EnglishPage, digests: list[str]) -> list[int]:
    """The sections whose English is unchanged but whose glossary entries changed.

    A section whose English changed is retranslated anyway; an entry that recorded no glossary
    hashes touches nothing.
    """
    if entry.glossary is None or len(entry.glossary) != len(digests):
        return []
    if len(entry.sections) != len(page.hashes):
        return []
    return [
        n
        for n, (old, new) in enumerate(zip(entry.glossary, digests, strict=True))
        if old != new and entry.sections[n] == page.hashes[n]
    ]


def translated_hashes(text: str) -> list[str] | None:
    """The hash of each section of a translated file (`None` when it cannot be read)."""
    try:
        masked = mask(split_front_matter(text).body)
    except ValueError:
        return None
    return [section_hash(s, masked.code) for s in split_sections(masked.text)]


def hand_edited(entry: ManifestEntry, text: str) -> list[int] | None:
    """The sections of a translation edited since it was recorded, or `None` when unknown.

    Known per section when the entry records its sections' hashes (`translated`); otherwise
    the whole file's hash tells only whether something was edited (`[-1]`).
    """
    if entry.translation is None:
        return None
    now = translated_hashes(text)
    if entry.translated is None or now is None or len(now) != len(entry.translated):
        return [] if entry.translation == text_hash(text) else [-1]
    return [n for n, (old, new) in enumerate(zip(entry.translated, now, strict=True)) if old != new]


def find_moves(docs: Path, manifest: Manifest, languages: list[str]) -> list[tuple[str, str, str]]:
    """Translations whose English page was moved (`git mv`): `(lang, old page, new page)`.

    An English page that is gone is matched with a page that exists, has no translation and no
    manifest entry in that language: by content hash, or else by its sections (at least half
    of the gone page's recorded sections are in it, the most of any candidate), so a page moved
    and edited in one commit is matched too. Its translation and manifest entry move there
    instead of being removed and redone; the run then translates only what changed.
    """
    pages = english_pages(docs)
    by_hash: dict[str, list[str]] = {}
    for rel in pages:
        digest = text_hash(read_text(docs / rel))
        by_hash.setdefault(digest, []).append(rel)
    hashes: dict[str, set[str]] = {}

    def _sections(rel: str) -> set[str]:
        if rel not in hashes:
            try:
                hashes[rel] = set(EnglishPage.parse(rel, read_text(docs / rel)).hashes)
            except ValueError:
                hashes[rel] = set()
        return hashes[rel]

    moves: list[tuple[str, str, str]] = []
    taken: set[tuple[str, str]] = set()

    def _free(lang: str, old: str, new: str) -> bool:
        target = translation_path(docs, lang, new)
        return (
            manifest.get(new, lang) is None
            and (lang, new) not in taken
            and (  # or a move a killed run had begun
                not target.exists()
                or read_text(target) == read_text(translation_path(docs, lang, old))
            )
        )

    for old in sorted(manifest.pages):
        if (docs / old).exists():
            continue
        for lang in languages:
            entry = manifest.get(old, lang)
            if entry is None or not translation_path(docs, lang, old).exists():
                continue
            free = [new for new in pages if _free(lang, old, new)]
            found = next((new for new in by_hash.get(entry.source, []) if new in free), None)
            if found is None:
                recorded = set(entry.sections)
                scores = [(len(recorded & _sections(new)), new) for new in free]
                best = max(scores, key=lambda score: score[0], default=(0, ""))
                if best[0] and 2 * best[0] >= len(recorded):
                    found = best[1]
            if found is not None:
                moves.append((lang, old, found))
                taken.add((lang, found))
    return moves


def _full_job(page: EnglishPage, lang: str) -> Job:
    todo = [n for n, s in enumerate(page.sections) if not _blank(s)]
    reuse = {n: unmask(s, page.masked.code) for n, s in enumerate(page.sections) if _blank(s)}
    return Job(page=page, lang=lang, todo=todo, reuse=reuse, context=None)


def _loose_key(section: str | None, *, masked: bool = False) -> str | None:
    """What a section says once whitespace and code are set aside, or `None` (blank, unreadable).

    Two sections with the same key differ only in spaces and line breaks inside paragraphs,
    blank lines, trailing spaces, or the content of code blocks and inline code: a translation
    of one is a translation of the other once the code is replaced. The blocks (paragraphs,
    lists, code placeholders) and their indentation still count.
    """
    if section is None or not section.strip():
        return None
    if not masked:
        try:
            section = mask(section).text
        except ValueError:
            return None
    section = PLACEHOLDER_RE.sub(lambda m: m[0].split("_")[0] + "@@", section)
    section = re.sub(r"<!-- i18n:mermaid \d+", "<!-- i18n:mermaid", section)
    keys = []
    for a, b in blocks(section):
        line = section[a:b]
        keys.append(line[: len(line) - len(line.lstrip())] + " ".join(line.split()))
    return "\n\n".join(keys)


def _repin(masked: str, page: EnglishPage, n: int) -> str:
    """A translated section with section `n`'s English heading ids, when its own differ (a
    section moved past another of the same title, whose ids take a suffix by order)."""
    pinned = pin_heading_ids(masked, page.headings[n], page.heading_ids[n])
    ids = re.compile(r"\{[^}\n]*#([^\s}]+)")
    return masked if ids.findall(pinned) == ids.findall(masked) else pinned


def _fit_blank_lines(section: str, english: str) -> str:
    """Give a translated section the English section's leading and trailing blank lines."""
    lead = english[: len(english) - len(english.lstrip("\n"))]
    tail = english[len(english.rstrip("\n")) :]
    return f"{lead}{section.strip(chr(10))}{tail}"


def _carry(
    old_english: str, translated: str, code: dict[str, str], page: EnglishPage, n: int
) -> str | None:
    """The translation of an old English section, for section `n` whose key is the same.

    The translation's code is matched with the old English section's code, which stands by
    position for the code of section `n`; headings get section `n`'s English ids. `None` when
    the translation holds code that the old English did not.
    """
    try:
        old = mask(old_english)
    except ValueError:
        return None
    names = set(PLACEHOLDER_RE.findall(translated))
    masked = Masked(text=translated, code={k: v for k, v in code.items() if k in names})
    renamed, leftovers, _ = align_code(old, masked)
    before = PLACEHOLDER_RE.findall(old.text)
    after = PLACEHOLDER_RE.findall(page.sections[n])
    if leftovers or [b.split("_")[0] for b in before] != [a.split("_")[0] for a in after]:
        return None
    to_new = dict(zip(before, after, strict=True))
    text = PLACEHOLDER_RE.sub(lambda m: to_new.get(m[0], m[0]), renamed)

    def _relabel(match: re.Match[str]) -> str:
        name = to_new.get(block_placeholder(int(match[1])), "")
        return f"<!-- i18n:mermaid {name.strip('@').removeprefix('BLOCK_') or match[1]}"

    text = re.sub(r"<!-- i18n:mermaid (\d+)", _relabel, text)
    text = pin_heading_ids(text, page.headings[n], page.heading_ids[n])
    english = unmask(page.sections[n], page.masked.code)
    return _fit_blank_lines(unmask(text, page.masked.code), english)


def _assemble(english: str, patch: Patch) -> str:
    """Section `english` with each of its blocks that `patch` keeps replaced by its translation
    (a patch that deleted paragraphs only: nothing is left to translate)."""
    spans = blocks(english)
    owners = [*range(patch.first), *range(patch.last, len(spans))]
    out: list[str] = []
    cursor = 0
    for piece, j in zip([*patch.before, *patch.after], owners, strict=True):
        start, end = spans[j]
        out += [english[cursor:start], piece]
        cursor = end
    return "".join(out) + english[cursor:]


def _incremental_job(
    page: EnglishPage,
    lang: str,
    translated: str,
    entry: ManifestEntry,
    english: dict[str, str],
    touched: set[int] | None = None,
) -> Job:
    try:
        body = split_front_matter(translated).body
        tr_masked = mask(body, start=len(page.masked.code) + 1)
    except ValueError:
        return _full_job(page, lang)  # unreadable as a translation: start over
    tr_sections = split_sections(tr_masked.text)
    if len(tr_sections) != len(entry.sections):
        return _full_job(page, lang)  # the file no longer matches its record: start over
    touched = touched or set()
    edited: set[int] = set()
    if entry.translated is not None and len(entry.translated) == len(tr_sections):
        edited = {
            n
            for n, digest in enumerate(entry.translated)
            if section_hash(tr_sections[n], tr_masked.code) != digest
        }
    # a paragraph split vouched for (`--adopt --section`) is a hand fix too: it is kept
    resplit = entry.vouched_splits(entry.translated, entry.sections) - edited
    same_shape = len(entry.sections) == len(page.sections)
    available: dict[str, list[int]] = {}
    for n, digest in enumerate(entry.sections):
        if not (same_shape and n in touched):
            available.setdefault(digest, []).append(n)
    todo: list[int] = []
    reuse: dict[int, str] = {}
    source_of: dict[int, int] = {}
    for n, digest in enumerate(page.hashes):
        if available.get(digest):
            old = available[digest].pop(0)
            source_of[n] = old
            reuse[n] = unmask(_repin(tr_sections[old], page, n), tr_masked.code)
    # A section whose English changed only in whitespace or code, here or at another place
    # (a section moved, or cut and pasted), keeps its translation with the new English code.
    loose: dict[str, list[int]] = {}
    for olds in available.values():
        for old in olds:
            key = _loose_key(english.get(entry.sections[old]))
            if key is not None:
                loose.setdefault(key, []).append(old)
    for n in range(len(page.sections)):
        if n in source_of:
            continue
        olds = loose.get(_loose_key(page.sections[n], masked=True) or "", [])
        for old in sorted(olds, key=lambda o: o != n):  # the same place first
            text = _carry(english[entry.sections[old]], tr_sections[old], tr_masked.code, page, n)
            if text is not None:
                olds.remove(old)
                source_of[n] = old
                reuse[n] = text
                break
        else:
            if _blank(page.sections[n]):
                reuse[n] = unmask(page.sections[n], page.masked.code)
            else:
                todo.append(n)
    context: dict[int, str] | None = None
    patches: dict[int, Patch] = {}
    keep: dict[int, str] = {}
    recorded = {
        n: entry.translated[old]
        for n, old in source_of.items()
        if old in edited and entry.translated is not None
    }
    old_sections: list[str] = []
    if todo:
        aligned, leftovers, _ = align_code(page.masked, tr_masked)
        aligned = re.sub(r"@@X\w+@@", lambda m: leftovers.get(m.group(0), m.group(0)), aligned)
        old_sections = split_sections(aligned)
    if todo:
        if len(entry.sections) == len(page.sections) and len(old_sections) == len(page.sections):
            for n in todo:
                old_english = english.get(entry.sections[n])
                if n in source_of.values() or old_english is None:
                    continue  # its old text is reused elsewhere, or not recorded
                patch = _patch(page, n, old_english, old_sections[n])
                if patch is not None and patch.first == patch.last:
                    # paragraphs deleted only: the other paragraphs keep their translation
                    reuse[n] = unmask(_assemble(page.sections[n], patch), page.masked.code)
                    source_of[n] = n
                    if n in edited and entry.translated is not None:
                        recorded[n] = entry.translated[n]
                elif patch is not None:
                    patches[n] = patch
        todo = [n for n in todo if n not in reuse]
        if same_shape and len(old_sections) == len(page.sections):
            keep = {n: old_sections[n] for n in todo if n in edited | touched | resplit}
    if todo:
        wanted = {m for n in todo for m in (n - 1, n + 1)} - set(todo)
        context = {
            m: excerpt(
                old_sections[source_of[m]],
                tail=m < min(todo, key=lambda n: abs(n - m)),
                # next to patched sections only: their own kept blocks are the context
                heading_only=all(n in patches for n in (m - 1, m + 1) if n in todo),
            )
            for m in sorted(wanted)
            if m in source_of
        } or None
    return Job(
        page=page,
        lang=lang,
        todo=todo,
        reuse=reuse,
        context=context,
        patches=patches,
        keep=keep,
        recorded={n: h for n, h in recorded.items() if n not in todo},
    )


def blocks(text: str) -> list[tuple[int, int]]:
    """The spans of the blocks of `text`: runs of non-blank lines (as the checks count them)."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    offset = 0
    for line in text.splitlines(keepends=True):
        blank = not line.strip()
        if not blank and start is None:
            start = offset
        if blank and start is not None:
            spans.append((start, offset))
            start = None
        offset += len(line)
    if start is not None:
        spans.append((start, offset))
    return [(a, a + len(text[a:b].rstrip("\n"))) for a, b in spans]


def _placeholders(text: str) -> list[str]:
    return sorted(re.findall(r"@@\w+@@", text))


def _patch(page: EnglishPage, n: int, old_english: str, old_translation: str) -> Patch | None:
    """The changed blocks of section `n`, or `None` when the whole section must be translated.

    The old translation's blocks must match the old English section's one for one, and every
    kept translated block must hold the code placeholders of the English block it stands for.
    """
    try:
        old_masked = mask(old_english)
    except ValueError:
        return None
    new = page.sections[n]
    new_spans = blocks(new)
    old_spans = blocks(old_masked.text)
    tr_spans = blocks(old_translation)
    if len(tr_spans) != len(old_spans):
        return None

    def _key(text: str, code: dict[str, str]) -> str:
        return " ".join(unmask(text, code).split())

    old_keys = [_key(old_masked.text[a:b], old_masked.code) for a, b in old_spans]
    new_keys = [_key(new[a:b], page.masked.code) for a, b in new_spans]
    changes = [
        op
        for op in difflib.SequenceMatcher(None, old_keys, new_keys, autojunk=False).get_opcodes()
        if op[0] != "equal"
    ]
    if not changes:
        return None
    old_first, old_last = changes[0][1], changes[-1][2]
    first, last = changes[0][3], changes[-1][4]
    if last - first == len(new_spans):
        return None  # nothing to keep: translate the whole section
    translated = [old_translation[a:b] for a, b in tr_spans]
    before, after = translated[:old_first], translated[old_last:]
    kept = list(range(first)) + list(range(last, len(new_spans)))
    for j, text in zip(kept, before + after, strict=True):
        a, b = new_spans[j]
        if _placeholders(text) != _placeholders(new[a:b]):
            return None
    english = new[new_spans[first][0] : new_spans[last - 1][1]] if last > first else ""
    patch = Patch(first=first, last=last, english=english, before=before, after=after)
    if len(changes) == 1 and old_last - old_first == 1 and last - first == 1:
        old_block = Masked(old_masked.text[slice(*old_spans[old_first])], old_masked.code)
        old_tr = old_translation[slice(*tr_spans[old_first])]
        return _sentence_patch(patch, old_block, english, old_tr, page.masked.code) or patch
    return patch


_NOT_PROSE = re.compile(r"^(?:[ \t]|[#>|<]|[-*+] |\d+[.)] |!!!|\?\?\?|===|@@BLOCK)", re.M)
"""A block with a line like this is not a plain paragraph (a list, table, heading, quote,
admonition, HTML or code block): its sentences are not patched one by one."""

_SENTENCE_END = re.compile(r"[.!?\u3002\uff01\uff1f][\"')\]\u201d\u2019\uff09]*")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """The spans of the sentences of a paragraph, without the spaces between them.

    A sentence ends at `.`, `!` or `?` (and any closing quote or bracket) followed by a space
    or a line break, or at the full stop, `！` or `？` of Chinese and Japanese, which need
    none.
    """
    spans: list[tuple[int, int]] = []
    start = len(text) - len(text.lstrip())
    for m in _SENTENCE_END.finditer(text):
        rest = text[m.end() :]
        if not rest.strip() or m.start() < start:
            continue
        if rest[0].isspace() or m[0][0] in "\u3002\uff01\uff1f":
            spans.append((start, m.end()))
            start = m.end() + len(rest) - len(rest.lstrip())
    end = len(text.rstrip())
    if end > start:
        spans.append((start, end))
    return spans


def _sentence_patch(
    patch: Patch, old: Masked, english: str, old_translation: str, code: dict[str, str]
) -> Patch | None:
    """`patch` (one paragraph changed) narrowed to the sentences that changed, or `None`.

    Only when alignment is sure: the paragraph is plain prose in both languages, its old
    English and its translation have the same number of sentences (two or more), the change
    replaces some of them and keeps others, and every kept translated sentence holds the code
    placeholders and numbers of the English sentence it stands for.
    """
    if _NOT_PROSE.search(english) or _NOT_PROSE.search(old_translation) or "<!--" in english:
        return None
    old_spans, new_spans = sentence_spans(old.text), sentence_spans(english)
    tr_spans = sentence_spans(old_translation)
    if len(tr_spans) != len(old_spans) or len(old_spans) < 2:
        return None

    def _key(text: str, code: dict[str, str]) -> str:
        return " ".join(unmask(text, code).split())

    old_keys = [_key(old.text[a:b], old.code) for a, b in old_spans]
    new_keys = [_key(english[a:b], code) for a, b in new_spans]
    changes = [
        op
        for op in difflib.SequenceMatcher(None, old_keys, new_keys, autojunk=False).get_opcodes()
        if op[0] != "equal"
    ]
    if not changes:
        return None
    i1, i2, j1, j2 = changes[0][1], changes[-1][2], changes[0][3], changes[-1][4]
    if i2 == i1 or j2 == j1 or j2 - j1 == len(new_spans):
        return None  # a sentence only added or removed, or nothing kept: the whole paragraph
    same = len(new_spans) - j2  # sentences kept after the change (before it: i1 == j1)
    kept = [*zip(range(i1), range(j1), strict=True), *((i2 + k, j2 + k) for k in range(same))]
    for was, now in kept:
        tr = old_translation[slice(*tr_spans[was])]
        en = english[slice(*new_spans[now])]
        if _placeholders(tr) != _placeholders(en) or _digits(tr) != _digits(en):
            return None
    return Patch(
        first=patch.first,
        last=patch.last,
        english=english[new_spans[j1][0] : new_spans[j2 - 1][1]],
        before=patch.before,
        after=patch.after,
        head=old_translation[: tr_spans[i1][0]],
        tail=old_translation[tr_spans[i2 - 1][1] :],
        wide=patch,
    )


def _digits(text: str) -> list[str]:
    return sorted(re.findall(r"\d+", PLACEHOLDER_RE.sub(" ", text)))


CONTEXT_BLOCKS = 2
"""How many blocks (paragraphs, lists, tables) of a neighbouring section are sent as context."""


SELF_REVIEW_CHARS = 400
"""The most English characters a patch may send and still review itself in the translate
request (`Job.self_review`): about two sentences, where the separate review's instructions and
JSON schema (some 2,000 characters) would cost several times what it reads."""


PATCH_CONTEXT_CHARS = 400
"""A kept block next to a change that is longer than this (a long list, say) is shown only by
its lines nearest the change, about this many characters (`Job.patch_context`)."""


def _clip(block: str, *, tail: bool) -> str:
    """`block`, or its lines nearest the change (its last ones when `tail`) up to about
    `PATCH_CONTEXT_CHARS` characters (at least one line), with `...` for the rest."""
    if len(block) <= PATCH_CONTEXT_CHARS:
        return block
    lines = block.split("\n")
    ordered = lines[::-1] if tail else lines
    kept: list[str] = []
    size = 0
    for line in ordered:
        if kept and size + len(line) > PATCH_CONTEXT_CHARS:
            break
        kept.append(line)
        size += len(line) + 1
    if tail:
        return "...\n" + "\n".join(kept[::-1])
    return "\n".join(kept) + "\n..."


_REVIEWED_WORDS = re.compile(
    r"\b(?:not|never|no|none|nothing|nor|neither|without|cannot|unless|except|must|may|might|"
    r"should|shall)\b|n't\b",
    re.I,
)
"""Words whose loss or flip the code checks cannot see (a negation, an obligation, a
condition): a patch whose English has one is reviewed by a call of its own."""


PATCH_CONTEXT_BLOCKS = 1
"""How many kept blocks on each side of a section's changed paragraphs are sent as context: the
paragraph next to the change (the neighbouring sections then show only their heading)."""


def excerpt(section: str, *, tail: bool, heading_only: bool = False) -> str:
    """The part of a neighbouring section's translation that borders a changed section.

    Its heading and the `CONTEXT_BLOCKS` blocks nearest the changed section (the last ones of the
    section before it, the first ones of the section after it), with `...` for what is left out.
    Enough to keep the wording and terms consistent; the rest would only cost tokens. With
    `heading_only` (next to a section of which only some paragraphs changed: the kept paragraphs
    around them are the context), its heading alone shows where the section stands.
    """
    blocks = [b for b in re.split(r"\n[ \t]*\n", section.strip("\n")) if b.strip()]
    heading = blocks[:1] if blocks and blocks[0].lstrip().startswith("#") else []
    body = blocks[len(heading) :]
    limit = 0 if heading_only and heading else CONTEXT_BLOCKS
    if len(body) <= limit:
        return section
    kept = (body[-limit:] if tail else body[:limit]) if limit else []
    parts = [*heading, "...", *kept] if tail else [*heading, *kept, "..."]
    return "\n\n".join(parts) + "\n"


def _batch_key(job: Job) -> tuple[str, tuple[tuple[int, str], ...]] | None:
    """Jobs of one page with the same key send the same English: one request serves them all.

    Only section edits are batched: a whole page in every language would be one very long
    reply.
    """
    if not job.todo or not job.edit or job.keep:
        return None
    return job.page.path, tuple((n, job.source(n)) for n in job.todo)


def groups(jobs: list[Job]) -> list[list[Job]]:
    """The jobs in groups that share one translate and one review request (see `_batch_key`)."""
    groups: dict[object, list[Job]] = {}
    for index, job in enumerate(jobs):
        groups.setdefault(_batch_key(job) or index, []).append(job)
    return list(groups.values())
