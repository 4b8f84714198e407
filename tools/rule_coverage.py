#!/usr/bin/env python3
"""Regenerate docs/rule-coverage.md (05 R-32).

Collects every rule id defined in the specification (../shared/spec) — G-, S-, V-, H-, T-, E-,
O-, C- rules, the CT- contract rows, the CF- conformance rows — and every public wire case
(../shared/cases), then finds the tests that cite each one by name: a test function whose name
contains the id in snake case (`g_19_`, `ct_lim_06_`, `cf_101_`, `case_024_`) or a line
`// covers: G-19, CF-101` directly above a test function. Ids no test cites are mapped to the
issue that owns their subsystem, or to "not applicable" when the spec says so. The hand-maintained
docs/rule-notes.md (rows `| G-4 | not applicable: reason |`, `| H-3 | documented in docs/X.md |`)
overrides that default for ids no test cites.

Usage: python3 tools/rule_coverage.py [--spec ../shared/spec] [--cases ../shared/cases]
Run it after adding tests; it rewrites docs/rule-coverage.md.
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Which open issue owns a rule family or a conformance subsystem, when no test covers it yet.
FAMILY_OWNER = {
    "G": "issue 4 (governance core)",
    "S": "issue 3 (transport, §2–3 framing) / issue 5 (judgment, §4–13)",
    "V": "issue 5 (streaming judgment)",
    "H": "issue 6 (hedging)",
    "T": "issue 8 (telemetry)",
    "E": "issue 7 (facade: embedding)",
    "O": "a later OCR issue (adapter-monkeyocr)",
    "C": "issue 5 (thinking, R-48) / a later issue (structured output, effort table, cache)",
}
CT_OWNER = {
    "CHAT": "issue 3 (transport)", "EMB": "issue 3 (transport)", "OCR": "a later OCR issue",
    "LIM": "issue 4 (contract suites)", "BRK": "issue 4 (contract suites)",
    "CACHE": "a later cache issue", "TEL": "issue 8 (telemetry)", "CLK": "issue 4",
}
CF_OWNER = {
    "types": "issue 2 (types)", "api": "issue 7 (facade)", "arch": "issue 2",
    "config": "issue 7 (configuration)", "deadline": "issue 4 (deadline)",
    "gov": "issue 4 (governance)", "stats": "issue 4 (statistics)",
    "sse": "issue 3 / issue 5", "wire": "issue 5 (judgment on the wire)",
    "acc": "issue 5 (accumulator)", "verdict": "issue 5 (verdict)",
    "fidelity": "issue 5 (fidelity mode)", "hedge": "issue 6 (hedging)",
    "stall": "issue 6 (stall hedge and metering)", "struct": "a later structured-output issue",
    "cache": "a later cache issue", "tele": "issue 8 (telemetry)", "sqlite": "issue 8 (SQLite)",
    "pg": "a later Postgres issue", "redis": "a later Redis issue", "embed": "issue 7 (embedding)",
    "ocr": "a later OCR issue", "live": "not applicable here (live credentials; no network)",
}

RULE_DEF = re.compile(r"\*\*((?:G|S|V|H|T|E|O|C)-\d+[a-z]?)[.:*\s]")
CF_ROW = re.compile(r"^\| (CF-\d+) \| ([a-z-]+) \|(.*)$")
CT_ROW = re.compile(r"^\| (CT-([A-Z]+)-\d+) \|")
TEST_FN = re.compile(r"fn\s+([a-z0-9_]+)\s*[(<]")
COVERS = re.compile(r"//\s*covers:\s*(.+)$", re.I)
NOTE_ROW = re.compile(r"^\| ((?:CF|CT-[A-Z]+|[GSVHTEOC])-\d+[a-z]?) \| (.+?) \|\s*$")


def snake(rule_id):
    return rule_id.lower().replace("-", "_")


def collect_spec(spec):
    rules, cf, ct = {}, {}, {}
    for name in sorted(os.listdir(spec)):
        if not name.endswith(".md"):
            continue
        with open(os.path.join(spec, name), encoding="utf-8") as f:
            for line in f:
                for m in RULE_DEF.finditer(line):
                    rules.setdefault(m.group(1), name)
                m = CF_ROW.match(line)
                if m:
                    cf[m.group(1)] = (m.group(2), "N/A in Rust" in m.group(3) and "partly N/A" not in m.group(3))
                m = CT_ROW.match(line)
                if m:
                    ct[m.group(1)] = m.group(2)
    return rules, cf, ct


def collect_notes():
    """Hand-maintained reasons for ids no test covers (docs/rule-notes.md)."""
    notes = {}
    path = os.path.join(ROOT, "docs", "rule-notes.md")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = NOTE_ROW.match(line)
                if m:
                    notes[m.group(1)] = m.group(2)
    return notes


def collect_tests():
    """Map a snake-case token to the tests citing it."""
    cites = {}
    for base, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in ("target", ".git", "node_modules")]
        for fn in files:
            if not fn.endswith(".rs"):
                continue
            path = os.path.join(base, fn)
            rel = os.path.relpath(path, ROOT)
            pending = []
            with open(path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    c = COVERS.search(line)
                    if c:
                        pending += [snake(x.strip()) for x in re.split(r"[,\s]+", c.group(1)) if x.strip()]
                        continue
                    m = TEST_FN.search(line)
                    if not m:
                        continue
                    name = m.group(1)
                    where = f"`{rel}::{name}`"
                    tokens = set(pending)
                    pending = []
                    parts = name.split("_")
                    for i in range(len(parts) - 1):
                        tokens.add(parts[i] + "_" + parts[i + 1])
                        if i + 2 < len(parts):
                            tokens.add("_".join(parts[i:i + 3]))
                    for t in tokens:
                        cites.setdefault(t, []).append(where)
    return cites


HAND_MARKER = "# Hand-maintained rows"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", default=os.path.join(ROOT, "..", "shared", "spec"))
    ap.add_argument("--cases", default=os.path.join(ROOT, "..", "shared", "cases"))
    args = ap.parse_args()
    rules, cf, ct = collect_spec(args.spec)
    cites = collect_tests()
    notes = collect_notes()
    cases = sorted(n[:3] for n in os.listdir(args.cases) if re.match(r"\d{3}-", n))
    case_names = {n[:3]: n[:-3] for n in os.listdir(args.cases) if re.match(r"\d{3}-", n)}

    def fmt(tests):
        tests = sorted(set(tests))
        shown = ", ".join(tests[:3])
        return shown + (f" (+{len(tests) - 3} more)" if len(tests) > 3 else "")

    out = ["# Rule coverage (05 R-32)", "",
           "Every rule id of the specification, every contract row (CT-), every conformance row (CF-)",
           "and every public wire case, mapped to the tests that cite it by name, to \"not applicable\"",
           "with the reason, or to the issue that will cover it. Generated by `tools/rule_coverage.py`",
           "(run it after adding tests); do not edit by hand. Reasons for ids no test can cite live in",
           "`docs/rule-notes.md` (hand-maintained).", ""]
    total = covered = noted = 0

    def section(title, items):
        nonlocal total, covered, noted
        out.extend([f"## {title}", "", "| id | covered by |", "| --- | --- |"])
        for rid, owner in items:
            total += 1
            tests = cites.get(snake(rid), [])
            if tests:
                covered += 1
                out.append(f"| {rid} | {fmt(tests)} |")
            elif rid in notes:
                noted += 1
                out.append(f"| {rid} | {notes[rid]} |")
            else:
                out.append(f"| {rid} | {owner} |")
        out.append("")

    def key(r):
        p, n = r.split("-", 1)
        return (p, int(re.match(r"\d+", n).group()), n)

    for fam in "G S V H C T E O".split():
        ids = sorted((r for r in rules if r.startswith(fam + "-")), key=key)
        section(f"{fam}- rules", [(r, "→ " + FAMILY_OWNER[fam]) for r in ids])
    section("Contract rows (CT-)", [(r, "→ " + CT_OWNER.get(k, "later")) for r, k in sorted(ct.items(), key=lambda x: (x[1], x[0]))])
    section("Conformance rows (CF-)", [
        (r, "not applicable: marked \"N/A in Rust\" in 95 (see the row)" if na else "→ " + CF_OWNER.get(sub, "later"))
        for r, (sub, na) in sorted(cf.items())])
    section("Public wire cases", [(f"case-{c}", "→ issue 3 / issue 5 (" + case_names[c] + ")") for c in cases])
    out.insert(7, f"Covered: {covered} of {total}; {noted} more noted in docs/rule-notes.md.\n")
    target = os.path.join(ROOT, "docs", "rule-coverage.md")
    # The hand-maintained sections (README decisions, suites the generator does not collect)
    # start at HAND_MARKER and are carried over unchanged.
    kept = ""
    if os.path.exists(target):
        with open(target, encoding="utf-8") as f:
            previous = f.read()
        at = previous.find(HAND_MARKER)
        if at >= 0:
            kept = previous[at:]
    text = "\n".join(out)
    if kept:
        text = text.rstrip("\n") + "\n\n" + kept
    with open(target, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"covered {covered} of {total}, noted {noted}", file=sys.stderr)


if __name__ == "__main__":
    main()
