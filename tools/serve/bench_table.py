"""Formats the JSON lines of serve_load (gateway-cli/examples/serve_load.rs) for bench.sh and
litellm_compare.sh.

  bench_table.py pairs < lines          markdown: direct vs serve per rate, added latency
  bench_table.py targets < lines        markdown: one row per (rate, target), added vs direct
  bench_table.py sustained FILE         exit 0 when a non-direct row of the last rate holds p99 < 10 ms
  bench_table.py max FILE               the highest sustained rate per target
"""

import json
import sys


def rows(lines):
    return [json.loads(l) for l in lines if l.startswith("{")]


def sustained(r):
    return r["p99_ms"] < 10 and r["errors"] == 0 and r["achieved_rps"] >= 0.97 * r["rate"]


def pairs(rs):
    by = {}
    for r in rs:
        by.setdefault(r["rate"], {})[r["target"]] = r
    print("| rate (rps) | direct p50 ms | direct p99 ms | serve p50 ms | serve p99 ms | added p50 ms | added p99 ms | achieved rps direct / serve | errors direct / serve |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for rate, t in sorted(by.items()):
        d, s = t.get("direct"), t.get("serve")
        if not d or not s:
            continue
        print(
            "| %.0f | %.3f | %.3f | %.3f | %.3f | %+.3f | %+.3f | %.0f / %.0f | %d / %d |"
            % (rate, d["p50_ms"], d["p99_ms"], s["p50_ms"], s["p99_ms"], s["p50_ms"] - d["p50_ms"],
               s["p99_ms"] - d["p99_ms"], d["achieved_rps"], s["achieved_rps"], d["errors"], s["errors"])
        )


def targets(rs):
    direct = {r["rate"]: r for r in rs if r["target"] == "direct"}
    print("| rate (rps) | target | p50 ms | p99 ms | added p50 ms | added p99 ms | achieved rps | errors |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rs:
        d = direct.get(r["rate"], r)
        print(
            "| %.0f | %s | %.3f | %.3f | %+.3f | %+.3f | %.0f | %d |"
            % (r["rate"], r["target"], r["p50_ms"], r["p99_ms"], r["p50_ms"] - d["p50_ms"],
               r["p99_ms"] - d["p99_ms"], r["achieved_rps"], r["errors"])
        )


mode = sys.argv[1]
if mode == "pairs":
    pairs(rows(sys.stdin))
elif mode == "targets":
    targets(rows(sys.stdin))
elif mode == "sustained":
    rs = rows(open(sys.argv[2]))
    last = rs[-1]["rate"] if rs else None
    s = [r for r in rs if r["target"] != "direct" and r["rate"] == last]
    sys.exit(0 if any(sustained(r) for r in s) else 1)
elif mode == "max":
    rs = rows(open(sys.argv[2]))
    for name in dict.fromkeys(r["target"] for r in rs):
        ok = [r["rate"] for r in rs if r["target"] == name and sustained(r)]
        print("max sustained rate with p99 < 10 ms, %s: %s" % (name, "%.0f rps" % max(ok) if ok else "none of the tried rates"))
