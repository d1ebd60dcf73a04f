"""Site-wide consistency and meaning checks, without a model: each fault is injected into a real
translated page (a copy of this repository's docs and i18n/) and `--check` must name the page,
the line and what is wrong; `--adopt` refuses what `--check` refuses."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from translation_support import REPO, SCRIPT, RunSite

from docs_i18n.checks import check_meaning, unrendered_blocks, verify_page
from docs_i18n.manifest import Manifest
from docs_i18n.planning import Options
from docs_i18n.prompt import Glossary, PromptSet, mentions
from docs_i18n.status import adopt, check, terms_report
from echo_translator import EchoTranslator

LANGS = ("ja", "ko", "zh")


@pytest.fixture
def real_site(tmp_path: Path) -> Path:
    """A copy of this repository's English pages, their translations and i18n/."""
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    for page in (REPO / "docs").glob("*.md"):
        shutil.copy(page, root / "docs" / page.name)
    for lang in LANGS:
        shutil.copytree(REPO / "docs" / lang, root / "docs" / lang)
    shutil.copytree(REPO / "i18n", root / "i18n")
    return root


def _glossary(langs: tuple[str, ...] = LANGS) -> PromptSet:
    return PromptSet.load(REPO / "i18n", list(langs))


def _problems(site: Path, lang: str, page: str) -> list[str]:
    return check(Options(root=site, languages=[lang], files=[page]))[1]


def _prose_lines(text: str) -> list[int]:
    """0-based indexes of the lines of a page that are prose paragraphs (no code, table,
    heading, list marker, admonition or front matter)."""
    out: list[int] = []
    fence = False
    front = text.startswith("---\n")
    for i, line in enumerate(text.splitlines()):
        if front:
            front = not (i > 0 and line.strip() == "---")
            continue
        if re.match(r"^\s*(```|~~~)", line):
            fence = not fence
            continue
        if (
            fence
            or not line.strip()
            or re.match(r"^\s*(\||#|[-*+] |\d+\. |!!!|\?\?\?|===|<)", line)
        ):
            continue
        if line.startswith((" ", "\t")):
            continue
        out.append(i)
    return out


Edit = Callable[[str], str | None]
"""A way to break one line of a translation: the new line, or `None` where it does not apply."""


def _inject_on_some_line(
    site: Path, lang: str, edit: Edit, expected: str, *, lines: str = "prose"
) -> tuple[str, int, list[str]]:
    """Break the first line (of any page) where `edit` applies and `--check` then reports
    `expected`; return the page, the 1-based line and the new findings."""
    for english in sorted((site / "docs").glob("*.md")):
        page = english.name
        path = site / "docs" / lang / page
        original = path.read_text(encoding="utf-8")
        text_lines = original.split("\n")
        candidates = _prose_lines(original) if lines == "prose" else range(len(text_lines))
        before = set(_problems(site, lang, page))
        tried = 0
        for i in candidates:
            changed = edit(text_lines[i])
            if changed is None or changed == text_lines[i]:
                continue
            tried += 1
            path.write_text("\n".join([*text_lines[:i], changed, *text_lines[i + 1 :]]), "utf-8")
            new = [p for p in _problems(site, lang, page) if p not in before]
            if any(expected in p for p in new):
                return page, i + 1, new
            path.write_text(original, encoding="utf-8")
            if tried >= 3:
                break
    raise AssertionError(f"no line where the injected fault gives {expected!r}")


def _named(findings: list[str], lang: str, page: str, line: int, expected: str) -> bool:
    return any(
        f.startswith("invalid") and f"docs/{lang}/{page}: line {line}: " in f and expected in f
        for f in findings
    )


# -- one term, one rendering, on every page ------------------------------------------------------

SECOND_RENDERING = {
    "ja": ("default", "デフォルト", "既定"),
    "ko": ("item", "항목", "아이템"),
    "zh": ("exit status", "退出状态", "状态码"),
}


@pytest.mark.parametrize("lang", LANGS)
def test_a_second_rendering_of_a_term_fails_check_naming_page_line_and_variant(
    lang: str, real_site: Path
) -> None:
    term, right, wrong = SECOND_RENDERING[lang]
    expected = f"{wrong!r} is a forbidden rendering of {term!r}: the glossary says {right!r}"
    page, line, found = _inject_on_some_line(
        real_site, lang, lambda x: x.replace(right, wrong, 1) if right in x else None, expected
    )
    assert _named(found, lang, page, line, expected), found


