#!/usr/bin/env bash
# cold.sh: W14, tree copies that start with a cold page cache, and the worker-count curve.
#
#   sudo bench/cold.sh [--quick] [--rounds N] [--tag TAG] [--no-curve]
#
# On loop-mounted XFS, btrfs and ext4 (direct-I/O loop devices, so a dropped cache is really
# cold), it copies the corpus (/usr without its largest vendored trees; --quick: /usr/share)
# and a tree of small files:
#   within XFS and within btrfs   (clones: metadata reads dominate)
#   btrfs -> ext4, XFS -> ext4    (data reads dominate)
#   small tree: XFS -> ext4
# with `mimeo -a` (its default worker count), `cp -a`, cpz, fcp and xcp (each at its own
# defaults), `echo 3 > drop_caches` before every run and the tools taking turns, N rounds.
# Then the curve: `mimeo -a -j 1..64` and the default, cold and warm, on each case.
# Writes bench/results/<date>-<tag>-w14.md (and the raw times under bench/.work/cold/raw).
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
# shellcheck source=bench/lib/common.sh
source "$BENCH/lib/common.sh"
# shellcheck source=bench/lib/fs.sh
source "$BENCH/lib/fs.sh"
# shellcheck source=bench/lib/corpus.sh
source "$BENCH/lib/corpus.sh"

QUICK=0 ROUNDS=3 TAG=$(hostname -s) CURVE=1
while (($#)); do
    case $1 in
        --quick) QUICK=1 ;;
        --rounds) ROUNDS=$2; shift ;;
        --tag) TAG=$2; shift ;;
        --no-curve) CURVE=0 ;;
        -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
        *) die "unknown option $1" ;;
    esac
    shift
done
[[ $(id -u) == 0 ]] || die "needs root (loop mounts, drop_caches)"
MIMEO=$ROOT/target/release/mimeo
TOOLS=$BENCH/.tools/bin
(cd "$ROOT" && cargo build --release --locked --quiet -p mimeo-cli)
for p in cpz fcp xcp; do
    [[ -x $TOOLS/$p ]] || cargo install --locked --quiet --root "$BENCH/.tools" "$p"
done

WORK=$BENCH/.work/cold
RAW=$WORK/raw
OUT=$BENCH/results/$(date +%F)-$TAG-w14.md
rm -rf "$RAW"
mkdir -p "$RAW" "$(dirname "$OUT")"
trap 'fs_teardown; rm -rf "$WORK/img"' EXIT

CORPUS=/usr
SIZE=16G SMALL=30000
((QUICK)) && CORPUS=/usr/share SIZE=6G SMALL=10000
for fs in xfs btrfs ext4; do
    fs_setup "$fs" "$SIZE"
done
X=$(fs_mnt xfs) B=$(fs_mnt btrfs) E=$(fs_mnt ext4)
log "corpus from $CORPUS on XFS, then btrfs"
corpus_copy "$CORPUS" "$X/usr"
cp -a "$X/usr" "$B/usr"
small_tree "$X/small" "$SMALL"
sync

# The cases: name, source, destination.
CASES=(
    "usr within XFS|$X/usr|$X/out"
    "usr within btrfs|$B/usr|$B/out"
    "usr btrfs -> ext4|$B/usr|$E/out"
    "usr XFS -> ext4|$X/usr|$E/out"
    "small XFS -> ext4|$X/small|$E/out"
)

# tool_cmd TOOL SRC DST : the command line of one tool.
tool_cmd() {
    case $1 in
        mimeo) echo "$MIMEO -a $2 $3" ;;
        mimeo-j*) echo "$MIMEO -a -j ${1#mimeo-j} $2 $3" ;;
        "cp -a") echo "cp -a $2 $3" ;;
        cpz) echo "$TOOLS/cpz $2 $3" ;;
        fcp) echo "$TOOLS/fcp $2 $3" ;;
        xcp) echo "$TOOLS/xcp -r $2 $3" ;;
    esac
}

# timed OUT CASE TOOL SRC DST COLD : one run, its wall time appended to OUT.
timed() {
    local out=$1 case=$2 tool=$3 src=$4 dst=$5 cold=$6 cmd t0 t1 status=0
    rm -rf "$dst"
    sync
    ((cold)) && echo 3 >/proc/sys/vm/drop_caches
    read -r -a cmd <<<"$(tool_cmd "$tool" "$src" "$dst")"
    t0=$EPOCHREALTIME
    "${cmd[@]}" </dev/null >/dev/null 2>"$RAW/last.err" || status=$?
    t1=$EPOCHREALTIME
    printf '%s\t%s\t%s\t%s\n' "$case" "$tool" "$(python3 -c "print($t1 - $t0)")" "$status" >>"$out"
}

