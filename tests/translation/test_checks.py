"""The code checks, through `--adopt` and `--check`: every fixture translation (a correct one)
is accepted in each language, and each fault a translation can have is refused, naming its line.
"""

from __future__ import annotations

import pytest
from translation_site import REPO, Site

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
    ("ja", "SQLite 3.45 で測定しました。", "SQLite 3.45 で測定した。", "plain form"),  # footnote
    ("ko", "측정했습니다.", "측정했다.", "한다체"),  # a footnote's register
    ("ja", "最大 10000 アイテムです。", "最大 10000 アイテムだ。", "plain form"),  # admonition
    ("ja", "約 15 ms", "約 500 ms", "15"),  # with the next: two numbers swapped between blocks
    ("zh", "| `get_items()` | 按从旧到新", "| `pop_item()` | 按从旧到新", "table row"),
]


@pytest.mark.parametrize(("lang", "old", "new", "words"), FAULTS)
def test_a_faulty_translation_is_refused_with_its_line(
    site: Site, lang: str, old: str, new: str, words: str
) -> None:
    site.add("basic")
    site.edit(f"docs/{lang}/page.md", old, new)
    if words == "'SQLite' must stay":
        site.edit(f"docs/{lang}/page.md", "SQLite 3.45 버전에서 sqlite", "3.45 버전에서")
    if new == "約 500 ms":
        site.edit(f"docs/{lang}/page.md", "500 アイテムの上限", "15 アイテムの上限")
    if words == "table row":  # the code of two rows swapped
        site.edit(f"docs/{lang}/page.md", "| `pop_item()` | 删除", "| `get_items()` | 删除")
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


# With the site's own glossary: a word in another sense than the term's (notice the verb, a
# list's items, the CLI's import) is accepted; the term itself still needs its rendering.
SENSES_EN = (
    "# Differences\n\nThe differences you may notice are small. Lists keep their items, and tables"
    " keep their rows.\n\nThe command can list, export, import and prune stored sessions.\n"
)
SENSES = {
    "ja": (
        "気づく可能性のある違いはわずかです。リストはその要素を、表はその行を保ちます。\n\n"
        "このコマンドは保存されたセッションの一覧、エクスポート、インポート、整理ができます。",
        "通知が表示されます。各項目は保持されます。",
        ("'notice'", "'item'"),
    ),
    "ko": (
        "눈에 띌 수 있는 차이는 작습니다. 목록은 그 요소를, 표는 그 행을 유지합니다.\n\n"
        "이 명령은 저장된 세션의 나열, 내보내기, 가져오기, 정리를 할 수 있습니다.",
        "세션을 내보낸 다음 import 하십시오. 각 아이템은 유지됩니다.",
        ("'import'", "'item'"),
    ),
    "zh": (
        "你可能注意到的差异很小。列表保留其中的各项，表格保留其中的行。\n\n"
        "该命令可以列出、导出、导入和清理已保存的会话。",
        "先导出会话，再 import 它们。每个项目都会保留。",
        ("'import'", "'item'"),
    ),
}


@pytest.mark.parametrize("lang", sorted(SENSES))
def test_the_site_glossary_checks_a_term_only_in_its_own_sense(site: Site, lang: str) -> None:
    site.write("docs/i18n/glossary.yml", (REPO / "docs/i18n/glossary.yml").read_text("utf-8"))
    correct, wrong, terms = SENSES[lang]
    head = {"ja": "違い", "ko": "차이", "zh": "差异"}[lang]
    site.write("docs/page.md", SENSES_EN)
    site.write(f"docs/{lang}/page.md", f"# {head} {{#differences}}\n\n{correct}\n")
    ran = site.run("--adopt", "--lang", lang)
    assert (ran.returncode, ran.stderr) == (0, "")
    site.write(
        "docs/page.md",
        "# Differences\n\nThe notice is shown. Export sessions, then import"
        " them. Each item is kept.\n",
    )
    site.write(f"docs/{lang}/page.md", f"# {head} {{#differences}}\n\n{wrong}\n")
    refused = site.run("--adopt", "--lang", lang)
    assert refused.returncode == 1
    assert all(f"the English says {term}" in refused.stderr for term in terms)
