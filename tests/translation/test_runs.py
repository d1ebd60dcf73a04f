"""Translation runs against the stand-in model: what is sent, what is written, what is kept."""

from __future__ import annotations

import fcntl
import os
import re
import signal
import threading

from echo_translator import EchoTranslator
from translation_site import LANGS, Site

from docs_i18n.pages import split_page


def adopted(site: Site, *cases: str) -> Site:
    for case in cases:
        site.add(case, f"{case}.md")
    assert site.run("--adopt").returncode == 0
    return site


def test_a_new_page_is_translated_written_and_recorded(site: Site, model: EchoTranslator) -> None:
    site.add("basic", translations=False)
    mode = 0o640
    ran = site.run()
    assert (ran.returncode, ran.stderr) == (0, "")
    for lang in LANGS:
        text = site.read(f"docs/{lang}/page.md")
        assert "{#storing}" in text
        assert "::: turnstore.Session" in text
    assert site.run("--check").returncode == 0
    calls = model.calls
    os.chmod(site.path("docs/ja/page.md"), mode)
    assert site.run().stdout.startswith("0 model calls")
    assert model.calls == calls
    site.edit("docs/page.md", "Reference", "The reference")
    assert site.run("--lang", "ja").returncode == 0
    assert os.stat(site.path("docs/ja/page.md")).st_mode & 0o777 == mode


def test_mkdocstrings_blocks_are_never_sent(site: Site) -> None:
    site.add("basic", translations=False)
    site.run()
    assert site.requests()
    assert all("::: turnstore" not in r["input"] for r in site.requests())


def test_whitespace_and_code_only_edits_cost_no_call(site: Site, model: EchoTranslator) -> None:
    adopted(site, "basic")
    site.edit(
        "docs/basic.md",
        "Call `add_items(items)` to store items.",
        "Call `add_items(batch)` to\nstore   items.",
    )
    site.edit("docs/basic.md", "await session.add_items(items)", "await session.add_items(batch)")
    ran = site.run()
    assert (ran.returncode, model.calls) == (0, 0), ran.stderr
    for lang in LANGS:
        text = site.read(f"docs/{lang}/basic.md")
        assert "`add_items(batch)`" in text
        assert "await session.add_items(batch)" in text
    assert site.run("--check").returncode == 0


def test_a_changed_section_is_sent_with_its_translation_to_keep(site: Site) -> None:
    adopted(site, "code_in_ratio")
    site.edit("docs/code_in_ratio.md", "Reads are not affected.", "Reads are not affected at all.")
    assert site.run().returncode == 0
    sent = site.requests()
    assert len(sent) == 3  # one section, three languages
    keeps = [
        re.search(r"<current-translation>\n(.*)\n</current-translation>", r["input"], re.S)
        for r in sent
    ]
    assert {k.group(1) for k in keeps if k} == {"## 注記", "## 참고", "## 说明"} or all(keeps)
    assert any("読み取りには影響しません。" in r["input"] for r in sent)


def test_a_hand_fix_survives_an_english_edit_elsewhere_and_can_be_adopted(site: Site) -> None:
    adopted(site, "code_in_ratio")
    site.edit("docs/zh/code_in_ratio.md", "快 2x。", "快 2x，效果明显。")
    site.edit("docs/code_in_ratio.md", "Reads are not affected.", "Reads are not affected at all.")
    assert site.run().returncode == 0
    assert "效果明显" in site.read("docs/zh/code_in_ratio.md")
    checked = site.run("--check")
    assert checked.returncode == 1
    assert checked.stderr.count("edited by hand, not adopted") == 1
    assert "docs/zh/code_in_ratio.md:" in checked.stderr
    assert site.run("--adopt").stdout.strip() == "adopted docs/zh/code_in_ratio.md"
    assert site.run("--check").returncode == 0


