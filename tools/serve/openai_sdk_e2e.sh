#!/usr/bin/env bash
# End-to-end test of `pgw serve` with the official OpenAI Python SDK (README D33).
#
# Usage: tools/serve/openai_sdk_e2e.sh [path/to/pgw]
# Installs `openai` from the package registry into a virtualenv (PGW_E2E_VENV, default
# $CARGO_TARGET_DIR/openai-sdk-venv, reused when it already imports `openai`); if the registry
# is unreachable it says so LOUDLY and exits 0 with "SKIPPED". Any other install failure fails.
# Run by `cargo test -p gateway-cli --test serve d33_openai_python_sdk_end_to_end` (so in CI).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
pgw="${1:-${CARGO_TARGET_DIR:-$root/target}/debug/pgw}"
[ -x "$pgw" ] || { echo "pgw binary not found at $pgw (build it: cargo build -p gateway-cli)" >&2; exit 1; }
# The scratch directory, `start` and the cleanup that stops every server started (shared with
# bench.sh and counts.sh; this script's own copy never stopped them: `start` runs in `$(...)`).
. "$here/lib.sh"

venv="${PGW_E2E_VENV:-${CARGO_TARGET_DIR:-$root/target}/openai-sdk-venv}"
if ! "$venv/bin/python" -c "import openai" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  if ! "$venv/bin/pip" install --quiet --disable-pip-version-check openai >"$work/pip.log" 2>&1; then
    if grep -qiE "NewConnectionError|ConnectionError|Network is unreachable|name resolution|Name or service not known|ProxyError|timed out|ConnectTimeout" "$work/pip.log"; then
      echo "################################################################" >&2
      echo "# SKIPPED: the package registry is unreachable; the OpenAI SDK #" >&2
      echo "# could not be installed. The SDK end-to-end test did NOT run.  #" >&2
      echo "################################################################" >&2
      tail -5 "$work/pip.log" >&2
      rm -rf "$venv"
      exit 0
    fi
    echo "pip could not install openai (the registry answered):" >&2
    tail -20 "$work/pip.log" >&2
    rm -rf "$venv"
    exit 1
  fi
fi
"$venv/bin/python" -c "import openai; print('openai SDK', openai.__version__)"


chat_sim="$(start chat_sim env -i "$pgw" sim --listen 127.0.0.1:0 --script "$root/gateway-cli/tests/fixtures/serve/retry.json")"
hedge_sim="$(start hedge_sim env -i "$pgw" sim --listen 127.0.0.1:0 --script "$root/gateway-cli/tests/fixtures/serve/hedge_cycle.json")"
broken_sim="$(start broken_sim env -i "$pgw" sim --listen 127.0.0.1:0 --script "$root/gateway-cli/tests/fixtures/serve/stream_truncated.json")"
embed_sim="$(start embed_sim env -i "$pgw" sim --listen 127.0.0.1:0 --script "$root/gateway-cli/tests/fixtures/embed.json")"
token="tok-e2e-0123456789"
serve="$(start serve env -i PGW_SERVE_KEYS="$token=e2e" PGW_SERVE_EMBED_SCOPES=EMBED \
  PGW_SERVE_CHAT_SCOPES=LLM,HEDGED,BROKEN \
  HEDGED__SIM__1__BASE_URL="http://$hedge_sim/v1" HEDGED__SIM__1__API_KEY=sk-sim HEDGED__SIM__1__MODEL=m \
  HEDGED__SIM__2__BASE_URL="http://$hedge_sim/v1" HEDGED__SIM__2__API_KEY=sk-sim HEDGED__SIM__2__MODEL=m \
  HEDGED__HEDGE__AFTER_S=0.2 \
  BROKEN__SIM__1__BASE_URL="http://$broken_sim/v1" BROKEN__SIM__1__API_KEY=sk-sim BROKEN__SIM__1__MODEL=m \
  LLM__SIM__1__BASE_URL="http://$chat_sim/v1" LLM__SIM__1__API_KEY=sk-sim LLM__SIM__1__MODEL=m \
  LLM__RETRY__BACKOFF_BASE_S=0.01 LLM__RETRY__BACKOFF_MAX_S=0.02 \
  EMBED__SIM__1__BASE_URL="http://$embed_sim/v1" EMBED__SIM__1__API_KEY=sk-sim EMBED__SIM__1__MODEL=e \
  "$pgw" serve --no-env-file --listen 127.0.0.1:0)"

PGW_E2E_BASE_URL="http://$serve/v1" PGW_E2E_TOKEN="$token" NO_PROXY='*' \
  "$venv/bin/python" "$here/openai_sdk_e2e.py"
if grep -q "$token\|sk-sim" "$work/serve.err"; then
  echo "a secret appeared in pgw serve's stderr" >&2; exit 1
fi
