#!/usr/bin/env python3
"""The report of bench/cold-trees.sh: W14 and W15 against the peers and the device's limit.

    cold_report.py RAW OUT HEADER TREES

RAW holds index.tsv (json, loop kind, case, tool, cold|warm), one hyperfine JSON per run,
fio-<kind>-<fs>-<rw>.json and rss.tsv. Times are medians of the rounds; the read-only limit
of a round is the faster of its two read-only passes.
"""
import collections
import json
import os
import statistics
import sys

PEERS = ["cpz", "fcp", "xcp"]
READERS = ["read-tar", "read-16", "read-meta"]


def load(raw):
    """(kind, case, tool, temp) -> list of (wall, sys, ok), in run order."""
    runs = collections.defaultdict(list)
    for line in open(os.path.join(raw, "index.tsv")):
        path, kind, case, tool, temp, group = line.rstrip("\n").split("\t")
        # The curve's own runs of the default are kept apart from the main rounds.
        if group == "curve" and tool in ("mimeo", "mimeo-before"):
            tool = {"mimeo": "mimeo-default", "mimeo-before": "before-default"}[tool]
        try:
            r = json.load(open(path))["results"][0]
        except (OSError, ValueError, IndexError, KeyError):
            continue
        ok = all(c == 0 for c in r.get("exit_codes", [0]))
        runs[(kind, case, tool, temp)].append((r["times"][0], r["system"], ok))
    return runs


def med(v):
    return statistics.median(v) if v else float("nan")


def fio(raw, kind, fs, rw):
    try:
        job = json.load(open(os.path.join(raw, f"fio-{kind}-{fs}-{rw}.json")))["jobs"][0]["read"]
    except (OSError, ValueError, IndexError, KeyError):
        return None
    return job["bw_bytes"] / 2**20, job["iops"]


def limit(runs, kind, case):
    """Per round, the faster read-only pass; their median, and which won how often."""
    a = [w for w, _, ok in runs.get((kind, case, "read-tar", "cold"), []) if ok]
    b = [w for w, _, ok in runs.get((kind, case, "read-16", "cold"), []) if ok]
    best = [min(x, y) for x, y in zip(a, b)] or a or b
    return med(best), med(a), med(b)


