"""The pure stages: masking, front matter, sections, heading ids, prompt, checks."""

from __future__ import annotations

import re
from pathlib import Path

import markdown
import pytest
from translation_support import FIXTURES, REPO

from docs_i18n.checks import check_section, verify_page
from docs_i18n.front_matter import split_front_matter, translated_front_matter
from docs_i18n.headings import english_heading_ids, find_headings, pin_heading_ids
from docs_i18n.markdown_mask import PLACEHOLDER_RE, mask, unmask
from docs_i18n.pages import EnglishPage, english_pages
from docs_i18n.prompt import LANGUAGES, PromptSet, parse_reply, section_marker
from docs_i18n.sections import split_sections
from echo_translator import FAULTS, Glossary, echo_translate

PAGES = sorted((FIXTURES / "docs").rglob("*.md"))


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_mask_round_trip_and_no_code_left(path: Path) -> None:
    body = split_front_matter(_read(path)).body
    masked = mask(body)
    assert unmask(masked.text, masked.code) == body
    assert "```" not in masked.text
    assert "~~~\n" not in masked.text
    assert not re.search(r"`[^`\n]+`", masked.text)


def test_nested_and_indented_fences_are_single_blocks() -> None:
    body = _read(FIXTURES / "docs" / "guide" / "custom.md")
    masked = mask(body)
    blocks = [v for k, v in masked.code.items() if k.startswith("@@BLOCK_")]
    assert len(blocks) == 1  # the 5-backtick fence holds the 4- and 3-backtick ones
    assert blocks[0].startswith("`````markdown")
    assert blocks[0].endswith("`````")
    backends = mask(_read(FIXTURES / "docs" / "guide" / "backends.md"))
    fences = {k: v for k, v in backends.code.items() if k.startswith("@@BLOCK_")}
    assert len(fences) == 7
    tilde = next(v for v in fences.values() if v.lstrip().startswith("~~~~bash"))
    assert 'echo "~~~"' in tilde  # a shorter fence inside a longer one is content
    nested = next(v for v in fences.values() if "RuntimeError" in v)
    assert nested.startswith("        ~~~python")  # two levels of list indentation
    for name, indent in backends.indents.items():
        assert re.search(rf"(?m)^{indent}{name}$", backends.text)


def test_placeholder_lookalikes_in_code_are_fine_and_in_prose_are_refused() -> None:
    masked = mask("Write `@@BLOCK_1@@` on its own line.\n\n```text\n@@CODE_9@@\n```\n")
    assert masked.text == "Write @@CODE_1@@ on its own line.\n\n@@BLOCK_2@@\n"
    with pytest.raises(ValueError, match="@@CODE_1@@ appears outside code"):
        mask("Prose @@CODE_1@@ and `x`.\n")
    assert "appears outside code" in verify_page("# T\n", "# T {#t}\n\n@@BLOCK_7@@\n")[0]


def test_inline_code_with_backticks_inside() -> None:
    masked = mask("Use `` `backticks` `` and `x`.\n")
    assert masked.text == "Use @@CODE_1@@ and @@CODE_2@@.\n"
    assert masked.code["@@CODE_1@@"] == "`` `backticks` ``"


def test_front_matter_split_and_translated_front_matter() -> None:
    fm = split_front_matter(_read(FIXTURES / "docs" / "index.md"))
    assert fm.data["title"] == "turnstore"
    assert fm.body.startswith("\n# turnstore")
    translated = translated_front_matter(fm)
    again = split_front_matter(translated + fm.body)
    assert again.data == {**fm.data, "machine_translated": True}
    assert (
        translated_front_matter(split_front_matter("# T\n"))
        == "---\nmachine_translated: true\n---\n"
    )
    with pytest.raises(ValueError, match="not a YAML mapping"):
        split_front_matter("---\n- a\n---\nbody")