def test_a_term_whose_words_wrap_onto_two_lines_is_checked(real_site: Path) -> None:
    english = (real_site / "docs" / "backends.md").read_text(encoding="utf-8")
    assert "as its pooled\nconnections do" in english  # the only use of the term in its section
    prompts = _glossary(("ko",))
    glossary = prompts.glossary
    assert glossary.uses("its pooled\n  connections do", "pooled connection")
    assert "pooled connection" in glossary.used_terms("ko", "its pooled\nconnections")
    assert glossary.digest("ko", "pooled\nconnections") == glossary.digest(
        "ko", "pooled connections"
    )
    edit = prompts.instructions(["ko"], "its pooled\nconnections", edit=True)
    assert "- pooled connection -> " in edit
    assert "- OpenAI Agents SDK" in prompts.glossary_lists(["ko"], "the OpenAI\nAgents SDK")[0]

    path = real_site / "docs" / "ko" / "backends.md"
    text = path.read_text(encoding="utf-8")
    line = next(n for n, x in enumerate(text.split("\n"), 1) if "풀에 있는 연결과" in x)
    path.write_text(text.replace("풀에 있는 연결과", "풀링된 연결과", 1), encoding="utf-8")
    expected = (
        "'풀링된 연결' is a forbidden rendering of 'pooled connection': "
        "the glossary says '풀에 있는 연결'"
    )
    assert _named(_problems(real_site, "ko", "backends.md"), "ko", "backends.md", line, expected)


def test_check_terms_lists_every_rendering_of_a_term_per_language(real_site: Path) -> None:
    term, right, wrong = SECOND_RENDERING["ja"]
    expected = f"{wrong!r} is a forbidden rendering of {term!r}"
    page, line, _ = _inject_on_some_line(
        real_site, "ja", lambda x: x.replace(right, wrong, 1) if right in x else None, expected
    )
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(real_site), "--check", "--terms"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    report = result.stdout.split("renderings of the glossary terms across the pages:\n")[1]
    ja = report.split("\nko:\n")[0]
    row = next(r for r in ja.splitlines() if re.match(rf"\s+(DRIFT )?{term}: ", r))
    assert row.lstrip().startswith("DRIFT")
    assert f"{right} x" in row
    assert f"{page}:{line}" in row.split(f"{wrong} x")[1]
    assert "\nko:\n" in report
    assert "\nzh:\n" in report


def test_a_paragraph_without_the_rendering_its_section_uses_is_listed_not_failed(
    real_site: Path,
) -> None:
    glossary = _glossary(("ja",)).glossary
    english = "A session keeps the history.\n\nClose the session when done.\n"
    draft = "セッションは履歴を保持します。\n\n終わったら接続を閉じてください。\n"
    assert unrendered_blocks(english, draft, "ja", glossary) == {"session": [2]}
    english = "The history is kept.\n\nThe conversation history is kept.\n"
    draft = "会话的历史记录会保留。\n\n对话历史会保留。\n"
    assert unrendered_blocks(english, draft, "zh", _glossary(("zh",)).glossary) == {}
    assert not [f for f in check_meaning(english, draft, "ja", glossary) if "session" in f]

    path = real_site / "docs" / "ja" / "sessions.md"
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    options = Options(root=real_site, languages=["ja"], files=["sessions.md"])
    for i in _prose_lines(text):
        if "セッション" not in lines[i] or "セッション" not in "\n".join(lines[:i]):
            continue
        changed = [*lines[:i], lines[i].replace("セッション", "接続"), *lines[i + 1 :]]
        path.write_text("\n".join(changed), encoding="utf-8")
        if f"sessions.md:{i + 1} session" in [x.strip() for x in terms_report(options)]:
            break
    else:
        raise AssertionError("no paragraph whose unlisted rendering --check --terms lists")
    assert not [p for p in check(options)[1] if "'session'" in p]


def test_every_glossary_term_is_checked_not_only_a_required_few() -> None:
    prompts = _glossary(("ja",))
    assert (
        "require"
        not in (REPO / "i18n" / "glossary.yml")
        .read_text(encoding="utf-8")
        .split("\nforbid:")[0]
        .split("\nterms:")[1]
    )
    findings = check_meaning(
        "Run it again.\n", "もう一度それを動かします。\n", "ja", prompts.glossary
    )
    assert any("the glossary's rendering '実行' is not in the translation" in f for f in findings)
    # A phrase listed under other_senses is another meaning of the word, not the term.
    assert check_meaning("Take turns.\n", "交代で使います。\n", "ja", prompts.glossary) == []


