#!/usr/bin/env bash
# w11.sh: benchmark W11, cache-sharing reads of clones (bench/README.md, "W11").
#
#   sudo bench/w11.sh [--size MIB] [--clones N] [--rewritten N] [--runs N] [--tag TAG]
#                     [--name NAME] [--quick]
#
# On loop-mounted btrfs and XFS (direct-I/O loop devices), one file of --size MiB (default
# 1024) and --clones clones of it (default 8) made with `mimeo --record-origin`, --rewritten
# of them (default: every other clone) with 10 % rewritten. Cold cache before every run.
#   (a) read the parent, then each clone, each in its own process: mimeo-cat against cat,
#       both writing to /dev/null. Page-cache growth (/proc/meminfo Cached, and fincore of
#       the files), bytes read from the loop device (/proc/diskstats), time. Then one clone
#       read right after the parent is cached, against a cached read of the parent
#       (hyperfine), also into a pipe (mimeo-cat with and without shared reads, and cat).
#   (b) copy the files to ext4 cold: `mimeo -a` against `cp -a` (and mimeo without shared
#       reads, once): bytes read from the source device, time until the tool returns and
#       until the copy is on disk (sync). --runs times from btrfs, once from XFS.
# Writes bench/results/<date>-<tag>-<name>.md and .json (name: w11 unless --name; --quick:
# bench/.work/w11/results); raw data in bench/.work/w11/raw.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
# shellcheck source=bench/lib/common.sh
source "$BENCH/lib/common.sh"
# shellcheck source=bench/lib/fs.sh
source "$BENCH/lib/fs.sh"

SIZE_MIB=1024 CLONES=8 REWRITTEN="" RUNS=3 TAG=2core-vm NAME=w11 QUICK=0
while (($#)); do
    case $1 in
        --size) SIZE_MIB=$2; shift ;;
        --clones) CLONES=$2; shift ;;
        --rewritten) REWRITTEN=$2; shift ;;
        --runs) RUNS=$2; shift ;;
        --tag) TAG=$2; shift ;;
        --name) NAME=$2; shift ;;
        --quick) SIZE_MIB=128 CLONES=4 RUNS=1 QUICK=1 ;;
        -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
        *) die "unknown option $1" ;;
    esac
    shift
done
[[ -n $REWRITTEN ]] || REWRITTEN=$((CLONES / 2))
((REWRITTEN <= CLONES / 2)) || die "--rewritten: at most every other clone ($((CLONES / 2)))"
[[ $(id -u) == 0 ]] || die "needs root (loop mounts, drop_caches)"
for cmd in hyperfine fincore fstrim mkfs.btrfs mkfs.xfs mkfs.ext4 python3; do
    command -v "$cmd" >/dev/null || die "$cmd is missing (bench/run.sh installs it)"
done

WORK=$BENCH/.work/w11
RAW=$WORK/raw
RECORDS=$RAW/records.jsonl
OUT=$BENCH/results/$(date +%F)-$TAG-$NAME
((QUICK)) && OUT=$WORK/results/$(date +%F)-quick-w11 && mkdir -p "$WORK/results"
rm -rf "$RAW"
mkdir -p "$RAW"
: >"$RECORDS"
# The images are removed at exit, whatever happens: they take gigabytes of a shared disk.
trap 'fs_teardown; rm -rf "$WORK/img"' EXIT

log "building mimeo and mimeo-cat"
(cd "$ROOT" && cargo build --release --locked --quiet -p mimeo-cli -p mimeo-cat)
MIMEO=$ROOT/target/release/mimeo
MCAT=$ROOT/target/release/mimeo-cat

# loop_dev MNT : the loop device (loopN) a mount point's filesystem is on.
loop_dev() { findmnt -no SOURCE "$1" | sed 's|/dev/||'; }
# sectors DEV : 512-byte sectors read so far from DEV.
sectors() { awk -v d="$1" '$3 == d { print $6 }' /proc/diskstats; }
# cached_bytes FILE... : bytes of the files in the page cache.
cached_bytes() { fincore --bytes --noheadings --output RES "$@" | awk '{ s += $1 } END { printf "%.0f\n", s }'; }
now() { date +%s.%N; }
# elapsed T0 T1 : seconds from T0 to T1, to the millisecond.
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
# fadvise_dontneed FILE : drop one file's clean pages from the page cache.
fadvise_dontneed() { bash -c "$(dontneed_cmd "$1")"; }

