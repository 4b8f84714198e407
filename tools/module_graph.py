#!/usr/bin/env python3
"""File-level import graph of a crate's `src/` and the cycles in it.

Reads every `.rs` file under the given crate source directories, strips comments and string
literals (so intra-doc links and messages make no edges), and collects the module paths each file
names: `use` trees (braces expanded) and inline paths, both starting with `crate::`, `super::` or
`self::`. Each path resolves to the file of the longest module prefix it names (`crate::hedge::X`
→ `hedge.rs`, `crate::telemetry::shape::Y` → `telemetry/shape.rs`, `crate::cache::Z` →
`cache/mod.rs`). A `mod` declaration is not an edge (the parent owns the child, it does not import
it); a path that resolves to the file itself is dropped.

It prints the strongly connected components of more than one file (a cycle between files), with
one concrete cycle and the lines that make each of its edges, then the files over `--long` lines.
Exit status 1 when a cycle exists (usable in CI), else 0.

Usage:
  python3 tools/module_graph.py                     # gateway-core/src
  python3 tools/module_graph.py --workspace         # every workspace crate with a src/lib.rs
  python3 tools/module_graph.py gateway-core/src --edges    # also list every edge
  python3 tools/module_graph.py --long 600          # files over 600 lines (default 600)
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def strip_code(text):
    """Blanks comments, string and char literals, keeping line breaks (line numbers stay)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c == "/" and nxt == "*":
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 8]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            close = '"' + m.group(1)
            j = text.find(close, i + len(m.group(0)))
            j = n if j < 0 else j + len(close)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            # A char literal ('a', '\n', '\u{..}'), not a lifetime ('a).
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def module_of(rel):
    """`a/b.rs` → ("a", "b"); `a/mod.rs` → ("a",); `lib.rs` → ()."""
    parts = rel[:-3].split("/")
    if parts[-1] in ("mod", "lib", "main") and (parts[-1] == "mod" or len(parts) == 1):
        parts = parts[:-1]
    return tuple(parts)


def expand_use_tree(tree):
    """`crate::a::{b, c::{D, self}}` → [crate::a::b, crate::a::c::D, crate::a::c]."""
    tree = re.sub(r"\s+as\s+[A-Za-z_]\w*", "", tree)  # aliases name nothing new
    tree = re.sub(r"\s+", "", tree)

    def expand(prefix, s):
        # s is one tree: path[::{...}] or path as alias
        brace = s.find("{")
        if brace < 0:
            parts = [p for p in s.split("::") if p]
            if parts and parts[-1] == "self":
                parts = parts[:-1]
            if parts and parts[-1] == "*":
                parts = parts[:-1]
            return [prefix + parts]
        head = [p for p in s[:brace].split("::") if p]
        inner = s[brace + 1:s.rfind("}")]
        items, depth, cur = [], 0, ""
        for ch in inner:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                items.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            items.append(cur)
        res = []
        for it in items:
            if it:
                res.extend(expand(prefix + head, it))
        return res

    return expand([], tree)


USE_RE = re.compile(r"(?<![\w$])use\s+([^;]*);", re.S)
PATH_RE = re.compile(r"(?<![\w$:])((?:crate|super|self)(?:::[A-Za-z_]\w*)+)")


MOD_RE = re.compile(r"(?<![\w$])mod\s+([A-Za-z_]\w*)\s*\{")


def inline_modules(code):
    """`mod name { ... }` blocks of a file: [(start, end, name)] in source order, so that
    `super::` inside a `mod tests { }` resolves to the file's own module."""
    out = []
    for m in MOD_RE.finditer(code):
        depth, j = 0, m.end() - 1
        while j < len(code):
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        out.append((m.start(), j, m.group(1)))
    return out


def absolute(path, here):
    """Resolves a path's leading `crate` / `super` / `self` against module `here`."""
    parts = list(path)
    if not parts:
        return None
    if parts[0] == "crate":
        base, rest = [], parts[1:]
    elif parts[0] in ("super", "self"):
        base = list(here)
        rest = parts
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                if not base:
                    return None
                base.pop()
            rest = rest[1:]
    else:
        return None
    return tuple(base + rest)


