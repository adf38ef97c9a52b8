#!/usr/bin/env bash
# Runs every meson test in BUILD, then the unit and transport suites again in BUILD-asan under
# AddressSanitizer and UndefinedBehaviorSanitizer, and ends with one plain summary line
# "tests: N passed, N failed" over both.
# Usage: scripts/run-tests.sh BUILD [meson test args...]
#   NDNIC_SANITIZE=0 skips the sanitizer pass (it builds a second tree: ~3 min on 2 cores).
set -uo pipefail
build=${1:?usage: run-tests.sh BUILD [meson-test-args]}
shift
asan="$build-asan"
logs=("$build/meson-logs/testlog.json")
rm -f "$build/meson-logs/testlog.json" "$asan/meson-logs/testlog.json"

meson test -C "$build" --print-errorlogs "$@"
rc=$?

if [ "${NDNIC_SANITIZE:-1}" != 0 ] && [ $# -eq 0 ]; then
  echo "== the unit, nic and ND suites again under ASan + UBSan ($asan)"
  if [ ! -f "$asan/build.ninja" ]; then
    # b_lundef=false: the sanitizer runtimes resolve some symbols only at load time.
    # b_lto=false: reports name the source as written, and the second tree builds faster.
    meson setup "$asan" -Db_sanitize=address,undefined -Dbuildtype=debugoptimized \
      -Db_lundef=false -Db_lto=false >/dev/null || rc=1
  fi
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  export ASAN_OPTIONS=detect_leaks=0  # DPDK's EAL keeps its allocations until exit by design
  if ninja -C "$asan" tests/wire/test_codec tests/wire/test_crc tests/nic/test_memory \
       tests/nic/test_fault tests/nic/test_backoff tests/nic/test_nic tests/nd_frontend/test_nd_frontend \
       tests/nd_frontend/test_nd_connection tests/telemetry/test_telemetry tests/cm/test_cm_hostile tests/cm/test_cm_state_machine >/dev/null; then
    meson test -C "$asan" --no-rebuild --print-errorlogs codec crc memory fault backoff nic_transport nd_frontend \
      nd_frontend_rtc nd_connection nd_connection_rtc telemetry nd_cm_hostile cm_state_machine || rc=1
    logs+=("$asan/meson-logs/testlog.json")
  else
    echo "sanitizer build failed"
    rc=1
  fi
fi

python3 - "${logs[@]}" <<'PY'
import json, os, sys
records = []
for path in sys.argv[1:]:
    if os.path.exists(path):
        records += [json.loads(l) for l in open(path) if l.strip()]
res = [d["result"] for d in records]
failed = [d for d in records if d["result"] not in ("OK", "EXPECTEDFAIL", "SKIP")]
# CI shows only the end of its log: the failures' names and last lines go last.
for d in failed:
    print(f"== FAILED: {d['name']} ({d['result']}, {d.get('duration', 0):.1f} s); its last lines:")
    out = (d.get("stdout") or "").splitlines() + (d.get("stderr") or "").splitlines()
    for line in out[-30:]:
        print("   " + line)
# A skipped test says why in its banner; a skip must be as visible as a failure.
for d in records:
    if d["result"] == "SKIP":
        why = [l for l in (d.get("stdout") or "").splitlines() if "SKIPPED" in l]
        print(f"== SKIPPED: {d['name']}" + (": " + why[-1].strip("# ") if why else ""))
ok = sum(r in ("OK", "EXPECTEDFAIL") for r in res)
skip = sum(r == "SKIP" for r in res)
print(f"tests: {ok} passed, {len(res) - ok - skip} failed" + (f", {skip} skipped" if skip else "")
      + (" (" + ", ".join(d["name"].split(" / ")[-1] for d in failed) + ")" if failed else ""))
PY
exit $rc
