"""What a first visit loads: only the scripts the page uses."""

from __future__ import annotations

import re
import urllib.request

from testing.server import serve


def test_the_page_loads_no_script_of_an_extension_it_does_not_use():
    with serve() as (url, _proc):
        html = urllib.request.urlopen(url, timeout=120).read().decode()
    scripts = re.findall(r'<script[^>]+src="([^"]+)"', html)
    assert any("bokeh.min.js" in s for s in scripts) and any("panel.min.js" in s for s in scripts), scripts
    # a Panel app that never calls pn.extension() gets every imported extension's scripts: 130 kB of 0.86 MB
    unused = [s for s in scripts if re.search(r"tabulator|luxon|plotly|vega|deck|echarts|ace|mathjax", s)]
    assert not unused, unused
