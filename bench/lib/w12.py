#!/usr/bin/env python3
"""W12: mimeo's Python binding against shutil, in one process, in the same run.

    w12.py --fs NAME=MOUNT [...] --runs N --calls N --repeats N --big-mib N --testkit PATH
           --out PREFIX

On each filesystem, MOUNT/src/usr is the corpus and MOUNT/big a file of --big-mib MiB.
Three cases, each timed with time.perf_counter around the call(s), the two tools in
alternating order from run to run:

- tree:  copytree(corpus, dst, symlinks=True); the copies are compared with mimeo-testkit;
- small: a loop of --calls copy2 calls of one 10 KB file, to new names ("new") and onto one
         name ("replace"): time per call;
- big:   copy2 of the big file to a new name.

Writes PREFIX.json (every timing) and PREFIX.md (ratios mimeo / shutil: median of the
per-run ratios, with their range).
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

import mimeo


def rm(path):
    if os.path.lexists(path):
        shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
    os.sync()


def alternating(n):
    """The two tools' order in each of n runs: each goes first in every other run."""
    for run in range(n):
        yield run, (("shutil", "mimeo") if run % 2 == 0 else ("mimeo", "shutil"))


def timed(f, *args, **kwargs):
    start = time.perf_counter()
    f(*args, **kwargs)
    return time.perf_counter() - start


def tree_case(mnt, runs, testkit):
    src = os.path.join(mnt, "src", "usr")
    out = {"shutil": [], "mimeo": [], "differences": None}
    for run, order in alternating(runs):
        for who in order:
            dst = os.path.join(mnt, f"w12-tree-{who}")
            rm(dst)
            f = shutil.copytree if who == "shutil" else mimeo.copytree
            try:
                out[who].append(timed(f, src, dst, symlinks=True))
            except shutil.Error as e:
                out[who].append(None)
                out.setdefault("errors", {})[who] = len(e.args[0])
        if run == runs - 1:
            diff = subprocess.run(
                [testkit, "compare", os.path.join(mnt, "w12-tree-shutil"),
                 os.path.join(mnt, "w12-tree-mimeo")],
                capture_output=True, text=True, errors="replace",
            )
            out["differences"] = diff.stdout.strip().splitlines()[-1]
    for who in ("shutil", "mimeo"):
        rm(os.path.join(mnt, f"w12-tree-{who}"))
    return out


def small_case(mnt, calls, repeats):
    """copy2 of one 10 KB file, `repeats` blocks of `calls` calls per tool, the tools taking
    turns block by block, so that a change in the machine's load hits both alike."""
    base = os.path.join(mnt, "w12-small")
    rm(base)
    os.makedirs(base)
    src = os.path.join(base, "src")
    with open(src, "wb") as f:
        f.write(os.urandom(10_000))
    out = {}
    for mode in ("new", "replace"):
        out[mode] = {"shutil": [], "mimeo": []}
        for block, order in alternating(repeats):
            for who in order:
                d = os.path.join(base, who)
                rm(d)
                os.makedirs(d)
                names = [os.path.join(d, f"{block}-{i}") for i in range(calls)]
                if mode == "replace":
                    names = [os.path.join(d, "dst")] * calls
                    shutil.copy2(src, names[0])
                f = shutil.copy2 if who == "shutil" else mimeo.copy2
                start = time.perf_counter()
                for n in names:
                    f(src, n)
                out[mode][who].append((time.perf_counter() - start) / calls)
    rm(base)
    return out


def big_case(mnt, runs):
    src = os.path.join(mnt, "big")
    with open(src, "rb") as f:  # in the page cache for both tools
        while f.read(1 << 24):
            pass
    out = {"shutil": [], "mimeo": []}
    for _, order in alternating(runs):
        for who in order:
            dst = os.path.join(mnt, f"w12-big-{who}")
            rm(dst)
            f = shutil.copy2 if who == "shutil" else mimeo.copy2
            out[who].append(timed(f, src, dst))
            rm(dst)
    return out


def ratios(case):
    pairs = [(m, s) for m, s in zip(case["mimeo"], case["shutil"]) if m and s]
    r = [m / s for m, s in pairs]
    return statistics.median(r), min(r), max(r)


def fmt_ratio(case):
    med, lo, hi = ratios(case)
    return f"**{med:.3f}×** ({lo:.3f}–{hi:.3f})"


