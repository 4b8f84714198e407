#!/usr/bin/env python3
"""Per-function instructions per call from two callgrind files of one thread.

Usage: tools/cg_fn_diff.py FILE_N1 FILE_N2 CALLS [--self] [TOP] [PATTERN]
  FILE_N1 / FILE_N2: callgrind files of the same thread at two call counts (e.g. the
  client-thread files `<mode>-<n>.<pid>-01` that `CG_OUT=dir tools/e2e_callgrind.py` keeps);
  CALLS = N2 - N1. Prints (Ir(N2) - Ir(N1)) / CALLS per function, inclusive by default
  (`--self` for exclusive), largest first, TOP lines (default 60), only functions matching
  the regular expression PATTERN when given.
"""
import re
import subprocess
import sys


def costs(path, inclusive):
    out = subprocess.run(["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}",
                          "--threshold=100", path], capture_output=True, text=True,
                         check=True).stdout
    table = {}
    for line in out.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*)$", line)
        if not m or ":" not in m.group(2) or m.group(2).startswith("=>") or "<=" in line:
            continue
        name = m.group(2)
        name = re.sub(r" \[[^\]]*\]$", "", name)
        table[name] = table.get(name, 0) + int(m.group(1).replace(",", ""))
    return table


def main():
    args = [a for a in sys.argv[1:] if a != "--self"]
    inclusive = "--self" not in sys.argv
    if len(args) < 3:
        print(__doc__)
        sys.exit(2)
    a, b, calls = args[0], args[1], int(args[2])
    top = int(args[3]) if len(args) > 3 else 60
    pattern = re.compile(args[4]) if len(args) > 4 else None
    ca, cb = costs(a, inclusive), costs(b, inclusive)
    rows = []
    for name in set(ca) | set(cb):
        if pattern and not pattern.search(name):
            continue
        rows.append(((cb.get(name, 0) - ca.get(name, 0)) / calls, name))
    rows.sort(reverse=True)
    for v, name in rows[:top]:
        print(f"{v:10.0f}  {name[:200]}")


if __name__ == "__main__":
    main()
