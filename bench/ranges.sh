#!/usr/bin/env bash
# ranges.sh: the byte-range workloads, each as ratios to its peers measured in the same run.
#
#   bench/ranges.sh [--quick] [--only w3split,w6,w7,w8] [--runs N] [--tag TAG] [--out DIR]
#
#   w3split  W3 with large files split among workers: 4 GiB ext4 -> XFS, cold, durable;
#            mimeo in one piece (--split off), split in 1 GiB and 256 MiB ranges, and cp
#   w6       sharing: 8 clones of a 1 GiB image on btrfs (1 MiB rewritten in two, plus a cloned
#            subtree) copied to XFS by mimeo -a and cp -a: time (cold, durable) and the space
#            the copy takes, against the source's physical use
#   w6mem    sharing's memory: a file with 100k shared extents copied btrfs -> XFS with and
#            without --preserve=sharing: peak RSS per shared extent
#   w7       resume: 4 GiB ext4 -> XFS killed (SIGKILL) at 50 %, then -u (cold, durable),
#            against a full copy; and the same ext4 -> ext4 (offload)
#   w8       cat: 8 x 512 MiB pieces on XFS joined by mimeo-cat and by cat (cold, durable),
#            and how much of the output shares extents with the pieces (FIEMAP)
#
# Needs root (loop devices, mount, drop_caches) and about 10 GB free below bench/.work for
# each workload (the images are trimmed as files are removed; run workloads one at a time
# with --only where space is short, and merge their records with lib/ranges_report.py). Runs
# are interleaved (each tool once per round) so that the shared machine's noise hits all of
# them alike; the report gives medians and the spread. --quick divides every size by 8.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
WORK=$BENCH/.work
# shellcheck source=bench/lib/common.sh
source "$BENCH/lib/common.sh"
# shellcheck source=bench/lib/fs.sh
source "$BENCH/lib/fs.sh"

ONLY=w3split,w6,w6mem,w7,w8
RUNS=3
QUICK=0
TAG=$(hostname -s 2>/dev/null || echo machine)
OUT=$BENCH/results
while (($#)); do
    case $1 in
        --only) ONLY=$2; shift ;;
        --runs) RUNS=$2; shift ;;
        --quick) QUICK=1 ;;
        --tag) TAG=$2; shift ;;
        --out) OUT=$2; shift ;;
        -h | --help) sed -n '2,21p' "$0"; exit 0 ;;
        *) die "unknown option $1" ;;
    esac
    shift
done
[[ $(id -u) -eq 0 ]] || die "run as root (loop devices, mount, drop_caches)"
want() { [[ ",$ONLY," == *",$1,"* ]]; }

MIMEO=$ROOT/target/release/mimeo
MCAT=$ROOT/target/release/mimeo-cat
[[ -x $MIMEO && -x $MCAT ]] || die "build first: cargo build --release --locked -p mimeo-cli -p mimeo-cat"
SCALE=1
((QUICK)) && SCALE=8
MIB=1048576
BIG=$((4096 / SCALE))      # MiB: W3 and W7
IMAGE=$((1024 / SCALE))    # MiB: W6
PIECE=$((512 / SCALE))     # MiB: W8

STAMP=$(date +%Y%m%d-%H%M%S)
RAW=$WORK/raw/ranges-$STAMP
RECORDS=$RAW/records.jsonl
mkdir -p "$RAW" "$OUT"
: >"$RECORDS"
trap 'fs_teardown; rm -rf "$WORK/img"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# timed WORKLOAD CASE TOOL PREPARE COMMAND : one cold, durable run (PREPARE, drop caches,
# then COMMAND followed by sync), recorded in milliseconds.
timed() {
    local w=$1 c=$2 tool=$3 prep=$4 cmd=$5 t0 t1 status=0
    bash -c "$prep"
    trim
    drop_caches
    t0=$(date +%s%N)
    bash -c "$cmd" >/dev/null 2>>"$RAW/stderr" || status=$?
    sync
    t1=$(date +%s%N)
    record workload="$w" case="$c" tool="$tool" ms=$(((t1 - t0) / 1000000)) status=$status
    log "  $w $c $tool: $(((t1 - t0) / 1000000)) ms (exit $status)"
}

# trim : gives the space of removed files back to the host (the images are sparse files on
# the machine's one disk, shared with others: without it they only grow).
trim() {
    local m
    for m in "$EXT4" "$XFS" "$BTRFS"; do
        fstrim "$m" 2>/dev/null || true
    done
}

# used_bytes MOUNT : bytes in use on a filesystem, after a sync (and a moment for XFS to
# finish freeing what was removed in the background).
used_bytes() {
    sync
    sleep 2
    local blocks free size
    read -r blocks free size < <(stat -f -c '%b %f %S' "$1")
    echo $(((blocks - free) * size))
}

