#!/usr/bin/env bash
# Runs every meson test in BUILD and ends with the plain summary line "N passed, N failed".
# Usage: scripts/run-tests.sh BUILD [meson test args...]
set -uo pipefail
build=${1:?usage: run-tests.sh BUILD [meson-test-args]}
shift
meson test -C "$build" --print-errorlogs "$@"
rc=$?
log="$build/meson-logs/testlog.json"
if [ -f "$log" ]; then
  python3 - "$log" <<'PY'
import json, sys
res = [json.loads(l)["result"] for l in open(sys.argv[1]) if l.strip()]
ok = sum(r in ("OK", "EXPECTEDFAIL") for r in res)
skip = sum(r == "SKIP" for r in res)
print(f"tests: {ok} passed, {len(res) - ok - skip} failed" + (f", {skip} skipped" if skip else ""))
PY
fi
exit $rc
