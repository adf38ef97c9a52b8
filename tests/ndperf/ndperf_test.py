#!/usr/bin/env python3
"""ndperf from the outside: exit status, the tables it prints, the JSON/CSV/PNG it writes.

Usage:
  ndperf_test.py cli NDPERF              --help, usage errors, --plot without gnuplot (no EAL)
  ndperf_test.py run NDPERF [ARGS...]    run NDPERF ARGS (embedded) with --json, --csv and
                                         --plot (when gnuplot exists) and check everything
  ndperf_test.py stdout NDPERF [ARGS...] --json - : stdout is the JSON alone, tables on stderr
  ndperf_test.py sigint NDPERF           Ctrl-C two seconds into a -D 30 run: exit 0, the figures so far
  ndperf_test.py vhost NDPERF [ARGS...]  server and client in two processes over vhost-user
                                         (net_vhost <-> net_virtio_user; needs root), then a
                                         client interrupted by Ctrl-C that says goodbye

What passes for a result: every test asked for is in the JSON with exactly one row per size
of its sweep, in order, with the requested iteration count; every figure positive;
bandwidth consistent with message rate x size; peak >= average; latency min <= typical <= max,
min <= average <= max, p99 <= p99.9 <= max; sendinv cycles > 0; the console shows the same
rows under perftest's headers; the CSV has the same rows; the plot is a PNG. Each test's data
placement is checked by ndperf itself (it exits 1 when a message landed wrong).
"""
import json
import math
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "fixtures"))
import vhost_pair  # noqa: E402

TIMEOUT_S = 120
ALL = ["send_bw", "write_bw", "read_bw", "atomic_bw", "send_lat", "write_lat", "read_lat", "sendinv",
       "raw_bw", "raw_lat", "memcpy"]
SETS = {"loopback": ALL, "rdma": ALL[:8], "bw": ["send_bw", "write_bw", "read_bw", "atomic_bw", "sendinv"],
        "lat": ["send_lat", "write_lat", "read_lat"], "baseline": ["raw_bw", "raw_lat", "memcpy"]}
BW = {"send_bw", "write_bw", "read_bw", "atomic_bw", "raw_bw"}
LAT = {"send_lat", "write_lat", "read_lat", "raw_lat"}
BW_HEADER = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
LAT_HEADER = (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
              "   99% percentile[usec]   99.9% percentile[usec] ")
RESULT_LINE = "-" * 87
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def fail(msg, output=""):
    if output:
        sys.stdout.write(output if output.endswith("\n") else output + "\n")
    print(f"FAIL: {msg}")
    sys.exit(1)


def option(args, short, long):
    """The value of -x V, --long V or --long=V in args, or None."""
    for i, a in enumerate(args):
        if a in (short, long) and i + 1 < len(args):
            return args[i + 1]
        if long and a.startswith(long + "="):
            return a.split("=", 1)[1]
    return None


def parse_size(text):
    scale = {"k": 1 << 10, "m": 1 << 20}.get(text[-1].lower(), 1)
    return int(text[:-1] if scale > 1 else text) * scale


def tests_of(args):
    tests = []
    for i, a in enumerate(args):
        names = None
        if a in ("-T", "--tests") and i + 1 < len(args):
            names = args[i + 1].split(",")
        elif a.startswith("--tests="):
            names = a.split("=", 1)[1].split(",")
        elif a == "--set" and i + 1 < len(args):
            names = SETS[args[i + 1]]
        elif a.startswith("--set="):
            names = SETS[a.split("=", 1)[1]]
        for n in names or []:
            if n not in tests:
                tests.append(n)
    return tests or ALL


def expected_sizes(test, args):
    if test == "atomic_bw":
        return [8]
    if test == "sendinv":
        return [4096]
    if "-a" in args or "--all" in args:
        return [1 << k for k in range(1, 24)]
    one = option(args, "-s", "--size")
    if one:
        return [parse_size(one)]
    return [2] if test in LAT else [65536]


def expected_iters(test, args):
    n = option(args, "-n", "--iters")
    if n is None:
        return None
    qps = int(option(args, "-q", "--qps") or 1)
    # Bandwidth tests (and sendinv) run -n per QP; latency tests and the baselines one stream.
    per_qp = test in {"send_bw", "write_bw", "read_bw", "atomic_bw", "sendinv"}
    return int(n) * (qps if per_qp else 1)


def close(a, b, rel=1e-3):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


