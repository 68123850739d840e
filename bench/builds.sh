#!/usr/bin/env bash
# builds.sh: two builds of mimeo against each other, back to back on the same trees, for a
# change that must not cost speed (a refactor, a new check on the hot path).
#
#   sudo bench/builds.sh --before DIR --after DIR [--quick] [--runs N] [--tag TAG]
#
# DIR holds a release `mimeo` and the `copy_loop` example of one build (for instance
# `target/release/{mimeo,examples/copy_loop}` copied aside before the change). On loop-mounted
# XFS, btrfs and ext4 it measures, the two builds taking turns:
#   W1  `mimeo -a` of the corpus (/usr without its largest vendored trees; --quick: /usr/include)
#       and of a tree of small files, within each filesystem;
#   W2  copy_loop: one file copied over and over (10 KB and 100 MB), ops/s;
#   sys system calls per file (strace -c) on 2000 small files.
# Writes bench/results/<date>-<tag>-builds.md with after/before ratios.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
# shellcheck source=bench/lib/common.sh
source "$BENCH/lib/common.sh"
# shellcheck source=bench/lib/fs.sh
source "$BENCH/lib/fs.sh"
# shellcheck source=bench/lib/corpus.sh
source "$BENCH/lib/corpus.sh"

BEFORE="" AFTER="" QUICK=0 RUNS=7 TAG=$(hostname -s)
while (($#)); do
    case $1 in
        --before) BEFORE=$2; shift ;;
        --after) AFTER=$2; shift ;;
        --quick) QUICK=1 ;;
        --runs) RUNS=$2; shift ;;
        --tag) TAG=$2; shift ;;
        -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
        *) die "unknown option $1" ;;
    esac
    shift
done
[[ -x $BEFORE/mimeo && -x $AFTER/mimeo ]] || die "--before and --after need DIRs with a mimeo binary"
[[ $(id -u) == 0 ]] || die "needs root (loop mounts)"

WORK=$BENCH/.work/builds
RAW=$WORK/raw
OUT=$BENCH/results/$(date +%F)-$TAG-builds.md
rm -rf "$RAW"
mkdir -p "$RAW"
trap 'fs_teardown; rm -rf "$WORK/img"' EXIT

CORPUS=/usr
((QUICK)) && CORPUS=/usr/include

report() { printf '%s\n' "$*" >>"$OUT"; }

# alternate OUT PREPARE BEFORE_CMD AFTER_CMD : runs the two commands RUNS times each, taking
# turns (before, after, after, before, ...) so that whatever else loads the machine falls on
# both alike; PREPARE runs before each. Writes "build seconds" lines to OUT.
alternate() {
    local out=$1 prepare=$2 i build cmd t0 t1
    : >"$out"
    for ((i = 0; i <= RUNS; i++)); do
        for build in before after; do
            ((i % 2)) && build=$([[ $build == before ]] && echo after || echo before)
            cmd=$3
            [[ $build == after ]] && cmd=$4
            bash -c "$prepare"
            t0=$EPOCHREALTIME
            bash -c "$cmd" >/dev/null
            t1=$EPOCHREALTIME
            # The first round is a warm-up.
            ((i > 0)) && echo "$build $(python3 -c "print($t1 - $t0)")" >>"$out"
        done
    done
    return 0
}

# ratio FILE : after / before of the median times in an `alternate` file, and both medians
# with their spread (min-max).
ratio() {
    python3 - "$1" <<'EOF'
import sys, statistics
v = {"before": [], "after": []}
for line in open(sys.argv[1]):
    k, x = line.split()
    v[k].append(float(x))
b, a = (statistics.median(v[k]) for k in ("before", "after"))
span = lambda k: f"{min(v[k]):.3f}-{max(v[k]):.3f}"
print(f"{a / b:.3f} | {b:.3f} s ({span('before')}) | {a:.3f} s ({span('after')})")
EOF
}

mkdir -p "$(dirname "$OUT")"
: >"$OUT"
report "# Two builds of mimeo, back to back ($(date +%F), $TAG)"
report ""
report "- before: $(cat "$BEFORE/COMMIT" 2>/dev/null || echo "$BEFORE"); after: $(git -C "$ROOT" rev-parse --short HEAD)"
report "- machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), Linux $(uname -r); loop images with direct I/O"
report "- W1 rows: the builds take turns ($RUNS runs each after a warm-up round); the ratio is after / before of the median times (below 1: after is faster), with the spread (min-max)"
report ""

