#!/bin/bash
# make bench: the microbenchmarks (perf/), then ndperf's loopback set in one run, and the
# ratios the project tracks, from that run's figures:
#   R1 = send_bw 64 B message rate / raw_bw 64 B packet rate          (goal >= 0.5)
#   R2 = write_bw 64 KiB bandwidth / memcpy 64 KiB bandwidth           (goal >= 0.5)
#   R3 = send_lat 8 B typical half round trip / raw_lat 8 B typical     (goal <= 1.3)
#   R4 = sendinv cycles per second / R1's send_bw message rate          (goal >= 0.4)
# The goals belong here, not to timed tests: a miss is reported, never a failure. The figures
# and ratios are also written to BUILD/bench.json.
#
#   scripts/bench.sh BUILD
set -euo pipefail

BUILD=${1:?usage: $0 BUILD}
NDPERF=$BUILD/tools/ndperf/ndperf
OUT=$BUILD/bench.json
RUN=$BUILD/bench-ndperf.json

echo "== microbenchmarks (perf/)"
for b in "$BUILD"/perf/bench_*; do
  [ -f "$b" ] && [ -x "$b" ] || continue
  echo "-- $(basename "$b")"
  "$b" --benchmark_counters_tabular=true
done

echo
echo "== ndperf, loopback set (both ends in this process over a net_ring pair)"
# Each ratio compares figures of one invocation: same ports, lcores and buffers. MTU 4096 is
# what a RoCE NIC on a 9000-byte link uses and what a write at 64 KiB wants.
"$NDPERF" -- -T send_bw,raw_bw -s 64 -n 200000 --json "$RUN.r1"
"$NDPERF" -- -T write_bw,memcpy -s 65536 -n 20000 -m 4096 --json "$RUN.r2"
"$NDPERF" -- -T send_lat,raw_lat -s 8 -n 20000 --json "$RUN.r3"
"$NDPERF" -- -T sendinv -n 20000 --json "$RUN.r4"

python3 - "$OUT" "$RUN.r1" "$RUN.r2" "$RUN.r3" "$RUN.r4" <<'PY'
import json, sys

out, files = sys.argv[1], sys.argv[2:]
tests = {}
for f in files:
    for t in json.load(open(f))["tests"]:
        tests[t["test"]] = t["results"]

def row(test, size):
    rows = [r for r in tests.get(test, []) if r["bytes"] == size]
    if not rows:
        sys.exit("bench: no %s result at %d bytes" % (test, size))
    return rows[0]

send = row("send_bw", 64)["msg_rate_mpps"]
raw = row("raw_bw", 64)["msg_rate_mpps"]
write = row("write_bw", 65536)["bw_avg_gbps"]
memcpy = row("memcpy", 65536)["bw_avg_gbps"]
lat = row("send_lat", 8)["t_typical_us"]
raw_lat = row("raw_lat", 8)["t_typical_us"]
inv = row("sendinv", 4096)["cycles_per_sec"]
ratios = [
    ("R1", "send_bw 64 B / raw_bw 64 B (message rates)", send / raw, ">=", 0.5,
     "%.3f / %.3f Mpps" % (send, raw)),
    ("R2", "write_bw 64 KiB / memcpy 64 KiB (bandwidth)", write / memcpy, ">=", 0.5,
     "%.2f / %.2f Gb/s" % (write, memcpy)),
    ("R3", "send_lat 8 B / raw_lat 8 B (typical)", lat / raw_lat, "<=", 1.3,
     "%.2f / %.2f us" % (lat, raw_lat)),
    ("R4", "sendinv cycles/s / send_bw 64 B messages/s", inv / (send * 1e6), ">=", 0.4,
     "%.0f / %.0f per s" % (inv, send * 1e6)),
]
print()
print("%-3s %-46s %8s %-10s %s" % ("", "ratio", "value", "goal", "figures"))
report = {"figures": tests, "ratios": {}}
for name, what, v, op, goal, fig in ratios:
    met = v >= goal if op == ">=" else v <= goal
    print("%-3s %-46s %8.3f %-10s %s%s" % (name, what, v, op + " " + str(goal), fig, "" if met else "   (goal missed)"))
    report["ratios"][name] = {"what": what, "value": v, "goal": op + " " + str(goal), "met": met}
json.dump(report, open(out, "w"), indent=1)
print("\nJSON: %s" % out)
PY
