#!/usr/bin/env python3
"""ndperf --perftest (perftest's protocol and message flow, tools/ndperf/perftest/), run as a
user runs it.

  perftest_test.py loopback NDPERF   server and client in two processes over vhost-user
                                     (net_vhost <-> net_virtio_user; root): send_bw and
                                     write_lat, every size 2 B .. 8 MiB (-a); both exit 0 and
                                     print one row per size with the iterations asked (write_lat
                                     checks every byte of each size's last message on both sides)
  perftest_test.py errors NDPERF     bad command lines (exit 2, before EAL), and a peer that is
                                     wrong: an old perftest version, a malformed hand shake
                                     line, a client with other parameters (exit 1, saying why)

The peers in `errors` are a scripted perftest server (its side of the TCP exchange, byte for
byte) and ndperf itself; ndnic stands on a net_null port there (no traffic is needed).
"""
import os
import pathlib
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

TIMEOUT_S = 150
ROW = re.compile(r"^ +(\d+) +(\d+) +[\d.]+ +[\d.]+", re.M)


def fail(what, output=""):
    print(f"FAIL: {what}")
    if output:
        print(output[-6000:])
    sys.exit(1)


def rows(text):
    return [(int(m.group(1)), int(m.group(2))) for m in ROW.finditer(text)]


def run(cmd, timeout=TIMEOUT_S):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)