def scan_crate(src):
    files = {}
    for dirpath, _, names in os.walk(src):
        for name in names:
            if name.endswith(".rs"):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, src).replace(os.sep, "/")
                files[rel] = full
    modules = {module_of(rel): rel for rel in files}
    edges = {}  # (from, to) -> [(line, text)]
    lines_of = {}
    for rel, full in sorted(files.items()):
        with open(full, encoding="utf-8") as fh:
            raw = fh.read()
        lines_of[rel] = raw.count("\n")
        code = strip_code(raw)
        raw_lines = raw.split("\n")
        here = module_of(rel)
        inline = inline_modules(code)
        found = []  # (offset, path tuple)
        use_spans = []
        for m in USE_RE.finditer(code):
            use_spans.append((m.start(), m.end()))
            for p in expand_use_tree(m.group(1)):
                found.append((m.start(), p))
        for m in PATH_RE.finditer(code):
            if any(a <= m.start() < b for a, b in use_spans):
                continue
            found.append((m.start(), m.group(1).split("::")))
        for off, p in found:
            scope = here + tuple(name for a, b, name in inline if a <= off < b)
            mod = absolute(p, scope)
            if mod is None:
                continue
            target = None
            for k in range(len(mod), -1, -1):
                if mod[:k] in modules:
                    target = modules[mod[:k]]
                    break
            if target is None or target == rel:
                continue
            line = code.count("\n", 0, off) + 1
            edges.setdefault((rel, target), []).append((line, raw_lines[line - 1].strip()))
    return files, edges, lines_of


def sccs(nodes, adj):
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(adj.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def one_cycle(comp, adj):
    """A shortest cycle through the component's first node (BFS)."""
    members = set(comp)
    start = comp[0]
    prev = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(adj.get(v, ())):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return [start]


def report(label, src, args):
    files, edges, lines_of = scan_crate(src)
    adj = {}
    for (a, b) in edges:
        adj.setdefault(a, set()).add(b)
    comps = [c for c in sccs(files, adj) if len(c) > 1]
    print(f"== {label}: {len(files)} files, {len(edges)} file-to-file edges")
    if args.edges:
        for (a, b), uses in sorted(edges.items()):
            print(f"  {a} -> {b}  (line {uses[0][0]})")
    if not comps:
        print("  no cycle between files")
    for comp in comps:
        print(f"  CYCLE among {len(comp)} files: {', '.join(comp)}")
        cyc = one_cycle(comp, adj)
        for a, b in zip(cyc, cyc[1:]):
            line, text = edges[(a, b)][0]
            print(f"    {a} -> {b}   {a}:{line}: {text}")
    long = sorted((n, f) for f, n in lines_of.items() if n > args.long)
    if long:
        print(f"  files over {args.long} lines:")
        for n, f in reversed(long):
            print(f"    {n:5d} {f}")
    return bool(comps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src", nargs="*", help="crate source directories (default gateway-core/src)")
    ap.add_argument("--workspace", action="store_true", help="every crate with a src/lib.rs")
    ap.add_argument("--edges", action="store_true", help="list every file-to-file edge")
    ap.add_argument("--long", type=int, default=600, help="report files over this many lines")
    args = ap.parse_args()
    srcs = args.src
    if args.workspace:
        srcs = []
        for dirpath, dirnames, names in os.walk(ROOT):
            dirnames[:] = [d for d in dirnames if d not in ("target", ".git", "node_modules")]
            if os.path.basename(dirpath) == "src" and ("lib.rs" in names or "main.rs" in names):
                srcs.append(os.path.relpath(dirpath, ROOT))
        srcs = sorted(set(srcs))
    if not srcs:
        srcs = ["gateway-core/src"]
    cyclic = False
    for s in srcs:
        full = s if os.path.isabs(s) else os.path.join(ROOT, s)
        cyclic |= report(s, full, args)
    sys.exit(1 if cyclic else 0)


if __name__ == "__main__":
    main()
