#!/usr/bin/env bash
# The README's first command, tested as a user runs it: `make demo` in the source tree (over
# this build, so nothing is compiled twice) must exit 0, end with its summary (the demo's
# verdict, the sweep's headline figures, the plot's path), write the plot, and keep EAL's
# informational lines out of what the user sees. Then a sweep that cannot run must make
# `make demo` fail, say which part failed, and show the failed program's whole output.
# Usage: make_demo_test.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=${1:?usage: make_demo_test.sh SOURCE_DIR BUILD_DIR}
build=$(cd "${2:?}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
check() {  # WHAT COMMAND...
  local what=$1
  shift
  if "$@"; then echo "ok    $what"; else echo "FAIL  $what"; failures=$((failures + 1)); fi
}
has() { grep -qE -- "$2" "$1"; }

echo "== make demo BUILD=$build"
# EAL prints at its default level only what it has to warn of, which varies by machine (a
# fresh one with every hugepage in place prints nothing): info makes its lines certain.
export NDNIC_DEMO_EAL_ARGS=--log-level=lib.eal:info
make -C "$src" --no-print-directory demo BUILD="$build" >"$work/ok.out" 2>&1
rc=$?
cat "$work/ok.out"
check "make demo exits 0 (was $rc)" [ "$rc" = 0 ]
check "no EAL line reaches the user" bash -c "! grep -q '^EAL: ' '$work/ok.out'"
check "the summary's title" has "$work/ok.out" '^== make demo: summary$'
check "the demo's verdict" has "$work/ok.out" '^  nd_demo  PASS  every step did what it should \([0-9]+ ok, 0 FAIL\)'
check "the sweep's verdict" has "$work/ok.out" '^  ndperf   PASS  6 tests, [0-9]+ sizes in all'
for t in send_bw write_bw read_bw; do
  check "headline $t" has "$work/ok.out" "^ +$t +[0-9.]+ Mpps at [0-9]+ [KM]?i?B, [0-9.]+ Gb/s at "
done
for t in send_lat write_lat read_lat; do
  check "headline $t" has "$work/ok.out" "^ +$t +[0-9.]+ us typical at 2 B"
done
check "the plot's path" has "$work/ok.out" "^  plot     $build/demo-sweep.png\$"
check "the plot is a PNG" bash -c "head -c 8 '$build/demo-sweep.png' | od -An -c | grep -q 'P   N   G'"
check "the last line says PASS" has <(tail -2 "$work/ok.out") '^make demo: PASS'
check "EAL's lines are kept in the log" has "$build/demo-logs/ndperf.log" '^EAL: '

# A client whose server never answers: ndperf starts EAL, then fails after 1 s.
echo "== make demo with a sweep that cannot run"
NDNIC_DEMO_NDPERF_ARGS="-T send_bw -s 64 -n 10 --client 198.18.99.2 --dev net_ring0 --ip 198.18.99.1 --retry 1 --timeout 1" make -C "$src" --no-print-directory demo BUILD="$build" \
  >"$work/bad.out" 2>&1
rc=$?
cat "$work/bad.out"
check "make demo exits non-zero (was $rc)" [ "$rc" != 0 ]
check "the demo itself still passed" has "$work/bad.out" '^  nd_demo  PASS'
check "the sweep is named as failed" has "$work/bad.out" '^  ndperf   FAIL  exit status [1-9]'
check "the failed program's whole output is shown" has "$work/bad.out" '^== ndperf exited [1-9][0-9]*; its whole output'
check "... EAL's lines included" has "$work/bad.out" '^   \| EAL: '
check "the summary's last line says FAIL" has <(tail -3 "$work/bad.out") '^make demo: FAIL \(1 of 3 parts\)$'
echo "$failures check(s) failed"
[ "$failures" = 0 ]