def check_row(test, row, out):
    where = f"{test} {row.get('bytes')} B"
    if test in BW:
        keys = ["bytes", "iterations", "bw_peak_gbps", "bw_avg_gbps", "msg_rate_mpps"]
    elif test in LAT:
        keys = ["bytes", "iterations", "t_min_us", "t_max_us", "t_typical_us", "t_avg_us", "t_stdev_us", "p99_us",
                "p999_us"]
    elif test == "sendinv":
        keys = ["bytes", "iterations", "cycles_per_sec"]
    else:
        keys = ["bytes", "iterations", "bw_avg_gbps"]
    if sorted(row) != sorted(keys):
        fail(f"{where}: keys {sorted(row)}, expected {sorted(keys)}", out)
    for k in keys:
        if k != "t_stdev_us" and not row[k] > 0:
            fail(f"{where}: {k} = {row[k]} is not positive", out)
    if test in BW:
        # Gb/s = messages/s x bytes x 8 / 1e9; the JSON carries 9 significant digits.
        if not close(row["bw_avg_gbps"], row["msg_rate_mpps"] * row["bytes"] * 8 / 1000):
            fail(f"{where}: BW average {row['bw_avg_gbps']} Gb/s is not MsgRate x size "
                 f"({row['msg_rate_mpps']} Mpps x {row['bytes']} B)", out)
        if row["bw_peak_gbps"] < row["bw_avg_gbps"] * (1 - 1e-6):
            fail(f"{where}: BW peak {row['bw_peak_gbps']} below BW average {row['bw_avg_gbps']}", out)
    if test in LAT:
        lo, hi = row["t_min_us"], row["t_max_us"]
        if not (lo <= row["t_typical_us"] <= hi and lo <= row["t_avg_us"] <= hi):
            fail(f"{where}: not t_min <= t_typical, t_avg <= t_max: {row}", out)
        if not (lo <= row["p99_us"] <= row["p999_us"] <= hi):
            fail(f"{where}: not t_min <= 99% <= 99.9% <= t_max: {row}", out)


def check_report(args, report, out, mode="embedded", partial=False):
    if report.get("tool") != "ndperf" or report.get("mode") != mode or not isinstance(report.get("tests"), list):
        fail(f"the JSON's top level is not {{tool: ndperf, mode: {mode}, tests: [...]}}: {str(report)[:200]}", out)
    tests = tests_of(args)
    got = [t["test"] for t in report["tests"]]
    if partial:
        if got != tests[:len(got)] or not got:
            fail(f"tests {got}, expected a beginning of {tests}", out)
    elif got != tests:
        fail(f"tests {got}, expected {tests}", out)
    rows = 0
    for t in report["tests"]:
        name = t["test"]
        sizes = [r["bytes"] for r in t["results"]]
        want = expected_sizes(name, args)
        if partial:
            if not sizes or sizes != want[:len(sizes)]:
                fail(f"{name}: sizes {sizes}, expected a beginning of {want}", out)
        elif sizes != want:
            fail(f"{name}: sizes {sizes}, expected {want}", out)
        n = expected_iters(name, args)
        for r in t["results"]:
            if n is not None and not partial and r["iterations"] != n:
                fail(f"{name} {r['bytes']} B: {r['iterations']} iterations, expected {n}", out)
            check_row(name, r, out)
            rows += 1
    return rows


def check_console(report, console):
    """perftest's layout: a dashed line, the column header, one row per JSON row."""
    lines = console.splitlines()
    for t in report["tests"]:
        name = t["test"]
        header = BW_HEADER if name in BW else LAT_HEADER if name in LAT else None
        if header and header not in lines:
            fail(f"{name}: perftest's column header is missing", console)
        for r in t["results"]:
            pattern = rf"^ {r['bytes']}\s+{r['iterations']}\s+\d"
            if not any(re.match(pattern, l) for l in lines):
                fail(f"{name}: no console row for {r['bytes']} B x {r['iterations']}", console)
    if RESULT_LINE not in lines:
        fail("perftest's dashed RESULT_LINE is missing", console)


def check_csv(report, path, out):
    lines = pathlib.Path(path).read_text().splitlines()
    if not lines or not lines[0].startswith("test,bytes,iterations,bw_peak_gbps"):
        fail("the CSV has no header", out)
    want = [(t["test"], r["bytes"], r["iterations"]) for t in report["tests"] for r in t["results"]]
    got = [(f[0], int(f[1]), int(f[2])) for f in (l.split(",") for l in lines[1:])]
    if got != want:
        fail(f"CSV rows {got[:5]}..., expected {want[:5]}...", out)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S, **kw)


