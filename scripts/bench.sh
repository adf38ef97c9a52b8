#!/bin/bash
# make bench: the microbenchmarks (perf/), then the ratios the project tracks, each from one
# ndperf run (same ports, lcores and buffers), in both completion modes (polled and Notify):
#   R1 = send_bw 64 B message rate / raw_bw 64 B packet rate          (goal >= 0.5)
#   R2 = write_bw 64 KiB bandwidth / memcpy 64 KiB bandwidth           (goal >= 0.5)
#   R3 = send_lat 8 B typical half round trip / raw_lat 8 B typical     (goal <= 1.3)
#   R4 = sendinv cycles per second / R1's send_bw message rate          (goal >= 0.4)
# and the scale-out ratio, on worker lcores:
#   R6 = send_bw 64 B, 8 QPs on 4 worker lcores and 4 application threads per node
#        / 1 QP on 1 worker lcore and 1 thread                       (goal >= 3.5)
# ndperf picks its progress mode for the machine (run to completion where processors are few,
# worker lcores where each has one) and says which in its first line; NDNIC_BENCH_PROGRESS
# (workers|thread) forces one. On fewer processors than busy threads the figures measure the
# scheduler as much as ndnic (ratios, not absolute claims). The goals belong here, not to timed
# tests: a miss is reported, never a failure. Everything is also written to BUILD/bench.json.
# The ndperf runs are repeated NDNIC_BENCH_PASSES times (default 5) and each row gives the
# median of its ratio over the passes, each pass's ratio still from one ndperf run, with the
# spread beside it: on a machine whose processors are shared (a VM), one pass's ratios move by
# half or more between minutes.
# Last, libfabric: fi_pingpong over the ndnic provider beside libfabric's tcp provider on the
# same veth pair and cores (scripts/bench-fabric.sh, BUILD/bench-fabric.json).
#
#   scripts/bench.sh BUILD            NDNIC_BENCH_MICRO=0 skips the microbenchmarks,
#                                     NDNIC_BENCH_FABRIC=0 the libfabric comparison
#
# NDNIC_BENCH_NDPERF, a command, runs ndperf instead of BUILD's (BUILD then only takes the
# results): on the 16-core machine, the build staged by ../shared/device-bench/stage.sh, e.g.
#   NDNIC_BENCH_NDPERF="bash .devbench/run.sh ndperf" NDNIC_BENCH_MICRO=0 NDNIC_BENCH_FABRIC=0 \
#     bash scripts/bench.sh "$OUT/bench"
# NDNIC_BENCH_STATS=1 adds --stats to every ndperf run: each node's counters and where its
# threads' time went, where no profiler runs.
set -euo pipefail

BUILD=${1:?usage: $0 BUILD}
if [ -n "${NDNIC_BENCH_NDPERF:-}" ]; then
  read -r -a NDPERF <<< "$NDNIC_BENCH_NDPERF"
  mkdir -p "$BUILD"
else
  NDPERF=("$BUILD/tools/ndperf/ndperf")
fi
OUT=$BUILD/bench.json
PASSES=${NDNIC_BENCH_PASSES:-5}
[[ "$PASSES" =~ ^[1-9][0-9]*$ ]] || { echo "bench: NDNIC_BENCH_PASSES=$PASSES is not a count" >&2; exit 2; }
RUN=$BUILD/bench-ndperf
PROGRESS=()
[ -n "${NDNIC_BENCH_PROGRESS:-}" ] && PROGRESS=(--progress="$NDNIC_BENCH_PROGRESS")
STATS=()
[ "${NDNIC_BENCH_STATS:-0}" != 0 ] && STATS=(--stats)

if [ "${NDNIC_BENCH_MICRO:-1}" != 0 ]; then
  echo "== microbenchmarks (perf/)"
  for b in "$BUILD"/perf/bench_*; do
    [ -f "$b" ] && [ -x "$b" ] || continue
    echo "-- $(basename "$b")"
    "$b" --benchmark_counters_tabular=true
  done
  echo
fi

# EAL lcores for a run with N worker lcores and A application threads: the application
# threads on the first A processors, the workers on the next ones (wrapping where there are
# fewer).
lcores_for() {
  python3 - "$1" "$2" <<'PY'
import os, sys
n, a = int(sys.argv[1]), int(sys.argv[2])
cpus = sorted(os.sched_getaffinity(0))
app = cpus[:a] if len(cpus) > 1 else cpus
rest = cpus[len(app):] or cpus
m = "0@(%s)" % ",".join(map(str, app))
for w in range(n):
    m += ",%d@%d" % (w + 1, rest[w % len(rest)])
print(m)
PY
}

echo "== ndperf, loopback (both ends in this process over a net_ring pair), $PASSES passes"
for pass in $(seq 1 "$PASSES"); do
  echo "-- pass $pass of $PASSES"
  P=$RUN.p$pass
  # MTU 4096 for R2: what a RoCE NIC on a 9000-byte link uses and what a write at 64 KiB wants.
  for wait in poll events; do
    flag=--poll
    [ $wait = events ] && flag=-e
    "${NDPERF[@]}" -- "${PROGRESS[@]}" "${STATS[@]}" $flag -T send_bw,raw_bw -s 64 -n 200000 --json "$P.r1.$wait.json"
    "${NDPERF[@]}" -- "${PROGRESS[@]}" "${STATS[@]}" $flag -T write_bw,memcpy -s 65536 -n 20000 -m 4096 --json "$P.r2.$wait.json"
    "${NDPERF[@]}" -- "${PROGRESS[@]}" "${STATS[@]}" $flag -T send_lat,raw_lat -s 8 -n 20000 --json "$P.r3.$wait.json"
    "${NDPERF[@]}" -- "${PROGRESS[@]}" "${STATS[@]}" $flag -T send_bw,sendinv -s 64 -n 20000 --json "$P.r4.$wait.json"
  done
  # R6: the same message rate over 8 QPs on 4 worker lcores per node, driven by 4 application
  # threads per node (each with its CQ on its worker: --threads), against 1 QP on 1 lcore and 1
  # thread, polled; raw_bw beside each on the same lcores.
  "${NDPERF[@]}" --lcores "$(lcores_for 2 2)" -- --progress=workers "${STATS[@]}" --poll -T send_bw,raw_bw -s 64 -n 200000 \
    --json "$P.r6.one.json"
  "${NDPERF[@]}" --lcores "$(lcores_for 8 8)" -- --progress=workers "${STATS[@]}" --poll -T send_bw,raw_bw -s 64 -q 8 --threads 4 \
    -n 50000 --json "$P.r6.eight.json"
