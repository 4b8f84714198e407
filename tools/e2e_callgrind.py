#!/usr/bin/env python3
"""Instructions per call of the end-to-end bench, per component (issue 21).

Runs `gateway-facade/benches/e2e_overhead.rs` under `valgrind --tool=callgrind
--separate-threads=yes` in `E2E_CALLGRIND` mode at two call counts per mode and prints
(Ir(N2) - Ir(N1)) / (N2 - N1) per thread role, so setup and warm-up cancel:

  client     the main thread: load generator, the client under test, for the governed call
             also the governor, the accumulator and the telemetry emitter's hand-off
  writer     `pgw-telemetry-sqlite` (the SQLite writer thread)
  simulator  the upstream-sim runtime threads
  other      anything else (reqwest/tokio blocking pools)

Usage: tools/e2e_callgrind.py BENCH_BINARY [modes...]
  modes default to bare-json peer-json governed-json bare-stream peer-stream governed-stream.
  Env: CG_N1 (default 300), CG_N2 (default 1300), CG_WARMUP (default 200), CG_OUT (directory
  for the callgrind files, default a temp dir).
Build the binary first: `cargo bench -p polygateway --bench e2e_overhead --no-run` prints its
path (target/release/deps/e2e_overhead-<hash>).
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

MODES = ["bare-json", "peer-json", "governed-json", "bare-stream", "peer-stream", "governed-stream"]


def role(path):
    """The role of one per-thread callgrind file, by the functions it ran."""
    if re.search(r"-0*1$", path):
        return "client"
    with open(path, errors="replace") as f:
        text = f.read()
    if "adapter_sqlite::writer::run" in text:
        return "writer"
    if "upstream_sim" in text:
        return "simulator"
    return "other"


def totals(path):
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    return 0


def run(binary, mode, n, out):
    prefix = os.path.join(out, f"{mode}-{n}")
    env = dict(os.environ, E2E_CALLGRIND=mode, E2E_CALLGRIND_CALLS=str(n),
               E2E_WARMUP=os.environ.get("CG_WARMUP", "200"))
    for attempt in range(3):
        for stale in glob.glob(prefix + ".*"):
            os.remove(stale)
        done = subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes",
                               f"--callgrind-out-file={prefix}.%p", binary, "--bench"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode == 0:
            break
        print(f"  {mode} N={n}: exit {done.returncode}, retrying; stderr tail: "
              + " | ".join(done.stderr.strip().splitlines()[-3:]), file=sys.stderr)
    else:
        sys.exit(f"{mode} N={n} failed three times")
    by_role = {}
    for path in glob.glob(prefix + ".*"):
        r = role(path)
        by_role[r] = by_role.get(r, 0) + totals(path)
    return by_role


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    binary = sys.argv[1]
    modes = sys.argv[2:] or MODES
    n1 = int(os.environ.get("CG_N1", "300"))
    n2 = int(os.environ.get("CG_N2", "1300"))
    out = os.environ.get("CG_OUT") or tempfile.mkdtemp(prefix="e2e-callgrind-")
    os.makedirs(out, exist_ok=True)
    roles = ["client", "writer", "simulator", "other"]
    print(f"instructions per call, (Ir(N={n2}) - Ir(N={n1})) / {n2 - n1}; files in {out}")
    print(f"{'mode':<16}" + "".join(f"{r:>11}" for r in roles) + f"{'total':>11}")
    for mode in modes:
        a, b = run(binary, mode, n1, out), run(binary, mode, n2, out)
        per = {r: (b.get(r, 0) - a.get(r, 0)) / (n2 - n1) for r in roles}
        print(f"{mode:<16}" + "".join(f"{per[r]:>11.0f}" for r in roles)
              + f"{sum(per.values()):>11.0f}", flush=True)


if __name__ == "__main__":
    main()
