#!/usr/bin/env bash
# buffers.sh: two builds against each other, and against cat and cp, on the paths where file
# data passes through a user-space buffer: the kernel's copy between the page cache and that
# buffer is the cost (see crates/mimeo/src/sys/iobuf.rs).
#
#   sudo bench/buffers.sh --before DIR --after DIR [--what-before TEXT] [--what-after TEXT]
#                         [--size MIB] [--runs N] [--tag TAG]
#
# DIR holds a release `mimeo` and `mimeo-cat` of one build; TEXT says which (a commit). On loop-mounted btrfs and XFS
# (direct-I/O loop devices), one file of --size MiB (default 1024) and a clone of it made with
# `mimeo --record-origin`; an ext4 mount as the destination of streamed copies.
#   shared  the clone read by mimeo-cat through the cached parent (the clone's own pages
#           dropped before each run), against `cat` of the cached parent;
#   plain   the cached parent read by mimeo-cat, against `cat`;
#   stream  the cached parent copied to ext4 by mimeo (read/write: copy_file_range cannot
#           cross filesystems), against `cp`; the destination removed and synced first.
# All to /dev/null. Writes bench/results/<date>-<tag>-buffers.md.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
# shellcheck source=bench/lib/common.sh
source "$BENCH/lib/common.sh"
# shellcheck source=bench/lib/fs.sh
source "$BENCH/lib/fs.sh"

BEFORE="" AFTER="" WHAT_BEFORE="" WHAT_AFTER="" SIZE_MIB=1024 RUNS=10 TAG=$(hostname -s)
while (($#)); do
    case $1 in
        --before) BEFORE=$2; shift ;;
        --after) AFTER=$2; shift ;;
        --what-before) WHAT_BEFORE=$2; shift ;;
        --what-after) WHAT_AFTER=$2; shift ;;
        --size) SIZE_MIB=$2; shift ;;
        --runs) RUNS=$2; shift ;;
        --tag) TAG=$2; shift ;;
        -h | --help) sed -n '2,17p' "$0"; exit 0 ;;
        *) die "unknown option $1" ;;
    esac
    shift
done
for b in "$BEFORE" "$AFTER"; do
    [[ -x $b/mimeo && -x $b/mimeo-cat ]] || die "--before and --after need DIRs with mimeo and mimeo-cat"
done
[[ $(id -u) == 0 ]] || die "needs root (loop mounts)"
command -v hyperfine >/dev/null || die "hyperfine is missing (bench/run.sh installs it)"

WORK=$BENCH/.work/buffers
RAW=$WORK/raw
OUT=$BENCH/results/$(date +%F)-$TAG-buffers.md
rm -rf "$RAW"
mkdir -p "$RAW"
trap 'fs_teardown; rm -rf "$WORK/img"' EXIT

LOAD_START=$(cut -d' ' -f1 /proc/loadavg)
{
    echo "# Buffers: page-aligned I/O buffers, before and after ($(date +%F), $TAG)"
    echo
    echo "- before: ${WHAT_BEFORE:-${BEFORE##*/}}; after: ${WHAT_AFTER:-${AFTER##*/}}; $(nproc) cores, $(($(meminfo_kb MemTotal) / 1048576)) GiB, Linux $(uname -r), $(lscpu | sed -n 's/^Model name: *//p')"
    echo "- one ${SIZE_MIB} MiB file of random bytes and a clone of it (\`mimeo --record-origin\`) on each filesystem, loop-mounted on direct-I/O loop devices; hyperfine, $RUNS runs after 2 warm-ups; output to /dev/null"
} >"$OUT"

fs_setup ext4 "$((SIZE_MIB * 2 + 1024))M"
dst=$(fs_mnt ext4)/copy
for fs in btrfs xfs; do
    fs_setup "$fs" "$((SIZE_MIB * 2 + 1024))M"
    m=$(fs_mnt "$fs")
    head -c "$((SIZE_MIB << 20))" /dev/urandom >"$m/parent"
    "$AFTER/mimeo" --record-origin --reflink=always "$m/parent" "$m/clone"
    sync
    cat "$m/parent" >/dev/null
    for case in shared plain stream; do
        log "$fs: $case"
        args=(-N -w 2 -r "$RUNS" --export-markdown "$RAW/$fs-$case.md" --output=null)
        case $case in
            shared)
                hyperfine "${args[@]}" --prepare "$(dontneed_cmd "$m/clone")" \
                    -n "cat parent (cached)" "cat $m/parent" \
                    -n "before: mimeo-cat clone" "$BEFORE/mimeo-cat $m/clone" \
                    -n "after: mimeo-cat clone" "$AFTER/mimeo-cat $m/clone" ;;
            plain)
                hyperfine "${args[@]}" \
                    -n "cat parent (cached)" "cat $m/parent" \
                    -n "before: mimeo-cat parent" "$BEFORE/mimeo-cat $m/parent" \
                    -n "after: mimeo-cat parent" "$AFTER/mimeo-cat $m/parent" ;;
            stream)
                hyperfine "${args[@]}" --prepare "rm -f $dst; sync" \
                    -n "cp parent" "cp $m/parent $dst" \
                    -n "before: mimeo parent" "$BEFORE/mimeo $m/parent $dst" \
                    -n "after: mimeo parent" "$AFTER/mimeo $m/parent $dst" ;;
        esac
        {
            echo
            echo "## $fs: $case"
            echo
            cat "$RAW/$fs-$case.md"
        } >>"$OUT"
    done
    rm -f "$dst" "$m/parent" "$m/clone"
done
echo >>"$OUT"
echo "Load average (1 minute): $LOAD_START at the start, $(cut -d' ' -f1 /proc/loadavg) at the end." >>"$OUT"
log "results: $OUT"