done

python3 - "$OUT" "$RUN" "$PASSES" <<'PY'
import json, sys

out, run, passes = sys.argv[1], sys.argv[2], int(sys.argv[3])

def row(tests, test, size):
    rows = [r for r in tests.get(test, []) if r["bytes"] == size]
    if not rows:
        sys.exit("bench: no %s result at %d bytes" % (test, size))
    return rows[0]

def one_pass(p):
    """The ratios of pass p, each from one ndperf run, and the figures they came from."""
    def load(name):
        tests = {}
        for t in json.load(open("%s.p%d.%s.json" % (run, p, name)))["tests"]:
            tests[t["test"]] = t["results"]
        return tests
    ratios = []
    figures = {}
    for wait in ("poll", "events"):
        r1, r2, r3, r4 = (load("r%d.%s" % (i, wait)) for i in (1, 2, 3, 4))
        figures[wait] = {"r1": r1, "r2": r2, "r3": r3, "r4": r4}
        send = row(r1, "send_bw", 64)["msg_rate_mpps"]
        raw = row(r1, "raw_bw", 64)["msg_rate_mpps"]
        write = row(r2, "write_bw", 65536)["bw_avg_gbps"]
        memcpy = row(r2, "memcpy", 65536)["bw_avg_gbps"]
        lat = row(r3, "send_lat", 8)["t_typical_us"]
        raw_lat = row(r3, "raw_lat", 8)["t_typical_us"]
        inv = row(r4, "sendinv", 4096)["cycles_per_sec"]
        send4 = row(r4, "send_bw", 64)["msg_rate_mpps"]
        mode = "polled" if wait == "poll" else "Notify"
        ratios += [
            ("R1", mode, "send_bw 64 B / raw_bw 64 B (message rates)", send / raw, ">=", 0.5,
             "%.3f / %.3f Mpps" % (send, raw)),
            ("R2", mode, "write_bw 64 KiB / memcpy 64 KiB (bandwidth)", write / memcpy, ">=", 0.5,
             "%.2f / %.2f Gb/s" % (write, memcpy)),
            ("R3", mode, "send_lat 8 B / raw_lat 8 B (typical)", lat / raw_lat, "<=", 1.3,
             "%.2f / %.2f us" % (lat, raw_lat)),
            ("R4", mode, "sendinv cycles/s / send_bw 64 B messages/s", inv / (send4 * 1e6), ">=", 0.4,
             "%.0f / %.0f per s" % (inv, send4 * 1e6)),
        ]
    one, eight = load("r6.one"), load("r6.eight")
    figures["scale_out"] = {"one": one, "eight": eight}
    s1 = row(one, "send_bw", 64)["msg_rate_mpps"]
    s8 = row(eight, "send_bw", 64)["msg_rate_mpps"]
    ratios.append(("R6", "polled", "send_bw 64 B: 8 QPs, 4 lcores+threads/node / 1", s8 / s1, ">=", 3.5,
                   "%.3f / %.3f Mpps (raw_bw %.3f / %.3f)" % (s8, s1, row(eight, "raw_bw", 64)["msg_rate_mpps"],
                                                             row(one, "raw_bw", 64)["msg_rate_mpps"])))
    return ratios, figures

results = [one_pass(p) for p in range(1, passes + 1)]
print()
print("%-3s %-7s %-46s %8s %-8s %-15s %s" % ("", "mode", "ratio", "median", "goal", "passes' range",
                                             "figures (the median pass)"))
report = {"passes": passes, "figures": [f for _, f in results], "ratios": []}
for i, (name, mode, what, _, op, goal, _) in enumerate(results[0][0]):
    values = [r[i][3] for r, _ in results]
    # The median pass's own figures (the lower middle one for an even count), so the row's
    # value is a ratio one ndperf run measured.
    mid = sorted(range(passes), key=lambda p: values[p])[(passes - 1) // 2]
    v, fig = values[mid], results[mid][0][i][6]
    met = v >= goal if op == ">=" else v <= goal
    spread = "%.3f-%.3f" % (min(values), max(values))
    print("%-3s %-7s %-46s %8.3f %-8s %-15s %s%s" % (name, mode, what, v, op + " " + str(goal), spread, fig,
                                                     "" if met else "   (goal missed)"))
    report["ratios"].append({"name": name, "mode": mode, "what": what, "value": v, "goal": op + " " + str(goal),
                             "met": met, "figures": fig, "passes": values, "median_pass": mid + 1})
json.dump(report, open(out, "w"), indent=1)
print("\nJSON: %s" % out)
PY

[ "${NDNIC_BENCH_FABRIC:-1}" = 0 ] && exit 0
echo
echo "== libfabric: fi_pingpong, ndnic provider vs tcp provider (scripts/bench-fabric.sh)"
"$(dirname "$0")/bench-fabric.sh" "$BUILD"
