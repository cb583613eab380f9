"""The reference row of the `bash` benchmark: Python's subprocess.run(["bash", "-c", "true"]).

Prints the mean and median wall time per call over N calls (default 2000), after a warm-up.
Run: python3 harnessx-builtin/bench/subprocess_true.py [N]
"""

import statistics
import subprocess
import sys
import time

n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
for _ in range(50):
    subprocess.run(["bash", "-c", "true"], check=True)
times = []
for _ in range(n):
    start = time.perf_counter()
    subprocess.run(["bash", "-c", "true"], check=True)
    times.append(time.perf_counter() - start)
print(f"subprocess.run bash -c true: mean {statistics.mean(times) * 1e3:.3f} ms, "
      f"median {statistics.median(times) * 1e3:.3f} ms over {n} calls")
