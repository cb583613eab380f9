#!/usr/bin/env python3
"""Python's `markdownify` on the page `cargo bench -p harnessx-builtin --bench web` writes.

The reference for docs/performance.md, "Web pages". Run the Rust bench first (it writes the
page to $HX_BENCH_PAGE, default /tmp/hx-bench-page.html), then, in a venv with markdownify:

    python3 -m venv /tmp/mdvenv && /tmp/mdvenv/bin/pip install markdownify
    /tmp/mdvenv/bin/python harnessx-builtin/bench/markdownify_ref.py

markdownify is told to drop <script> and <style> the way fetch_url does. Prints the median
of the runs, in milliseconds.
"""

import os
import statistics
import sys
import time

from markdownify import markdownify

path = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("HX_BENCH_PAGE", "/tmp/hx-bench-page.html")
try:
    with open(path, encoding="utf-8") as f:
        html = f.read()
except FileNotFoundError:
    sys.exit(f"{path} is missing: run `cargo bench -p harnessx-builtin --bench web` first")

runs = int(os.environ.get("RUNS", "10"))
times = []
md = ""
for _ in range(runs):
    start = time.perf_counter()
    md = markdownify(html, strip=["script", "style"], heading_style="ATX")
    times.append(time.perf_counter() - start)
print(f"page: {len(html.encode())} bytes of HTML -> {len(md.encode())} bytes of Markdown")
print(f"markdownify {runs} runs: median {statistics.median(times) * 1000:.1f} ms, min {min(times) * 1000:.1f} ms")