def pair(tool, sock_dir, test, server_args, client_args, port):
    """ndperf --perftest server and client over vhost-user; (server rc, out), (client rc, out)."""
    sock = pathlib.Path(sock_dir) / f"{test}.sock"
    common = ["--perftest", test, "-p", str(port)]
    server = subprocess.Popen(
        [tool, "--lcores", "0@0", "--", *common, "--server", f"--dev=net_vhost0,iface={sock}",
         "--ip=198.18.63.1", *server_args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(200):
            if sock.exists():
                break
            time.sleep(0.05)
        client = run([tool, "--lcores", "0@1", "--", *common, "--client", "127.0.0.1",
                      f"--dev=net_virtio_user0,path={sock}", "--ip=198.18.63.2", "--retry=10", *client_args])
        server_out, _ = server.communicate(timeout=TIMEOUT_S)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    return (server.returncode, server_out), (client.returncode, client.stdout)


def loopback(tool):
    if os.geteuid() != 0:
        fail("the vhost-user test needs root (CI runs as root); not skipping")
    iters = 20
    want = [(1 << e, iters) for e in range(1, 24)]
    with tempfile.TemporaryDirectory(prefix="ndperf-perftest.") as d:
        for i, test in enumerate(["send_bw", "write_lat"]):
            t0 = time.monotonic()
            args = ["-a", "-n", str(iters)]
            (src, sout), (crc, cout) = pair(tool, d, test, args, args, 18620 + i)
            both = f"[server]\n{sout}\n[client]\n{cout}"
            if src != 0 or crc != 0:
                fail(f"{test}: server exit {src}, client exit {crc}", both)
            for side, out in (("server", sout), ("client", cout)):
                if rows(out) != want:
                    fail(f"{test}: the {side} printed rows {rows(out)}, expected one per size 2 .. 8M "
                         f"with {iters} iterations", both)
                if "ndperf: done" not in out:
                    fail(f"{test}: the {side} did not end with its counters line", both)
            # a row's figures are numbers above zero (bandwidth average, latency typical)
            for line in cout.splitlines():
                m = ROW.match(line)
                if m and not all(float(x) > 0 for x in line.split()[3:5]):
                    fail(f"{test}: a row with a zero figure: {line}", both)
            print(f"ndperf --perftest {test} -a -n {iters}: both sides 23 rows, "
                  f"{time.monotonic() - t0:.1f} s")


class ScriptedPerftestServer:
    """perftest's server side of the TCP exchange; `script(conn)` says what it does."""

    def __init__(self, script):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, args=(script,), daemon=True)
        self.thread.start()

    def _serve(self, script):
        conn, _ = self.sock.accept()
        with conn:
            script(conn)

    def close(self):
        self.thread.join(timeout=10)
        self.sock.close()


def read_n(conn, n):
    b = b""
    while len(b) < n:
        x = conn.recv(n - len(b))
        if not x:
            break
        b += x
    return b


def setup(conn, version=b"6.06"):
    read_n(conn, 16)
    conn.sendall(version.ljust(16, b"\0"))
    read_n(conn, 4)
    conn.sendall(b"\0\0\x10\0")
    read_n(conn, 4)
    conn.sendall(b"\0\0\0\x40")
    read_n(conn, 2)
    conn.sendall(b"3\0")


def against_script(tool, script, test="send_bw"):
    peer = ScriptedPerftestServer(script)
    try:
        return run([tool, "--lcores", "0@0", "--", "--perftest", test, "--client", "127.0.0.1", "-p",
                    str(peer.port), "--dev=net_null0", "--ip=198.18.63.2"], timeout=60)
    finally:
        peer.close()


def expect(p, rc, pattern, what):
    if p.returncode != rc or not re.search(pattern, p.stdout):
        fail(f"{what}: exit {p.returncode} (expected {rc}), output should match {pattern!r}", p.stdout)
    print(f"ok: {what}")


def errors(tool):
    base = ["--perftest", "send_bw", "--server", "--dev", "net_null0", "--ip", "198.18.63.1"]
    for args, pattern, what in [
            (["--perftest", "foo_bw"], r"unknown perftest test 'foo_bw'", "an unknown test"),
            (["--perftest", "send_bw", "--dev", "net_null0", "--ip", "198.18.63.1"],
             r"exactly one of --server and --client", "neither --server nor --client"),
            (["--perftest", "send_bw", "--server", "--ip", "198.18.63.1"], r"needs --dev", "no --dev"),
            (base + ["-a", "-s", "64"], r"-a and -s exclude each other", "-a with -s"),
            (base + ["-n", "4"], r"bad -n '4': 5 \.\. 100000000", "-n below perftest's minimum"),
            (base + ["-m", "1500"], r"bad -m '1500'", "an MTU that is no IB MTU"),
            (base + ["--bogus"], r"unknown option --bogus", "an unknown option")]:
        p = run([tool, *args], timeout=20)
        expect(p, 2, pattern, what)
        if "EAL" in p.stdout or "ndnic: memory" in p.stdout:
            fail(f"{what}: EAL started before the usage error", p.stdout)

    p = against_script(tool, lambda c: setup(c, version=b"5.1"))
    expect(p, 1, r"perftest peer's version 5\.10 is older than 5\.70", "a perftest older than 5.70")

    def bad_line(conn):
        setup(conn)
        read_n(conn, 108)
        conn.sendall(b"0000:0001:00zz11:abcdef:" + b"0" * 83 + b"\0")
    p = against_script(tool, bad_line)
    expect(p, 1, r"first hand shake: malformed hand shake line: byte 12 is not a hex digit",
           "a malformed hand shake line")

    def hang_up(conn):
        setup(conn)
    p = against_script(tool, hang_up)
    expect(p, 1, r"closed the connection where the first hand shake was expected", "a peer that hangs up")

    if os.geteuid() != 0:
        fail("the vhost-user part needs root (CI runs as root); not skipping")
    with tempfile.TemporaryDirectory(prefix="ndperf-perftest.") as d:
        (src, sout), (crc, cout) = pair(tool, d, "write_bw", ["-s", "4096", "-n", "100"],
                                        ["-s", "4096", "-n", "200"], 18630)
        both = f"[server]\n{sout}\n[client]\n{cout}"
        if src != 1 or not re.search(r"perftest client reports 200 iterations of 4096 bytes last; we expected "
                                     r"100 of 4096 \(same -s/-a and -n on both sides\?\)", sout):
            fail(f"a client with another -n: server exit {src}, expected 1 and the reason", both)
        print("ok: a write_bw client with another -n (the server says what differs)")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("loopback", "errors"):
        print(__doc__)
        sys.exit(2)
    {"loopback": loopback, "errors": errors}[sys.argv[1]](sys.argv[2])


if __name__ == "__main__":
    main()
