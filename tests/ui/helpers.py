"""Reading and driving the page the way a learner does: through pixels and page text."""

from __future__ import annotations

import re

_TO_PAGE = """([name, x, y]) => {
  const model = Bokeh.documents[0].get_model_by_name(name);
  const view = Bokeh.index.find_one(model);
  view.el.scrollIntoView({block: "nearest"});
  const r = view.canvas_view.el.getBoundingClientRect();
  return [r.left + view.frame.x_scale.compute(x), r.top + view.frame.y_scale.compute(y)];
}"""

READOUT = "[data-testid=readout] .bk-clearfix"


def open_app(page, url: str) -> None:
    page.goto(url)
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0 && "
                           "Bokeh.documents[0].get_model_by_name('query-plot') != null")
    page.locator(READOUT).wait_for()


def to_page(page, figure_name: str, x: float, y: float) -> tuple[float, float]:
    """Page pixel coordinates of data point (x, y) in the named Bokeh figure."""
    return tuple(page.evaluate(_TO_PAGE, [figure_name, x, y]))


def readout(page) -> str:
    return page.locator(READOUT).text_content()


def numbers(text: str, label: str) -> list[float]:
    """The numbers on the readout line that starts with ``label``, after its colon or '='."""
    line = next(ln for ln in text.splitlines() if ln.startswith(label))
    tail = re.split(r"[:=]", line, maxsplit=1)[1]
    return [float(x) for x in re.findall(r"-?\d+\.\d+", tail)]


def weights(page) -> list[float]:
    return numbers(readout(page), "Weights")


def output(page) -> float:
    return numbers(readout(page), "Output")[0]


def wait_for_readout(page, pattern: str, timeout: float = 5000) -> str:
    page.locator(READOUT).filter(has_text=re.compile(pattern)).wait_for(timeout=timeout)
    return readout(page)