def test_term_and_name_matching_is_exact_where_the_text_is_searched_only_in_part() -> None:
    """The checks search a text for a term or a name only where a cheap substring test says it
    may be: these are the cases where a careless shortcut would differ from the pattern."""
    # Case-insensitive matching equates `ſ` with `s`, the Kelvin sign with `k`, `ı` with `i`.
    assert mentions("Open the \u017fession.", "session")
    assert mentions("One \u212aey per row.", "key")
    assert mentions("A sess\u0131on of its own.", "session")
    assert not mentions("The sessionless mode.", "session")
    # A phrase of another sense, removed, can join the words of a two-word term.
    glossary = Glossary(
        do_not_translate=[],
        terms={},
        other_senses={"session store": [re.compile("list items", re.I)]},
    )
    assert glossary.uses("A sessionlist itemsstore.", "session store")
    # A name counts once per match, matches taken one after the other as the pattern finds
    # them ("Foo Foo Foo" holds one "Foo Foo", not two overlapping ones).
    names = Glossary(do_not_translate=["Foo Foo"], terms={})
    assert check_meaning("Foo Foo Foo.\n", "Foo Foo の語。\n", "ja", names) == []


# -- register per language, from the prompt files -------------------------------------------------


@pytest.mark.parametrize(
    ("lang", "english", "draft", "expected"),
    [
        ("ja", "It saves the items.\n", "アイテムを保存する。\n", "plain form in prose"),
        ("ja", "It saves the items.\n", "アイテムを保存します。\n", None),
        ("ko", "Open your own session.\n", "자기 세션을 여세요.\n", "-세요 in prose"),
        ("ko", "Open your own session.\n", "자기 세션을 여십시오.\n", None),
        ("ko", "The session is closed.\n", "세션은 닫힌다.\n", "한다체 in prose"),
        ("zh", "The session is closed.\n", "会话已关闭.\n", "half-width punctuation"),
        ("zh", "The session is closed.\n", "会话已关闭。\n", None),
        (
            "ja",
            "| A | B |\n| --- | --- |\n| x | It runs. |\n| y | It waits. |\n",
            "| A | B |\n| --- | --- |\n| x | 実行します。 |\n| y | 待つ。 |\n",
            "one table mixes registers",
        ),
        (
            "ko",
            "| A | B |\n| --- | --- |\n| x | It runs. |\n| y | It waits. |\n",
            "| A | B |\n| --- | --- |\n| x | 실행합니다 |\n| y | 기다린다 |\n",
            "one table mixes registers",
        ),
        (
            "ko",
            "| A | B |\n| --- | --- |\n| x | It runs. |\n| y | It waits. |\n",
            "| A | B |\n| --- | --- |\n| x | 실행 |\n| y | 대기 |\n",
            None,
        ),
    ],
)
def test_register_rules_come_from_the_language_files(
    lang: str, english: str, draft: str, expected: str | None
) -> None:
    findings = check_meaning(english, draft, lang, _glossary().glossary)
    if expected is None:
        assert findings == []
    else:
        assert any(expected in f for f in findings), findings


@pytest.mark.parametrize(
    ("lang", "draft", "forms"),
    [
        (
            "ja",
            "速度は 1.5x です。\n\n## B {#b}\n\n速度は 2.0× です。\n",
            "'x' at line 5; '×' at line 9",
        ),
        ("zh", "快 1.5 倍。\n\n## B {#b}\n\n快 2.0x。\n", "'倍' at line 5; 'x' at line 9"),
        ("ko", "250ms 걸립니다.\n\n## B {#b}\n\n3밀리초 걸립니다.\n", "'ms' at line 5"),
    ],
)
def test_one_form_for_ratios_and_units_per_page(lang: str, draft: str, forms: str) -> None:
    english = (
        "It is 1.5x as fast, 250 ms.\n\n## B\n\nIt is 2.0x as fast, 3 ms.\n"
        if lang != "ko"
        else "It takes 250 ms.\n\n## B\n\nIt takes 3 ms.\n"
    )
    page = "---\nmachine_translated: true\n---\n\n"
    findings = verify_page(english, page + draft, lang, _glossary().glossary)
    shown = [f for f in findings if "forms on one page" in f]
    assert shown, findings
    assert forms in shown[0], findings