def cli(tool):
    p = run([tool, "--help"])
    if p.returncode != 0 or "Usage:" not in p.stdout or "--set" not in p.stdout:
        fail(f"--help: exit {p.returncode}, or no usage text", p.stdout)
    if "ndnic: memory" in p.stdout:
        fail("--help started EAL", p.stdout)
    bad = [
        ["-T", "bogus_bw"], ["--set", "everything"], ["-s", "0"], ["-s", "9M"], ["-s", "12x"], ["-s", "4K", "-a"],
        ["-n", "0"], ["-n", "10", "-D", "5"], ["-D", "0"], ["-q", "0"], ["-q", "65"], ["--threads", "0"], ["--threads", "65"], ["-t", "0"], ["-t", "2000"],
        ["-m", "1000"], ["-m", "9000"], ["--json", "-", "--csv", "-"], ["--plot", "-"], ["--bogus"], ["extra"],
        ["--server", "--client", "198.18.0.1"], ["--server"], ["--client", "198.18.0.1"], ["--dev", "net_null0"],
        ["--client", "300.1.1.1", "--dev", "x", "--ip", "1.2.3.4"], ["--client", "198.18.0.1", "--dev", "x",
        "--ip", "198.18.0.1"], ["--retry", "3"], ["--timeout", "0"], ["-e", "--poll"], ["-p", "0"],
        ["--server", "--dev", "x", "--ip", "1.2.3.4", "-T", "send_bw"], ["-s"], ["--", "-s", "1", "-s"],
    ]
    for args in bad:
        p = run([tool] + args)
        if p.returncode != 2 or "ndperf: " not in p.stdout or "--help" not in p.stdout:
            fail(f"{args}: expected exit 2 and a message naming the problem, got exit {p.returncode}", p.stdout)
        if "ndnic: memory" in p.stdout:
            fail(f"{args}: a usage error started EAL", p.stdout)
    # --plot without gnuplot: said before the run, which does not start.
    with tempfile.TemporaryDirectory(prefix="ndperf-cli.") as d:
        p = run([tool, "--plot", os.path.join(d, "p.png"), "-T", "memcpy"], env={"PATH": d})
        if p.returncode != 1 or "gnuplot" not in p.stdout or "not installed" not in p.stdout:
            fail(f"--plot without gnuplot: exit {p.returncode}, or no clear message", p.stdout)
        if "ndnic: memory" in p.stdout:
            fail("--plot without gnuplot started the run", p.stdout)
        # A result file that cannot be written fails before the run too.
        p = run([tool, "--json", os.path.join(d, "no", "such", "dir.json"), "-T", "memcpy"])
        if p.returncode != 1 or "cannot write" not in p.stdout or "ndnic: memory" in p.stdout:
            fail(f"--json into a missing directory: exit {p.returncode}", p.stdout)
    print(f"ndperf: --help, {len(bad)} usage errors, --plot without gnuplot, an unwritable --json: as expected")


SPLIT = {"send_bw", "write_bw", "read_bw"}


def check_split(args, report, console):
    """--threads N > 1: the tests that split over threads say so in their banner."""
    threads, qps = int(option(args, None, "--threads") or 1), int(option(args, "-q", "--qps") or 1)
    groups = min(threads, qps)
    split = [t["test"] for t in report["tests"] if t["test"] in SPLIT and groups > 1]
    notes = console.count(f"{groups} application threads per node")
    if notes != len(split):
        fail(f"{len(split)} tests split over {groups} threads ({split}), {notes} banners say so", console)


