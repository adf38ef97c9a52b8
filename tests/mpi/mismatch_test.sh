#!/usr/bin/env bash
# ndnic_mpi_check must catch a wrong message: with --corrupt-one, rank 1 spoils one byte of its
# last 1024 B ping-pong reply. Over libfabric's TCP provider, scripts/mpi-demo.sh must then fail,
# and the program must name that byte and count exactly that one mismatch on that line.
# Usage: mismatch_test.sh SOURCE_DIR BUILD_DIR LOG_DIR
set -uo pipefail
src=${1:?usage: mismatch_test.sh SOURCE_DIR BUILD_DIR LOG_DIR}
build=${2:?}
logs=${3:?}
kIterations=10
out=$(mktemp)
trap 'rm -f "$out"' EXIT
NDNIC_MPI_PROVIDER="tcp;ofi_rxm" NDNIC_MPI_ARGS="-n $kIterations --corrupt-one" \
  "$src/scripts/mpi-demo.sh" "$build" "$logs" >"$out" 2>&1
rc=$?
cat "$out"

failures=0
# expect WHAT COUNT REGEX: COUNT lines of the output match REGEX.
expect() {
  local n
  n=$(grep -cE -- "$3" "$out")
  if [ "$n" = "$2" ]; then echo "ok    $1"; else echo "FAIL  $1 ($n lines, not $2)"; failures=$((failures + 1)); fi
}
if [ "$rc" = 1 ]; then echo "ok    mpi-demo exits 1"; else echo "FAIL  mpi-demo exits 1 (was $rc)"; failures=$((failures + 1)); fi
expect "the spoiled byte is named" 1 \
  "^mismatch: pingpong 1024 B, iteration $((kIterations - 1)), from rank 1, byte 512 of 1024 is "
expect "no other mismatch is reported" 1 '^mismatch: '
expect "one mismatch on the 1024 B line" 1 "^pingpong +1024 +$kIterations +[0-9.]+ +[0-9.]+ +[0-9.]+ +1\$"
expect "none on the 14 other lines" 14 '^(pingpong|allreduce|exchange) .* 0$'
expect "the program says FAIL" 1 '^ndnic_mpi_check: FAIL, 1 mismatches'
expect "mpi-demo says FAIL" 1 '^mpi-demo: FAIL \(mpirun exited [1-9][0-9]*; ndnic_mpi_check did not say PASS\)$'
echo "$failures check(s) failed"
[ "$failures" = 0 ]
