#!/usr/bin/env bash
# tools/serve/bench.sh PGW [RATES...]: starts `pgw sim` and `pgw serve`, prints the idle RSS, runs
# bench.py (direct vs through serve), stops both by pid. Use a release build of pgw.
set -euo pipefail
pgw="$1"; shift
d="$(mktemp -d)"
env -i "$pgw" sim --listen 127.0.0.1:0 --script "$(dirname "$0")"/../../gateway-cli/tests/fixtures/serve/hello.json >"$d/sim.out" 2>/dev/null & sp=$!
sleep 0.5; sim="$(head -1 "$d/sim.out")"
env -i PGW_SERVE_KEYS=tok-bench-0123456789=bench LLM__SIM__1__BASE_URL="http://$sim/v1" LLM__SIM__1__API_KEY=sk LLM__SIM__1__MODEL=m "$pgw" serve --no-env-file --listen 127.0.0.1:0 >"$d/serve.out" 2>"$d/serve.err" & vp=$!
sleep 0.5; serve="$(head -1 "$d/serve.out")"
sleep 0.5; echo "idle RSS of pgw serve: $(grep VmRSS /proc/$vp/status)"
python3 "$(dirname "$0")"/bench.py "$sim" "$serve" tok-bench-0123456789 "$@" || true
echo "RSS after load: $(grep VmRSS /proc/$vp/status)"
kill "$vp" "$sp"; wait "$vp" "$sp" 2>/dev/null || true