def test_the_language_rules_are_data_in_the_prompt_files() -> None:
    for lang in LANGS:
        text = (REPO / "i18n" / "prompts" / f"{lang}.md").read_text(encoding="utf-8")
        assert text.startswith("---\n# Code checks")
        prompts = _glossary((lang,))
        assert prompts.glossary.rules[lang].prose or (lang == "zh" and prompts.glossary.rules[lang])
        instructions = prompts.instructions([lang])
        assert "checks:" not in instructions  # the model gets the prose rules only
        assert prompts.per_language[lang].strip() in instructions


# -- meaning faults: each injected into a real page ----------------------------------------------


def _two_sentences(line: str) -> str | None:
    parts = re.split(r"(?<=。)", line)
    first = next((p for p in parts if len(p) > 12 and "`" not in p), None)
    return line.replace(first, first + first, 1) if first else None


def _swap_numbers(line: str) -> str | None:
    found = list(re.finditer(r"(?<![\w.,])\d+(?![\w.,])", line))
    pairs = [(a, b) for a, b in itertools.pairwise(found) if a[0] != b[0]]
    if not pairs:
        return None
    a, b = pairs[0]
    return line[: a.start()] + b[0] + line[a.end() : b.start()] + a[0] + line[b.end() :]


def _swap_link_texts(line: str) -> str | None:
    links = list(re.finditer(r"\[(`[^`\]]+`)\](\[[^\]]*\]|\([^)]*\))", line))
    for a, b in itertools.pairwise(links):
        if a[1] != b[1] and a[2] != b[2]:
            return line[: a.start(1)] + b[1] + line[a.end(1) : b.start(1)] + a[1] + line[b.end(1) :]
    return None


FILLER = (
    "なお、この動作は設定によって変わることがあります。"
    "また、ほかのバックエンドでも同じように扱われます。"
    "さらに、この挙動は将来の版でも変わらない見込みです。"
    "詳しい理由は、このページの後半で改めて説明します。"
    "ここでの説明は、すべての利用者に当てはまります。"
    "この点は、運用を始める前に必ず確認してください。"
)

FAULTS_ON_REAL_PAGES: dict[str, tuple[Edit, str]] = {
    "unit changed (250 ms -> 250 s)": (
        lambda x: re.sub(r"(\d) ms\b", r"\1 秒", x, count=1) if re.search(r"\d ms\b", x) else None,
        "ms in the English is not",
    ),
    "added sentence with a new number": (
        lambda x: x + "処理には 987 秒かかります。" if x.endswith("。") else None,
        "the number 987 appears 1 time(s) in the translation but 0 in the English",
    ),
    "added sentences": (
        lambda x: x + FILLER if x.endswith("。") and 60 < len(x) < 200 else None,
        "times its English's length",
    ),
    "sentence duplicated in its paragraph": (_two_sentences, "a sentence is said twice"),
    "two numbers swapped": (_swap_numbers, "numbers in another order"),
    "do-not-translate name translated": (
        lambda x: x.replace("PostgreSQL", "ポストグレス", 1) if "PostgreSQL" in x else None,
        "'PostgreSQL' appears",
    ),
    "a paragraph in Korean on the Japanese page": (
        lambda x: (
            "이 단락은 한국어로 쓰여 있으며 일본어 페이지에 있어서는 안 됩니다."
            if len(x) > 40
            else None
        ),
        "Korean (Hangul) text on a Japanese page",
    ),
    "two link texts swapped between their targets": (
        _swap_link_texts,
        "does not say what the English link says",
    ),
}


@pytest.mark.parametrize("fault", sorted(FAULTS_ON_REAL_PAGES))
def test_each_meaning_fault_on_a_real_page_fails_check_naming_page_and_line(
    fault: str, real_site: Path
) -> None:
    edit, expected = FAULTS_ON_REAL_PAGES[fault]
    page, line, found = _inject_on_some_line(real_site, "ja", edit, expected, lines="all")
    assert any(expected in f and f"docs/ja/{page}: line " in f for f in found), found
    exact = [f for f in found if expected in f and f"docs/ja/{page}: line {line}: " in f]
    if fault not in ("unit changed (250 ms -> 250 s)", "do-not-translate name translated"):
        assert exact, (line, found)  # the finding names the very line that was broken


