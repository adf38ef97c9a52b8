#!/usr/bin/env python3
"""Instructions the datapath spends, counted by callgrind: the figures the per-packet work is
measured by where time is not to be trusted (a VM whose processors move, a run beside other
work). A count is the same run after run, on any x86-64 machine with the same build.

  scripts/instr-count.py [BUILD]        (default: build; needs valgrind: apt-get install valgrind)

Prints, from perf/bench_datapath run under callgrind, only the benchmark's measured part
counted:
  BM_stream SEND 64 B    per message: post, send, receive, ACK and both completions, one lcore
                         pair's work divided by the messages the responder took
  BM_pingpong SEND 8 B   per round trip: two messages and their ACKs, both ends in one thread
  BM_idle_iteration      per look at an idle engine: what run to completion pays for each empty
                         poll of a CQ (Device::progress on a connected QP with nothing to do)
Counts are of the PCLMUL CRC path where valgrind lacks AVX-512 (as it does up to 3.19).
"""
import os
import re
import subprocess
import sys
import tempfile

CASES = [
    # (label, benchmark filter, functions whose calls are counted, what to divide by, unit)
    ("BM_stream SEND 64 B", "BM_stream/SEND/64/", ["*post_requests*", "*finish_exchange*"],
     r"ndnic::nic::responder_packet\(", "per message"),
    ("BM_pingpong SEND 8 B", "BM_pingpong", ["*PingPong::round*"],
     r"PingPong::round\(", "per round trip"),
    ("BM_idle_iteration", "BM_idle_iteration", ["ndnic::nic::Device::progress()"],
     r"ndnic::nic::Shard::poll_once\(", "per look"),
]


def totals_and_calls(path, pattern):
    """The run's instruction total and how many calls went to functions matching pattern."""
    names, total, calls, target = {}, 0, 0, None
    with open(path) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                total = int(line.split()[1])
                continue
            m = re.match(r"(c?)fn=\((\d+)\)(?: (.*))?", line)
            if m:
                if m.group(3):
                    names[m.group(2)] = m.group(3)
                if m.group(1):
                    target = names.get(m.group(2), "")
                continue
            if line.startswith("calls=") and target and re.search(pattern, target):
                calls += int(line[6:].split()[0])
    return total, calls


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    bench = os.path.join(build, "perf", "bench_datapath")
    if not os.access(bench, os.X_OK):
        sys.exit(f"instr-count: no {bench}: build first (make build)")
    if subprocess.run(["which", "valgrind"], capture_output=True).returncode != 0:
        sys.exit("instr-count: valgrind is not installed (apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        for label, flt, toggles, divide_by, unit in CASES:
            out = os.path.join(tmp, "callgrind.out")
            cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--collect-atstart=no"]
            cmd += [f"--toggle-collect={t}" for t in toggles]
            # Twenty runs, so thousands of messages even where one run makes one iteration (a busy
            # machine, valgrind's slowness): the setup's one-time work is then spread thin
            # and the count repeats within a few instructions per message.
            cmd += [bench, "--no-huge", "-m", "512", f"--benchmark_filter={flt}", "--benchmark_repetitions=20"]
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0 or not os.path.exists(out):
                sys.exit(f"instr-count: {label}: callgrind run failed:\n{run.stderr[-2000:]}")
            total, calls = totals_and_calls(out, divide_by)
            if calls == 0:
                sys.exit(f"instr-count: {label}: no calls matched {divide_by} (inlined in this build?)")
            print(f"{label:22s} {total / calls:9.1f} instructions {unit}  ({total} over {calls})")


if __name__ == "__main__":
    main()
