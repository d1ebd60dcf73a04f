"""The code checks, through `--adopt` and `--check`: every fixture translation (a correct one)
is accepted in each language, and each fault a translation can have is refused, naming its line.
"""

from __future__ import annotations

import pytest

from conftest import Site

CASES = ("basic", "nested_terms", "code_in_ratio")


@pytest.mark.parametrize("case", CASES)
def test_correct_translations_are_adopted_and_sound(site: Site, case: str) -> None:
    site.add(case)
    ran = site.run("--check")
    assert ran.returncode == 1
    assert ran.stderr.count("not recorded for this English") == 3
    adopted = site.run("--adopt")
    assert adopted.returncode == 0, adopted.stderr
    assert adopted.stdout.count("adopted docs/") == 3
    checked = site.run("--check")
    assert (checked.returncode, checked.stderr) == (0, "")
    assert site.run("--adopt").stdout.strip() == "nothing to adopt"


def test_a_longer_terms_rendering_satisfies_the_shorter_term_inside_it(site: Site) -> None:
    """对话历史 (conversation history) holds 历史, which alone is a forbidden form of history."""
    site.add("nested_terms")
    ran = site.run("--adopt", "--lang", "zh")
    assert (ran.returncode, ran.stderr) == (0, "")


# (language, old text, new text, words of the finding)
FAULTS = [
    ("ja", "約 15 ms", "約 50 ms", "15"),  # a number changed
    ("zh", "SQLite 3.45 测得", "SQLite 3.46 测得", "3.45"),  # a footnote's number
    ("ko", "약 15 ms가", "약 15초가", "'15 ms' is not kept"),  # a unit changed
    ("ja", "最大 10000 アイテム", "最大 500 アイテム", "10000"),  # numbers swapped between blocks
    ("ja", "| `get_items()` | アイテムを古い", "| `pop_item()` | アイテムを古い", "code"),
    ("ko", "- 항목은 순서대로 저장됩니다.\n", "", "list items"),  # a list item dropped
    (
        "zh",
        "随后日志会显示一次“Saved.”。参见[指南](guide.md#redis)和 [Redis][redis]。\n\n",
        "",
        "blocks differ",
    ),  # a paragraph dropped
    ("ja", "(guide.md#redis)", "(guide.md#sessions)", "link targets"),
    ("ko", "## 항목 저장 {#storing}", "## 항목 저장 {#saving}", "heading ids"),
    ("zh", '!!! note "上限"', '!!! tip "上限"', "admonition"),
    ("ja", "| `pop_item()` | 最新のアイテムを削除します。 |", "| `pop_item()` |", "table"),
    ("ko", "하나의 세션은", "하나의 session은", "'세션'"),  # a glossary term
    ("zh", "存储条目。每次", "存储项目。每次", "'项目' stands for 'item'"),  # a forbidden variant
    ("ja", "を使います。", "を使う。", "plain form"),  # register
    ("ko", "보관합니다.", "보관해요. 참고하세요.", "해요체"),
    ("zh", "| 按从旧到新的顺序返回条目。 |", "| 按从旧到新的顺序返回条目. |", "half-width"),
    ("ja", "ファイルには", "파일에는", "Korean"),  # another language's script
    ("zh", "[^1]: 在一台", "[^2]: 在一台", "footnote"),
    ("ko", "SQLite 3.45에서", "SQLite 3.45 버전에서 sqlite", "'SQLite' must stay"),
    ("ja", "`SQLiteSession` を使います", "`SQLSession` を使います", "code"),
]


@pytest.mark.parametrize(("lang", "old", "new", "words"), FAULTS)
def test_a_faulty_translation_is_refused_with_its_line(
    site: Site, lang: str, old: str, new: str, words: str
) -> None:
    site.add("basic")
    site.edit(f"docs/{lang}/page.md", old, new)
    if words == "'SQLite' must stay":
        site.edit(f"docs/{lang}/page.md", "SQLite 3.45 버전에서 sqlite", "3.45 버전에서")
    ran = site.run("--adopt", "--lang", lang)
    assert ran.returncode == 1
    assert ran.stderr.startswith(f"docs/{lang}/page.md:")
    assert words in ran.stderr
    assert ran.stderr.count("\n") == 1  # the page is named once
    assert site.run("--check", "--lang", lang).stderr.count(f"docs/{lang}/page.md") == 1


def test_quoted_plain_form_and_full_width_table_cells_are_accepted(site: Site) -> None:
    """「保存した。」 quotes a message (ja); a zh table cell ends with 。"""
    site.add("basic")
    assert "「保存した。」" in site.read("docs/ja/page.md")
    assert site.run("--adopt").returncode == 0


def test_a_collapsed_reference_link_may_keep_or_translate_its_label(site: Site) -> None:
    site.write("docs/page.md", "# Links\n\nSee [sessions][] for more.\n\n[sessions]: s.md\n")
    for lang, text in (
        ("ja", "詳しくは [sessions][] を参照してください。"),
        ("ko", "자세한 내용은 [세션][sessions]을 참고하십시오."),
        ("zh", "详见[会话][sessions]。"),
    ):
        head = {"ja": "リンク", "ko": "링크", "zh": "链接"}[lang]
        site.write(f"docs/{lang}/page.md", f"# {head} {{#links}}\n\n{text}\n\n[sessions]: s.md\n")
    ran = site.run("--adopt")
    assert (ran.returncode, ran.stderr) == (0, "")
