#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""rig/bench.py TIER_DIR... - one table of what "make bench" measured.

Reads the lines "bench <side> <measure> <htw> <anchor> <unit>" that
tools/htw_bench.c writes (out/bench-user.txt) and bench/htw_kbench.c logs
(out/dmesg.txt) in each tier's directory, and prints a Markdown table: a
row a measure, with htw, its anchor and their ratio in each tier.
"""
import os
import re
import sys

LINE = re.compile(r"bench (user|kernel) (\S+) (\S+) (\S+) (\S+)")


def read_tier(d):
    rows = {}
    for name in ("out/bench-user.txt", "out/dmesg.txt"):
        try:
            text = open(os.path.join(d, name), errors="replace").read()
        except OSError:
            continue
        for m in LINE.finditer(text):
            side, measure, htw, anchor, unit = m.groups()
            rows[(side, measure)] = (htw, anchor, unit)
    return rows


def kernel_name(d):
    try:
        return open(os.path.join(d, "kernel")).read().strip()
    except OSError:
        return os.path.basename(d)


def ratio(htw, anchor):
    try:
        a = float(anchor)
        return "%.2f" % (float(htw) / a) if a else "-"
    except ValueError:
        return "-"


def main(dirs):
    tiers = [(os.path.basename(d), read_tier(d)) for d in dirs]
    keys = []
    for _, rows in tiers:
        for k in rows:
            if k not in keys:
                keys.append(k)
    for d in dirs:
        print("- %s: %s" % (os.path.basename(d), kernel_name(d)))
    print()
    head = "| side | measure | unit |"
    rule = "|---|---|---|"
    for name, _ in tiers:
        head += " %s htw | anchor | ratio |" % name
        rule += "---:|---:|---:|"
    print(head)
    print(rule)
    for side, measure in keys:
        unit = next((r[(side, measure)][2] for _, r in tiers
                     if (side, measure) in r), "")
        line = "| %s | %s | %s |" % (side, measure, unit)
        for _, rows in tiers:
            htw, anchor, _ = rows.get((side, measure), ("-", "-", ""))
            line += " %s | %s | %s |" % (htw, anchor, ratio(htw, anchor))
        print(line)
    return 0 if keys else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