def test_check_names_a_page_both_stale_and_hand_edited_once(site: Site) -> None:
    adopted(site, "code_in_ratio")
    site.edit("docs/ja/code_in_ratio.md", "速くなります。", "とても速くなります。")
    site.edit("docs/code_in_ratio.md", "Reads are not affected.", "Reads are never affected.")
    line = site.run("--check", "--lang", "ja").stderr
    assert line.count("\n") == 1
    assert "stale" in line
    assert "edited by hand" in line


def test_a_glossary_change_retranslates_the_sections_using_the_term_in_prose(site: Site) -> None:
    site.write(
        "docs/page.md",
        "# Page\n\nThe limit is 10 items.\n\n## Code\n\nCall `limit=5`.\n\n"
        "## Name\n\nUse turnstore.\n",
    )
    site.run()
    calls = len(site.requests())
    site.edit("docs/i18n/glossary.yml", "条目, limit: 上限}", "条目, limit: 限度}")
    assert "glossary changed (1 section)" in site.run("--check").stderr
    assert site.run().returncode == 0
    assert len(site.requests()) - calls == 1  # the zh section that says limit, nothing else
    assert "限度" in site.read("docs/zh/page.md")
    assert site.run("--check").returncode == 0


def test_a_new_do_not_translate_word_is_stale_and_the_next_run_translates_it(site: Site) -> None:
    site.write("docs/page.md", "# Page\n\nReads are fast.\n\n## More\n\nWrites are not.\n")
    assert site.run().returncode == 0
    site.requests().clear()
    site.server.requests.clear()
    site.edit("docs/i18n/glossary.yml", "SQLiteSession]", "SQLiteSession, Reads]")
    assert site.run("--check").stderr.count("the glossary changed (1 section)") == 3
    assert site.run().returncode == 0
    assert len(site.requests()) == 3
    assert site.run("--check").returncode == 0


def test_a_draft_that_fails_after_one_repair_is_not_written(
    site: Site, model: EchoTranslator
) -> None:
    adopted(site, "code_in_ratio")
    before = site.read("docs/ko/code_in_ratio.md")
    site.edit("docs/code_in_ratio.md", "Reads are not affected.", "Reads take 20 ms.")
    model.faults = [lambda d: d.replace("20", "30")] * 6
    ran = site.run("--lang", "ko")
    assert ran.returncode == 1
    assert re.fullmatch(r"docs/ko/code_in_ratio\.md:\d+: .*20.*\n", ran.stderr)
    assert len(site.requests()) == 2  # the draft and one repair
    assert "the number 20" in site.requests()[1]["input"]
    assert site.read("docs/ko/code_in_ratio.md") == before


def test_a_repair_that_fixes_the_draft_is_written(site: Site, model: EchoTranslator) -> None:
    site.add("basic", translations=False)
    model.faults = [lambda d: re.sub(r"@@C\d+@@", "", d, count=1)]
    ran = site.run("--lang", "ja")
    assert ran.returncode == 0, ran.stderr
    assert any("placeholders missing" in r["input"] for r in site.requests())


