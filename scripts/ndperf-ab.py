#!/usr/bin/env python3
"""Compares ndperf figures between variants, run by run, with a control.

On a VM whose processors move between runs, one binary's figures drift by more than most
changes are worth, and two builds of the same source can differ by their code's layout alone.
So: build one binary that can do both (the change switched by an environment variable for the
experiment), name each variant by the settings that select it, and let this script alternate
them, rotating the order every round. Give the baseline twice (the second under another label,
for example with a variable the program ignores): the baseline against itself is the control,
and a change is shown only where it beats the baseline in clearly more rounds than the control
does. Variants may also be other ndperf binaries (BIN=path).

  scripts/ndperf-ab.py [--rounds N] [--ndperf PATH] VARIANT... -- NDPERF_ARGS...

  VARIANT   'base' | 'NAME=VALUE[,NAME=VALUE...]' | 'BIN=path[,NAME=VALUE...]'
            (an environment for that variant's runs; BIN= runs that binary instead)

The first two numbers of each result row (ndperf's lines that start with a size) are read:
the figure is column FIG (default 4: send_lat's typical, send_bw's message rate; 2 for
sendinv's cycles/s, 3 for write_bw's Gb/s) of the first row, and, with --witness, divided by the
same column of the second row (raw_lat or raw_bw in the same run: the run's own placement). Each
variant's median and, for each later variant, the rounds in which it was below (--lower) or
above the first variant's figure in the same round are printed.

  scripts/ndperf-ab.py --rounds 30 --witness --lower base CTL=1 MY_SWITCH=1 -- \\
      --poll -T send_lat,raw_lat -s 8 -n 50000
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

ROW = re.compile(r"^ \d+ ")


def parse_variant(text):
    env, binary = {}, None
    if text != "base":
        for part in text.split(","):
            name, sep, value = part.partition("=")
            if not sep or not name:
                sys.exit(f"ndperf-ab: variant '{text}': expected NAME=VALUE pieces")
            if name == "BIN":
                binary = value
            else:
                env[name] = value
    return env, binary


def figure(out, col, witness):
    rows = [line.split() for line in out.splitlines() if ROW.match(line)]
    if not rows or len(rows[0]) <= col or (witness and (len(rows) < 2 or len(rows[1]) <= col)):
        return None
    value = float(rows[0][col])
    return value / float(rows[1][col]) if witness else value


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        sys.exit(__doc__)
    cut = argv.index("--")
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--ndperf", default="build/tools/ndperf/ndperf")
    ap.add_argument("--fig", type=int, default=4, help="column of the figure in ndperf's row")
    ap.add_argument("--witness", action="store_true", help="divide by the second row's figure")
    ap.add_argument("--lower", action="store_true", help="count rounds below the first variant")
    ap.add_argument("variants", nargs="+")
    opts = ap.parse_args(argv[:cut])
    if len(opts.variants) < 2:
        sys.exit("ndperf-ab: give at least two variants (the baseline and one more)")
    variants = [(v, *parse_variant(v)) for v in opts.variants]
    results = {v: [] for v in opts.variants}
    for r in range(opts.rounds):
        k = r % len(variants)
        for label, env, binary in variants[k:] + variants[:k]:
            run = subprocess.run([binary or opts.ndperf, "--"] + argv[cut + 1:], env={**os.environ, **env},
                                 capture_output=True, text=True)
            value = figure(run.stdout, opts.fig, opts.witness)
            if run.returncode != 0 or value is None:
                sys.exit(f"ndperf-ab: variant {label}, round {r + 1}: rc {run.returncode}, no figure\n{run.stdout[-2000:]}"
                         f"{run.stderr[-2000:]}")
            results[label].append(value)
    base = opts.variants[0]
    def fmt(x):
        return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"

    for label in opts.variants:
        vals = results[label]
        line = f"{label:32s} median {fmt(statistics.median(vals))}  [{fmt(min(vals))} .. {fmt(max(vals))}]"
        if label != base:
            wins = sum(1 for a, b in zip(results[base], vals) if (b < a if opts.lower else b > a))
            line += f"  {'below' if opts.lower else 'above'} {base} in {wins} of {opts.rounds} rounds"
        print(line)


if __name__ == "__main__":
    main()