def test_an_admonition_whose_body_is_dropped_fails_check(real_site: Path) -> None:
    for path in sorted((real_site / "docs" / "ja").glob("*.md")):
        lines = path.read_text(encoding="utf-8").split("\n")
        marker = next((i for i, x in enumerate(lines) if re.match(r"^!!! ", x)), None)
        if marker is None:
            continue
        end = marker + 1
        while end < len(lines) and (lines[end].startswith("    ") or not lines[end].strip()):
            if (
                not lines[end].strip()
                and end + 1 < len(lines)
                and not lines[end + 1].startswith(" ")
            ):
                break
            end += 1
        before = set(_problems(real_site, "ja", path.name))
        path.write_text("\n".join([*lines[: marker + 1], *lines[end:]]), encoding="utf-8")
        found = [p for p in _problems(real_site, "ja", path.name) if p not in before]
        assert any("lost its body" in f and f"docs/ja/{path.name}: line " in f for f in found)
        return
    raise AssertionError("no admonition on the Japanese pages")


def test_two_sections_whose_contents_are_swapped_fail_check(real_site: Path) -> None:
    path = real_site / "docs" / "ja" / "backends.md"
    text = path.read_text(encoding="utf-8")
    parts = re.split(r"(?m)^(## .*\n)", text)
    # parts: [head, h1, body1, h2, body2, ...]; swap the bodies of the first two sections.
    parts[2], parts[4] = parts[4], parts[2]
    before = set(_problems(real_site, "ja", "backends.md"))
    path.write_text("".join(parts), encoding="utf-8")
    found = [p for p in _problems(real_site, "ja", "backends.md") if p not in before]
    assert any("section 1: its translation and that of section 2 look swapped" in f for f in found)


