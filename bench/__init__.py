"""Benchmarks of the explorer: drag latency in a browser, a simulated classroom, memory per session.

Run them all with ``python -m bench.run`` (see ``bench/RESULTS.md``). Nothing here is imported by the app
or the tests.
"""