def run_checked(tool, args, eal=()):
    """Runs ndperf with every result file and checks them all; returns the report."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ndperf-run.") as d:
        js, csv, png = os.path.join(d, "r.json"), os.path.join(d, "r.csv"), os.path.join(d, "r.png")
        plot = shutil.which("gnuplot") is not None
        cmd = [tool] + list(eal) + ["--"] + args + ["--json", js, "--csv", csv] + (["--plot", png] if plot else [])
        p = run(cmd)
        if p.returncode != 0:
            fail(f"{' '.join(cmd)}: exit {p.returncode}", p.stdout)
        report = json.loads(pathlib.Path(js).read_text())
        rows = check_report(args, report, p.stdout)
        check_console(report, p.stdout)
        check_split(args, report, p.stdout)
        check_csv(report, csv, p.stdout)
        if plot:
            data = pathlib.Path(png).read_bytes()
            if not data.startswith(PNG_MAGIC) or len(data) < 1000:
                fail("--plot did not write a PNG", p.stdout)
    print(f"ndperf {' '.join(args)}: {len(report['tests'])} tests, {rows} rows checked"
          f"{', PNG written' if plot else ' (no gnuplot: no plot)'}; took {time.monotonic() - started:.1f} s")
    return report


def stdout_json(tool, args):
    p = subprocess.run([tool, "--"] + args + ["--json", "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=TIMEOUT_S)
    if p.returncode != 0:
        fail(f"--json -: exit {p.returncode}", p.stdout + p.stderr)
    try:
        report = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        fail(f"--json -: stdout is not JSON alone ({e})", p.stdout)
    check_report(args, report, p.stderr)
    check_console(report, p.stderr)
    print(f"ndperf --json -: stdout is the JSON ({len(report['tests'])} tests), the tables went to stderr")


def interrupt(cmd, after_s, timeout_s=20):
    """Starts cmd, sends SIGINT after `after_s` seconds, returns (exit, stdout, stderr, seconds to exit)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(after_s)
    t = time.monotonic()
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        fail(f"still running {timeout_s} s after SIGINT", out + err)
    return p.returncode, out, err, time.monotonic() - t


def sigint(tool):
    args = ["-T", "send_bw,send_lat,raw_bw", "-D", "30"]
    with tempfile.TemporaryDirectory(prefix="ndperf-int.") as d:
        js = os.path.join(d, "r.json")
        rc, out, err, took = interrupt([tool, "--"] + args + ["--json", js], 2.5)
        if rc != 0:
            fail(f"exit {rc} after SIGINT, expected 0", out + err)
        report = json.loads(pathlib.Path(js).read_text())
    check_report(args, report, out + err, partial=True)
    if [t["test"] for t in report["tests"]] != ["send_bw"]:
        fail("the tests after the interrupted one ran", out + err)
    row = report["tests"][0]["results"][0]
    if not re.search(r"^ndperf: send_bw 65536 B: 1 s, \d+ iterations, [\d.]+ Gb/s$", err, re.M):
        fail("no progress line for the first second of a -D 30 run", err)
    if "interrupted" not in err:
        fail("no word of the interruption", err)
    check_console(report, out)
    print(f"ndperf: SIGINT 2.5 s into -D 30: exit 0 {took:.2f} s later, send_bw row with {row['iterations']} "
          f"iterations, progress lines, the later tests skipped")


def vhost(tool, args):
    if os.geteuid() != 0:
        fail("the vhost-user test needs root (CI runs as root); not skipping")
    with tempfile.TemporaryDirectory(prefix="ndperf-vhost.") as d:
        sock = pathlib.Path(d) / "vhost.sock"
        server_json, client_json = os.path.join(d, "s.json"), os.path.join(d, "c.json")

        def server_cmd(json_path):
            # One processor for each side's device worker; the applications wait with Notify.
            return [tool, "--lcores", "0@(0,1),1@0", "--", "--server", f"--dev=net_vhost0,iface={sock}",
                    "--ip=198.18.61.1", "--json", json_path]

        def client_cmd(extra):
            return [tool, "--lcores", "0@(0,1),1@1", "--", "--client", "198.18.61.1",
                    f"--dev=net_virtio_user0,path={sock}", "--ip=198.18.61.2", "--retry=10"] + extra

        started = time.monotonic()
        c, server_rc, server_out = vhost_pair.run_pair(
            server_cmd(server_json), sock, lambda: run(client_cmd(args + ["--json", client_json])), TIMEOUT_S)
        out = vhost_pair.check_served(fail, server_rc, server_out, c.returncode, c.stdout)
        report = json.loads(pathlib.Path(client_json).read_text())
        rows = check_report(args, report, out, mode="client")
        check_console(report, c.stdout)
        served = json.loads(pathlib.Path(server_json).read_text())
        want = [t for t in tests_of(args) if t != "memcpy"]
        if served.get("mode") != "server" or [t["test"] for t in served["tests"]] != want:
            fail(f"the server's JSON lists {served.get('tests')}, expected {want}", out)
        print(f"ndperf over vhost-user: {len(report['tests'])} tests, {rows} rows checked, the server served "
              f"{len(want)}; took {time.monotonic() - started:.1f} s")

        # The client interrupted: it finishes its size, tells the server no more tests come,
        # and both exit 0.
        sock.unlink(missing_ok=True)
        (rc, cout, cerr, took), server_rc, server_out = vhost_pair.run_pair(
            server_cmd(server_json), sock,
            lambda: interrupt(client_cmd(["-T", "send_bw,write_bw", "-D", "30"]), 2.5), 30)
        out = vhost_pair.both_output(server_out, cout + cerr)
        if rc != 0 or server_rc != 0:
            fail(f"after the client's SIGINT: client exit {rc}, server exit {server_rc}", out)
        if not re.search(r"^ 65536\s+\d+\s+\d", cout, re.M) or "RDMA_Write BW" in cout:
            fail("the interrupted client did not report send_bw alone", out)
        print(f"ndperf over vhost-user, client interrupted: both exit 0 (client {took:.2f} s after SIGINT)")


