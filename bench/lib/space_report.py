#!/usr/bin/env python3
"""Turn bench/space.sh runs into the W9 and W10 tables.

  space_report.py RAW_DIR[:FS,...] [RAW_DIR[:FS,...]...] OUT_BASE

Writes OUT_BASE.md and OUT_BASE.json. With `:FS,...` only those filesystems' records of that
run are used, so one file can take btrfs from one run and XFS from another (a run stopped
after its first filesystem, say); each filesystem's figures still come from one run. Every
time is given as a ratio to a peer measured in the same run on the same filesystem (below
1.00x is faster), with the absolute figures beside it.
"""

import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402  (the W1–W5 report: records, helpers)
from report import fx, ratio, table  # noqa: E402

GIB = 1024 ** 3


def hyperfine(path):
    with open(path) as f:
        results = json.load(f)["results"]
    return {
        r["command"]: {
            "mean": r["mean"], "stddev": r.get("stddev") or 0.0, "min": r["min"], "max": r["max"],
            "user": r["user"], "system": r["system"],
            "failed": [c for c in (r.get("exit_codes") or []) if c],
        }
        for r in results
    }


class Report(report.Report):
    """meta.json and records.jsonl of one or more runs, as the W1–W5 report reads them;
    other tables."""

    def __init__(self, specs):
        self.runs = []
        self.recs = []
        for spec in specs:
            raw, _, only = spec.partition(":")
            keep = set(only.split(",")) if only else None
            recs = []
            for r in report.load_jsonl(os.path.join(raw, "records.jsonl")):
                if keep is None or "fs" not in r or r["fs"] in keep:
                    recs.append(dict(r, _raw=raw))
            with open(os.path.join(raw, "meta.json")) as f:
                meta = json.load(f)
            fss = list(dict.fromkeys(r["fs"] for r in recs if "fs" in r))
            self.runs.append({"raw": raw, "meta": meta, "fs": fss, "recs": recs})
            self.recs += recs
        self.raw = self.runs[0]["raw"]
        self.meta = self.runs[0]["meta"]
        self.md = []
        self.data = {"meta": self.meta, "runs": [
            dict(r["meta"], filesystems=r["fs"]) for r in self.runs]}
        for r in self.runs[1:]:
            for k in ("mode", "corpus_root", "corpus_exclude", "runs", "w10_parts"):
                if r["meta"].get(k) != self.meta.get(k):
                    sys.exit("%s: %s differs from the first run's" % (r["raw"], k))

    def header(self):
        m = self.meta
        v = m["versions"]
        self.out("## Space: W9 and W10, %s on `%s` (%s run)" % (m["date"], m["tag"], m["mode"]), "")
        self.out("- machine: %s, %d cores, %.0f GiB RAM, Linux %s (shared with other builds and tests "
                 "while this ran)" % (m["cpu"], m["cores"], m["mem_gib"], m["kernel"]))
        for r in self.runs:
            rm = r["meta"]
            end = [x for x in r["recs"] if x["kind"] == "run"]
            self.out("- %s: run `%s`, mimeo commit %s%s; load average %s at the start, %s" % (
                " and ".join(r["fs"]) or "no filesystem", rm["stamp"], rm["commit"],
                " (dirty tree)" if rm.get("dirty") else "", rm["load_start"],
                "%s at the end, %.0f min in all" % (end[0]["load_end"], end[0]["seconds"] / 60) if end
                else "stopped before its end (only the filesystems named here are taken from it)"))
        self.out(
            "- peers: %s, %s, %s, %s, compsize %s; %s" % (
                v["btrfs"], v["duperemove"], v["jdupes"], v["fclones"],
                v["compsize"] or "not installed", v["hyperfine"]),
            "- filesystems: loop-mounted images (direct I/O loop devices) on the machine's disk")
        for t in self.of(kind="tree", tree="usr")[:1]:
            self.out("- corpus `usr`: `cp -a` of %s without `%s`: %d entries, %.2f GB" % (
                m["corpus_root"], m["corpus_exclude"], t["entries"], t["bytes"] / 1e9))
        self.out("")

    def w9(self):
        hfs = self.of(kind="hyperfine", workload="W9")
        if not hfs:
            return
        self.out("### W9: space accounting (`mimeo-du -s`)", "",
                 "The corpus, a cloned copy (`cp -a --reflink=always`) and a cloned copy with 4 KiB rewritten "
                 "in every fourth file of 8 KiB or more. Warm: %d runs after one warmup; cold: %d runs, each "
                 "after `echo 3 > drop_caches`. Ratios are to `btrfs filesystem du -s` on btrfs; on XFS, which "
                 "has no tool of the same meaning, to GNU `du -s` (which counts every clone in full). Peak RSS "
                 "from one more warm run under `/usr/bin/time -v`." % (
                     self.meta["runs"]["w9"], self.meta["runs"]["w9"]), "")
        rows_json = []
        for fs in dict.fromkeys(h["fs"] for h in hfs):
            nums = {r["tool"]: r for r in self.of(kind="w9_numbers", fs=fs)}
            tree = self.of(kind="tree", fs=fs, tree="w9")
            if "mimeo-du" in nums:
                ours = nums["mimeo-du"]
                line = "**%s** (%s entries): mimeo-du total %d, exclusive %d, shared %d, of which %d bytes " \
                       "at unknown addresses (inline)" % (
                           fs, tree[0]["entries"] if tree else "?", ours["total"], ours["exclusive"],
                           ours["shared"], ours["unknown"])
                if "btrfs fi du" in nums:
                    b = nums["btrfs fi du"]
                    same = (ours["total"] - ours["unknown"], ours["exclusive"] - ours["unknown"],
                            ours["shared"]) == (b["total"], b["exclusive"], b["shared"])
                    line += "; btrfs filesystem du: total %d, exclusive %d, set shared %d: **%s**" % (
                        b["total"], b["exclusive"], b["shared"],
                        "the same numbers" if same else "DIFFERENT numbers")
                    rows_json.append({"fs": fs, "numbers_match_btrfs_du": same})
                self.out(line, "")
            mem = {r["tool"]: r for r in self.of(kind="memory", workload="W9", fs=fs)}
            for h in [h for h in hfs if h["fs"] == fs]:
                res = hyperfine(os.path.join(h["_raw"], h["file"]))
                ref_name = "btrfs fi du" if "btrfs fi du" in res else "du (counts clones in full)"
                ref = res.get(ref_name)
                rows = []
                for name, r in sorted(res.items(), key=lambda kv: kv[1]["mean"]):
                    rss = mem.get(name, {}).get("rss_kb")
                    row = {"fs": fs, "cache": h["cache"], "tool": name, "wall_s": r["mean"],
                           "stddev_s": r["stddev"], "min_s": r["min"], "max_s": r["max"], "user_s": r["user"],
                           "sys_s": r["system"], "x_ref": ratio(r["mean"], ref and ref["mean"]),
                           "reference": ref_name, "rss_kib": rss, "failed": r["failed"]}
                    rows_json.append(row)
                    rows.append([
                        ("**%s**" % name if name == "mimeo-du" else name) +
                        (" (failed)" if r["failed"] else ""),
                        fx(row["x_ref"]), "%.2f ± %.2f" % (r["mean"], r["stddev"]),
                        "%.2f–%.2f" % (r["min"], r["max"]), "%.2f" % r["user"], "%.2f" % r["system"],
                        "–" if not rss else "%.1f" % (rss / 1024)])
                self.out("**%s, %s cache** (reference: %s)" % (fs, h["cache"], ref_name), "")
                self.out(table(["tool", "× reference", "wall s", "min–max s", "user s", "sys s",
                                "peak RSS MiB"], rows), "")
        self.data["w9"] = rows_json

    def w10(self):
        recs = self.of(kind="w10")
        if not recs:
            return
        parts = self.meta.get("w10_parts")
        w10 = self.of(kind="tree", tree="w10")
        what = "the corpus" if not parts else "the corpus's %s" % " and ".join("`%s/`" % p for p in parts.split())
        size = " (%d entries, %.2f GB in all)" % (w10[0]["entries"], w10[0]["bytes"] / 1e9) if w10 else ""
        self.out("### W10: dedupe", "",
                 "Three plain copies of " + what + size + " (`cp -a --reflink=never`), made again before every run and "
                 "dropped from the page cache, so every run starts cold. %d round(s), every tool once per "
                 "round, the order rotating. *saved* is what `mimeo-du` measures (exclusive + shared bytes, "
                 "every physical byte once) before less after, the same measure for every tool. Time ratios "
                 "are medians against the fastest peer; RSS ratios against duperemove's. The second run is "
                 "`mimeo-dedupe` again right after its first run, cold as well." % self.meta["runs"]["w10"], "")
        rows_json = []
        for fs in dict.fromkeys(r["fs"] for r in recs):
            by_tool = {}
            for r in self.of(kind="w10", fs=fs):
                by_tool.setdefault(r["tool"], []).append(r)
            med = {t: statistics.median(x["wall_s"] for x in rs) for t, rs in by_tool.items()}
            ok = {t for t, rs in by_tool.items() if all(x["status"] == 0 for x in rs)}
            peers = [t for t in med if t != "mimeo-dedupe" and t in ok]
            fastest = min(peers, key=lambda t: med[t]) if peers else None
            saved_med = {t: statistics.median(x["saved"] for x in rs) for t, rs in by_tool.items()}
            ours = saved_med.get("mimeo-dedupe", 0)
            # The fastest peer that saves at least 99 % of what mimeo-dedupe saves.
            thorough = [t for t in peers if saved_med[t] >= 0.99 * ours]
            fastest_as_much = min(thorough, key=lambda t: med[t]) if thorough else None
            dr = by_tool.get("duperemove", [])
            dr_rss = max((x["rss_kb"] for x in dr), default=None)
            dr_saved = statistics.median(x["saved"] for x in dr) if dr else None
            rows = []
            for t, rs in sorted(by_tool.items(), key=lambda kv: med[kv[0]]):
                rss = max(x["rss_kb"] for x in rs)
                saved = statistics.median(x["saved"] for x in rs)
                walls = [x["wall_s"] for x in rs]
                row = {"fs": fs, "tool": t, "wall_s_median": med[t], "wall_s": walls,
                       "user_s": statistics.median(x["user_s"] for x in rs),
                       "sys_s": statistics.median(x["sys_s"] for x in rs),
                       "x_fastest_peer": ratio(med[t], fastest and med[fastest]), "fastest_peer": fastest,
                       "x_fastest_saving_as_much": ratio(med[t], fastest_as_much and med[fastest_as_much]),
                       "fastest_saving_as_much": fastest_as_much,
                       "rss_kib": rss, "rss_x_duperemove": ratio(rss, dr_rss), "saved_bytes": saved,
                       "saved_x_duperemove": ratio(saved, dr_saved),
                       "exit": sorted({x["status"] for x in rs})}
                rows_json.append(row)
                rows.append([
                    ("**%s**" % t if t == "mimeo-dedupe" else t) +
                    ("" if t in ok else " (exit %s)" % row["exit"]),
                    fx(row["x_fastest_peer"]), fx(row["x_fastest_saving_as_much"]), "%.1f" % med[t],
                    "–".join("%.1f" % w for w in (min(walls), max(walls))),
                    "%.1f" % row["user_s"], "%.1f" % row["sys_s"],
                    "%.1f" % (rss / 1024), fx(row["rss_x_duperemove"]),
                    "%.3f" % (saved / GIB), fx(row["saved_x_duperemove"])])
            self.out("**%s** (fastest peer: %s; fastest peer saving as much as mimeo-dedupe: %s)" % (
                fs, fastest or "none", fastest_as_much or "none"), "")
            self.out(table(["tool", "× fastest peer", "× fastest saving as much", "wall s (median)", "min–max s", "user s", "sys s",
                            "peak RSS MiB", "RSS × duperemove", "saved GiB", "saved × duperemove"], rows), "")
            seconds = self.of(kind="w10_second", fs=fs)
            if seconds:
                firsts = {r["round"]: r["wall_s"] for r in by_tool.get("mimeo-dedupe", [])}
                pairs = [(firsts.get(s["round"]), s["wall_s"]) for s in seconds]
                text = ", ".join("%.1f s after %.1f s (%s)" % (b, a, fx(ratio(b, a))) for a, b in pairs if a)
                self.out("Second run of mimeo-dedupe on %s: %s." % (fs, text), "")
                for (a, b), s in zip(pairs, seconds):
                    rows_json.append({"fs": fs, "tool": "mimeo-dedupe second run", "round": s["round"],
                                      "wall_s": b, "first_wall_s": a, "x_first": ratio(b, a),
                                      "rss_kib": s["rss_kb"]})
        self.data["w10"] = rows_json

    def render(self):
        self.header()
        self.w9()
        self.w10()
        return "\n".join(self.md).rstrip() + "\n"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    specs, out_base = sys.argv[1:-1], sys.argv[-1]
    rep = Report(specs)
    body = rep.render()
    with open(out_base + ".md", "w") as f:
        f.write("# mimeo space benchmarks\n\nProduced by `bench/space.sh`; see [the README](../README.md) "
                "for what W9 and W10 measure.\n\n" + body)
    with open(out_base + ".json", "w") as f:
        json.dump(rep.data, f, indent=1)
    print(body)


if __name__ == "__main__":
    main()