# rounds OUT COLD TOOL... : every case, ROUNDS rounds, the tools taking turns (the order
# rotates each round, so no tool always follows the same one).
rounds() {
    local out=$1 cold=$2 entry case src dst r i n
    shift 2
    local tools=("$@")
    n=${#tools[@]}
    for entry in "${CASES[@]}"; do
        IFS='|' read -r case src dst <<<"$entry"
        log "$case: ${tools[*]} ($( ((cold)) && echo cold || echo warm))"
        # Warm runs read the source once first.
        ((cold)) || timed "$RAW/warmup.tsv" "$case" mimeo "$src" "$dst" 0
        for ((r = 0; r < ROUNDS; r++)); do
            for ((i = 0; i < n; i++)); do
                timed "$out" "$case" "${tools[(i + r) % n]}" "$src" "$dst" "$cold"
            done
        done
        rm -rf "$dst"
    done
}

rounds "$RAW/peers.tsv" 1 mimeo "cp -a" cpz fcp xcp
if ((CURVE)); then
    JOBS=(mimeo mimeo-j1 mimeo-j2 mimeo-j4 mimeo-j8 mimeo-j16 mimeo-j32 mimeo-j64)
    rounds "$RAW/curve-cold.tsv" 1 "${JOBS[@]}"
    rounds "$RAW/curve-warm.tsv" 0 "${JOBS[@]}"
fi

python3 - "$RAW" "$OUT" "$ROUNDS" "$CORPUS" "$(git -C "$ROOT" rev-parse --short HEAD)" "$(date +%F)" "$TAG" <<'EOF'
import collections, os, statistics, sys
raw, out, rounds, corpus, commit, date, tag = sys.argv[1:8]

def load(name):
    t = collections.defaultdict(list)
    failed = set()
    path = os.path.join(raw, name)
    if not os.path.exists(path):
        return t, failed
    for line in open(path):
        case, tool, secs, status = line.rstrip("\n").split("\t")
        t[(case, tool)].append(float(secs))
        if status != "0":
            failed.add((case, tool))
    return t, failed

def med(v):
    return statistics.median(v)

lines = []
w = lines.append
w(f"# W14: tree copies from a cold cache ({date}, {tag})")
w("")
w(f"- commit {commit}; corpus: {corpus} without its largest vendored trees; {rounds} rounds,")
w("  `drop_caches` before every run, the tools taking turns (order rotated each round);")
w("  loop images with direct I/O. Median wall time of the rounds; spread min-max.")
w("- peers at their defaults: cpz and fcp have no worker setting; xcp `-r`.")
w("- the machine: 2 CPUs, 24 GiB, shared: other builds ran at the same time, so compare the")
w("  ratios, not the times.")
w("")
peers, failed = load("peers.tsv")
cases = list(dict.fromkeys(c for c, _ in peers))
w("## mimeo (default workers) against the fastest peer")
w("")
w("| case | mimeo | fastest peer | mimeo / fastest peer | mimeo / cp -a | target |")
w("|---|---|---|---|---|---|")
for c in cases:
    m = med(peers[(c, "mimeo")])
    others = {t: med(v) for (cc, t), v in peers.items() if cc == c and t != "mimeo" and (cc, t) not in failed}
    best = min(others, key=others.get)
    cp = others.get("cp -a")
    ok = "met" if m / others[best] <= 0.6 else "not met"
    w(f"| {c} | {m:.2f} s | {best} {others[best]:.2f} s | **{m / others[best]:.2f}×** | {m / cp:.2f}× | ≤ 0.6×: {ok} |")
w("")
w("| case | " + " | ".join(t for t in ["mimeo", "cp -a", "cpz", "fcp", "xcp"]) + " |")
w("|---|" + "---|" * 5)
for c in cases:
    row = []
    for t in ["mimeo", "cp -a", "cpz", "fcp", "xcp"]:
        v = peers.get((c, t), [])
        flag = " (failed)" if (c, t) in failed else ""
        row.append(f"{med(v):.2f} ({min(v):.2f}-{max(v):.2f}){flag}" if v else "-")
    w(f"| {c} | " + " | ".join(row) + " |")
for kind in ("cold", "warm"):
    curve, _ = load(f"curve-{kind}.tsv")
    if not curve:
        continue
    tools = list(dict.fromkeys(t for _, t in curve))
    w("")
    w(f"## `-j` curve, {kind} (median seconds; the default grows its workers only when cold)")
    w("")
    w("| case | " + " | ".join(t.replace("mimeo-j", "-j ").replace("mimeo", "default") for t in tools) + " | default / best -j |")
    w("|---|" + "---|" * (len(tools) + 1))
    for c in dict.fromkeys(c for c, _ in curve):
        meds = {t: med(curve[(c, t)]) for t in tools if (c, t) in curve}
        best = min(v for t, v in meds.items() if t != "mimeo")
        w(f"| {c} | " + " | ".join(f"{meds[t]:.2f}" for t in tools) + f" | {meds['mimeo'] / best:.2f}× |")
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
log "wrote $OUT"
