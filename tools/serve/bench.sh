#!/usr/bin/env bash
# The `pgw serve` benchmark, one command: tools/serve/bench.sh [--quick]
#
# Builds pgw and the load generator (release), starts `pgw sim` and `pgw serve` in front of it,
# prints `uptime` and the idle RSS of pgw serve, then runs the open-loop load generator
# (gateway-cli/examples/serve_load.rs, one thread) side by side in one run:
#   1. non-stream chat at 100 and 1000 requests per second: direct to the simulator vs through
#      pgw serve (p50 / p99 and the difference = the added latency), twice: `serve` with the
#      default PGW_SERVE_UPSTREAM_STREAM=always (the upstream call streams) and `serve_client`
#      with PGW_SERVE_UPSTREAM_STREAM=client (a non-stream client gets a non-stream upstream
#      call, like the direct call);
#   2. the maximum sustained rate with p99 under 10 ms: rising rates through pgw serve (and
#      direct) until p99 reaches 10 ms or the achieved rate falls behind;
#   3. streamed requests: time to first token through pgw serve vs direct.
# Every process started here is stopped by its pid. Environment: DURATION_S (default 5),
# RATES (default "100 1000"), MAX_RATES (default "1000 1500 2000 3000 4000 6000 8000"),
# SERVE_WORKERS (pgw serve's PGW_SERVE_WORKERS, default unset = 0), BASELINE_PGW (another pgw
# binary, e.g. a build of an earlier commit: adds the targets `before` and `before_client`, the
# same two serve configurations run by that binary, side by side in the same run), NO_BUILD=1
# (use the release binaries already built).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
duration="${DURATION_S:-5}"
rates="${RATES:-100 1000}"
max_rates="${MAX_RATES:-1000 1500 2000 3000 4000 6000 8000}"
[ "${1:-}" = "--quick" ] && { duration=2; max_rates="2000 4000"; }
[ -n "${NO_BUILD:-}" ] || (cd "$root" && cargo build --quiet --release -p gateway-cli --bin pgw --example serve_load)
pgw="$target/release/pgw"
load="$target/release/examples/serve_load"
. "$here/lib.sh"
sim="$(start sim env -i "$pgw" sim --listen 127.0.0.1:0 --script "$root/gateway-cli/tests/fixtures/serve/hello.json")"
ssim="$(start ssim env -i "$pgw" sim --listen 127.0.0.1:0 --script "$here/bench_stream.json")"
token="tok-bench-0123456789"
serve="$(start serve env -i ${SERVE_WORKERS:+PGW_SERVE_WORKERS=$SERVE_WORKERS} \
  PGW_SERVE_KEYS="$token=bench" PGW_SERVE_CHAT_SCOPES=LLM,STREAMED \
  LLM__SIM__1__BASE_URL="http://$sim/v1" LLM__SIM__1__API_KEY=sk-sim LLM__SIM__1__MODEL=m \
  STREAMED__SIM__1__BASE_URL="http://$ssim/v1" STREAMED__SIM__1__API_KEY=sk-sim STREAMED__SIM__1__MODEL=m \
  "$pgw" serve --no-env-file --listen 127.0.0.1:0)"
serve2="$(start serve2 env -i ${SERVE_WORKERS:+PGW_SERVE_WORKERS=$SERVE_WORKERS} \
  PGW_SERVE_KEYS="$token=bench" PGW_SERVE_UPSTREAM_STREAM=client \
  LLM__SIM__1__BASE_URL="http://$sim/v1" LLM__SIM__1__API_KEY=sk-sim LLM__SIM__1__MODEL=m \
  "$pgw" serve --no-env-file --listen 127.0.0.1:0)"
extra=()
if [ -n "${BASELINE_PGW:-}" ]; then
  before="$(start before env -i PGW_SERVE_KEYS="$token=bench" \
    LLM__SIM__1__BASE_URL="http://$sim/v1" LLM__SIM__1__API_KEY=sk-sim LLM__SIM__1__MODEL=m \
    "$BASELINE_PGW" serve --no-env-file --listen 127.0.0.1:0)"
  before2="$(start before2 env -i PGW_SERVE_KEYS="$token=bench" PGW_SERVE_UPSTREAM_STREAM=client \
    LLM__SIM__1__BASE_URL="http://$sim/v1" LLM__SIM__1__API_KEY=sk-sim LLM__SIM__1__MODEL=m \
    "$BASELINE_PGW" serve --no-env-file --listen 127.0.0.1:0)"
  extra=("before=http://$before/v1|$token|llm" "before_client=http://$before2/v1|$token|llm")
fi
sleep 1
echo "machine: $(nproc) cores; uptime: $(uptime)"
echo "idle RSS of pgw serve: $(awk '/VmRSS/ {print $2, $3}' "/proc/$(cat "$work/serve.pid")/status")"
direct="direct=http://$sim/v1|-|m"
through="serve=http://$serve/v1|$token|llm"
through2="serve_client=http://$serve2/v1|$token|llm"
table() { python3 "$here/bench_table.py" targets; }
echo
echo "## non-stream chat, added latency (DURATION_S=$duration)"
rate_args=(); for r in $rates; do rate_args+=(--rate "$r"); done
"$load" "$direct" "$through" "$through2" "${extra[@]}" "${rate_args[@]}" --duration-s "$duration" | tee "$work/fixed.jsonl" | table
echo
echo "## maximum sustained rate (p99 < 10 ms)"
: >"$work/max.jsonl"
for r in $max_rates; do
  "$load" "$direct" "$through" "$through2" "${extra[@]}" --rate "$r" --duration-s "$duration" >>"$work/max.jsonl"
  if ! python3 "$here/bench_table.py" sustained "$work/max.jsonl"; then break; fi
done
table <"$work/max.jsonl"
python3 "$here/bench_table.py" max "$work/max.jsonl"
echo
echo "## streamed chat, time to first token (100 rps)"
"$load" "direct=http://$ssim/v1|-|m" "serve=http://$serve/v1|$token|streamed" --rate 100 --duration-s "$duration" --stream | table
echo
echo "RSS of pgw serve after the load: $(awk '/VmRSS/ {print $2, $3}' "/proc/$(cat "$work/serve.pid")/status")"
echo "uptime at the end: $(uptime)"
