#!/usr/bin/env python3
"""Turn one run's raw data into the result tables.

  report.py RAW_DIR OUT_BASE [--readme README.md]

RAW_DIR holds meta.json, records.jsonl (one JSON object per measurement, written by
bench/lib/common.sh `record`), hyperfine JSON exports, W3 timing logs and syscalls.json.
Writes OUT_BASE.md and OUT_BASE.json. With --readme, the tables also replace the part of the
README between the `results:begin` and `results:end` markers.

Every time figure is given as a ratio first ("x cp -a" = this tool's time divided by the
reference's, so below 1 is faster) and in absolute terms beside it.
"""

import argparse
import json
import os
import re
import statistics

MIB = 1024 * 1024


def load_jsonl(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                out.append(json.loads(line))
    return out


def hyperfine(raw, name):
    with open(os.path.join(raw, name)) as f:
        res = json.load(f)["results"]
    out = {}
    for r in res:
        codes = r.get("exit_codes") or []
        out[r["command"]] = {
            "mean": r["mean"],
            "stddev": r.get("stddev") or 0.0,
            "user": r["user"],
            "system": r["system"],
            "runs": len(r.get("times") or []),
            "failed": [c for c in codes if c],
        }
    return out


def ratio(x, ref):
    if x is None or ref in (None, 0):
        return None
    return x / ref


def fx(r):
    return "–" if r is None else "%.2f×" % r


def fs_(x, digits=2):
    if x is None:
        return "–"
    if x < 0.1:
        return "%.4f" % x
    return ("%." + str(digits) + "f") % x


def median(values):
    """The median of the values that exist, or None."""
    vs = [v for v in values if v]
    return statistics.median(vs) if vs else None


def fops(x):
    if x is None:
        return "–"
    return "%.0f" % x if x >= 100 else "%.2f" % x


def fastest(results, names):
    ok = [(results[n]["mean"], n) for n in names if n in results and not results[n]["failed"]]
    return min(ok)[1] if ok else None


def table(headers, rows, align=None):
    align = align or ["---"] + ["---:"] * (len(headers) - 1)
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(align) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(lines)


class Report:
    def __init__(self, raw):
        self.raw = raw
        self.meta = json.load(open(os.path.join(raw, "meta.json")))
        self.recs = load_jsonl(os.path.join(raw, "records.jsonl"))
        self.md = []
        self.data = {"meta": self.meta}

    def of(self, **kw):
        return [r for r in self.recs if all(r.get(k) == v for k, v in kw.items())]

    def out(self, *lines):
        self.md.extend(lines)

    # -- header -------------------------------------------------------------------------
    def header(self):
        m = self.meta
        only = m.get("workloads", "w1,w2,w3,w4,w5,sys")
        scope = "" if only == "w1,w2,w3,w4,w5,sys" else ", workloads %s only" % only.replace(",", ", ")
        self.out("## Results %s on `%s` (%s run%s)" % (m["date"], m["tag"], m["mode"], scope), "")
        if m.get("mimeo_standin"):
            self.out("> **mimeo could not copy a tree when this ran: every `mimeo` row below is GNU cp "
                     "standing in (`bench/lib/mimeo-standin.sh`), not mimeo.** The run only proves the harness.", "")
        if not m.get("copy_loop_ok"):
            self.out("> `mimeo::copy_file` did not work when this ran: W2 has no mimeo column.", "")
        v = m["versions"]
        self.out(
            "- machine: %s, %d cores, %.0f GiB RAM, Linux %s" % (m["cpu"], m["cores"], m["mem_gib"], m["kernel"]),
            "- mimeo: commit %s%s; peers: %s, %s, %s, %s; %s; %s" % (
                m["commit"], " (dirty tree)" if m.get("dirty") else "", v["cp"], v["xcp"], v["cpz"],
                v["fcp"] if v["fcp"].startswith("fcp") else ("fcp " + v["fcp"]).strip(), v["java"] or "no JDK 25",
                v["hyperfine"]),
            "- filesystems: loop-mounted images (direct I/O loop devices) on the machine's disk; "
            "fidelity compared with `%s --no-atime`" % m["comparer"],
        )
        trees = {}
        for r in self.of(kind="tree"):
            trees.setdefault(r["tree"], r)
        if "usr" in trees:
            t = trees["usr"]
            self.out("- corpus `usr`: `cp -a` of %s without `%s`: **%d entries, %.2f GB**" % (
                m["corpus_root"], m["corpus_exclude"], t["entries"], t["bytes"] / 1e9))
        if "small" in trees:
            t = trees["small"]
            self.out("- `small`: %d entries, %.1f MB of small files (0–16 KiB)" % (t["entries"], t["bytes"] / 1e6))
        if "empty" in trees:
            self.out("- `empty`: %d entries, all empty files" % trees["empty"]["entries"])
        notes = os.path.join(self.raw, "notes.md")
        if os.path.exists(notes):
            # Free-text remarks about the run (for instance other load on the machine).
            self.out("- note: " + open(notes).read().strip())
        run = self.of(kind="run")
        if run:
            self.out("- whole run: %.0f min" % (run[0]["seconds"] / 60))
        self.out("")
        self.data["trees"] = list(trees.values())

    # -- W1 -----------------------------------------------------------------------------
    def w1(self):
        hfs = self.of(kind="hyperfine", workload="W1")
        if not hfs:
            return
        m = self.meta
        self.out("### W1: tree copy, warm cache",
                 "",
                 "Within one filesystem. Time ratios: below 1.00× is faster than the reference. "
                 "Mean of %d runs after %d warmup (`small`: %d runs, %d warmup); `diffs` = differences against "
                 "the source from one more run (`--no-atime`), peak RSS from that run." % (
                     m["runs"]["w1"], m["runs"]["w1_warmup"], m["runs"].get("w1_small", 0),
                     m["runs"].get("w1_small_warmup", 0)), "")
        rows_json = []
        for h in hfs:
            res = hyperfine(self.raw, h["file"])
            fid = {r["tool"]: r for r in self.of(kind="fidelity", fs=h["fs"], tree=h["tree"])}
            peers = [n for n in res if n != "mimeo"]
            best = fastest(res, peers)
            cpa = res.get("cp -a")
            self.out("**%s, `%s`** (fastest peer: %s)" % (h["fs"], h["tree"], best or "none"), "")
            rows = []
            for n, r in sorted(res.items(), key=lambda kv: kv[1]["mean"]):
                f = dict(fid.get(n, {}))
                if f.get("diffs") in ("", -1):
                    f["diffs"] = None  # not compared, or no copy to compare
                wall = r["mean"]
                note = " (failed: exit %s)" % r["failed"][0] if r["failed"] else ""
                row = {
                    "fs": h["fs"], "tree": h["tree"], "tool": n, "wall_s": wall, "stddev_s": r["stddev"],
                    "user_s": r["user"], "sys_s": r["system"],
                    "x_cp_a": ratio(wall, cpa and cpa["mean"]),
                    "x_fastest_peer": ratio(wall, best and res[best]["mean"]),
                    "sys_x_cp_a": ratio(r["system"], cpa and cpa["system"]),
                    "diffs": f.get("diffs"), "rss_kib": f.get("rss_kb"), "failed": r["failed"],
                }
                rows_json.append(row)
                rows.append([
                    ("**%s**" % n if n == "mimeo" else n) + note, fx(row["x_cp_a"]), fx(row["x_fastest_peer"]),
                    fx(row["sys_x_cp_a"]), "%s ± %s" % (fs_(wall), fs_(r["stddev"])), fs_(r["user"]),
                    fs_(r["system"]), "–" if f.get("diffs") is None else f["diffs"],
                    "–" if not f.get("rss_kb") else "%.1f" % (f["rss_kb"] / 1024),
                ])
            self.out(table(["tool", "× cp -a", "× fastest peer", "sys × cp -a", "wall s", "user s", "sys s",
                            "diffs", "peak RSS MiB"], rows), "")
        self.data["w1"] = rows_json

    # -- W2 -----------------------------------------------------------------------------
    def w2(self):
        recs = self.of(workload="W2")
        if not recs:
            return
        self.out("### W2: one file, ops/s by size",
                 "",
                 "`mimeo` = `mimeo::copy_file` in a loop (crates/mimeo/examples/copy_loop.rs), "
                 "`JDK` = `Files.copy(…, REPLACE_EXISTING)` in a loop on Temurin 25 (bench/java/CopyLoop.java), "
                 "both after a warmup, replacing the destination every time, the two loops taking turns and "
                 "each one's median of the repetitions shown; `cp` = one `cp` process per copy "
                 "(overwrites in place). Ratios are ops/s ratios: above 1.00× is faster.", "")
        rows_json = []
        for fs in dict.fromkeys(r["fs"] for r in recs):
            rows = []
            for size in dict.fromkeys(r["size"] for r in recs if r["fs"] == fs):
                ops = {}
                reps = {}
                nbytes = None
                for r in recs:
                    if r["fs"] != fs or r["size"] != size:
                        continue
                    nbytes = r["bytes"]
                    if r["kind"] == "ops":
                        reps.setdefault(r["tool"], []).append(r["ops_per_sec"] or None)
                    elif r["kind"] == "hyperfine":
                        res = hyperfine(self.raw, r["file"])
                        cp = res.get("cp")
                        ok = cp and not cp["failed"] and cp["mean"] > 0
                        ops["cp"] = 1.0 / cp["mean"] if ok else None
                for tool, values in reps.items():
                    ops[tool] = median(values)
                mi, jdk, cp = ops.get("mimeo"), ops.get("jdk"), ops.get("cp")
                row = {"fs": fs, "size": size, "bytes": nbytes, "mimeo_ops": mi, "jdk_ops": jdk, "cp_ops": cp,
                       "mimeo_per_jdk": ratio(mi, jdk), "mimeo_per_cp": ratio(mi, cp), "jdk_per_cp": ratio(jdk, cp)}
                rows_json.append(row)
                rows.append([size, fx(row["mimeo_per_jdk"]), fx(row["mimeo_per_cp"]), fx(row["jdk_per_cp"]),
                             fops(mi), fops(jdk), fops(cp)])
            self.out("**%s**" % fs, "")
            self.out(table(["size", "mimeo / JDK", "mimeo / cp", "JDK / cp", "mimeo ops/s", "JDK ops/s",
                            "cp ops/s"], rows), "")
        self.data["w2"] = rows_json

    # -- W3 -----------------------------------------------------------------------------
    def w3(self):
        hfs = self.of(kind="hyperfine", workload="W3")
        if not hfs:
            return
        self.out("### W3: large file, cold cache",
                 "",
                 "One %d MiB file of random bytes on ext4, caches dropped before every run. "
                 "`durable` = until the copy and a following `sync` returned (what hyperfine timed); `returned` = "
                 "until the tool alone returned. Ratios are of the durable time (below 1.00× is faster); MB/s = "
                 "10^6 bytes per durable second. Page cache = growth of `Cached` in /proc/meminfo over one more "
                 "cold run, and what `fincore` finds cached of the source and the copy afterwards."
                 % (hfs[0]["bytes"] // MIB), "")
        rows_json = []
        for h in hfs:
            res = hyperfine(self.raw, h["file"])
            pc = {r["tool"]: r for r in self.of(kind="pagecache", target=h["target"])}
            peers = [n for n in res if n != "mimeo"]
            best = fastest(res, peers)
            cp = res.get("cp")
            self.out("**ext4 → %s** (fastest peer: %s)" % (h["target"], best or "none"), "")
            rows = []
            for n, r in sorted(res.items(), key=lambda kv: kv[1]["mean"]):
                returned = None
                logf = os.path.join(self.raw, "w3-%s.timed.%s" % (h["target"], n.replace(" ", "")))
                if os.path.exists(logf):
                    vals = [int(l.split()[1]) / 1e9 for l in open(logf) if l.split() and l.split()[0] == "0"]
                    returned = statistics.mean(vals) if vals else None
                p = pc.get(n, {})
                row = {"target": h["target"], "tool": n, "durable_s": r["mean"], "returned_s": returned,
                       "user_s": r["user"], "sys_s": r["system"], "mb_per_s": h["bytes"] / 1e6 / r["mean"],
                       "x_cp": ratio(r["mean"], cp and cp["mean"]),
                       "x_fastest_peer": ratio(r["mean"], best and res[best]["mean"]),
                       "cached_delta_kib": p.get("cached_delta_kb"), "src_cached_bytes": p.get("src_cached"),
                       "dst_cached_bytes": p.get("dst_cached"), "failed": r["failed"]}
                rows_json.append(row)
                note = " (failed)" if r["failed"] else ""
                rows.append([
                    ("**%s**" % n if n == "mimeo" else n) + note, fx(row["x_cp"]), fx(row["x_fastest_peer"]),
                    fs_(r["mean"]), fs_(returned), fs_(r["system"]), "%.0f" % row["mb_per_s"],
                    "–" if p.get("cached_delta_kb") is None else "%+.0f" % (p["cached_delta_kb"] / 1024),
                    "–" if p.get("src_cached") is None else "%.0f / %.0f" % (
                        p["src_cached"] / MIB, p["dst_cached"] / MIB),
                ])
            self.out(table(["tool", "× cp", "× fastest peer", "durable s", "returned s", "sys s", "MB/s",
                            "page cache Δ MiB", "cached src / dst MiB"], rows), "")
        self.data["w3"] = rows_json

    # -- W4 -----------------------------------------------------------------------------
    def w4(self):
        hfs = self.of(kind="hyperfine", workload="W4")
        if not hfs:
            return
        self.out("### W4: worker count",
                 "",
                 "`mimeo -a -j N` on the `usr` corpus. `× cp -a` uses W1's `cp -a` time on the same filesystem "
                 "in this run; `× -j 1` is the curve itself (below 1.00× is faster).", "")
        w1 = {}
        for h in self.of(kind="hyperfine", workload="W1", tree="usr"):
            w1[h["fs"]] = hyperfine(self.raw, h["file"])
        rows_json = []
        for h in hfs:
            res = hyperfine(self.raw, h["file"])
            cpa = w1.get(h["fs"], {}).get("cp -a")
            names = sorted(res, key=lambda n: int(n.split()[-1]))
            j1 = res[names[0]]["mean"]
            best = fastest(res, names)
            rows = []
            for n in names:
                r = res[n]
                row = {"fs": h["fs"], "jobs": int(n.split()[-1]), "wall_s": r["mean"], "sys_s": r["system"],
                       "user_s": r["user"], "x_cp_a": ratio(r["mean"], cpa and cpa["mean"]),
                       "x_j1": ratio(r["mean"], j1), "failed": r["failed"]}
                rows_json.append(row)
                rows.append(["%d%s" % (row["jobs"], " (best)" if n == best else ""), fx(row["x_cp_a"]),
                             fx(row["x_j1"]), "%s ± %s" % (fs_(r["mean"]), fs_(r["stddev"])), fs_(r["user"]),
                             fs_(r["system"])])
            self.out("**%s**" % h["fs"], "")
            self.out(table(["-j", "× cp -a", "× -j 1", "wall s", "user s", "sys s"], rows), "")
        self.data["w4"] = rows_json

    # -- W5 -----------------------------------------------------------------------------
    def w5(self):
        mem = self.of(kind="memory", workload="W5")
        fid = self.of(kind="fidelity", workload="W1", tree="usr")
        if not mem and not fid:
            return
        self.out("### W5: peak memory",
                 "",
                 "Maximum resident set size from `/usr/bin/time -v`. `× cp -a` is the RSS ratio (below 1.00× "
                 "is smaller). The `usr` columns come from W1's fidelity runs; `empty` is one run per tool on XFS.",
                 "")
        tools = list(dict.fromkeys([r["tool"] for r in fid] + [r["tool"] for r in mem]))
        cols = list(dict.fromkeys(r["fs"] for r in fid))

        def rss(rows, tool, **kw):
            for r in rows:
                if r["tool"] == tool and all(r.get(k) == v for k, v in kw.items()):
                    return r["rss_kb"] if r.get("status", 0) == 0 else None
            return None

        rows, rows_json = [], []
        ref_empty = rss(mem, "cp -a")
        for t in tools:
            e = rss(mem, t)
            wall = next((r["wall_s"] for r in mem if r["tool"] == t), None)
            row = {"tool": t, "empty_rss_kib": e, "empty_x_cp_a": ratio(e, ref_empty), "empty_wall_s": wall}
            cells = [("**%s**" % t if t == "mimeo" else t), fx(row["empty_x_cp_a"]),
                     "–" if e is None else "%.1f" % (e / 1024), fs_(wall)]
            for fs in cols:
                u = rss(fid, t, fs=fs)
                row["usr_%s_rss_kib" % fs] = u
                row["usr_%s_x_cp_a" % fs] = ratio(u, rss(fid, "cp -a", fs=fs))
                cells += [fx(row["usr_%s_x_cp_a" % fs]), "–" if u is None else "%.1f" % (u / 1024)]
            rows.append(cells)
            rows_json.append(row)
        heads = ["tool", "empty × cp -a", "empty MiB", "empty wall s"]
        for fs in cols:
            heads += ["usr %s × cp -a" % fs, "usr %s MiB" % fs]
        self.out(table(heads, rows), "")
        self.data["w5"] = rows_json

    # -- syscalls -------------------------------------------------------------------------
    def syscalls(self):
        md = os.path.join(self.raw, "syscalls.md")
        js = os.path.join(self.raw, "syscalls.json")
        if not os.path.exists(md):
            return
        self.out("### System calls per file", "", "From `bench/syscalls.sh` on XFS.", "")
        self.out(open(md).read().strip(), "")
        if os.path.exists(js):
            self.data["syscalls"] = json.load(open(js))

    def render(self):
        self.header()
        self.w1()
        self.w2()
        self.w3()
        self.w4()
        self.w5()
        self.syscalls()
        return "\n".join(self.md).rstrip() + "\n"


def update_readme(path, body, results_name):
    if not os.path.exists(path):
        return
    text = open(path).read()
    begin, end = "<!-- results:begin -->", "<!-- results:end -->"
    if begin not in text or end not in text:
        return
    body = body.replace("## Results", "### Results", 1)
    body = re.sub(r"^### ", "#### ", body, flags=re.M).replace("#### Results", "### Results", 1)
    new = "%s\n\nFrom [`results/%s.md`](results/%s.md).\n\n%s\n%s" % (
        begin, results_name, results_name, body.strip(), end)
    text = text[:text.index(begin)] + new + text[text.index(end) + len(end):]
    open(path, "w").write(text)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("raw")
    p.add_argument("out_base")
    p.add_argument("--readme")
    a = p.parse_args()
    rep = Report(a.raw)
    body = rep.render()
    with open(a.out_base + ".md", "w") as f:
        f.write("# mimeo benchmark\n\nProduced by `bench/run.sh`; see [the README](../README.md) for what each "
                "workload measures.\n\n" + body)
    with open(a.out_base + ".json", "w") as f:
        json.dump(rep.data, f, indent=1)
    if a.readme:
        update_readme(a.readme, body, os.path.basename(a.out_base))
    print(body)


if __name__ == "__main__":
    main()