def test_an_incomplete_reply_is_never_written(site: Site, model: EchoTranslator) -> None:
    site.add("nested_terms", translations=False)

    def cut(draft: str) -> dict[str, object]:
        from turnstore.testing import text_response

        body = text_response(draft[: len(draft) // 2])
        return {
            **body,
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
        }

    model.faults = [cut, cut]
    ran = site.run("--lang", "zh")
    assert ran.returncode == 1
    assert "incomplete" in ran.stderr
    assert not site.path("docs/zh/nested_terms.md").exists()


def test_review_findings_with_real_quotes_go_to_the_repair(
    site: Site, model: EchoTranslator
) -> None:
    site.add("nested_terms", translations=False)
    model.review_findings = [
        {"english": "not in the English", "translation": "x", "problem": "made up"},
        {"english": "for context", "translation": "上下文", "problem": "context is wrong"},
    ]
    ran = site.run("--lang", "zh", "--review")
    assert len(site.requests()) == 3, ran
    repair = site.requests()[2]["input"]
    assert "context is wrong" in repair
    assert "made up" not in repair


def test_moving_a_page_with_its_translations_keeps_the_record_and_hand_fix(
    site: Site, model: EchoTranslator
) -> None:
    adopted(site, "code_in_ratio")
    site.edit("docs/ja/code_in_ratio.md", "速くなります。", "とても速くなります。")
    for prefix in ("", "ja/", "ko/", "zh/"):
        os.makedirs(site.path(f"docs/{prefix}guide"), exist_ok=True)
        os.rename(
            site.path(f"docs/{prefix}code_in_ratio.md"), site.path(f"docs/{prefix}guide/speed.md")
        )
    checked = site.run("--check")
    assert checked.stderr.count("\n") == 1
    assert "docs/ja/guide/speed.md" in checked.stderr
    assert site.run("--file", "docs/guide/speed.md").returncode == 0
    assert model.calls == 0
    assert "とても" in site.read("docs/ja/guide/speed.md")
    assert site.run("--adopt").returncode == 0
    assert site.run("--check").returncode == 0
    assert list(site.manifest()["pages"]) == ["guide/speed.md"]


def test_the_three_languages_are_selected_by_lang_and_pages_by_file(site: Site) -> None:
    site.add("nested_terms", "a.md", translations=False)
    site.add("code_in_ratio", "b.md", translations=False)
    assert site.run("--dry-run").stdout.endswith(
        "9 requests (each with at most one repair request)\n"
    )
    assert site.requests() == []
    assert site.run("--file", "docs/a.md", "--lang", "ko").returncode == 0
    pages = [p for p in site.path("docs").rglob("*.md") if "i18n" not in p.parts]
    assert sorted(p.relative_to(site.path("docs")).as_posix() for p in pages) == [
        "a.md",
        "b.md",
        "ko/a.md",
    ]
    assert site.run("--file", "docs/nope.md").returncode == 2


def test_a_second_run_is_refused_while_one_holds_the_lock(site: Site) -> None:
    site.add("nested_terms", translations=False)
    fd = os.open(site.path("docs/i18n"), os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        ran = site.process()
        assert ran.returncode == 2
        assert ran.stderr.count("\n") == 1
    finally:
        os.close(fd)
    assert site.process().returncode == 0


def test_a_killed_run_leaves_no_process_and_a_consistent_manifest(
    site: Site, model: EchoTranslator
) -> None:
    import subprocess
    import sys

    site.add("basic", translations=False)
    started, release = threading.Event(), threading.Event()
    model.faults = [lambda d: (started.set(), release.wait(30), d)[2]] * 9
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": site.server.base_url}
    proc = subprocess.Popen([sys.executable, str(site.path("scripts/translate_docs.py"))], env=env)
    assert started.wait(60)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) != 0
    release.set()
    checked = site.run("--check")
    assert "edited by hand" not in checked.stderr
    assert "Traceback" not in checked.stderr


def test_a_hand_translation_of_changed_english_is_adopted_after_the_checks(site: Site) -> None:
    adopted(site, "code_in_ratio")
    site.edit("docs/code_in_ratio.md", "Reads are not affected.", "Reads are never affected.")
    site.edit("docs/ja/code_in_ratio.md", "影響しません。", "決して影響しません。")
    assert "--adopt if the edit already follows" in site.run("--check", "--lang", "ja").stderr
    assert site.run("--adopt", "--lang", "ja").stdout.strip() == "adopted docs/ja/code_in_ratio.md"
    assert site.run("--check", "--lang", "ja").returncode == 0
    # The languages nobody edited stay stale: --adopt never records a translation it was not given.
    assert site.run("--adopt", "--lang", "ko").stdout.strip() == "nothing to adopt"
    assert "stale, the English changed (1 section)" in site.run("--check", "--lang", "ko").stderr


def test_a_page_rewritten_by_hand_to_a_new_english_shape_is_adopted(site: Site) -> None:
    adopted(site, "code_in_ratio")
    english = site.read("docs/code_in_ratio.md")
    site.write("docs/code_in_ratio.md", english + "\n## More {#more}\n\nReads are fine.\n")
    zh = site.read("docs/zh/code_in_ratio.md")
    site.write("docs/zh/code_in_ratio.md", zh + "\n## 更多 {#more}\n\n读取没有问题。\n")
    assert site.run("--adopt", "--lang", "zh").stdout.strip() == "adopted docs/zh/code_in_ratio.md"
    assert site.run("--check", "--lang", "zh").returncode == 0
    # A section added in a way the checks refuse is not adopted.
    site.write(
        "docs/ja/code_in_ratio.md", site.read("docs/ja/code_in_ratio.md") + "\n## 追加\n\n5 件。\n"
    )
    refused = site.run("--adopt", "--lang", "ja")
    assert refused.returncode == 1
    assert "not adopted" in refused.stderr


def _swap_sections(site: Site, name: str) -> None:
    """Swap the two `## ` sections of a page (the fixture `basic` has two)."""
    page = split_page(site.read(name))
    first, second = page.sections[1], page.sections[2]
    site.write(name, page.front + page.sections[0] + second.rstrip("\n") + "\n\n" + first.rstrip())


def test_sections_moved_in_english_pair_by_their_heading_ids(
    site: Site, model: EchoTranslator
) -> None:
    adopted(site, "basic")
    _swap_sections(site, "docs/basic.md")
    checked = site.run("--check")
    assert checked.stderr.count("sections moved in English") == 3, checked.stderr
    assert "code differs" not in checked.stderr
    assert site.run().returncode == 0
    assert model.calls == 0  # the translations are reordered, nothing is sent
    for lang in LANGS:
        assert site.read(f"docs/{lang}/basic.md").index("{#reference}") < site.read(
            f"docs/{lang}/basic.md"
        ).index("{#storing}")
    assert site.run("--check").returncode == 0
    # Moved back, and the translators move their sections by hand: all current, nothing to adopt.
    _swap_sections(site, "docs/basic.md")
    for lang in LANGS:
        _swap_sections(site, f"docs/{lang}/basic.md")
    assert (site.run("--check").returncode, site.run("--adopt").stdout) == (0, "nothing to adopt\n")
    # A moved section whose English changed is stale; its hand translation is adopted.
    _swap_sections(site, "docs/basic.md")
    site.edit("docs/basic.md", "Each write takes", "Each single write takes")
    assert site.run("--check").stderr.count("stale, the English changed (1 section)") == 3
    for lang, old, new in (
        ("ja", "1 回の", "1 回ごとの"),
        ("ko", "약 15 ms", "약 15 ms"),
        ("zh", "", ""),
    ):
        _swap_sections(site, f"docs/{lang}/basic.md")
        if old:
            site.edit(f"docs/{lang}/basic.md", old, new)
    ran = site.run("--adopt", "--lang", "ja")
    assert (ran.returncode, ran.stdout) == (0, "adopted docs/ja/basic.md\n"), ran.stderr
    assert site.run("--check", "--lang", "ja").returncode == 0
    assert "stale, the English changed (1 section)" in site.run("--check", "--lang", "zh").stderr


def test_adopt_keep_records_a_stale_translation_that_still_holds(site: Site) -> None:
    adopted(site, "code_in_ratio")
    site.edit("docs/code_in_ratio.md", "than one by one", "than one at a time")
    checked = site.run("--check")
    assert checked.stderr.count("--adopt --keep --file docs/code_in_ratio.md") == 3
    assert site.run("--adopt").stdout == "nothing to adopt\n"
    assert site.run("--adopt", "--keep").returncode == 2  # never site-wide
    ran = site.run("--adopt", "--keep", "--file", "docs/code_in_ratio.md")
    assert ran.stdout.count("adopted docs/") == 3, ran.stderr
    assert site.run("--check").returncode == 0
    # The checks still run: a number the translation lacks is refused.
    site.edit("docs/code_in_ratio.md", "2x faster", "3x faster")
    refused = site.run("--adopt", "--keep", "--file", "docs/code_in_ratio.md")
    assert refused.returncode == 1
    assert refused.stderr.count("the number 3 is not in") + refused.stderr.count("3 of the") == 3
