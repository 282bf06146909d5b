"""Pick an --iteration-kernel name from a tally-trace file of a run of N
identical requests or steps: the earliest kernel (in time) that ran exactly N
times. Prints its full (demangled) name, which tally-trace matches as a
substring of each launched kernel's name.

  python3 pick_iteration_kernel.py TRACE.json[.gz] N
"""
import gzip
import json
import sys
from collections import Counter


def main():
    path, n = sys.argv[1], int(sys.argv[2])
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt") as f:
        trace = json.load(f)
    kernels = [e for e in trace["events"] if e["type"] == "kernel"]
    kernels.sort(key=lambda e: e["start_ns"])
    counts = Counter(e["name"] for e in kernels)
    names = set(counts)
    for e in kernels:
        name = e["name"]
        # unique as a substring too: no other kernel name contains it
        if counts[name] == n and not any(name in o for o in names if o != name):
            print(name)
            return
    sys.exit("no kernel ran exactly %d times" % n)


if __name__ == "__main__":
    main()