def test_sections_split_at_level_two_headings_outside_code() -> None:
    body = "# T\n\nintro\n\n```md\n## not a section\n```\n\n## One\n\ntext\n\n### Sub\n\n## Two\n"
    masked = mask(body)
    sections = split_sections(masked.text)
    assert len(sections) == 3
    assert "".join(sections) == masked.text
    assert sections[1].startswith("## One")
    assert "### Sub" in sections[1]


def test_pages_exclude_ref_and_translations(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    for rel in ["index.md", "a/b.md", "ref/x.md", "ja/index.md", "zh/a/b.md", "img/x.png"]:
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).write_text("# x\n")
    assert english_pages(docs) == ["a/b.md", "index.md"]


def _mkdocs_ids(text: str) -> list[str]:
    """The ids MkDocs Material's usual extensions give the page's top-level headings."""
    md = markdown.Markdown(
        extensions=[
            "toc",
            "attr_list",
            "admonition",
            "tables",
            "md_in_html",
            "footnotes",
            "pymdownx.details",
            "pymdownx.superfences",
            "pymdownx.tabbed",
            "pymdownx.tasklist",
        ]
    )
    html = md.convert(split_front_matter(text).body)
    return re.findall(r'(?m)^<h[1-6][^>]*\bid="([^"]+)"', html)


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_english_ids_match_what_mkdocs_renders(path: Path) -> None:
    text = _read(path)
    masked = mask(split_front_matter(text).body)
    assert english_heading_ids(masked.text, masked.code) == _mkdocs_ids(text)


def test_duplicate_and_explicit_ids() -> None:
    masked = mask(split_front_matter(_read(FIXTURES / "docs" / "guide" / "backends.md")).body)
    ids = english_heading_ids(masked.text, masked.code)
    assert ids[-3:] == ["example", "example_1", "history-limits"]


def test_pin_heading_ids_keeps_english_attributes() -> None:
    english = find_headings("# Title\n\n## Limits { #history-limits .advanced }\n\n## Plain\n")
    ids = ["title", "history-limits", "plain"]
    draft = "# タイトル\n\n## 上限 {#wrong}\n\n## 普通 ##\n"
    assert pin_heading_ids(draft, english, ids) == (
        "# タイトル {#title}\n\n## 上限 {#history-limits .advanced}\n\n## 普通 {#plain}\n"
    )


def test_prompt_has_every_required_part() -> None:
    prompts = PromptSet.load(REPO / "i18n", sorted(LANGUAGES))
    for lang, must in {"ja": "です/ます", "ko": "합니다체", "zh": "Simplified Chinese"}.items():
        text = prompts.instructions([lang])
        assert "You translate turnstore's docs" in text
        assert "Return only Markdown" in text
        assert "placeholder" in text
        assert "indentation" in text
        assert "admonition" in text
        assert "Never translate code, URLs" in text
        assert must in text
        assert "- SQLiteSession" in text  # do-not-translate list
        assert "# Workflow" in text
        assert "Review your draft" in text
        assert "Repeat" in text
        for term, translation in prompts.glossary.terms[lang].items():
            assert f"- {term} -> {translation}" in text
        assert "{{" not in text
        assert "${" not in text
    task = prompts.task_message(
        ["ja"], "index.md", {2: "## Two\n"}, {"ja": ({1: "# 現在\n"}, None)}
    )
    assert "<current_translation>\n<!-- section 1 -->\n# 現在\n</current_translation>" in task
    assert f"{section_marker(2)}\n## Two\n</source>" in task
    assert "`index.md`" in task


def test_parse_reply_unwraps_a_fence_and_reports_shape() -> None:
    sections, findings = parse_reply(
        f"```markdown\n{section_marker(0)}\n# T\n{section_marker(1)}\n## U\n```"
    )
    assert sections == {0: "# T\n", 1: "## U"}
    assert findings == []
    sections, findings = parse_reply("Sure! Here it is.")
    assert sections == {}
    assert "no section markers" in findings[0]


