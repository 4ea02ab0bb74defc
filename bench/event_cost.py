"""How much server CPU each single page event costs, in process: every button of every tab, showing a built tab again.

One page built as the tests build it (no browser, no server), made as costly as it gets (every tab opened,
d_k = 1024 on the √d_k tab, n = 4096 and four heads on the Heads · n² tab, as ``bench.event_flood`` does), then
each event is run ``--repeat`` times and timed with the process's CPU clock (load-independent on a busy machine
as long as the process gets a core at all). One event is one turn of the server's loop that every other page's
answer waits behind.

    python -m bench.event_cost
    python -m bench.event_cost --code /path/to/an/older/checkout   # the same against other code
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

#: Buttons that end the page's own session or only open a dialog: left alone (as in bench.event_flood).
SPARED = {"Present", "Start again", "Yes, clear my progress", "Keep it", "✕", "Add token"}


def _costly_page():
    import panel as pn
    from bokeh.document import Document

    import app
    from widgets.tabs import LazyTabs

    page = app.create_app()
    doc = Document()
    doc.add_root(page.get_root(doc))
    tabs = next(o for o in page.select(pn.Tabs) if isinstance(o, LazyTabs))
    for i in range(len(tabs)):
        tabs.active = i
    for slider in page.select(pn.widgets.IntSlider):
        if slider.name == "d_k":
            slider.value = slider.end
    for slider in page.select(pn.widgets.DiscreteSlider):
        values = list(slider.options.values()) if isinstance(slider.options, dict) else list(slider.options)
        if 4096 in values:
            slider.value = 4096  # n on the Heads · n² tab
    for group in page.select(pn.widgets.RadioButtonGroup):
        if list(group.options)[-1:] == ["4"] or list(group.options)[-1:] == [4]:
            group.value = group.options[-1]  # four heads
    tabs.active = 0
    return page, tabs


def measure(repeat: int) -> list[tuple[str, float, float]]:
    """``(event, median ms, max ms)`` of the process's CPU time for each event, costliest first."""
    import panel as pn

    page, tabs = _costly_page()
    rows = []

    def timed(name, action):
        times = []
        for _ in range(repeat):
            start = time.process_time()
            action()
            times.append((time.process_time() - start) * 1000)
        rows.append((name, statistics.median(times), max(times)))

    for i, title in enumerate(tabs._names):
        def show(i=i):
            tabs.active = 0 if i else 1
            tabs.active = i
        # the switch away is timed with it: two switches, halved below
        timed(f"show the built tab {title} again (x2)", show)
    rows = [(name.replace(" (x2)", ""), med / 2, top / 2) for name, med, top in rows]
    for i, title in enumerate(tabs._names):
        tabs.active = i
        seen = set()
        for button in tabs[i].select(pn.widgets.Button):
            label = button.label or button.name
            if label in SPARED or id(button) in seen:
                continue
            seen.add(id(button))
            timed(f"{title}: {label}", lambda b=button: setattr(b, "clicks", b.clicks + 1))
        for slider in tabs[i].select(pn.widgets.IntSlider):
            if slider.name == "d_k":
                timed(f"{title}: d_k 1023 then 1024 (x2)", lambda s=slider: (setattr(s, "value", s.end - 1),
                                                                           setattr(s, "value", s.end)))
    tabs.active = 0
    for button in page.select(pn.widgets.Button):  # the header's, outside the tabs
        label = button.label or button.name
        if label in ("Reset example", "Next ▶"):
            timed(f"header: {label}", lambda b=button: setattr(b, "clicks", b.clicks + 1))
    return sorted(rows, key=lambda r: -r[1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7, help="times each event is run (median reported)")
    parser.add_argument("--code", help="a checkout of other code to measure instead of this one")
    parser.add_argument("--top", type=int, default=25, help="rows shown, costliest first")
    args = parser.parse_args(argv)
    if args.code:
        # this file run against the other code: its modules first on the path, this tree's bench not imported
        env = {**os.environ, "PYTHONPATH": args.code}
        code = ("import runpy, sys; sys.argv = sys.argv[1:]; "
                "runpy.run_path(sys.argv[0], run_name='__main__')")
        subprocess.run([sys.executable, "-c", code, os.path.abspath(__file__), "--repeat", str(args.repeat),
                        "--top", str(args.top)], env=env, cwd=args.code, check=True)
        return
    print(f"load {os.getloadavg()[0]:.1f}; server CPU per event, in process, median (max) of {args.repeat}")
    print("| event | ms CPU median | max |\n| --- | ---: | ---: |")
    for name, med, top in measure(args.repeat)[:args.top]:
        print(f"| {name} | {med:.1f} | {top:.1f} |")
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