def main():
    raw, out, header, trees = sys.argv[1:5]
    runs = load(raw)
    kinds = list(dict.fromkeys(k for k, *_ in runs))
    cases = list(dict.fromkeys(c for _, c, *_ in runs))
    lines = []
    w = lines.append
    w("# W14 and W15: tree copies from a cold cache, against the device's limit")
    w("")
    w(f"- {header}")
    w(f"- {trees}")
    w("- `drop_caches` before every cold run; the tools take turns, the order rotating each round;")
    w("  one hyperfine run per tool per round; medians of the rounds (spread min-max).")
    w("- peers at their defaults (xcp `-r`). Read-only limit: 16 `cat`s fed by `find | xargs -P 16`")
    w("  beside a `find -ls` (and, if it ran, `tar -cf - SRC | cat` when faster in a round);")
    w("  within XFS (clones, no file data read) the median of a metadata pass (16 `find -ls`) if faster.")
    w("- the machine is shared with other builds: compare ratios within a row, not times.")
    for kind in kinds:
        w("")
        w(f"## {kind} loop devices" if kind != "plain" else "## the machine's own disk")
        w("")
        w("| device | sequential read (1 MiB) | random read (4 KiB, depth 32) |")
        w("|---|---|---|")
        for fs in ("xfs", "btrfs", "ext4", "disk"):
            s, r = fio(raw, kind, fs, "read"), fio(raw, kind, fs, "randread")
            if s and r and s[0] > 0:
                w(f"| {fs} | {s[0]:.0f} MiB/s | {r[1]:.0f} IOPS ({r[0]:.0f} MiB/s) |")
            elif fs == "disk" and kind == "plain":
                w("| disk | - (not readable raw while mounted here) | - |")
        w("")
        w("| case | mimeo | fastest peer | mimeo / fastest peer | read-only limit | mimeo / limit | peer / limit | mimeo sys / peer sys | ≤ 0.6× |")
        w("|---|---|---|---|---|---|---|---|---|")
        notes = []
        for case in cases:
            m = runs.get((kind, case, "mimeo", "cold"))
            if not m:
                continue
            mw, ms = med([x[0] for x in m]), med([x[1] for x in m])
            peers = {}
            for p in PEERS:
                v = [x for x in runs.get((kind, case, p, "cold"), []) if x[2]]
                if v:
                    peers[p] = (med([x[0] for x in v]), med([x[1] for x in v]))
            lim = limit(runs, kind, case)[0]
            meta = [x[0] for x in runs.get((kind, case, "read-meta", "cold"), []) if x[2]]
            if meta:
                lim = min(lim, med(meta))
            if not peers:
                continue
            best = min(peers, key=lambda p: peers[p][0])
            pw, ps = peers[best]
            ok = "met" if mw / pw <= 0.6 else "not met"
            before = [x[0] for x in runs.get((kind, case, "mimeo-before", "cold"), [])]
            if before:
                notes.append(f"| {case} | {med(before):.2f} s | {mw:.2f} s | {mw / med(before):.2f}× "
                             f"| {med(before) / pw:.2f}× | {mw / pw:.2f}× |")
            w(f"| {case} | {mw:.2f} s | {best} {pw:.2f} s | **{mw / pw:.2f}×** | {lim:.2f} s "
              f"| **{mw / lim:.2f}×** | {pw / lim:.2f}× | {ms / ps:.2f}× | {ok} |")
        if notes:
            w("")
            w("| case | before | after | after / before | before / fastest peer | after / fastest peer |")
            w("|---|---|---|---|---|---|")
            lines.extend(notes)
        w("")
        w("| case | " + " | ".join(["mimeo", "before"] + PEERS + READERS) + " |")
        w("|---|" + "---|" * (2 + len(PEERS) + len(READERS)))
        for case in cases:
            row = []
            for t in ["mimeo", "mimeo-before"] + PEERS + READERS:
                v = runs.get((kind, case, t, "cold"), [])
                walls = [x[0] for x in v]
                flag = "" if all(x[2] for x in v) else " (failed)"
                row.append(f"{med(walls):.2f} ({min(walls):.2f}-{max(walls):.2f}){flag}" if v else "-")
            w(f"| {case} | " + " | ".join(row) + " |")
        for temp in ("cold", "warm"):
            tools = [t for t in ("mimeo-default", "before-default", "mimeo-j2", "mimeo-j8", "mimeo-j64")
                     if any((kind, c, t, temp) in runs for c in cases)]
            if not any(t != "mimeo" for t in tools):
                continue
            w("")
            w(f"### `-j` curve, {temp} (median seconds)")
            w("")
            w("| case | " + " | ".join(t.replace("mimeo-j", "-j ").replace("mimeo-", "").replace("-default", " (default)") for t in tools)
              + " | default / best -j |")
            w("|---|" + "---|" * (len(tools) + 1))
            for case in cases:
                meds = {t: med([x[0] for x in runs.get((kind, case, t, temp), [])]) for t in tools}
                d = meds.get("mimeo-default", float("nan"))
                fixed = [v for t, v in meds.items() if t.startswith("mimeo-j") and v == v]
                if not fixed or d != d:
                    continue
                w(f"| {case} | " + " | ".join(f"{meds[t]:.2f}" for t in tools)
                  + f" | {d / min(fixed):.2f}× |")
    rss = os.path.join(raw, "rss.tsv")
    if os.path.exists(rss):
        w("")
        w("## Peak RSS of `mimeo -a`, cold (limit: 64 MiB)")
        w("")
        w("| loop devices | case | peak RSS |")
        w("|---|---|---|")
        for line in open(rss):
            kind, case, kib = line.rstrip("\n").split("\t")
            w(f"| {kind} | {case} | {int(kib) / 1024:.1f} MiB |")
    open(out, "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
