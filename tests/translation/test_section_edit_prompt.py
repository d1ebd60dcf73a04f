"""What a one-section edit sends: the changed part, its surroundings, the glossary it uses.

The requests are read as the fake server received them from the real openai client, so these
tests prove what the model gets, not what the code meant to send.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from translation_support import REPO, RunSite

from docs_i18n.pages import EnglishPage
from docs_i18n.planning import excerpt
from docs_i18n.prompt import PATCH_GAP, PromptSet, mentions
from echo_translator import EchoTranslator
from turnstore.testing import FakeOpenAIServer

LANGS = ["ja", "ko", "zh"]
PAGE = "guide/backends.md"

_ADMONITION_RULE = "Keep admonition, details and tab markers"
_PLACEHOLDER_RULE = "Keep every placeholder such as"
_MERMAID_RULE = "A diagram's labels come as a numbered list"
_WHOLE_WORKFLOW = "Repeat the review and refinement"
_EDIT_WORKFLOW = "Translate faithfully and naturally, like a native technical writer"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _listed(instructions: str, heading: str) -> list[str]:
    """The `- ` lines under `# heading` of the instructions (empty when it is left out)."""
    found = re.search(rf"(?m)^# {heading}\n\n(.*?)(?:\n\n# |\Z)", instructions, re.S)
    return re.findall(r"(?m)^- (.+)$", found[1]) if found else []


def _expected_glossary(prompts: PromptSet, lang: str, english: str) -> tuple[list[str], list[str]]:
    glossary = prompts.glossary
    # Sorted, case aside: two requests using the same entries list them byte for byte alike.
    words = sorted(
        (w for w in glossary.do_not_translate if w.lower() in english.lower()),
        key=lambda w: (w.casefold(), w),
    )
    forbid = glossary.forbid.get(lang, {})
    terms = [
        f"{en} -> {tr}" + (f" (never {', '.join(forbid[en])})" if en in forbid else "")
        for en, tr in sorted(
            glossary.terms.get(lang, {}).items(), key=lambda e: (e[0].casefold(), e[0])
        )
        if mentions(english, en)
    ]
    return words, terms


async def _edit_run(
    site: Path,
    run_site: RunSite,
    fake_openai: FakeOpenAIServer,
    old: str,
    new: str,
    before: dict[str, str] | None = None,
) -> tuple[EnglishPage, list[dict[str, Any]], list[dict[str, Any]]]:
    """Translate the site, make one edit in `PAGE`, translate again; return its requests.

    `before` receives each language's translation of `PAGE` as it was before the edit.
    """
    before = {} if before is None else before
    assert (await run_site()).code == 0
    for lang in LANGS:
        before[lang] = _read(site / "docs" / lang / PAGE)
    path = site / "docs" / PAGE
    text = _read(path)
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")
    first_new = len(fake_openai.requests_to("/v1/responses"))
    outcome = await run_site()
    assert outcome.code == 0, outcome.output
    bodies = [r.body for r in fake_openai.requests_to("/v1/responses")[first_new:]]
    page = EnglishPage.parse(PAGE, _read(path))
    drafts = [b for b in bodies if _format(b) in ("", "translation_batch")]
    reviews = [b for b in bodies if _format(b).startswith("translation_review")]
    assert len(drafts) + len(reviews) == len(bodies)
    return page, drafts, reviews


def _format(body: dict[str, Any]) -> str:
    return str((body.get("text") or {}).get("format", {}).get("name", ""))


def _all_terms(prompts: PromptSet, english: str) -> list[str]:
    """The term lines of a request for every language: each with its language code."""
    return [f"{lang}: {t}" for lang in LANGS for t in _expected_glossary(prompts, lang, english)[1]]


async def test_a_paragraph_edit_sends_the_paragraph_its_section_and_neighbours_in_context(
    site: Path, echo: EchoTranslator, run_site: RunSite, fake_openai: FakeOpenAIServer
) -> None:
    # "must": a small edit that is still reviewed by a call of its own (`Job.self_review`)
    new = "Install the redis extra and point the Runner's session at your server, which must run:"
    before: dict[str, str] = {}
    page, drafts, reviews = await _edit_run(
        site,
        run_site,
        fake_openai,
        "Install the extra and point the session at your server:",
        new,
        before,
    )
    for lang in LANGS:
        # The page keeps every other block of its translation byte for byte.
        old_blocks = re.split(r"\n\s*\n", before[lang])
        new_blocks = re.split(r"\n\s*\n", _read(site / "docs" / lang / PAGE))
        assert len(old_blocks) == len(new_blocks)
        differ = [i for i, (a, b) in enumerate(zip(old_blocks, new_blocks, strict=True)) if a != b]
        assert len(differ) == 1
        assert re.fullmatch(r"Install\S+ \S+ redis\S+ extra\S+ .*[:：]", new_blocks[differ[0]])
    prompts = PromptSet.load(site / "i18n", LANGS)
    changed = 3  # ## Redis
    # One request translates the edit into all three languages, one reviews all three.
    assert len(drafts) == len(reviews) == 1
    (body,) = drafts
    assert _format(body) == "translation_batch"
    assert body["text"]["format"]["schema"]["required"] == [f"{lang}.{changed}" for lang in LANGS]
    instructions = body["instructions"]
    (message,) = body["input"]
    task = message["content"]
    source = task.split("<source>\n", 1)[1].split("</source>", 1)[0]
    # Only the changed paragraph of the changed section is translated, sent once.
    assert source == f"<!-- i18n:section {changed} -->\n{new}\n"
    assert task.count(new) == 1
    for lang in LANGS:
        # Context per language: the rest of its section as translated, with the place the
        # paragraph goes, and the neighbouring sections; nothing else of the page.
        opening = f"<{lang}>\n"
        context = task.split(opening)[1].split(f"</{lang}>")[0]
        assert re.findall(r"(?m)^<!-- section (\d+) -->$", context) == ["2", "3", "4"]
        own = context.split("<!-- section 3 -->\n")[1].split("<!-- section 4 -->")[0]
        assert re.match(r"## Redis \S+ \{#redis\}\n\n" + re.escape(PATCH_GAP) + "\n\n@@BLOCK", own)
        assert "{#sqlite}" in context
        assert "{#example}" in context
        # next to a section patched in one paragraph, a neighbour shows only its heading
        for n in (2, 4):
            shown = context.split(f"<!-- section {n} -->\n")[1].split("<!-- section")[0]
            assert re.fullmatch(r"## [^\n]*\n\n\.\.\.\n", shown), shown
        translated = _read(site / "docs" / lang / PAGE)
        assert re.search(r"Install\S+ \S+ redis\S+ extra\S+", translated)
        for far in ("{#how-it-works}", "{#example_1}", "{#history-limits"):
            assert far in translated
            assert far not in task
        # Each language's own rules, once.
        assert instructions.count(prompts.per_language[lang].strip()) == 1
    for section in page.sections:
        assert section.strip() not in task  # no English section is sent whole
    # Exactly the glossary entries the sent English uses, each term with its language.
    words, _ = _expected_glossary(prompts, "ja", new)
    assert "Runner" in words
    assert "SQLiteSession" not in words  # not in the sent text
    assert _listed(instructions, "Do not translate") == words
    assert _listed(instructions, "Terms") == _all_terms(prompts, new)
    # The rules its content needs, not the others, once, and the short workflow.
    for rule in (_PLACEHOLDER_RULE, _ADMONITION_RULE, _MERMAID_RULE, _WHOLE_WORKFLOW):
        assert rule not in instructions
    assert instructions.count(_EDIT_WORKFLOW) == 1
    assert instructions.count("Never translate code, URLs") == 1
    (body,) = reviews
    assert _format(body) == "translation_review_batch"
    instructions = body["instructions"]
    (message,) = body["input"]
    review = message["content"]
    # Only the changed paragraph: its English once and its draft in each language.
    assert re.findall(r'<section n="(\d+)">', review) == [str(changed)]
    assert review.count(f"<english>\n{new}\n</english>") == 1
    assert re.findall(r"(?m)^<(ja|ko|zh)>$", review) == LANGS
    assert "{#redis}" not in review
    assert _listed(instructions, "Do not translate") == words
    assert _listed(instructions, "Terms") == _all_terms(prompts, new)


async def test_a_section_whose_every_block_changed_is_sent_whole_with_its_neighbours(
    site: Path, echo: EchoTranslator, run_site: RunSite, fake_openai: FakeOpenAIServer
) -> None:
    page, drafts, reviews = await _edit_run(
        site,
        run_site,
        fake_openai,
        "## Example\n\nThe first example.",
        "## Examples\n\nThe first example, shorter than the second.",
    )
    changed = 4  # the first ## Example
    english = page.sections[changed]
    assert english.startswith("## Examples\n\nThe first example, shorter")
    prompts = PromptSet.load(site / "i18n", LANGS)
    (body,) = drafts
    instructions = body["instructions"]
    task = body["input"][0]["content"]
    source = task.split("<source>\n", 1)[1].split("</source>", 1)[0]
    assert source == f"<!-- i18n:section {changed} -->\n{english}"
    for lang in LANGS:
        opening = f"<{lang}>\n"
        context = task.split(opening)[1].split(f"</{lang}>")[0]
        assert re.findall(r"(?m)^<!-- section (\d+) -->$", context) == ["3", "5"]
    assert PATCH_GAP not in task
    for n, section in enumerate(page.sections):
        if n != changed:
            assert section.strip() not in task
    for rule in (_PLACEHOLDER_RULE, _ADMONITION_RULE, _MERMAID_RULE, _WHOLE_WORKFLOW):
        assert rule not in instructions
    # The rules every request needs are always there.
    assert "Return JSON: field `<code>.<N>` holds section N" in instructions
    assert "Return only Markdown" not in instructions
    assert "Keep the structure verbatim" in instructions
    assert "Never translate code, URLs" in instructions
    assert "Do not add or drop content" in instructions
    words, _ = _expected_glossary(prompts, "ja", english)
    assert _listed(instructions, "Do not translate") == words
    assert _listed(instructions, "Terms") == _all_terms(prompts, english)
    if not words:
        assert "# Do not translate" not in instructions
    (body,) = reviews
    review = body["input"][0]["content"]
    assert review.count(f"<english>\n{english}</english>") == 1
    assert "Placeholders such as" not in body["instructions"]


def test_a_whole_page_gets_every_rule_and_the_full_workflow() -> None:
    prompts = PromptSet.load(REPO / "i18n", LANGS)
    full = prompts.instructions(["ja"])
    for rule in (_PLACEHOLDER_RULE, _ADMONITION_RULE, _MERMAID_RULE, _WHOLE_WORKFLOW):
        assert rule in full
    assert _EDIT_WORKFLOW not in full
    text = "## Flow\n\n@@BLOCK_1@@\n<!-- i18n:mermaid 1\n1: Start\n-->\n"
    # A whole page gets the same instructions whatever it holds, for the prompt cache.
    assert prompts.instructions(["ja"], text) == full
    edit = prompts.instructions(["ja"], text, edit=True)
    assert _MERMAID_RULE in edit
    assert _PLACEHOLDER_RULE in edit
    assert _ADMONITION_RULE not in edit
    assert _EDIT_WORKFLOW in edit
    assert _WHOLE_WORKFLOW not in edit
    assert len(edit) < len(full)


async def test_a_translation_whose_blocks_do_not_line_up_gets_the_whole_section(
    site: Path, echo: EchoTranslator, run_site: RunSite, fake_openai: FakeOpenAIServer
) -> None:
    assert (await run_site(languages=["ja", "ko"])).code == 0
    ja = site / "docs" / "ja" / PAGE
    text = _read(ja)
    heading = re.search(r"(?m)^## Redis .*\{#redis\}\n\n", text)
    assert heading is not None
    # A hand edit joined the Redis heading and its first paragraph: one block fewer.
    ja.write_text(text[: heading.end() - 1] + text[heading.end() :], encoding="utf-8")
    path = site / "docs" / PAGE
    path.write_text(
        _read(path).replace("Install the extra and point", "Install the redis extra and point"),
        encoding="utf-8",
    )
    first_new = len(fake_openai.requests_to("/v1/responses"))
    assert (await run_site(languages=["ja", "ko"])).code == 0
    page = EnglishPage.parse(PAGE, _read(path))
    sources = {}
    for request in fake_openai.requests_to("/v1/responses")[first_new:]:
        if "text" not in request.body:
            task = request.body["input"][0]["content"]
            lang = "ja" if "into Japanese" in task else "ko"
            sources[lang] = task.split("<source>\n", 1)[1].split("</source>", 1)[0]
    assert sources["ja"] == f"<!-- i18n:section 3 -->\n{page.sections[3]}"
    assert sources["ko"].startswith("<!-- i18n:section 3 -->\nInstall the redis extra")
    assert "## Redis" not in sources["ko"]
    assert re.search(r"(?m)^## Redis \S+ \{#redis\}\n\nInstall\S+ ", _read(ja))


def test_a_name_wrapped_over_two_lines_is_listed_as_kept() -> None:
    prompts = PromptSet.load(REPO / "i18n", LANGS)
    text = "It answers the Responses API and the Conversations\nAPI, both.\n"
    instructions = prompts.instructions(["ja"], text, edit=True)
    assert "- Conversations API\n" in instructions.split("# Do not translate", 1)[1]


# -- the small edit's prompt: only what its content needs ------------------------------------------

_FULL_NEVER = "Translate the visible text of\n  links, images (`alt`) and HTML."
_SHORT_NEVER = "- Never translate code, URLs, names of files, commands, classes, functions"


def test_a_plain_paragraph_gets_the_short_never_rule_and_still_its_glossary_terms() -> None:
    prompts = PromptSet.load(REPO / "i18n", LANGS)
    plain = "The session keeps every turn in the repository.\n"
    edit = prompts.instructions(LANGS, plain, edit=True)
    assert _SHORT_NEVER in edit
    assert _FULL_NEVER not in edit
    # the glossary entries its words need are all there, each language tagged
    assert _listed(edit, "Terms") == _all_terms(prompts, plain)
    assert any(line.startswith("ja: session -> ") for line in _listed(edit, "Terms"))
    # a whole page keeps every rule, whatever it carries
    whole = prompts.instructions(LANGS, plain)
    assert _FULL_NEVER in whole
    assert _SHORT_NEVER not in whole


def test_a_paragraph_with_markup_gets_the_full_never_rule() -> None:
    prompts = PromptSet.load(REPO / "i18n", ["ja"])
    for text in (
        "See [the guide](guide.md) first.\n",
        "An image: ![a diagram](img/flow.png).\n",
        "Read it in [the reference][ref].\n",
        "A note.[^1]\n",
        "Press <kbd>Ctrl</kbd> to stop.\n",
        "The :material-database: icon.\n",
    ):
        instructions = prompts.instructions(["ja"], text, edit=True)
        assert _FULL_NEVER in instructions, text
        assert _SHORT_NEVER not in instructions, text


def test_an_edits_review_is_shorter_and_still_names_what_code_cannot_see() -> None:
    prompts = PromptSet.load(REPO / "i18n", LANGS)
    english = "The session keeps @@CODE_1@@ and @@CODE_2@@ in the repository.\n"
    edit = prompts.review_instructions(LANGS, english, edit=True)
    whole = prompts.review_instructions(LANGS, english)
    assert len(edit) < len(whole)
    for needed in ("two list items", "swapped", "said twice", "omission", "Placeholders such as"):
        assert needed in edit, needed
    assert _listed(edit, "Terms") == _all_terms(prompts, english)
    assert "Quote the English and the translation **literally**" in edit


def test_a_neighbour_of_a_patched_section_shows_only_its_heading() -> None:
    section = "## Redis (訳)\n\nFirst.\n\nSecond.\n\nThird.\n"
    assert excerpt(section, tail=True, heading_only=True) == "## Redis (訳)\n\n...\n"
    assert excerpt(section, tail=False) == "## Redis (訳)\n\nFirst.\n\nSecond.\n\n...\n"
    # without a heading the blocks nearest the change stay: something must show the place
    assert excerpt("First.\n\nSecond.\n\nThird.\n", tail=True, heading_only=True) == (
        "...\n\nSecond.\n\nThird.\n"
    )