# shared_bytes FILE : bytes of FILE in extents that FIEMAP flags shared (FS_IOC_FIEMAP read
# directly: filefrag's columns run into each other for large offsets).
shared_bytes() {
    python3 - "$1" <<'PY'
import fcntl, os, struct, sys
FS_IOC_FIEMAP, SHARED, LAST, BATCH = 0xC020660B, 0x2000, 0x1, 256
fd = os.open(sys.argv[1], os.O_RDONLY)
start = total = 0
while True:
    buf = bytearray(struct.pack("QQIIII", start, 2**64 - 1 - start, 0, 0, BATCH, 0) + bytes(56 * BATCH))
    fcntl.ioctl(fd, FS_IOC_FIEMAP, buf)
    n = struct.unpack_from("I", buf, 20)[0]
    last = n == 0
    for i in range(n):
        logical, _, length, _, _, flags = struct.unpack_from("QQQQQI", buf, 32 + 56 * i)
        total += length if flags & SHARED else 0
        start, last = logical + length, last or bool(flags & LAST)
    if last:
        break
print(total)
PY
}

fs_setup ext4 $((12 / (SCALE > 1 ? 4 : 1) + 2))G
fs_setup xfs $((24 / (SCALE > 1 ? 4 : 1) + 2))G
fs_setup btrfs $((4 / (SCALE > 1 ? 2 : 1) + 2))G
EXT4=$(fs_mnt ext4) XFS=$(fs_mnt xfs) BTRFS=$(fs_mnt btrfs)
write_meta() {
    record kind=meta commit="$(git -C "$ROOT" rev-parse --short HEAD)" \
        kernel="$(uname -r)" cpus="$(nproc)" \
        mem_gib="$(awk '/MemTotal/ { printf "%d", $2 / 1048576 }' /proc/meminfo)" \
        cp="$(cp --version | head -1)" scale="$SCALE" runs="$RUNS"
}
write_meta

if want w3split || want w7; then
    log "a $BIG MiB file on ext4"
    mkdir -p "$EXT4/big"
    dd if=/dev/urandom of="$EXT4/big/big.bin" bs=1M count="$BIG" status=none
    sync
fi