def _english_sections(path: Path) -> EnglishPage:
    return EnglishPage.parse(path.name, _read(path))


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_fault_is_found(fault: str) -> None:
    page = _english_sections(FIXTURES / "docs" / "index.md")
    source = "".join(f"{section_marker(n)}\n{s}" for n, s in enumerate(page.sections))
    good, _ = parse_reply(echo_translate(source, "ja"))
    assert all(not check_section(page.sections[n], good[n]) for n in good)
    broken, shape = parse_reply(FAULTS[fault](echo_translate(source, "ja"), source, Glossary()))
    findings = shape + [f for n in broken for f in check_section(page.sections[n], broken[n])]
    assert findings or len(broken) < len(page.sections)


@pytest.mark.parametrize(
    ("english", "draft", "expected"),
    [
        ("a @@CODE_1@@ b\n", "a b\n", "@@CODE_1@@ must appear exactly once, found 0"),
        ("a @@CODE_1@@ b\n", "@@CODE_1@@ @@CODE_1@@\n", "found 2"),
        ("a\n", "a @@CODE_9@@\n", "@@CODE_9@@ is not in the English"),
        ("- x\n\n    @@BLOCK_1@@\n", "- x\n\n@@BLOCK_1@@\n", "indented by 4 spaces, found 0"),
        ("@@BLOCK_1@@\n", "text @@BLOCK_1@@\n", "alone on its own line"),
        ("## A\n\n### B\n", "## A\n\n## B\n", "headings differ"),
        ("[a](x.md#y)\n", "[a](x.md)\n", "'x.md#y' appears 1 time(s) in the English but 0"),
        ("![i](img/a.png)\n", "![i](img/b.png)\n", "'img/a.png'"),
        ("[T][turnstore.Session]\n", "[T][セッション]\n", "reference label"),
        ('!!! note "T"\n    x\n', '!!! tip "T"\n    x\n', "markers differ"),
        ('=== "A"\n\n    x\n', "A\n\n    x\n", "markers differ"),
        ('??? note "T"\n    x\n', '!!! note "T"\n    x\n', "markers differ"),
        ("| a | b |\n|---|---|\n| 1 | 2 |\n", "| a | b |\n|---|---|\n| 1 2 |\n", "tables differ"),
        ("- a\n- b\n", "- a b\n", "list items differ"),
        ("<details>\n<summary>S</summary>\n</details>\n", "S\n", "HTML tags differ"),
        ("<https://x.org>\n", "https://x.org\n", "autolink"),
        ("- :material-database: DB\n", "- データベース\n", "icon :material-database:"),
    ],
)
def test_check_findings_are_concrete(english: str, draft: str, expected: str) -> None:
    findings = check_section(english, draft)
    assert any(expected in f for f in findings), findings


def test_reordered_links_in_a_sentence_are_fine() -> None:
    assert (
        check_section("See [a](a.md) and [b](b.md).\n", "[b](b.md) と [a](a.md) を参照。\n") == []
    )


def test_verify_page_accepts_a_sound_hand_written_translation() -> None:
    english = (
        "---\ntitle: T\n---\n# Title\n\nRun `x`:\n\n```py\nx()\n```\n\n"
        "## Next {#nxt}\n\n[a](b.md)\n"
    )
    good = (
        "---\ntitle: T\n---\n# 題名 {#title}\n\n`x` を実行:\n\n```py\nx()\n```\n\n"
        "## 次へ {#nxt}\n\n[あ](b.md)\n"
    )
    assert verify_page(english, good) == []
    translated_code = good.replace("x()", "x()  # 実行")
    assert any("is not in the English" in f for f in verify_page(english, translated_code))
    unpinned = good.replace(" {#title}", "")
    assert any("lacks the English id: add `{#title}`" in f for f in verify_page(english, unpinned))
    no_title = good.replace("title: T\n", "")
    assert any("front matter keys missing: title" in f for f in verify_page(english, no_title))
    fewer = good.replace("## 次へ {#nxt}\n", "")
    assert any("sections" in f for f in verify_page(english, fewer))


def test_placeholders_never_collide_with_text() -> None:
    masked = mask(_read(FIXTURES / "docs" / "guide" / "backends.md"))
    names = PLACEHOLDER_RE.findall(masked.text)
    assert len(names) == len(set(names)) == len(masked.code)