def fmt_time(xs, unit=1.0, suffix="s"):
    xs = [x for x in xs if x]
    return f"{statistics.median(xs) * unit:.3g} {suffix}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fs", action="append", required=True)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--big-mib", type=int, default=1024)
    p.add_argument("--testkit", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--meta", default="{}")
    p.add_argument("--cases", default="tree,small,big")
    a = p.parse_args()
    results = {"meta": json.loads(a.meta), "fs": {}}
    results["meta"].update(
        python=platform.python_version(), mimeo=mimeo.__version__,
        runs=a.runs, calls=a.calls, repeats=a.repeats, big_mib=a.big_mib,
    )
    for spec in a.fs:
        name, mnt = spec.split("=", 1)
        cases = a.cases.split(",")
        r = {}
        if "tree" in cases:
            print(f"W12 on {name}: tree", file=sys.stderr, flush=True)
            r["tree"] = tree_case(mnt, a.runs, a.testkit)
        if "small" in cases:
            print(f"W12 on {name}: small", file=sys.stderr, flush=True)
            r["small"] = small_case(mnt, a.calls, a.repeats)
        if "big" in cases:
            print(f"W12 on {name}: big", file=sys.stderr, flush=True)
            r["big"] = big_case(mnt, a.runs)
        results["fs"][name] = r
        print(json.dumps(r)[:400], file=sys.stderr, flush=True)
    with open(a.out + ".json", "w") as f:
        json.dump(results, f, indent=1)
    m = results["meta"]
    lines = [
        f"# W12: mimeo's Python binding against shutil ({m.get('date', '')})",
        "",
        f"Machine: {m.get('machine', '')}. Commit {m.get('commit', '')}. Python {m['python']}.",
        f"The machine is shared: other builds and tests ran at the same time, so ratios move by",
        f"10–20 % between runs. Every ratio is mimeo / shutil from the same run, tools in",
        f"alternating order; the figure is the median of the per-run ratios, the range beside it.",
        f"Absolute times are for orientation only. Below 1.00× mimeo is faster.",
        "",
        "| case | target | " + " | ".join(results["fs"]) + " |",
        "|---|---|" + "---|" * len(results["fs"]),
    ]
    fsr = results["fs"]
    cases = a.cases.split(",")
    def row(label, target, pick):
        return f"| {label} | {target} | " + " | ".join(pick(fsr[n]) for n in fsr) + " |"
    if "tree" in cases:
        lines.append(row(f"`copytree` of the corpus ({a.runs} runs)", "≤ 0.2× XFS, btrfs; ≤ 0.5× ext4",
                         lambda r: fmt_ratio(r["tree"])))
    if "small" in cases:
        lines.append(row(f"`copy2` of 10 KB to new names, per call ({a.repeats} blocks of {a.calls})", "≤ 1.0×", lambda r: fmt_ratio(r["small"]["new"])))
        lines.append(row(f"`copy2` of 10 KB onto one name, per call ({a.repeats} blocks of {a.calls})", "≤ 1.0×", lambda r: fmt_ratio(r["small"]["replace"])))
    if "big" in cases:
        lines.append(row(f"`copy2` of {a.big_mib} MiB ({a.runs} runs)", "≤ 0.01× XFS, btrfs", lambda r: fmt_ratio(r["big"])))
    lines += ["", "Absolute medians (mimeo / shutil):", "",
              "| case | " + " | ".join(fsr) + " |", "|---|" + "---|" * len(fsr)]
    if "tree" in cases:
        lines.append("| corpus | " + " | ".join(f"{fmt_time(r['tree']['mimeo'])} / {fmt_time(r['tree']['shutil'])}" for r in fsr.values()) + " |")
    if "small" in cases:
        for mode in ("new", "replace"):
            lines.append(f"| 10 KB {mode}, per call | " + " | ".join(
                f"{fmt_time(r['small'][mode]['mimeo'], 1e6, 'µs')} / {fmt_time(r['small'][mode]['shutil'], 1e6, 'µs')}" for r in fsr.values()) + " |")
    if "big" in cases:
        lines.append(f"| {a.big_mib} MiB | " + " | ".join(f"{fmt_time(r['big']['mimeo'], 1e3, 'ms')} / {fmt_time(r['big']['shutil'], 1e3, 'ms')}" for r in fsr.values()) + " |")
    if "tree" in cases:
        lines += ["", "Fidelity: `mimeo-testkit compare` of the two copies of the corpus after the last run:", ""]
        for n, r in fsr.items():
            lines.append(f"- {n}: {r['tree']['differences']}" + (f"; shutil.Error entries {r['tree']['errors']}" if r['tree'].get('errors') else ""))
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
