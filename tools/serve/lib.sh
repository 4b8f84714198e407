# Shared by bench.sh, counts.sh, litellm_compare.sh and openai_sdk_e2e.sh (sourced): a scratch
# directory, background processes that are killed on exit, and `start NAME CMD...`, which runs
# CMD in the background and prints the first line of its stdout (the address it bound), waiting
# up to START_WAIT_S seconds (default 60).
work="$(mktemp -d)"
# Every background process writes "$work/NAME.pid" and cleanup kills those: `start` runs inside
# `$(...)`, a subshell, so a pid list kept in a shell variable would never reach this shell (the
# earlier list did not, and every run left its servers running).
cleanup() {
  for f in "$work"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
start() { # name, command...; prints the first stdout line (the bound address)
  local name="$1"; shift
  "$@" >"$work/$name.out" 2>"$work/$name.err" &
  echo "$!" >"$work/$name.pid"
  for _ in $(seq 1 $(( ${START_WAIT_S:-60} * 10 ))); do
    if [ -s "$work/$name.out" ]; then head -1 "$work/$name.out"; return; fi
    sleep 0.1
  done
  echo "$name did not start: $(cat "$work/$name.err")" >&2; exit 1
}
