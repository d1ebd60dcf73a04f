"""A forbidden variant is refused whether a correct form holds it or it holds a correct form; the
correct text is accepted, in each language the checks run on."""

from __future__ import annotations

import pytest

from docs_i18n.glossary import Glossary

ENGLISH = "Each test gets a fresh fixture and a session history."

# (language, the rendering of "fixture", a variant that holds it, the rendering of "history",
#  an accepted longer form of "history" that holds a forbidden variant of it, that variant)
CASES = [
    ("ja", "フィクスチャ", "フィクスチャー", "履歴", "会話履歴", "会話"),
    ("ko", "픽스처", "픽스처들", "기록", "대화 기록", "대화"),
    ("zh", "测试夹具", "测试夹具组", "历史记录", "历史记录", "历史"),
]


def glossary(
    lang: str, fixture: str, long_fixture: str, history: str, holder: str, short: str
) -> Glossary:
    return Glossary(
        terms={lang: {"fixture": fixture, "history": history}},
        forbid={lang: {"fixture": [long_fixture], "history": [short]}},
        accept={lang: {"history": [holder]}},
    )


@pytest.mark.parametrize(("lang", "fixture", "long_fixture", "history", "holder", "short"), CASES)
def test_correct_renderings_are_accepted(
    lang: str, fixture: str, long_fixture: str, history: str, holder: str, short: str
) -> None:
    terms = glossary(lang, fixture, long_fixture, history, holder, short)
    text = f"{fixture} {holder} {history}"
    assert terms.check(ENGLISH, text, lang) == []


@pytest.mark.parametrize(("lang", "fixture", "long_fixture", "history", "holder", "short"), CASES)
def test_a_variant_that_holds_the_correct_form_is_refused(
    lang: str, fixture: str, long_fixture: str, history: str, holder: str, short: str
) -> None:
    terms = glossary(lang, fixture, long_fixture, history, holder, short)
    text = f"{long_fixture} {fixture} {history}"
    assert terms.check(ENGLISH, text, lang) == [
        f"'{long_fixture}' stands for 'fixture': write '{fixture}' (glossary)"
    ]


@pytest.mark.parametrize(("lang", "fixture", "long_fixture", "history", "holder", "short"), CASES)
def test_a_variant_held_by_no_correct_word_is_refused(
    lang: str, fixture: str, long_fixture: str, history: str, holder: str, short: str
) -> None:
    terms = glossary(lang, fixture, long_fixture, history, holder, short)
    text = f"{fixture} {history} {short}"
    assert terms.check(ENGLISH, text, lang) == [
        f"'{short}' stands for 'history': write '{history}' (glossary)"
    ]


# (language, the rendering of "tool", which is also a forbidden variant of "helper", the
#  rendering of "helper")
SHARED = [("ja", "ツール", "ヘルパー"), ("ko", "도구", "헬퍼"), ("zh", "工具", "辅助函数")]


@pytest.mark.parametrize(("lang", "tool", "helper"), SHARED)
def test_another_terms_rendering_is_accepted_where_that_term_is_used(
    lang: str, tool: str, helper: str
) -> None:
    terms = Glossary(
        terms={lang: {"tool": tool, "helper": helper}},
        forbid={lang: {"helper": [tool]}},
    )
    english = "The helper runs the tool."
    assert terms.check(english, f"{helper} {tool}", lang) == []
    assert terms.check("The helper runs.", f"{helper} {tool}", lang) == [
        f"'{tool}' stands for 'helper': write '{helper}' (glossary)"
    ]
