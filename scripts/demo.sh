#!/usr/bin/env bash
# make demo: nd_demo (the mission over the ND v1 API), then a short ndperf sweep with its plot,
# then a summary: the demo's verdict, the sweep's headline figures, where the plot is.
#
# Each program's whole output goes to a log; the user sees it live without EAL's informational
# lines ("EAL: No free 1048576 kB hugepages reported on node 0"), which are printed, with the
# rest of the log, only when that program failed.
#
# Exit 0 only when nd_demo reported every step ok, ndperf ran every test at every size with its
# data checked, and the plot and JSON were written; 1 otherwise.
# Usage: scripts/demo.sh BUILD [LOG_DIR]         (LOG_DIR default: BUILD/demo-logs)
# Environment: NDNIC_DEMO_NDPERF_ARGS replaces the sweep's ndperf arguments (a failure test
# uses it; the JSON and plot options are added either way). NDNIC_DEMO_EAL_ARGS adds EAL
# arguments to ndperf's (before its `--`): the demo's test raises EAL's log level with it, so
# that EAL prints lines on every machine, not only where it has something to warn of.
set -uo pipefail

build=${1:?usage: demo.sh BUILD [LOG_DIR]}
build=$(cd "$build" && pwd)
logs=${2:-$build/demo-logs}
mkdir -p "$logs"
kPlot=$build/demo-sweep.png
kJson=$build/demo-sweep.json
kSweepTests=send_bw,write_bw,read_bw,send_lat,write_lat,read_lat
read -r -a sweep_args <<<"${NDNIC_DEMO_NDPERF_ARGS:--T $kSweepTests -a -n 50}"
read -r -a eal_args <<<"${NDNIC_DEMO_EAL_ARGS:-}"

# run NAME PROGRAM ARGS...: live output without EAL's lines, whole output in $logs/NAME.log.
run() {
  local name=$1 log=$logs/$1.log
  shift
  echo "\$ ${*#$build/}"
  "$@" 2>&1 | tee "$log" | grep --line-buffered -v '^EAL: '
  local rc=${PIPESTATUS[0]}
  if [ "$rc" != 0 ]; then
    echo "== $name exited $rc; its whole output, EAL's lines included ($log):"
    sed 's/^/   | /' "$log"
  fi
  return "$rc"
}

rm -f "$kPlot" "$kJson"
run nd_demo "$build/tools/nd_demo/nd_demo"
demo_rc=$?
echo
run ndperf "$build/tools/ndperf/ndperf" "${eal_args[@]}" -- "${sweep_args[@]}" --json "$kJson" --plot "$kPlot"
perf_rc=$?

echo
echo "== make demo: summary"
failures=0
demo_ok=$(grep -cE '^  (owner|peer) +ok ' "$logs/nd_demo.log")
demo_fail=$(grep -cE '^  (owner|peer) +FAIL ' "$logs/nd_demo.log")
if [ "$demo_rc" = 0 ] && [ "$demo_fail" = 0 ] && [ "$demo_ok" -gt 0 ] &&
   grep -q '^nd_demo: every step did what it should$' "$logs/nd_demo.log"; then
  echo "  nd_demo  PASS  every step did what it should ($demo_ok ok, 0 FAIL): window bound, WRITE and READ"
  echo "                 through it, SendAndInvalidate (invalidation before the receive), old token refused"
else
  echo "  nd_demo  FAIL  exit status $demo_rc, $demo_ok ok, $demo_fail FAIL (log: $logs/nd_demo.log)"
  failures=$((failures + 1))
fi

# The sweep's headline figures from its JSON; non-zero when a test or a size is missing.
if [ "$perf_rc" = 0 ] && [ -s "$kJson" ] &&
   headline=$(python3 - "$kJson" "${sweep_args[@]}" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
args = sys.argv[2:]
wanted = args[args.index("-T") + 1].split(",") if "-T" in args else None
tests = {t["test"]: t["results"] for t in doc["tests"]}
if wanted and sorted(tests) != sorted(wanted):
    sys.exit(f"ndperf reported tests {sorted(tests)}, asked for {sorted(wanted)}")
sizes = {len(r) for r in tests.values()}
def size(b):
    return f"{b // 1048576} MiB" if b >= 1048576 else f"{b // 1024} KiB" if b >= 1024 else f"{b} B"
rows = 0
for name, results in tests.items():
    if not results:
        sys.exit(f"{name}: no results")
    rows += len(results)
    if "msg_rate_mpps" in results[0]:
        rate = max(results, key=lambda r: r["msg_rate_mpps"])
        bw = max(results, key=lambda r: r["bw_avg_gbps"])
        print(f"           {name:<10} {rate['msg_rate_mpps']:.3f} Mpps at {size(rate['bytes'])}, "
              f"{bw['bw_avg_gbps']:.2f} Gb/s at {size(bw['bytes'])} (best average)")
    else:
        small = min(results, key=lambda r: r["bytes"])
        print(f"           {name:<10} {small['t_typical_us']:.1f} us typical at {size(small['bytes'])}, "
              f"p99 {small['p99_us']:.1f} us")
print(f"  ndperf   PASS  {len(tests)} tests, {rows} sizes in all, every size's data checked "
      f"({doc.get('mode', '?')} mode)", file=sys.stderr)
PY
   ) 2>"$logs/summary.err"; then
  cat "$logs/summary.err"
  echo "$headline"
else
  echo "  ndperf   FAIL  exit status $perf_rc $(cat "$logs/summary.err" 2>/dev/null) (log: $logs/ndperf.log)"
  failures=$((failures + 1))
fi
if [ -s "$kPlot" ]; then
  echo "  plot     $kPlot"
  echo "  JSON     $kJson"
else
  echo "  plot     FAIL  not written ($kPlot)"
  failures=$((failures + 1))
fi
echo "  logs     $logs (every line, EAL's included)"
if [ "$failures" = 0 ]; then
  echo "make demo: PASS (two ndnic nodes in one process on a net_ring pair; figures from a machine"
  echo "  with few processors measure its scheduler as much as ndnic)"
  exit 0
fi
echo "make demo: FAIL ($failures of 3 parts)"
exit 1
