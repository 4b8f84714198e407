#!/usr/bin/env bash
# Per-request counts of `pgw serve` that do not depend on the machine's load (not CI):
#   tools/serve/counts.sh [PGW...]
#
# For each pgw binary given (default: this tree's release build) and each upstream mode
# (`always` = PGW_SERVE_UPSTREAM_STREAM default, `client` = a non-stream upstream call), starts
# `pgw sim` and `pgw serve` in front of it and, over a fixed number of non-stream chat requests
# (N, default 2000, sent by the open-loop load generator at RATE, default 500 rps, after a
# warm-up that is not counted):
#   - 20 requests at 20 rps traced call by call (`strace -f -p`): how many sockets got
#     TCP_NODELAY, and the socket writes and reads per request (client and upstream side);
#   - syscalls of the serve process per request (`strace -f -c` over the N requests);
#   - context switches of the serve process per request over the N requests
#     (/proc/PID/task/*/status, voluntary and involuntary, summed over its threads; traced,
#     so an upper bound);
#   - with CALLGRIND=1: instructions per request of the serve process (valgrind callgrind,
#     counters zeroed after the warm-up, dumped after the N requests; CG_N requests, default
#     500, at CG_RATE, default 50 rps) and the top inclusive functions (callgrind_annotate).
# SERVE_ENV: extra KEY=VALUE words for every pgw serve (e.g. SERVE_ENV=PGW_SERVE_WORKERS=0).
# Every process started here is stopped by its pid.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
n="${N:-2000}"
rate="${RATE:-500}"
cg_n="${CG_N:-500}"
cg_rate="${CG_RATE:-50}"
load="$target/release/examples/serve_load"
if [ "$#" -eq 0 ]; then
  (cd "$root" && cargo build --quiet --release -p gateway-cli --bin pgw --example serve_load)
  set -- "$target/release/pgw"
fi
[ -x "$load" ] || (cd "$root" && cargo build --quiet --release -p gateway-cli --example serve_load)
. "$here/lib.sh"
stop() { local p; p="$(cat "$work/$1.pid")"; kill -INT "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; }
ctx() { # voluntary+involuntary context switches summed over the threads of pid $1
  cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {s += $2} END {print s + 0}'
}
token="tok-bench-0123456789"
echo "machine: $(nproc) cores; uptime: $(uptime)"
sim="$(start sim env -i "${1}" sim --listen 127.0.0.1:0 --script "$root/gateway-cli/tests/fixtures/serve/hello.json")"
serve_env() { # mode
  echo ${SERVE_ENV:-} PGW_SERVE_KEYS="$token=bench" PGW_SERVE_UPSTREAM_STREAM="$1" \
    LLM__SIM__1__BASE_URL="http://$sim/v1" LLM__SIM__1__API_KEY=sk-sim LLM__SIM__1__MODEL=m
}
secs() { awk -v n="$1" -v r="$2" 'BEGIN {printf "%.3f", n / r}'; }
for pgw in "$@"; do
  for mode in always client; do
    label="$pgw $mode${SERVE_ENV:+ $SERVE_ENV}"
    # shellcheck disable=SC2046
    serve="$(start "serve-$mode" env -i $(serve_env "$mode") "$pgw" serve --no-env-file --listen 127.0.0.1:0)"
    spid="$(cat "$work/serve-$mode.pid")"
    tgt="s=http://$serve/v1|$token|llm"
    "$load" "$tgt" --rate "$rate" --duration-s 1 --warmup-s 0 >/dev/null
    # 1. a few requests traced call by call: TCP_NODELAY on new sockets, writes and reads per request
    strace -f -qq -p "$spid" -e trace=setsockopt,write,writev,sendto,sendmsg,read,readv,recvfrom,recvmsg \
      -o "$work/calls-$mode" &
    st=$!
    sleep 0.5
    "$load" "$tgt" --rate 20 --duration-s 1 --warmup-s 0 >/dev/null
    sleep 0.3
    kill -INT "$st"; wait "$st" 2>/dev/null || true
    # 2. every syscall counted over N requests
    c0="$(ctx "$spid")"
    strace -f -c -qq -p "$spid" -o "$work/strace-$mode" &
    st=$!
    sleep 0.5
    "$load" "$tgt" --rate "$rate" --duration-s "$(secs "$n" "$rate")" --warmup-s 0 >"$work/load-$mode.json"
    sleep 0.3
    kill -INT "$st"; wait "$st" 2>/dev/null || true
    c1="$(ctx "$spid")"
    stop "serve-$mode"
    echo
    echo "## $label: $n requests at $rate rps ($(cut -c1-160 "$work/load-$mode.json"))"
    echo "20 requests traced: TCP_NODELAY set on $(grep -c 'TCP_NODELAY, \[1\]' "$work/calls-$mode" || true) sockets;" \
      "per request: $(awk '/^[0-9]+ +(write|writev|sendto|sendmsg)\(/ {w++} /^[0-9]+ +(read|readv|recvfrom|recvmsg)\(/ {r++} END {printf "%.2f writes, %.2f reads", w / 20, r / 20}' "$work/calls-$mode")"
    echo "context switches per request (while traced): $(awk -v a="$c0" -v b="$c1" -v n="$n" 'BEGIN {printf "%.2f", (b - a) / n}')"
    awk -v n="$n" '$1 ~ /^[0-9.]+$/ && NF >= 5 {name = $NF; calls = $4; printf "  %-16s %8.2f per request\n", name, calls / n; if (name != "total") t += calls}
      END {printf "  %-16s %8.2f per request\n", "all", t / n}' "$work/strace-$mode" | sort -k2 -nr | head -14
  done
done
if [ "${CALLGRIND:-0}" = 1 ]; then
  for pgw in "$@"; do
    for mode in always client; do
      label="$pgw $mode${SERVE_ENV:+ $SERVE_ENV}"
      # shellcheck disable=SC2046
      serve="$(start "cg-$mode" env -i $(serve_env "$mode") valgrind --tool=callgrind -q \
        --callgrind-out-file="$work/cg-$mode.out" "$pgw" serve --no-env-file --listen 127.0.0.1:0)"
      vpid="$(cat "$work/cg-$mode.pid")"
      tgt="s=http://$serve/v1|$token|llm"
      "$load" "$tgt" --rate "$cg_rate" --duration-s 2 --warmup-s 0 >/dev/null
      callgrind_control -z "$vpid" >/dev/null
      "$load" "$tgt" --rate "$cg_rate" --duration-s "$(secs "$cg_n" "$cg_rate")" --warmup-s 0 >"$work/cgload-$mode.json"
      callgrind_control -d "$vpid" >/dev/null
      sleep 1
      dump="$(ls -t "$work"/cg-"$mode".out* | head -1)"
      ir="$(awk '/^(summary|totals):/ {print $2; exit}' "$dump")"
      echo
      echo "## callgrind, $label: $cg_n requests at $cg_rate rps ($(cut -c1-120 "$work/cgload-$mode.json"))"
      echo "instructions per request: $(awk -v ir="$ir" -v n="$cg_n" 'BEGIN {printf "%.0f", ir / n}')"
      # `head` closes the pipe early; under `pipefail` that must not end the script (it used to
      # stop after the first callgrind run).
      callgrind_annotate --inclusive=yes "$dump" 2>/dev/null | awk 'NR > 20 && /^ *[0-9,]+ / {print}' | head -"${CG_TOP:-40}" | cut -c1-200 || true
      kill "$vpid" 2>/dev/null || true
      wait "$vpid" 2>/dev/null || true
    done
  done
fi
