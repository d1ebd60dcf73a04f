"""A forbidden variant is refused whether a correct form holds it or it holds a correct form, and
accepted where it is another used term's rendering; correct text is accepted, in each language
the checks run on."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from docs_i18n.glossary import Glossary


class Case(NamedTuple):
    lang: str
    fixture: str  # the rendering of "fixture"
    long_fixture: str  # a forbidden variant that holds it
    history: str  # the rendering of "history"
    holder: str  # an accepted longer form of "history" that holds a forbidden variant of it
    short: str  # that variant


CASES = [
    Case("ja", "フィクスチャ", "フィクスチャー", "履歴", "会話履歴", "会話"),
    Case("ko", "픽스처", "픽스처들", "기록", "대화 기록", "대화"),
    Case("zh", "测试夹具", "测试夹具组", "历史记录", "历史记录", "历史"),
]
ENGLISH = "Each test gets a fresh fixture and a session history."


def findings(case: Case, text: str) -> list[str]:
    terms = Glossary(
        terms={case.lang: {"fixture": case.fixture, "history": case.history}},
        forbid={case.lang: {"fixture": [case.long_fixture], "history": [case.short]}},
        accept={case.lang: {"history": [case.holder]}},
    )
    return terms.check(ENGLISH, text, case.lang)


@pytest.mark.parametrize("case", CASES, ids=[case.lang for case in CASES])
def test_correct_renderings_are_accepted(case: Case) -> None:
    assert findings(case, f"{case.fixture} {case.holder} {case.history}") == []


@pytest.mark.parametrize("case", CASES, ids=[case.lang for case in CASES])
def test_a_variant_that_holds_the_correct_form_is_refused(case: Case) -> None:
    assert findings(case, f"{case.long_fixture} {case.fixture} {case.history}") == [
        f"'{case.long_fixture}' stands for 'fixture': write '{case.fixture}' (glossary)"
    ]


@pytest.mark.parametrize("case", CASES, ids=[case.lang for case in CASES])
def test_a_variant_held_by_no_correct_word_is_refused(case: Case) -> None:
    assert findings(case, f"{case.fixture} {case.history} {case.short}") == [
        f"'{case.short}' stands for 'history': write '{case.history}' (glossary)"
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
    assert terms.check("The helper runs the tool.", f"{helper} {tool}", lang) == []
    assert terms.check("The helper runs.", f"{helper} {tool}", lang) == [
        f"'{tool}' stands for 'helper': write '{helper}' (glossary)"
    ]
