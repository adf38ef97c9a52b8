#!/usr/bin/env python3
"""Checks rping's -v lines: ping i must carry exactly what rping's client puts in its buffer.

    rping_check.py LOG PREFIX COUNT SIZE

LOG holds lines "PREFIXrdma-ping-<i>: <letters>" (rping_test_client's fill with the NUL at
SIZE-1, so SIZE-1 characters); pings 0..COUNT-1 must each appear once, in order, byte for byte.
"""
import sys


def expected(ping, size, start):
    out = bytearray(("rdma-ping-%d: " % ping).encode()[:size])
    c = start
    while len(out) < size:
        out.append(c)
        c = 65 if c + 1 > 122 else c + 1
    return bytes(out[: size - 1])


def main():
    log, prefix = sys.argv[1], sys.argv[2].encode()
    count, size = int(sys.argv[3]), int(sys.argv[4])
    with open(log, "rb") as f:
        lines = [l.rstrip(b"\n") for l in f if l.startswith(prefix)]
    if len(lines) != count:
        print("expected %d lines starting %r, found %d" % (count, prefix.decode(), len(lines)))
        return 1
    start = 65
    for i, line in enumerate(lines):
        want = expected(i, size, start)
        start = 65 if start + 1 > 122 else start + 1
        got = line[len(prefix):]
        if got != want:
            n = min(len(got), len(want))
            at = next((k for k in range(n) if got[k] != want[k]), n)
            print("ping %d differs at byte %d (%d bytes, want %d): %r" % (i, at, len(got), len(want), got[:80]))
            return 1
    print("%d pings of %d bytes verified" % (count, size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
