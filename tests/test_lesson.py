"""A teacher's lesson link: ``?tabs=weights,matrix,steps,check&header=simple`` read, written and shared."""

from __future__ import annotations

import panel as pn
import pytest

import app
from services.rooms import RoomRegistry
from session.address import address_of, apply_address, parse_address
from session.lesson import parse_tabs
from session.state import AttentionState
from widgets.room import RoomControls

TOKENS = ["I", "love", "NLP"]
#: The tabs' names in a lesson link, as the issue lists them (with the Train tab), in the page's order.
NAMES = ["weights", "matrix", "steps", "recipe", "edit", "trap", "dk", "projections", "heads", "train", "model",
         "check",
         "export", "keys"]
LESSON = "weights,matrix,steps,check"


def _args(**kw) -> dict:
    return {k: [v.encode()] for k, v in kw.items()}


def test_every_tab_has_its_name_in_the_page_s_order():
    assert list(app.TAB_NAMES) == NAMES


@pytest.mark.parametrize(("value", "tabs"), [
    (LESSON, ["weights", "matrix", "steps", "check"]),
    ("check,steps,matrix,weights", ["weights", "matrix", "steps", "check"]),  # the page's order, not the link's
    ("CHECK, Weights ,weights", ["weights", "check"]),  # any case, spaces around, each once
    ("", []), (",", []),  # nothing asked: every tab
])
def test_tabs_are_read_by_name_in_any_case_in_the_page_s_order(value, tabs):
    assert parse_address(_args(tabs=value), TOKENS, NAMES) == ({"tabs": tabs}, [])


def test_an_unknown_tab_gets_a_notice_and_the_rest_of_the_link_still_applies():
    settings, problems = parse_address(_args(tabs="weights,zoom,Gewichte", row="NLP"), TOKENS, NAMES)
    assert settings == {"tabs": ["weights"], "selected": 2}
    assert problems == ["tabs = 'weights,zoom,Gewichte': unknown tab names left out: 'gewichte,zoom'. The tabs are "
                        + ", ".join(NAMES) + "."]


def test_only_unknown_tabs_show_every_tab_with_a_notice():
    state = AttentionState()
    apply_address(state, _args(tabs="<b>x</b>"), NAMES)
    assert state.tabs == []
    assert "'<b>x</b>'" in state.notice and "unknown tab names" in state.notice


def test_a_long_unknown_name_is_quoted_short():
    _, problems = parse_tabs("z" * 5000, NAMES)
    assert len(problems[0]) < 400


@pytest.mark.parametrize(("value", "header"), [("simple", "simple"), ("SIMPLE", "simple"), ("full", "full")])
def test_the_header_is_full_or_simple(value, header):
    assert parse_address(_args(header=value), TOKENS, NAMES) == ({"header": header}, [])


def test_another_header_is_ignored_with_a_notice():
    settings, problems = parse_address(_args(header="none"), TOKENS, NAMES)
    assert settings == {} and problems == ["header = 'none' ignored: choose full or simple."]


def test_the_address_keeps_the_lesson_and_reads_it_back():
    state = AttentionState()
    apply_address(state, _args(tabs="check,WEIGHTS", header="simple", row="I"), NAMES)
    out = address_of(state)
    assert out["tabs"] == "weights,check" and out["header"] == "simple"
    again = AttentionState()
    apply_address(again, {k: [v.encode()] for k, v in out.items()}, NAMES)
    assert (again.tabs, again.header, again.selected, again.notice) == (["weights", "check"], "simple", 0, "")


def test_a_page_without_a_lesson_writes_no_lesson():
    out = address_of(AttentionState())
    assert "tabs" not in out and "header" not in out


def test_a_room_shares_the_lesson_and_a_follower_with_other_tabs_takes_it():
    registry = RoomRegistry()
    presenter = AttentionState()
    apply_address(presenter, _args(tabs=LESSON, header="simple"), NAMES)
    room, token = registry.create(presenter.snapshot())
    follower = AttentionState()
    apply_address(follower, _args(tabs="edit,keys"), NAMES)
    follower.apply_snapshot(registry.view(room.code)[1])
    assert follower.tabs == ["weights", "matrix", "steps", "check"] and follower.header == "simple"


def _tabs(page) -> pn.Tabs:
    return next(t for t in page.select(pn.Tabs) if "explorer-tabs" in t.css_classes)


def test_a_lesson_page_has_only_its_tabs_and_builds_only_the_one_shown():
    page = app.create_app(args=_args(tabs=LESSON, lang="ar"))
    tabs = _tabs(page)
    # the Arabic catalog's titles of Weights, Matrix, All steps, Check
    assert tabs._names == ["الأوزان", "المصفوفة", "كل الخطوات", "تحقّق"]
    assert "lesson" in tabs.css_classes
    assert sum(not isinstance(obj, pn.Spacer) for obj in tabs.objects) == 1  # the Weights tab, shown


def test_a_follower_s_tabs_switch_to_the_presenter_s_and_keep_their_language():
    page = app.create_app(args=_args(tabs="edit"))
    page.state.lang = "fr"
    page.state.apply_snapshot({"tabs": ["weights", "check"]})
    assert _tabs(page)._names == ["Poids", "Vérifier"]
    page.state.apply_snapshot({"tabs": []})
    assert len(_tabs(page)._names) == len(NAMES) and "lesson" not in _tabs(page).css_classes


def _looks(page) -> pn.widgets.CheckBoxGroup:
    return next(w for w in page.select(pn.widgets.CheckBoxGroup) if list(w.options.values()) == ["Projector", "Dark"])


def test_the_simple_header_leaves_out_the_looks_and_keeps_reset():
    assert _looks(app.create_app()).visible
    page = app.create_app(args=_args(header="simple", mode="projector"))
    assert not _looks(page).visible and page.state.mode == "projector"  # the link sets the look itself
    assert any(b.label == "Reset example" and b.visible for b in page.select(pn.widgets.Button))


def test_the_presenter_card_offers_the_lesson_s_link_in_the_page_s_language():
    state = AttentionState(lang="de")
    controls = RoomControls(state=state, registry=RoomRegistry())
    controls._on_present(None)
    card = controls._join_pane.object  # the presenter's bar, under its code
    assert "Link zu dieser Lektion kopieren" in card and 'class="lesson-link"' in card
    # the link is the address bar's, less the room's arguments (the browser test checks the copied text)
    assert "searchParams.delete" in card and "&#x27;token&#x27;" in card