def test_every_real_page_splits_and_round_trips() -> None:
    docs = REPO / "docs"
    for rel in english_pages(docs):
        text = _read(docs / rel)
        page = EnglishPage.parse(rel, text)  # raises on anything the pipeline cannot handle
        body = split_front_matter(text).body
        assert unmask("".join(page.sections), page.masked.code) == body, rel
        assert len(page.heading_ids) == len(page.sections)


def test_committed_current_translations_are_structurally_sound() -> None:
    """Every translation the manifest records as current passes the structure checks."""
    from docs_i18n.manifest import Manifest

    docs = REPO / "docs"
    manifest = Manifest.load(REPO / "i18n" / "manifest.json")
    checked = 0
    for rel in english_pages(docs):
        english = _read(docs / rel)
        page = EnglishPage.parse(rel, english)
        for lang in sorted(LANGUAGES):
            entry = manifest.get(rel, lang)
            target = docs / lang / rel
            if entry is None or entry.source != page.source_hash or not target.exists():
                continue  # missing or stale: the next run translates it
            assert verify_page(english, _read(target)) == [], f"docs/{lang}/{rel}"
            checked += 1
    assert checked or not manifest.pages


MERMAID_PAGE = """\
# Flow

```mermaid
sequenceDiagram
    participant App as Your code
    App->>Runner: load the history
    loop each turn
        Note over Runner: call the model
    end
```

```mermaid
flowchart LR
    A[Read the history] -->|then| B{Enough?}
```
"""


def test_mermaid_labels_are_prose_and_the_diagram_code_is_restored() -> None:
    masked = mask(MERMAID_PAGE)
    assert "<!-- i18n:mermaid 1\n1: Your code\n2: load the history\n3: each turn\n" in masked.text
    assert "4: call the model\n-->" in masked.text
    assert "1: Read the history\n2: then\n3: Enough?\n-->" in masked.text
    assert unmask(masked.text, masked.code) == MERMAID_PAGE
    draft = (
        masked.text.replace("1: Your code", "1: あなたのコード")
        .replace("2: load the history", "2: 履歴を読み込む")
        .replace("3: Enough?", "3: 十分？")
        .replace("participant", "参加者")  # the model cannot touch the code: it is not there
    )
    translated = unmask(draft.replace("# Flow", "# 流れ {#flow}"), masked.code)
    assert "    participant App as あなたのコード\n" in translated
    assert "    App->>Runner: 履歴を読み込む\n" in translated
    assert "A[Read the history] -->|then| B{十分？}" in translated
    assert verify_page(MERMAID_PAGE, translated) == []
    dropped = re.sub(r"(?m)^2: then\n", "", masked.text)
    assert any("Mermaid label lists differ" in f for f in check_section(masked.text, dropped))
    changed_code = translated.replace("App->>Runner", "App-->>Runner")
    assert any("is not in the English" in f for f in verify_page(MERMAID_PAGE, changed_code))


def test_the_published_sessions_diagram_is_translated() -> None:
    english = _read(REPO / "docs" / "sessions.md")
    for lang, label in {"ja": "自分のコード", "ko": "여러분의 코드", "zh": "你的代码"}.items():
        translated = _read(REPO / "docs" / lang / "sessions.md")
        assert f"participant App as {label}" in translated
        assert verify_page(english, translated) == []


def test_the_echo_translator_renders_a_wrapped_term_and_keeps_a_name_in_a_term() -> None:
    """The stand-in model follows the glossary as the checks read it: a term whose words wrap
    onto two lines is still the term, and a term holding a do-not-translate name keeps it."""
    glossary = Glossary(
        keep=["CLI"], terms={"pooled connection": "连接池中的连接", "CLI's store": "存储对象"}
    )
    text = echo_translate("as its pooled\n  connections do, the CLI's store.\n", "zh", glossary)
    assert "连接池中的连接" in text
    assert "CLI 存储对象" in text
    assert text.count("\n") == 2
