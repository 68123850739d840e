#!/usr/bin/env python3
"""ranges_report.py RECORDS... OUT_STEM: bench/ranges.sh's records (one file per run of it,
merged) -> OUT_STEM.md and .json.

Every figure is a ratio to a peer measured in the same run (medians of the interleaved runs),
with the spread (min-max) beside it."""

import json
import statistics
import sys
from collections import defaultdict


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def mib(n):
    return f"{n / 1048576:.0f} MiB"


def secs(ms):
    return f"{ms / 1000:.2f} s"


def main():
    stem = sys.argv[-1]
    records = [r for path in sys.argv[1:-1] for r in load(path)]
    metas = [r for r in records if r.get("kind") == "meta"]
    meta = dict(metas[0]) if metas else {}
    if len({m.get("commit") for m in metas}) > 1:
        meta["commit"] = ", ".join(sorted({m["commit"] for m in metas}))
    times = defaultdict(list)
    for r in records:
        if "ms" in r:
            times[(r["workload"], r["case"], r["tool"])].append(r["ms"])
    med = {k: statistics.median(v) for k, v in times.items()}
    out = {"meta": meta, "workloads": {}}
    md = [
        f"# Byte ranges: W3 split, W6 sharing, W7 resume, W8 cat ({stem.rsplit('/', 1)[-1]})",
        "",
        f"- machine: {meta.get('cpus')} cores, {meta.get('mem_gib')} GiB RAM, Linux {meta.get('kernel')}; "
        "shared with other developers' builds and tests while this ran, so expect 10-30 % noise",
        f"- mimeo commit {meta.get('commit')}; {meta.get('cp')}",
        f"- {meta.get('runs')} interleaved runs per tool (each tool once per round), cold cache "
        "(`sync; echo 3 > drop_caches` before each), durable (the time includes a `sync`); "
        "medians, with min-max",
        "- loop-mounted images (direct-I/O loop devices) on the machine's one virtual disk",
    ]
    if meta.get("scale", 1) != 1:
        md.append(f"- **sizes divided by {meta['scale']} (--quick)**")
    md.append("")

    def table(workload, case, base, peers):
        rows = [k for k in times if k[0] == workload and k[1] == case]
        if not rows:
            return {}
        md.append(f"| tool | median | min-max | × {base} |" + "".join(f" × {p} |" for p in peers))
        md.append("|---|---|---|---|" + "---|" * len(peers))
        res = {}
        for k in rows:
            v = times[k]
            b = med.get((workload, case, base))
            cells = [f"{med[k] / b:.2f}×" if b else "-"]
            for p in peers:
                pb = med.get((workload, case, p))
                cells.append(f"{med[k] / pb:.2f}×" if pb else "-")
            md.append(f"| {k[2]} | {secs(med[k])} | {secs(min(v))}-{secs(max(v))} | " + " | ".join(cells) + " |")
            res[k[2]] = {"median_ms": med[k], "min_ms": min(v), "max_ms": max(v)}
        md.append("")
        return res

    if any(k[0] == "w3split" for k in times):
        md += ["## W3 split: 4 GiB, one file, cold", "",
               "ext4 -> XFS is streamed (copy_file_range refuses another filesystem: EXDEV); "
               "ext4 -> ext4 is offloaded. `mimeo` is the file in one piece (`--split off`), "
               "the others split it in ranges of the size given, copied by two workers "
               "(`-j 2`, the default here) or four. Time ratios: below 1.00× is faster.", ""]
        w = {}
        for case in ("xfs", "ext4"):
            md.append(f"ext4 -> {case}:")
            md.append("")
            w[case] = table("w3split", case, "mimeo", ["cp"])
        out["workloads"]["w3split"] = w

    if any(k[0] == "w6" for k in times):
        src = next(r for r in records if r.get("workload") == "w6" and r.get("kind") == "source")
        space = defaultdict(list)
        for r in records:
            if r.get("workload") == "w6" and r.get("kind") == "space":
                space[r["tool"]].append(r["bytes"])
        md += ["## W6 sharing: 8 clones of a 1 GiB image (1 MiB rewritten in two) and a cloned subtree, btrfs -> XFS", ""]
        t = table("w6", "xfs", "cp -a", [])
        md += [f"Source: {mib(src['logical'])} of files, {mib(src['physical'])} physically "
               "(btrfs filesystem du: exclusive + set shared).", "",
               "| tool | space the copy takes | × source's physical use | × cp -a |", "|---|---|---|---|"]
        cp_space = statistics.median(space["cp -a"]) if space.get("cp -a") else None
        sp = {}
        for tool, v in space.items():
            m = statistics.median(v)
            md.append(f"| {tool} | {mib(m)} | {m / src['physical']:.2f}× | "
                      + (f"{m / cp_space:.3f}×" if cp_space else "-") + " |")
            sp[tool] = m
        md.append("")
        out["workloads"]["w6"] = {"times": t, "space": sp, "source": src}

    rss = defaultdict(list)
    for r in records:
        if r.get("workload") == "w6mem" and r.get("kind") == "rss":
            rss[r["how"]].append(r["kib"])
    if rss.get("sharing") and rss.get("--no-preserve=sharing"):
        n = next(r["extents"] for r in records if r.get("workload") == "w6mem" and r.get("kind") == "source")
        a, b = statistics.median(rss["sharing"]), statistics.median(rss["--no-preserve=sharing"])
        per = (a - b) * 1024 / n
        md += ["## W6 memory: one file with shared extents, btrfs -> XFS", "",
               f"{n} shared extents (every other 4 KiB block of a file cloned from another). "
               f"Peak RSS {a / 1024:.1f} MiB with sharing kept, {b / 1024:.1f} MiB without: "
               f"{per:.0f} bytes per shared extent (the map holds each physical interval once, "
               "for the whole run).", ""]
        out["workloads"]["w6mem"] = {"extents": n, "rss_kib_sharing": a, "rss_kib_plain": b,
                                     "bytes_per_extent": per}

    if any(k[0] == "w7" for k in times):
        md += ["## W7 resume: 4 GiB, killed (SIGKILL) at 50 %, then `-u`, cold", "",
               "ext4 -> XFS is streamed, ext4 -> ext4 offloaded. The resumed run verifies the "
               "last 64 KiB of the prefix and copies the rest.", ""]
        w = {}
        for case in ("xfs", "ext4"):
            md.append(f"ext4 -> {case}:")
            md.append("")
            w[case] = table("w7", case, "mimeo, full copy", ["cp"])
        kills = [r for r in records if r.get("workload") == "w7" and r.get("kind") == "killed"]
        if kills:
            md.append("Killed copies kept " + ", ".join(
                f"{mib(int(k['size']))} written, {mib(int(k['done'] or 0))} recorded" for k in kills) + ".")
            md.append("")
        out["workloads"]["w7"] = w

    if any(k[0] == "w8" for k in times):
        md += ["## W8 cat: 8 × 512 MiB pieces on XFS, joined on XFS, cold", "",
               "GNU cat 9.1 writes a regular output with `copy_file_range`, which the kernel turns "
               "into a clone where offsets are aligned, so on XFS it shares the pieces too; "
               "`cat, through a pipe` reads and writes every byte, as a cat without "
               "`copy_file_range` does.", ""]
        t = table("w8", "xfs", "cat", ["cat, through a pipe"])
        shared = defaultdict(list)
        for r in records:
            if r.get("workload") == "w8" and r.get("kind") == "shared":
                shared[r.get("tool", "mimeo-cat")].append(int(float(r["bytes"])) / r["size"])
        md += ["| tool | output bytes sharing extents with the pieces (FIEMAP) |", "|---|---|"]
        for tool, v in shared.items():
            md.append(f"| {tool} | {statistics.median(v) * 100:.1f} % |")
            t.setdefault(tool, {})["shared_fraction"] = statistics.median(v)
        md.append("")
        out["workloads"]["w8"] = t

    errors = [r for r in records if r.get("kind") == "error"] + [r for r in records if r.get("status", 0)]
    if errors:
        md += ["## Errors", ""] + [f"- {json.dumps(e)}" for e in errors] + [""]
    out["errors"] = errors
    with open(stem + ".md", "w") as f:
        f.write("\n".join(md))
    with open(stem + ".json", "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
