"""What the tests and the benchmarks share: a served app on a free port, a client of Bokeh's protocol."""
