#!/usr/bin/env python3
"""Summarise `strace -c -f` outputs as system calls per file.

  stracesum.py --files N --entries E [--json OUT] TOOL=STRACE_FILE...

Prints a Markdown table (rows: syscalls, columns: tools, cells: calls per file) and, with
--json, writes {"files": N, "entries": E, "tools": {tool: {syscall: calls}}}.
"""

import argparse
import json
import re

ROW = re.compile(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:(\d+)\s+)?(\w+)\s*$")


def parse(path):
    calls = {}
    with open(path) as f:
        for line in f:
            m = ROW.match(line)
            if m and m.group(3) != "total":
                calls[m.group(3)] = int(m.group(1))
    return calls


def table(data, files, top=20):
    tools = list(data)
    totals = {t: sum(data[t].values()) for t in tools}
    names = sorted({n for t in tools for n in data[t]}, key=lambda n: -max(data[t].get(n, 0) for t in tools))
    lines = [
        "| syscall | " + " | ".join(tools) + " |",
        "|---|" + "---:|" * len(tools),
        "| **total per file** | " + " | ".join("**%.2f**" % (totals[t] / files) for t in tools) + " |",
    ]
    for n in names[:top]:
        lines.append("| %s | %s |" % (n, " | ".join("%.2f" % (data[t].get(n, 0) / files) for t in tools)))
    if len(names) > top:
        lines.append("| (%d more) | %s |" % (len(names) - top, " | ".join(
            "%.2f" % (sum(data[t].get(n, 0) for n in names[top:]) / files) for t in tools)))
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--files", type=int, required=True)
    p.add_argument("--entries", type=int, required=True)
    p.add_argument("--json")
    p.add_argument("traces", nargs="+")
    a = p.parse_args()
    data = {}
    for t in a.traces:
        tool, path = t.split("=", 1)
        data[tool] = parse(path)
    print("System calls per file, copying %d small files (%d entries), `strace -c -f`:\n" % (a.files, a.entries))
    print(table(data, a.files))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"files": a.files, "entries": a.entries, "tools": data}, f, indent=1)


if __name__ == "__main__":
    main()
