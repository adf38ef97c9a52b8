#!/usr/bin/env python3
"""nd_demo's command line, and the demo as two processes (passive and active).

Usage:
  nd_demo_test.py cli ND_DEMO     --help and usage errors (before EAL starts: no memory line)
  nd_demo_test.py vhost ND_DEMO   the passive and the active side in two processes over
                                  vhost-user (net_vhost <-> net_virtio_user; needs root)

The two-process run passes when both exit 0, neither prints a FAIL step, and each printed the
lines of the steps only it can see (see PASSIVE_LINES and ACTIVE_LINES).
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

TIMEOUT_S = 90
OWNER_IP, PEER_IP = "198.18.61.1", "198.18.61.2"
EAL_STARTED = "ndnic: memory"
PASSIVE_LINES = [
    r"^  owner  ok   accepted the peer 198\.18\.61\.2 \(IB CM REQ/REP/RTU on QP1\): ND_SUCCESS \(0x00000000\)$",
    r"^  owner  ok   window bound over 64 KiB \(read\+write\): token 0x[0-9a-f]+, base 0x[0-9a-f]+$",
    r"^  owner  ok   result 1: the window's invalidate result, ND_SUCCESS \(0x00000000\)$",
    r'^  owner  ok   result 2: the receive, 16 bytes: "done, thank you"$',
    r"^  owner  ok   the window holds the peer's RDMA WRITE \(4 KiB of 0xab at offset 0\)$",
    r"^  owner  ok   the refused WRITE left the window as it was \(no 0xcd in it\)$",
    r"^  owner  ok   the peer's WRITE through the new token 0x[0-9a-f]+ is in the window \(0xef at offset 100\)",
    r"^nd_demo: every step did what it should$",
]
ACTIVE_LINES = [
    r"^  peer   ok   connected to 198\.18\.61\.1:5791 \(IB CM REQ/REP/RTU on QP1\): ND_SUCCESS \(0x00000000\)$",
    r"^  peer   ok   received the window's descriptor: token 0x[0-9a-f]+, base 0x[0-9a-f]+, 64 KiB$",
    r"^  peer   ok   RDMA READ 4 KiB back: ND_SUCCESS \(0x00000000\), the bytes written$",
    r"^  peer   ok   SendAndInvalidate\(token 0x[0-9a-f]+\): ND_SUCCESS \(0x00000000\)$",
    r"^  peer   ok   RDMA WRITE through the old token: ND_REMOTE_ERROR ",
    r"^  peer   ok   the new token differs from the old one$",
    r"^  peer   ok   RDMA WRITE through the new token 0x[0-9a-f]+: ND_SUCCESS \(0x00000000\)$",
    r"^nd_demo: every step did what it should$",
]


def fail(msg, output=""):
    if output:
        sys.stdout.write(output)
    print(f"FAIL: {msg}")
    sys.exit(1)


def cli(tool):
    h = subprocess.run([tool, "--help"], capture_output=True, text=True, timeout=TIMEOUT_S)
    if h.returncode != 0 or "--role=passive" not in h.stdout or EAL_STARTED in h.stdout + h.stderr:
        fail(f"--help: exit {h.returncode}", h.stdout + h.stderr)
    bad = {
        ("--role=sideways",): "--role sideways: passive or active",
        ("--role=active", "--dev=net_null0", "--ip=198.18.61.2"): "--role=active needs --peer",
        ("--role=passive", "--ip=198.18.61.1"): "--role needs --dev and --ip",
        ("--role=passive", "--dev=net_null0", "--ip=198.18.61.1", "--peer=198.18.61.2"): "--peer goes with --role=active",
        ("--role=active", "--dev=net_null0", "--ip=198.18.61.1", "--peer=198.18.61.1"): "--peer must be another address",
        ("--role=passive", "--dev=net_null0", "--ip=198.18.61.300"): "--ip 198.18.61.300: not an IPv4 address",
        ("--role=passive", "--dev=net_null0", "--ip=198.18.61.1", "--wait=0"): "--wait 0: seconds",
        ("--dev=net_null0",): "go with --role",
        ("--role",): "--role needs a value",
        ("--frobnicate",): "unknown argument '--frobnicate'",
    }
    for args, says in bad.items():
        r = subprocess.run([tool, "--"] + list(args), capture_output=True, text=True, timeout=TIMEOUT_S)
        out = r.stdout + r.stderr
        if r.returncode != 2 or says not in r.stderr or EAL_STARTED in out:
            fail(f"{' '.join(args)}: exit {r.returncode}, expected 2 and '{says}' before EAL starts", out)
    print(f"nd_demo: --help and {len(bad)} usage errors as expected")


def check_lines(who, out, patterns):
    lines = out.splitlines()
    failed = [l for l in lines if re.match(r"^  \S*\s+FAIL ", l)]
    if failed:
        return f"{who}: failed steps: {failed}"
    for p in patterns:
        if not any(re.search(p, l) for l in lines):
            return f"{who}: no line /{p}/"
    return None


def vhost(tool):
    if os.geteuid() != 0:
        fail("the vhost-user test needs root (CI runs as root); not skipping")
    with tempfile.TemporaryDirectory(prefix="nd_demo-vhost.") as d:
        sock = pathlib.Path(d) / "vhost.sock"
        # One processor for each side's device worker; the narrating threads mostly sleep.
        passive = subprocess.Popen(
            [tool, "--lcores", "0@(0,1),1@0", "--", "--role=passive", f"--dev=net_vhost0,iface={sock}",
             f"--ip={OWNER_IP}", "--wait=30"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            for _ in range(200):
                if sock.exists():
                    break
                time.sleep(0.05)
            active = subprocess.run(
                [tool, "--lcores", "0@(0,1),1@1", "--", "--role=active", f"--dev=net_virtio_user0,path={sock}",
                 f"--ip={PEER_IP}", f"--peer={OWNER_IP}", "--wait=30"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S)
            passive_out, _ = passive.communicate(timeout=TIMEOUT_S)
        finally:
            if passive.poll() is None:
                passive.kill()
    out = "".join(f"[passive] {l}\n" for l in passive_out.splitlines()) + \
        "".join(f"[active]  {l}\n" for l in active.stdout.splitlines())
    if passive.returncode != 0 or active.returncode != 0:
        fail(f"passive exit {passive.returncode}, active exit {active.returncode}", out)
    problem = check_lines("passive", passive_out, PASSIVE_LINES) or check_lines("active", active.stdout, ACTIVE_LINES)
    if problem:
        fail(problem, out)
    sys.stdout.write(out)
    print("nd_demo: passive and active in two processes did every step")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("cli", "vhost"):
        print(__doc__)
        sys.exit(2)
    {"cli": cli, "vhost": vhost}[sys.argv[1]](sys.argv[2])


if __name__ == "__main__":
    main()
