#!/usr/bin/env python3
"""Allocations per call of the end-to-end bench, per component and per allocation site.

Runs `gateway-facade/benches/e2e_overhead.rs` under `valgrind --tool=dhat` in `E2E_CALLGRIND`
mode at two call counts and prints (blocks(N2) - blocks(N1)) / (N2 - N1) per role and, for the
client, per allocation site, so setup and warm-up cancel. A site is the first frame of the
allocation's stack that is not allocator, collection or formatting plumbing; with `-v` the
stack down to that frame is printed too.

Roles, by the frames of the allocating stack: `simulator` (any `upstream_sim` frame), `writer`
(`adapter_sqlite::writer`), otherwise `client` (the main thread: load generator, the client
under test, the governor, the telemetry hand-off).

Usage: tools/e2e_dhat.py [-v] BENCH_BINARY [modes...]
  modes default to governed-json governed-stream. Env: CG_N1 (default 200), CG_N2 (default
  700), CG_WARMUP (default 200), CG_TOP (sites printed, default 40), CG_OUT (directory for the
  dhat files, default a temp dir).
Build the binary first: `cargo bench -p polygateway --bench e2e_overhead --no-run`.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

PLUMBING = re.compile(
    r"^(UnknownInlinedFun|malloc|calloc|realloc|alloc|alloc_impl|alloc_impl_runtime|allocate"
    r"|__rust|__rdl|try_allocate_in|with_capacity|with_capacity_in|to_vec|to_vec_in|to_owned"
    r"|clone|from_iter|collect|extend|extend_from_slice|spec_extend|append_elements|grow_amortized"
    r"|finish_grow|reserve|do_reserve_and_handle|push|insert|new|from|into|write_str|write_char"
    r"|format|format_inner|spec_from_iter|fold|map|call_once|box_new|exchange_malloc|default"
    r"|<alloc::|<core::|<std::|<T as |<indexmap::Bucket|<serde_json::Map|<serde_json::value::Value"
    r"|alloc::|core::|std::|hashbrown::|indexmap::|stats_alloc|<stats_alloc|<&)"
)


def role(frames):
    text = " ".join(frames)
    if "upstream_sim" in text:
        return "simulator"
    if "adapter_sqlite::writer" in text:
        return "writer"
    return "client"


def run(binary, mode, n, out):
    path = os.path.join(out, f"dhat-{mode}-{n}.json")
    env = dict(os.environ, E2E_CALLGRIND=mode, E2E_CALLGRIND_CALLS=str(n),
               E2E_WARMUP=os.environ.get("CG_WARMUP", "200"))
    done = subprocess.run(["valgrind", "--tool=dhat", f"--dhat-out-file={path}", binary,
                           "--bench"], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"{mode} N={n}: exit {done.returncode}: {done.stderr[-500:]}")
    with open(path) as f:
        data = json.load(f)
    ftbl = data["ftbl"]
    by_role, by_site = {}, {}
    for pp in data["pps"]:
        frames = [ftbl[i] for i in pp["fs"]]
        blocks = pp["tbk"]
        r = role(frames)
        by_role[r] = by_role.get(r, 0) + blocks
        if r != "client":
            continue
        site, chain = "?", []
        for fr in frames[1:]:
            name = fr.split(": ", 1)[-1]
            chain.append(name)
            if not PLUMBING.search(name):
                site = name
                break
        key = (site, tuple(chain[-4:]))
        by_site[key] = by_site.get(key, 0) + blocks
    return by_role, by_site


def main():
    args = sys.argv[1:]
    verbose = bool(args) and args[0] == "-v"
    if verbose:
        args = args[1:]
    if not args:
        print(__doc__)
        sys.exit(2)
    binary, modes = args[0], args[1:] or ["governed-json", "governed-stream"]
    n1 = int(os.environ.get("CG_N1", "200"))
    n2 = int(os.environ.get("CG_N2", "700"))
    top = int(os.environ.get("CG_TOP", "40"))
    out = os.environ.get("CG_OUT") or tempfile.mkdtemp(prefix="e2e-dhat-")
    os.makedirs(out, exist_ok=True)
    d = n2 - n1
    for mode in modes:
        (ra, sa), (rb, sb) = run(binary, mode, n1, out), run(binary, mode, n2, out)
        roles = {r: (rb.get(r, 0) - ra.get(r, 0)) / d for r in set(ra) | set(rb)}
        print(f"{mode}: allocations per call, (blocks(N={n2}) - blocks(N={n1})) / {d}: "
              + ", ".join(f"{r} {v:.1f}" for r, v in sorted(roles.items()))
              + f", total {sum(roles.values()):.1f}")
        sites = {}
        for key in set(sa) | set(sb):
            v = (sb.get(key, 0) - sa.get(key, 0)) / d
            if verbose:
                sites[key] = v
            else:
                sites[(key[0], ())] = sites.get((key[0], ()), 0) + v
        for (site, chain), v in sorted(sites.items(), key=lambda kv: -kv[1])[:top]:
            if abs(v) < 0.05:
                continue
            print(f"  {v:7.2f}  {site}")
            if verbose:
                for c in chain[:-1]:
                    print(f"             {c}")
        print(flush=True)


if __name__ == "__main__":
    main()