size=$((SIZE_MIB * 1048576))
LOAD_START=$(cut -d' ' -f1 /proc/loadavg)
fs_setup btrfs "$((SIZE_MIB * 3 + 2048))M"
fs_setup xfs "$((SIZE_MIB * 3 + 2048))M"
fs_setup ext4 "$(((CLONES + 1) * SIZE_MIB * 2 + 4096))M"
EXT4=$(fs_mnt ext4)

# make_files MNT : the parent and its clones in MNT/w11, on disk.
make_files() {
    local dir=$1/w11 i
    mkdir -p "$dir"
    dd if=/dev/urandom of="$dir/parent" bs=1M count="$SIZE_MIB" status=none
    sync
    for ((i = 1; i <= CLONES; i++)); do
        "$MIMEO" --record-origin "$dir/parent" "$dir/clone$i"
        if ((i % 2 == 0 && i / 2 <= REWRITTEN)); then
            # 10 % of the clone rewritten, at a place of its own.
            dd if=/dev/urandom of="$dir/clone$i" bs=1M count="$((SIZE_MIB / 10))" \
                seek="$(((i * SIZE_MIB / (CLONES + 1)) % (SIZE_MIB - SIZE_MIB / 10)))" \
                conv=notrunc status=none
        fi
    done
    sync
    # Shared reads trust a file once its ctime is a little old.
    sleep 1
}

# ---- (a) the parent, then each clone, each in its own process -------------------------------
case_a() {
    local fs=$1 mnt dir dev tool cmd run c0 c1 s0 s1 t0 t1 files f
    mnt=$(fs_mnt "$fs")
    dir=$mnt/w11
    dev=$(loop_dev "$mnt")
    files=("$dir/parent")
    for ((i = 1; i <= CLONES; i++)); do files+=("$dir/clone$i"); done
    for ((run = 1; run <= RUNS; run++)); do
        for tool in cat mimeo-cat; do
            cmd=cat
            [[ $tool == mimeo-cat ]] && cmd=$MCAT
            drop_caches
            c0=$(meminfo_kb Cached)
            s0=$(sectors "$dev")
            t0=$(now)
            for f in "${files[@]}"; do
                "$cmd" "$f" >/dev/null
            done
            t1=$(now)
            c1=$(meminfo_kb Cached)
            s1=$(sectors "$dev")
            record kind=a fs="$fs" tool="$tool" run="$run" seconds="$(elapsed "$t0" "$t1")" \
                cached_delta_kb="$((c1 - c0))" files_cached="$(cached_bytes "${files[@]}")" \
                read_bytes="$(((s1 - s0) * 512))"
            log "  (a) $fs $tool run $run: $(elapsed "$t0" "$t1") s, page cache +$(((c1 - c0) / 1024)) MiB, read $(((s1 - s0) / 2048)) MiB"
        done
    done
    # Bytes each clone read through the parent (one more run, with mimeo-cat's JSON summary,
    # which it writes on stderr when the output is stdout).
    drop_caches
    cat "$dir/parent" >/dev/null
    for ((i = 1; i <= CLONES; i++)); do
        "$MCAT" --json "$dir/clone$i" 2>>"$RAW/a-$fs-stats.jsonl" >/dev/null
    done
    # One clone read right after the parent is cached, against a cached read of the parent;
    # the clone's own pages are dropped before every run.
    drop_caches
    cat "$dir/parent" >/dev/null
    hyperfine --style basic --runs "$((RUNS * 2 + 1))" --warmup 1 \
        --prepare "$(dontneed_cmd "$dir/clone1")" \
        --export-json "$RAW/a-$fs-cached.json" \
        -n "cat parent (cached)" "cat $dir/parent" \
        -n "mimeo-cat clone (parent cached)" "$MCAT $dir/clone1 >/dev/null" \
        -n "cat clone (parent cached)" "cat $dir/clone1" \
        -n "mimeo-cat clone into a pipe (parent cached)" "$MCAT $dir/clone1 | cat >/dev/null" \
        -n "mimeo-cat --no-shared-reads clone into a pipe (spliced)" \
        "$MCAT --no-shared-reads $dir/clone1 | cat >/dev/null" \
        -n "cat clone into a pipe (parent cached)" "cat $dir/clone1 | cat >/dev/null" \
        2>&1 | tee -a "$RAW/hyperfine.log" >&2
    record kind=a_cached fs="$fs" file="a-$fs-cached.json"
}