SMALL=$( ((QUICK)) && echo 5000 || echo 30000)
for fs in xfs btrfs ext4; do
    fs_setup "$fs" "$( ((QUICK)) && echo 3G || echo 12G)"
done
first=""
for fs in xfs btrfs ext4; do
    mnt=$(fs_mnt "$fs")
    if [[ -z $first ]]; then
        log "$fs: corpus from $CORPUS and $SMALL small files"
        corpus_copy "$CORPUS" "$mnt/usr"
        small_tree "$mnt/small" "$SMALL"
        first=$mnt
    else
        cp -a "$first/usr" "$mnt/usr"
        cp -a "$first/small" "$mnt/small"
    fi
done
sync

report "## W1: \`mimeo -a\` of a tree within one filesystem"
report ""
report "| fs | tree | entries | after / before | before | after |"
report "|---|---|---|---|---|---|"
for fs in xfs btrfs ext4; do
    mnt=$(fs_mnt "$fs")
    for tree in usr small; do
        times=$RAW/w1-$fs-$tree.txt
        alternate "$times" "rm -rf $mnt/out; sync" \
            "$BEFORE/mimeo -a $mnt/$tree $mnt/out" "$AFTER/mimeo -a $mnt/$tree $mnt/out"
        report "| $fs | $tree | $(count_entries "$mnt/$tree") | $(ratio "$times") |"
        rm -rf "$mnt/out"
    done
done

if [[ -x $BEFORE/copy_loop && -x $AFTER/copy_loop ]]; then
    report ""
    report "## W2: one file copied over and over (\`copy_loop\`), ops/s"
    report ""
    report "| fs | size | after / before (ops/s) | before | after |"
    report "|---|---|---|---|---|"
    for fs in xfs btrfs ext4; do
        mnt=$(fs_mnt "$fs")
        for size in 10K 100M; do
            head -c "$size" /dev/urandom >"$mnt/one"
            iters=$([[ $size == 10K ]] && echo 20000 || echo 200)
            [[ $fs == ext4 && $size == 100M ]] && iters=10
            # Three rounds, the builds taking turns; the median of each.
            for build in before after before after before after; do
                dir=$BEFORE
                [[ $build == after ]] && dir=$AFTER
                start=$(date +%s.%N)
                "$dir/copy_loop" "$mnt/one" "$mnt/copy" "$iters" 1 >/dev/null
                end=$(date +%s.%N)
                echo "$build $(python3 -c "print($iters / ($end - $start))")" >>"$RAW/w2-$fs-$size.txt"
            done
            read -r b a < <(python3 - "$RAW/w2-$fs-$size.txt" <<'EOF'
import sys, statistics
v = {"before": [], "after": []}
for line in open(sys.argv[1]):
    k, x = line.split()
    v[k].append(float(x))
print(statistics.median(v["before"]), statistics.median(v["after"]))
EOF
            )
            report "| $fs | $size | $(python3 -c "print(f'{$a / $b:.3f}')") | $(printf '%.0f' "$b") | $(printf '%.0f' "$a") |"
            rm -f "$mnt/one" "$mnt/copy"
        done
    done
fi

if command -v strace >/dev/null; then
    report ""
    report "## System calls per file (2000 small files, XFS)"
    report ""
    report "| build | calls per file |"
    report "|---|---|"
    mnt=$(fs_mnt xfs)
    small_tree "$mnt/sys" 2000
    sync
    for build in before after; do
        dir=$BEFORE
        [[ $build == after ]] && dir=$AFTER
        rm -rf "$mnt/sysout"
        strace -c -f -o "$RAW/sys-$build.txt" -- "$dir/mimeo" -a "$mnt/sys" "$mnt/sysout" >/dev/null
        calls=$(awk '$NF == "total" { print $4 }' "$RAW/sys-$build.txt")
        report "| $build | $(python3 -c "print(f'{$calls / 2000:.2f}')") |"
    done
fi
log "wrote $OUT"
cat "$OUT"
