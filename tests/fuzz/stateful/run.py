#!/usr/bin/env python3
"""Runs the stateful transport fuzzer for a bounded time (make test: suite 'fuzz').

Usage: run.py FUZZER WORKDIR SECONDS
The seed corpus is rebuilt in WORKDIR/corpus: programs made from the rxe captures under
$NDNIC_GOLDEN_DIRS (seeds.py), a few scenarios, and every reproducer kept in
tests/fuzz/stateful/crashes (so a bug found once stays tested). libFuzzer exits non-zero and
writes WORKDIR/crash-* when an input breaks an invariant or crashes; replay one with
  NDNIC_FUZZ_TRACE=1 FUZZER WORKDIR/crash-...
NDNIC_FUZZ_IGNORE=name,... (invariant names as printed) lets a run continue past known ones.
"""
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import seeds  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent


def golden_pcaps():
    for entry in os.environ.get("NDNIC_GOLDEN_DIRS", "").split(":"):
        d = pathlib.Path(entry.split("=", 1)[-1]) if entry else None
        if d and d.is_dir():
            yield from sorted(d.rglob("*.pcap"))


def main():
    fuzzer, workdir, seconds = sys.argv[1], pathlib.Path(sys.argv[2]), int(sys.argv[3])
    corpus = workdir / "corpus"
    shutil.rmtree(corpus, ignore_errors=True)
    corpus.mkdir(parents=True)
    pcaps = list(golden_pcaps())
    if not pcaps:
        print("no golden pcap found for the seed corpus (NDNIC_GOLDEN_DIRS)", file=sys.stderr)
        return 1
    found = seeds.all_seeds(pcaps)
    repro = [prog for prog, _ in seeds.reproducers().values()]
    kept = [k for k in sorted((HERE / "crashes").glob("*")) if k.is_file() and k.suffix != ".md"]
    for s in found + repro + [k.read_bytes() for k in kept]:
        (corpus / hashlib.sha1(s).hexdigest()).write_bytes(s)
    print(f"seed corpus: {len(found)} programs from {len(pcaps)} captures and scenarios, "
          f"{len(repro)} reproducers (seeds.py), {len(kept)} kept fuzzer inputs (crashes/)", flush=True)
    # libFuzzer's own exit code for a crash is 77, which meson reads as "skipped": say 1.
    cmd = [fuzzer, f"-max_total_time={seconds}", "-timeout=30", "-rss_limit_mb=4096",
           "-max_len=16384", "-detect_leaks=0", "-print_final_stats=1", "-error_exitcode=1",
           "-timeout_exitcode=1", f"-artifact_prefix={workdir}/", str(corpus)]
    print(" ".join(cmd), flush=True)
    env = dict(os.environ)
    env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
    rc = subprocess.run(cmd, env=env).returncode
    if rc != 0:
        print(f"fuzz_transport failed (exit {rc}): the input is in {workdir}/crash-* (or timeout-*); "
              "replay it with NDNIC_FUZZ_TRACE=1", file=sys.stderr)
    return 1 if rc == 77 else rc


if __name__ == "__main__":
    sys.exit(main())