# ---- W3 split -------------------------------------------------------------------------------
if want w3split; then
    s=$EXT4/big/big.bin d=$XFS/w3.bin d2=$EXT4/w3.bin
    cases=(xfs xfs xfs xfs xfs ext4 ext4 ext4)
    tools=("mimeo" "mimeo --split 1G" "mimeo --split 256M" "mimeo --split 256M -j 4" cp
        "mimeo" "mimeo --split 1G" cp)
    cmds=("$MIMEO --split off $s $d" "$MIMEO --split 1G -j 2 $s $d"
        "$MIMEO --split 256M -j 2 $s $d" "$MIMEO --split 256M -j 4 $s $d" "cp $s $d"
        "$MIMEO --split off $s $d2" "$MIMEO --split 1G -j 2 $s $d2" "cp $s $d2")
    n=${#cmds[@]}
    for ((r = 1; r <= RUNS; r++)); do
        # Each round starts with another tool, so that no tool is always the first one after
        # the file was written.
        for ((k = 0; k < n; k++)); do
            i=$(((k + r) % n))
            timed w3split "${cases[i]}" "${tools[i]}" "rm -f $d $d2" "${cmds[i]}"
        done
    done
    rm -f "$d" "$d2"
fi

# ---- W6 sharing -----------------------------------------------------------------------------
if want w6; then
    src=$BTRFS/w6
    log "W6: 8 clones of a $IMAGE MiB image on btrfs"
    mkdir -p "$src/images" "$src/tree/deep"
    dd if=/dev/urandom of="$src/images/image0" bs=1M count="$IMAGE" status=none
    for i in 1 2 3 4 5 6 7; do cp --reflink=always "$src/images/image0" "$src/images/image$i"; done
    dd if=/dev/urandom of="$src/images/image2" bs=1M count=1 seek=10 conv=notrunc status=none
    dd if=/dev/urandom of="$src/images/image5" bs=1M count=1 seek=30 conv=notrunc status=none
    dd if=/dev/urandom of="$src/tree/a" bs=1M count=3 status=none
    dd if=/dev/urandom of="$src/tree/deep/b" bs=1M count=2 status=none
    echo small >"$src/tree/small"
    cp -a --reflink=always "$src/tree" "$src/tree-clone"
    sync
    # The source's physical use: bytes in its extents, each once (btrfs filesystem du's
    # exclusive part plus its set shared).
    read -r total excl setshared < <(btrfs filesystem du -s --raw "$src" | awk 'NR == 2 { print $1, $2, $3 }')
    record workload=w6 kind=source logical="$total" physical=$((excl + setshared))
    log "W6 source: logical $(human "$total"), physical $(human $((excl + setshared)))"
    d=$XFS/w6
    for ((r = 1; r <= RUNS; r++)); do
        order=("mimeo -a" "cp -a")
        ((r % 2)) || order=("cp -a" "mimeo -a")
        for tool in "${order[@]}"; do
            cmd=${tool/mimeo/$MIMEO}
            before=$(bash -c "rm -rf $d; sync"; used_bytes "$XFS")
            timed w6 xfs "$tool" "rm -rf $d" "$cmd $src $d"
            after=$(used_bytes "$XFS")
            record workload=w6 kind=space tool="$tool" bytes=$((after - before))
            if [[ $tool == mimeo* ]] && ! diff -r "$src" "$d" >/dev/null; then
                record workload=w6 kind=error tool="$tool" what="copy differs"
            fi
        done
    done
    rm -rf "$d" "$src"
fi

# ---- W6 memory ------------------------------------------------------------------------------
# A file whose every other 4 KiB block is cloned from another: N shared extents, copied btrfs
# -> XFS with and without --preserve=sharing; the difference in peak RSS per extent.
if want w6mem; then
    src=$BTRFS/w6mem
    n=$((100000 / SCALE))
    mkdir -p "$src"
    # frag is listed first (btrfs lists in creation order), so it is copied first and its
    # n extents each become an entry of the map; base then clones them all.
    : >"$src/frag"
    dd if=/dev/urandom of="$src/base" bs=4096 count="$n" status=none
    python3 - "$src/base" "$src/frag" "$n" <<'PY'
import fcntl, os, struct, sys
FICLONERANGE = 0x4020940D
base, frag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = os.open(base, os.O_RDONLY)
d = os.open(frag, os.O_WRONLY)
for i in range(n):
    fcntl.ioctl(d, FICLONERANGE, struct.pack("qQQQ", s, i * 4096, 4096, 2 * i * 4096))
PY
    sync
    # FIEMAP's extents: one per cloned block (filefrag's count merges physically contiguous
    # ones, its listing does not).
    extents=$(filefrag -v "$src/frag" | grep -c shared)
    record workload=w6mem kind=source extents="$extents"
    log "W6 memory: $extents shared extents"
    for ((r = 1; r <= RUNS; r++)); do
        for how in "" "--no-preserve=sharing"; do
            rm -rf "$XFS/w6mem"
            /usr/bin/time -f '%M' -o "$RAW/rss" "$MIMEO" -a $how "$src" "$XFS/w6mem"
            record workload=w6mem kind=rss how="${how:-sharing}" kib="$(tail -1 "$RAW/rss")"
        done
    done
    rm -rf "$XFS/w6mem" "$src"
fi

# ---- W7 resume ------------------------------------------------------------------------------
# kill_at_half SRC DST : starts a copy, SIGKILLs it once DST has half of SRC's size.
kill_at_half() {
    local s=$1 d=$2 half pid
    half=$(($(stat -c %s "$s") / 2))
    rm -f "$d"
    drop_caches
    "$MIMEO" -a "$s" "$d" &
    pid=$!
    while kill -0 "$pid" 2>/dev/null && (($(stat -c %s "$d" 2>/dev/null || echo 0) < half)); do
        sleep 0.01
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    sync
    record workload=w7 kind=killed size="$(stat -c %s "$d")" \
        done="$(getfattr --only-values -n user.mimeo.partial "$d" 2>/dev/null | sed 's/.*done=//' |
            tr ',' '\n' | awk -F- '{ n += $2 - $1 } END { printf "%d\n", n }')"
}
if want w7; then
    s=$EXT4/big/big.bin
    for target in xfs ext4; do
        d=$(fs_mnt "$target")/w7.bin
        for ((r = 1; r <= RUNS; r++)); do
            timed w7 "$target" "mimeo, full copy" "rm -f $d" "$MIMEO -a $s $d"
            kill_at_half "$s" "$d"
            timed w7 "$target" "mimeo -u after a kill at 50 %" ":" "$MIMEO -a -u $s $d"
            cmp "$s" "$d" || record workload=w7 kind=error what="resumed copy differs"
            timed w7 "$target" "cp" "rm -f $d" "cp -a $s $d"
        done
        rm -f "$d"
    done
fi

# ---- W8 cat ---------------------------------------------------------------------------------
if want w8; then
    dir=$XFS/w8
    mkdir -p "$dir"
    log "W8: 8 x $PIECE MiB pieces on XFS"
    for i in 0 1 2 3 4 5 6 7; do
        dd if=/dev/urandom of="$dir/piece$i" bs=1M count="$PIECE" status=none
    done
    sync
    out=$dir/joined
    # GNU cat 9.1 writes a regular output with copy_file_range, which the kernel turns into
    # a clone where the offsets are aligned; through a pipe, cat reads and writes every byte,
    # as cat always did.
    tools=(mimeo-cat cat "cat, through a pipe")
    cmds=("$MCAT $dir/piece? > $out" "cat $dir/piece? > $out" "cat $dir/piece? | cat > $out")
    for ((r = 1; r <= RUNS; r++)); do
        for ((k = 0; k < 3; k++)); do
            i=$(((k + r) % 3))
            timed w8 xfs "${tools[i]}" "rm -f $out" "${cmds[i]}"
            record workload=w8 kind=shared tool="${tools[i]}" bytes="$(shared_bytes "$out")" \
                size="$(stat -c %s "$out")"
        done
    done
    cat "$dir"/piece? | cmp - "$out" || record workload=w8 kind=error what="output differs"
    rm -rf "$dir"
fi

python3 "$BENCH/lib/ranges_report.py" "$RECORDS" "$OUT/$(date +%F)-$TAG-ranges"
log "results: $OUT/$(date +%F)-$TAG-ranges.md and .json"
