"""A room across processes in real browsers: the presenter's page on one ``python app.py``, followers' pages on
another, the two sharing rooms through a real Redis (``testing/hall.py``). Each page is opened on its own
process's address, as a proxy routing by cookie (``deploy/nginx.conf``) would keep it there.
"""

from __future__ import annotations

import re

import pytest

from testing.hall import Hall
from tests.ui.conftest import CLOSED_SOCKET
from tests.ui.helpers import to_page, wait_for_readout, weights
from tests.ui.test_follow import WAIT, close, drag, first_line, new_page, present
from tests.ui.test_poll import answer, ask, pane, total, wait_counts


@pytest.fixture(scope="module")
def hall(tmp_path_factory):
    h = Hall(tmp_path_factory.mktemp("hall"), processes=2)
    yield h
    logs = re.sub(CLOSED_SOCKET, "", h.close())
    assert "Traceback" not in logs, logs[-5000:]


def test_a_follower_on_one_process_follows_a_presenter_on_another_and_answers_its_poll(browser, hall):
    teacher = new_page(browser, hall.urls[0])
    code, link = present(teacher)
    assert link.startswith(hall.urls[0])
    elsewhere = f"{hall.urls[1]}?room={code}"  # the join link, as the other process serves it
    students = [new_page(browser, elsewhere) for _ in range(2)]
    for student in students:
        student.get_by_text("Following room").wait_for(timeout=WAIT)
        assert first_line(student) == first_line(teacher)

    drag(teacher, [(0.0, 1.0), (0.6, 0.4), (1.0, 1.0)])
    for student in students:
        text = wait_for_readout(student, r"q = \(1\.000, 1\.000\)", WAIT)
        assert "Output Σ aᵢvᵢ = 4.0000" in text
        assert weights(student) == pytest.approx([0.2483, 0.2483, 0.5035], abs=1e-4)
    teacher.keyboard.press("1")  # the teacher inspects "I": more than the query
    for student in students:
        wait_for_readout(student, r'Query of "I": q = \(1\.000, 0\.000\)', WAIT)

    teacher.get_by_role("button", name="Class poll").click()
    ask(teacher, "key-role")
    assert total(teacher) == "0 answers · 2 pages following"  # the other process's pages, counted here
    answer(students[0], 1)
    answer(students[1], 3)
    wait_counts(teacher, "2 answers")
    assert total(teacher) == "2 answers · 2 pages following"
    # both pages were there before the question, and named their browser as their card loaded
    assert pane(teacher, "poll-results").locator(".poll-late").count() == 0

    teacher.mouse.click(*to_page(teacher, "query-plot", 1.5, -0.5))
    for student in students:
        wait_for_readout(student, r"q = \(1\.500, -0\.500\)", WAIT)
    close(teacher, *students)
