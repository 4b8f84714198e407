#!/usr/bin/env python3
"""Calls to malloc / calloc / realloc per call, from two callgrind files of one thread.

Usage: tools/cg_allocs.py FILE_N1 FILE_N2 CALLS
  Sums the `calls=` counts of every call into `malloc`, `calloc` and `realloc` in each file
  (per-thread files of `CG_OUT=dir tools/e2e_callgrind.py`) and prints
  (count(N2) - count(N1)) / CALLS: the thread's allocations per call, setup and warm-up cancelled.
"""
import re
import sys

TARGETS = {"malloc", "calloc", "realloc"}


def count(path):
    names, total, pending = {}, 0, False
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("cfn="):
                m = re.match(r"cfn=\((\d+)\)(?: (.*))?", line.strip())
                if m:
                    if m.group(2):
                        names[m.group(1)] = m.group(2)
                    pending = names.get(m.group(1), "") in TARGETS
                continue
            if line.startswith("fn="):
                m = re.match(r"fn=\((\d+)\)(?: (.*))?", line.strip())
                if m and m.group(2):
                    names[m.group(1)] = m.group(2)
                pending = False
                continue
            if line.startswith("calls=") and pending:
                total += int(line.split("=")[1].split()[0])
                pending = False
    return total


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    a, b, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
    print(f"{(count(b) - count(a)) / calls:.1f}")


if __name__ == "__main__":
    main()