# need_space BYTES : waits (at most 20 minutes) until the disk that holds the images has BYTES
# free: the machine's disk is shared, and a loop device whose image cannot grow fails its
# filesystem.
need_space() {
    local i free
    for ((i = 0; i < 40; i++)); do
        free=$(df --output=avail -B1 "$WORK" | tail -1)
        ((free >= $1)) && return 0
        log "waiting for $(($1 >> 30)) GiB free below $WORK ($((free >> 30)) GiB now)"
        sleep 30
    done
    die "not enough free disk space below $WORK"
}

# ---- (b) copy the files to ext4, cold -------------------------------------------------------
# case_b FS RUNS : RUNS copies by mimeo and by cp -a, taking turns, and one by mimeo without
# shared reads.
case_b() {
    local fs=$1 runs=$2 mnt src dev dst tool run s0 s1 t0 t1 t2 status summary tools
    mnt=$(fs_mnt "$fs")
    src=$mnt/w11
    dev=$(loop_dev "$mnt")
    dst=$EXT4/copy
    # One untimed copy first: on this VM the first copy after the files are made took 2-3x as
    # long in kernel time as the next ones, whichever tool made it (cp -a 23.6 s then 18.8 s,
    # mimeo -a 28.7 s then 10.1 s), most of it writing into ext4's page cache.
    rm -rf "$dst"
    cp -a "$src" "$dst"
    for ((run = 1; run <= runs; run++)); do
        tools=("mimeo -a" "cp -a")
        ((run == 1)) && tools+=("mimeo -a --no-shared-reads")
        for tool in "${tools[@]}"; do
            rm -rf "$dst"
            sync
            fstrim "$EXT4" || true
            need_space "$(((CLONES + 1) * size + (8 << 30)))"
            drop_caches
            s0=$(sectors "$dev")
            t0=$(now)
            status=0
            case $tool in
                "mimeo -a") "$MIMEO" -a --json "$src" "$dst" >"$RAW/b-$fs-$run.json" || status=$? ;;
                "cp -a") cp -a "$src" "$dst" || status=$? ;;
                *) "$MIMEO" -a --no-shared-reads "$src" "$dst" || status=$? ;;
            esac
            t1=$(now)
            sync
            t2=$(now)
            s1=$(sectors "$dev")
            summary=0
            if [[ $tool == "mimeo -a" ]]; then
                summary=$(grep -o '"shared_read_bytes":[0-9]*' "$RAW/b-$fs-$run.json" | cut -d: -f2)
            fi
            record kind=b fs="$fs" tool="$tool" run="$run" status="$status" \
                returned_s="$(elapsed "$t0" "$t1")" durable_s="$(elapsed "$t0" "$t2")" \
                read_bytes="$(((s1 - s0) * 512))" shared_read_bytes="${summary:-0}"
            log "  (b) $fs $tool run $run: exit $status, $(elapsed "$t0" "$t2") s durable, read $(((s1 - s0) / 2048)) MiB"
        done
    done
    diff -r "$src" "$dst" >/dev/null || die "the last copy differs from its source"
    rm -rf "$dst"
    sync
    fstrim "$EXT4" || true
}

need_space "$(((CLONES + 1) * size + 3 * size + (8 << 30)))"
for fs in btrfs xfs; do
    log "W11 $fs: a $SIZE_MIB MiB file and $CLONES clones"
    make_files "$(fs_mnt "$fs")"
    case_a "$fs"
    # (b) is btrfs -> ext4 in the issue; XFS -> ext4 once, for comparison.
    if [[ $fs == btrfs ]]; then
        case_b "$fs" "$RUNS"
    else
        case_b "$fs" 1
    fi
    rm -rf "$(fs_mnt "$fs")/w11"
done

cat >"$RAW/meta.json" <<EOF
{"date": "$(date +%F)", "tag": "$TAG", "commit": "$(git -C "$ROOT" rev-parse --short HEAD)",
 "dirty": $(if [[ -n $(git -C "$ROOT" status --porcelain) ]]; then echo true; else echo false; fi),
 "kernel": "$(uname -r)", "cores": $(nproc), "mem_gib": $(awk '/MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo),
 "load": "$LOAD_START at the start, $(cut -d' ' -f1 /proc/loadavg) at the end (1-minute averages)",
 "size_mib": $SIZE_MIB, "clones": $CLONES, "rewritten": $REWRITTEN, "runs": $RUNS, "cp": "$(cp --version | head -1)"}
EOF
python3 "$BENCH/lib/w11report.py" "$RAW" "$OUT"
log "results: $OUT.md and .json"
