#!/usr/bin/env python3
"""ndping and ndpingpong from the outside: exit status and the table they print.

Usage:
  ndping_test.py sweep TOOL [ARGS...]   run TOOL ARGS (embedded mode) and check its table
  ndping_test.py cli TOOL               --help and usage errors (no EAL, no devices)
  ndping_test.py vhost TOOL [ARGS...]   server and client in two processes over vhost-user
                                        (net_vhost <-> net_virtio_user; needs root)

A table passes when the program exits 0 and prints the SDK's header and exactly one row per
size of the sweep, in order, each with the requested iteration count, positive Latency, CPU
and Bytes/Sec, and Bytes/Sec agreeing with Latency (ndping: size / latency; ndpingpong, whose
latency is half a round trip and whose rate counts both directions: the same).
The sweep's sizes come from the --max-size/-m or --size/-s and --iters/-n in ARGS.
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "fixtures"))
import vhost_pair  # noqa: E402

TIMEOUT_S = 60
HEADER = re.compile(r"^\s*Size\s+Iter\s+Latency\s+CPU\s+Bytes/Sec\s*$")
ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+\.\d\d)\s+(\d+\.\d\d)\s+(\d+)\s*$")


def fail(msg, output=""):
    if output:
        sys.stdout.write(output)
    print(f"FAIL: {msg}")
    sys.exit(1)


def parse_size(text):
    scale = {"k": 1 << 10, "m": 1 << 20}.get(text[-1].lower(), 1)
    return int(text[:-1] if scale > 1 else text) * scale


def option(args, short, long):
    """The value of -x V, -xV, --long V or --long=V in args, or None."""
    for i, a in enumerate(args):
        if a in (short, long) and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(long + "="):
            return a.split("=", 1)[1]
        if a.startswith(short) and len(a) > len(short) and not a.startswith("--"):
            return a[len(short):]
    return None


def expected_sizes(args):
    one = option(args, "-s", "--size")
    if one:
        return [parse_size(one)]
    top = parse_size(option(args, "-m", "--max-size") or "4M")
    sizes, s = [], 1
    while s <= top:
        sizes.append(s)
        s *= 2
    if sizes[-1] != top:
        sizes.append(top)
    return sizes


def check_table(tool, args, out):
    """Every row present, in order, with sane figures."""
    lines = out.splitlines()
    heads = [i for i, l in enumerate(lines) if HEADER.match(l)]
    if len(heads) != 1:
        fail(f"expected one header line 'Size Iter Latency CPU Bytes/Sec', found {len(heads)}", out)
    if not re.match(r"^Using \d+ processors\. Sender Frequency is \d+$", lines[heads[0] - 2]):
        fail("the SDK's 'Using N processors. Sender Frequency is F' line is missing", out)
    rows = [ROW.match(l) for l in lines[heads[0] + 1:]]
    rows = [r for r in rows if r]
    sizes = expected_sizes(args)
    got = [int(r.group(1)) for r in rows]
    if got != sizes:
        fail(f"row sizes {got}, expected {sizes}", out)
    iters = option(args, "-n", "--iters")
    for r in rows:
        size, n, lat, cpu, rate = int(r.group(1)), int(r.group(2)), float(r.group(3)), float(r.group(4)), int(r.group(5))
        if iters and n != int(iters):
            fail(f"size {size}: {n} iterations, expected {iters}", out)
        if n <= 0 or lat <= 0 or cpu <= 0 or rate <= 0:
            fail(f"size {size}: a figure is not positive: {r.group(0).strip()}", out)
        # Latency is printed to 0.01 us: compare with a tolerance of that rounding, plus 1%.
        lo, hi = size / (lat + 0.005) * 1e6, size / max(lat - 0.005, 1e-9) * 1e6
        if not lo * 0.99 <= rate <= hi * 1.01:
            fail(f"size {size}: Bytes/Sec {rate} does not match Latency {lat} us", out)
    print(f"{tool}: {len(rows)} rows, sizes {sizes[0]}..{sizes[-1]}, all figures positive")


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=TIMEOUT_S, **kw)


def sweep(tool, args):
    started = time.monotonic()
    p = run([tool] + args)
    if p.returncode != 0:
        fail(f"{tool} exited {p.returncode}", p.stdout)
    check_table(os.path.basename(tool), args, p.stdout)
    print(f"took {time.monotonic() - started:.1f} s")


def cli(tool):
    name = os.path.basename(tool)
    p = run([tool, "--help"])
    if p.returncode != 0 or "Usage:" not in p.stdout or "--max-size" not in p.stdout:
        fail(f"--help: exit {p.returncode}, or no usage text", p.stdout)
    if "ndnic: memory" in p.stdout:
        fail("--help started EAL", p.stdout)
    bad = [
        ["--size=0"], ["--size=5M"], ["-m", "3x"], ["-n", "0"], ["--sge=9"], ["--bogus"], ["extra"],
        ["-S", "-c", "198.18.0.1"], ["-S"], ["--dev=net_null0"], ["-c", "198.18.0.1:70000", "--dev=x", "--ip=1.2.3.4"],
        ["-b", "-p"], ["-s", "1", "-m", "2"], ["--retry=3"], ["--timeout=0"],
        ["-c", "198.18.0.1", "--dev=x", "--ip=198.18.0.1"], ["--", "-s", "1", "-s"],
    ]
    if name == "ndpingpong":
        bad.append(["-q", "4"])  # ndping's pipeline option only
    for args in bad:
        p = run([tool] + args)
        if p.returncode != 2 or f"{name}: " not in p.stdout or "--help" not in p.stdout:
            fail(f"{args}: expected exit 2 and a message naming the problem, got exit {p.returncode}", p.stdout)
        if "ndnic: memory" in p.stdout:
            fail(f"{args}: a usage error started EAL", p.stdout)
    print(f"{name}: --help and {len(bad)} usage errors as expected")


def vhost(tool, args):
    if os.geteuid() != 0:
        fail("the vhost-user test needs root (CI runs as root); not skipping")
    name = os.path.basename(tool)
    with tempfile.TemporaryDirectory(prefix="ndping-vhost.") as d:
        sock = pathlib.Path(d) / "vhost.sock"
        # One processor for each device's worker; the applications block (-b) on completions.
        server_cmd = [tool, "--lcores", "0@(0,1),1@0", "--", "-S", f"--dev=net_vhost0,iface={sock}",
                      "--ip=198.18.60.1", "-b"]
        client_args = ["-c", "198.18.60.1", f"--dev=net_virtio_user0,path={sock}", "--ip=198.18.60.2", "-b",
                       "--retry=10"] + args
        c, server_rc, server_out = vhost_pair.run_pair(
            server_cmd, sock, lambda: run([tool, "--lcores", "0@(0,1),1@1", "--"] + client_args), TIMEOUT_S)
    vhost_pair.check_served(fail, server_rc, server_out, c.returncode, c.stdout)
    check_table(name, args, c.stdout)


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("sweep", "cli", "vhost"):
        print(__doc__)
        sys.exit(2)
    mode, tool, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    {"sweep": lambda: sweep(tool, args), "cli": lambda: cli(tool), "vhost": lambda: vhost(tool, args)}[mode]()


if __name__ == "__main__":
    main()
