#!/usr/bin/env bash
# LiteLLM proxy vs pgw serve, same load, same simulator, same run (not CI):
#   tools/serve/litellm_compare.sh
# Installs `litellm[proxy]` into a virtualenv (LITELLM_VENV, default
# $CARGO_TARGET_DIR/litellm-venv, reused when it already has the `litellm` command), starts
# `pgw sim`, `pgw serve` and `litellm --config` in front of the same simulator, and runs the
# open-loop load generator (gateway-cli/examples/serve_load.rs) against direct, pgw serve and
# LiteLLM at RATES (default "100 1000"), DURATION_S seconds each. Every process started here is
# stopped by its pid.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
duration="${DURATION_S:-5}"
rates="${RATES:-100 1000}"
venv="${LITELLM_VENV:-$target/litellm-venv}"
if [ ! -x "$venv/bin/litellm" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'litellm[proxy]' || {
    echo "litellm[proxy] could not be installed; no comparison" >&2; exit 1; }
fi
(cd "$root" && cargo build --quiet --release -p gateway-cli --bin pgw --example serve_load)
pgw="$target/release/pgw"
load="$target/release/examples/serve_load"
# The scratch directory, `start` and the cleanup that stops every process started (its own
# copy here lost the pids of servers started in `$(...)`, leaving them running).
. "$here/lib.sh"
sim="$(start sim env -i "$pgw" sim --listen 127.0.0.1:0 --script "$root/gateway-cli/tests/fixtures/serve/hello.json")"
token="tok-bench-0123456789"
serve="$(start serve env -i PGW_SERVE_KEYS="$token=bench" \
  LLM__SIM__1__BASE_URL="http://$sim/v1" LLM__SIM__1__API_KEY=sk-sim LLM__SIM__1__MODEL=m \
  "$pgw" serve --no-env-file --listen 127.0.0.1:0)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
cat >"$work/litellm.yaml" <<YAML
model_list:
  - model_name: llm
    litellm_params:
      model: openai/m
      api_base: http://$sim/v1
      api_key: sk-sim
general_settings:
  master_key: sk-$token
YAML
LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_LOG=ERROR NO_PROXY='*' \
  "$venv/bin/litellm" --config "$work/litellm.yaml" --host 127.0.0.1 --port "$port" \
  >"$work/litellm.log" 2>&1 &
echo "$!" >"$work/litellm.pid"
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$port/health/liveliness" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -sf "http://127.0.0.1:$port/health/liveliness" >/dev/null || { tail -20 "$work/litellm.log" >&2; exit 1; }
echo "machine: $(nproc) cores; uptime: $(uptime)"
echo "idle RSS: pgw serve $(awk '/VmRSS/ {print $2, $3}' "/proc/$(cat "$work/serve.pid")/status"); litellm $(ps -o rss= -p "$(cat "$work/litellm.pid")") kB"
rate_args=(); for r in $rates; do rate_args+=(--rate "$r"); done
"$load" "direct=http://$sim/v1|-|m" "serve=http://$serve/v1|$token|llm" \
  "litellm=http://127.0.0.1:$port/v1|sk-$token|llm" "${rate_args[@]}" --duration-s "$duration" |
python3 "$here/bench_table.py" targets
echo "uptime at the end: $(uptime)"
