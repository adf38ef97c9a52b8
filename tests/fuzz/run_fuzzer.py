#!/usr/bin/env python3
"""Runs the decoder fuzzer for a bounded time, seeded with every golden frame.

Usage: run_fuzzer.py FUZZER WORKDIR SECONDS
The seed corpus is rebuilt in WORKDIR/corpus from the pcaps under $NDNIC_GOLDEN_DIRS: each
frame on its own (for the decoder) and each capture's first frames as a small pcap (for the
pcap reader). libFuzzer exits non-zero and writes WORKDIR/crash-* when any input crashes.
"""
import hashlib
import os
import pathlib
import shutil
import struct
import subprocess
import sys

PCAP_SEED_FRAMES = 4  # enough records to exercise the reader, small enough to mutate quickly


def golden_pcaps():
    for entry in os.environ.get("NDNIC_GOLDEN_DIRS", "").split(":"):
        d = pathlib.Path(entry.split("=", 1)[-1]) if entry else None
        if d and d.is_dir():
            yield from sorted(d.rglob("*.pcap"))


def seeds(pcap):
    raw = pcap.read_bytes()
    endian = "<" if raw[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    off, records = 24, []
    while off + 16 <= len(raw):
        incl = struct.unpack(endian + "I", raw[off + 8:off + 12])[0]
        records.append(raw[off:off + 16 + incl])
        yield raw[off + 16:off + 16 + incl]
        off += 16 + incl
    yield raw[:24] + b"".join(records[:PCAP_SEED_FRAMES])


def main():
    fuzzer, workdir, seconds = sys.argv[1], pathlib.Path(sys.argv[2]), int(sys.argv[3])
    corpus = workdir / "corpus"
    shutil.rmtree(corpus, ignore_errors=True)
    corpus.mkdir(parents=True)
    n = 0
    for pcap in golden_pcaps():
        for seed in seeds(pcap):
            (corpus / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
            n += 1
    if n == 0:
        print("no golden pcap found for the seed corpus (NDNIC_GOLDEN_DIRS)", file=sys.stderr)
        return 1
    print(f"seed corpus: {len(list(corpus.iterdir()))} distinct inputs from {n} frames and captures", flush=True)
    # -error_exitcode=1: libFuzzer's default (77) is what meson reads as "skipped", so a crash
    # would have passed as a skip.
    cmd = [fuzzer, f"-max_total_time={seconds}", "-timeout=10", "-rss_limit_mb=2048",
           "-max_len=8192", "-print_final_stats=1", "-error_exitcode=1", "-timeout_exitcode=1",
           f"-artifact_prefix={workdir}/", str(corpus)]
    print(" ".join(cmd), flush=True)
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main())