MINUS_AND_FOOTNOTE = """\
# Limits

A negative limit such as -1 reads the whole history.[^why]

[^why]: The SDK reads it that way too.

## More

Nothing else here: wait 250 ms between two tries.
"""


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda t: t.replace("-1", "1", 1), "the number -1 appears 1 time(s) in the English but 0"),
        (lambda t: re.sub(r"(?m)^(\[\^why\]:).*$", r"\1", t), "footnote [^why] has no text"),
        (lambda t: t.replace("250 ms", "250 s", 1), "250 ms in the English is not"),
    ],
    ids=["minus sign dropped", "footnote emptied", "unit changed"],
)
async def test_faults_with_no_real_example_fail_check_after_a_clean_run(
    edit: Callable[[str], str], expected: str, site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    (site / "docs" / "limits.md").write_text(MINUS_AND_FOOTNOTE, encoding="utf-8")
    assert (await run_site(languages=["ja"], files=["limits.md"])).code == 0
    assert _problems(site, "ja", "limits.md") == []
    path = site / "docs" / "ja" / "limits.md"
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    found = _problems(site, "ja", "limits.md")
    assert any(expected in f and "docs/ja/limits.md: line " in f for f in found), found


def test_the_review_prompt_names_what_code_cannot_see() -> None:
    review = _glossary(("ja",)).review_instructions(["ja"], "Text with @@CODE_1@@.\n")
    assert "two list items" in review
    assert "swapped" in review
    assert "said twice" in review


# -- adoption runs the same checks ---------------------------------------------------------------


async def test_adopt_refuses_a_hand_written_page_that_breaks_the_glossary(
    site: Path, echo: EchoTranslator, run_site: RunSite
) -> None:
    assert (await run_site(languages=["zh"])).code == 0
    page = site / "docs" / "zh" / "index.md"
    text = page.read_text(encoding="utf-8")
    assert "历史记录" in text
    manifest_before = (site / "i18n" / "manifest.json").read_text(encoding="utf-8")
    line = next(n for n, x in enumerate(text.split("\n"), 1) if "历史记录" in x)
    page.write_text(text.replace("历史记录", "历史", 1), encoding="utf-8")
    for named in (None, ["0", "1", "2", "3"]):
        code, lines = adopt(Options(root=site, languages=["zh"]), named)
        assert code == 1
        assert "not adopted docs/zh/index.md:" in lines
        assert any(
            f"line {line}: " in x and "'历史' is a forbidden rendering of 'history'" in x
            for x in lines
        ), lines
        assert (site / "i18n" / "manifest.json").read_text(encoding="utf-8") == manifest_before
    manifest = Manifest.load(site / "i18n" / "manifest.json")
    assert manifest.get("index.md", "zh") is not None  # still the record of the machine's page


def test_adopt_records_a_glossary_change_the_hand_checked_translation_follows(
    real_site: Path,
) -> None:
    glossary = real_site / "i18n" / "glossary.yml"
    original = glossary.read_text(encoding="utf-8")
    manifest = real_site / "i18n" / "manifest.json"
    options = Options(root=real_site, languages=["ja"], files=["translation.md"])
    stale = "stale     docs/ja/translation.md: glossary entries its English uses changed"

    # a new known variant of `default`: the page already follows the glossary
    variant = original.replace("default: [既定]", "default: [既定, ディフォルト]")
    glossary.write_text(variant, "utf-8")
    code, problems = check(options)
    assert code == 1
    assert any(p.startswith(stale) for p in problems), problems
    code, lines = adopt(options, ["options"])
    assert code == 0, lines
    assert lines[0].startswith("adopted docs/ja/translation.md (English unchanged; checked against")
    assert check(options) == (0, [])
    assert adopt(options) == (0, [])  # recorded: nothing left to adopt

    # the rendering changes: the unchanged translation breaks it, so it is refused
    glossary.write_text(
        original.replace("default: デフォルト", "default: 既定値").replace(
            "default: [既定]", "default: [デフォルト]"
        ),
        "utf-8",
    )
    recorded = manifest.read_text(encoding="utf-8")
    code, lines = adopt(options)
    assert code == 1
    assert "not adopted docs/ja/translation.md:" in lines
    assert any(
        re.match(r"    line \d+: .*'デフォルト' is a forbidden rendering of 'default'", x)
        for x in lines
    ), lines
    assert manifest.read_text(encoding="utf-8") == recorded
    assert any(p.startswith(stale) for p in check(options)[1])


def test_adopt_records_the_glossary_digests_an_old_record_lacks(real_site: Path) -> None:
    options = Options(root=real_site, languages=["ja"], files=["backends.md"])
    path = real_site / "i18n" / "manifest.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["pages"]["backends.md"]["ja"].pop("glossary", None)  # a record from before digests
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    assert check(options) == (0, [])
    entry = Manifest.load(path).get("backends.md", "ja")
    assert entry is not None
    assert entry.glossary is None
    assert adopt(options) == (
        0,
        ["adopted docs/ja/backends.md (English unchanged; glossary entries recorded)"],
    )
    entry = Manifest.load(path).get("backends.md", "ja")
    assert entry is not None
    assert entry.glossary is not None
    glossary = path.parent / "glossary.yml"
    text = glossary.read_text(encoding="utf-8")
    glossary.write_text(text.replace("default: [既定]", "default: [既定, ディフォルト]"), "utf-8")
    assert any("glossary entries its English uses changed" in p for p in check(options)[1])


def test_a_term_ending_in_y_is_found_in_its_ies_and_ied_forms() -> None:
    for text in ("the next push retries it", "a retried call", "one retry"):
        assert mentions(text, "retry"), text
    assert mentions("the repositories", "repository")
    assert not mentions("retrial", "retry")
    assert mentions("two keys", "key")  # a vowel before the y: the plain plural


def test_a_short_sentence_the_english_says_twice_may_be_said_twice_in_the_translation() -> None:
    """Three English words, not counted as a sentence, may be six characters in Chinese: the
    translation says it twice because the English does, and no more than that is allowed."""
    glossary = _glossary(("zh",)).glossary
    english = "- @@CODE_1@@: the CLI's store.\n- @@CODE_2@@: the CLI's store.\n"
    draft = "- @@CODE_1@@：CLI 使用的存储对象。\n- @@CODE_2@@：CLI 使用的存储对象。\n"
    assert not [f for f in check_meaning(english, draft, "zh", glossary) if "said twice" in f]
    twice = (
        "- @@CODE_1@@：CLI 使用的存储对象。\n"
        "- @@CODE_2@@：CLI 使用的存储对象。"
        "各个后端共用同一个存储对象。各个后端共用同一个存储对象。\n"
    )
    assert [f for f in check_meaning(english, twice, "zh", glossary) if "said twice" in f]