def stats(tool):
    """--stats: each node prints its port's and QPs' counters, and they agree with each other:
    what one port sent the other received (a net_ring pair loses nothing), and the QP totals
    count the same RoCE frames as the ports."""
    # Zero-copy from 1 KiB on (NDNIC_ZERO_COPY_MIN; the default starts at 2 KiB), so that each
    # packet of these writes is attached where it lies.
    p = run([tool, "--", "-T", "write_bw", "-s", "4096", "-n", "300", "--stats"],
            env=dict(os.environ, NDNIC_ZERO_COPY_MIN="1024"))
    if p.returncode != 0:
        fail("ndperf --stats exited %d" % p.returncode, p.stdout)
    blocks = {}
    for who in ("server", "client"):
        m = re.search(r"---- ndperf %s: counters ----\n(.*?)(?=\n----|\Z)" % who, p.stdout, re.S)
        if not m:
            fail("no counters block for the %s" % who, p.stdout)
        b = m.group(1)
        rx = re.search(r"^  rx +(\d+) +(\d+)$", b, re.M)
        tx = re.search(r"^  tx +(\d+) +(\d+)$", b, re.M)
        head = re.search(r"^  qp +type +state +(.*)$", b, re.M)
        total = re.search(r"^  all +(.*)$", b, re.M)
        roce = re.search(r"rx_roce (\d+)", b)
        if not (rx and tx and head and total and roce):
            fail("the %s's counters block is incomplete" % who, b)
        qp = dict(zip(head[1].split(), total[1].split()))  # the sum row has no type or state
        for name in ("tx_packets", "rx_packets", "retransmits", "tx_zero_copy"):
            if not qp.get(name, "").isdigit():
                fail("the %s's QP table has no %s column" % (who, name), b)
        blocks[who] = dict(rx=(int(rx[1]), int(rx[2])), tx=(int(tx[1]), int(tx[2])),
                           qp_tx=int(qp["tx_packets"]), qp_rx=int(qp["rx_packets"]),
                           retrans=int(qp["retransmits"]), zero_copy=int(qp["tx_zero_copy"]), roce=int(roce[1]))
    s, c = blocks["server"], blocks["client"]
    if s["rx"] != c["tx"] or c["rx"] != s["tx"]:
        fail("the ports disagree: server rx %s tx %s, client rx %s tx %s" % (s["rx"], s["tx"], c["rx"], c["tx"]))
    # 300 writes of 4096 B at MTU 1024: at least 1200 data packets from the client's QPs.
    if c["qp_tx"] < 1200 or s["qp_rx"] < 1200 or c["retrans"] != 0:
        fail("implausible QP totals: %s / %s" % (c, s))
    # Over net_ring each 1024-byte payload goes out where it lies.
    if c["zero_copy"] < 1200 or s["zero_copy"] != 0:
        fail("zero-copy packets: client %d (want >= 1200), server %d (it sends only ACKs)"
             % (c["zero_copy"], s["zero_copy"]))
    for b in (s, c):
        if b["roce"] != b["qp_rx"]:
            fail("RoCE frames at the port (%d) != frames at the QPs (%d)" % (b["roce"], b["qp_rx"]))
    print("stats: ports and QPs agree (client sent %d frames, %d bytes)" % c["tx"])


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("cli", "run", "stdout", "sigint", "vhost", "stats"):
        print(__doc__)
        sys.exit(2)
    mode, tool, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    # run: EAL's arguments, if any, before a "--"
    eal = args[:args.index("--")] if "--" in args else []
    args = args[args.index("--") + 1:] if "--" in args else args
    {"cli": lambda: cli(tool), "run": lambda: run_checked(tool, args, eal), "stdout": lambda: stdout_json(tool, args),
     "sigint": lambda: sigint(tool), "vhost": lambda: vhost(tool, args), "stats": lambda: stats(tool)}[mode]()


if __name__ == "__main__":
    main()
