#!/usr/bin/env bash
# cold-trees.sh: W14 and W15, tree copies from a cold cache, on buffered and on direct-I/O loop
# devices, against the device's own limit.
#
#   sudo bench/cold-trees.sh [--quick] [--rounds N] [--curve-rounds N] [--no-curve]
#                            [--w15-files N] [--loops buffered,direct] [--cases LIST]
#                            [--curve-cases LIST] [--with-tar] [--before DIR] [--tag TAG]
#
# W14: the corpus (/usr/share; --corpus DIR for another) within XFS, btrfs -> ext4, XFS -> ext4.
# W15: --w15-files files of 100 KiB (default 50000) in 100 directories, XFS -> ext4 and within
# ext4. --cases picks cases by number (1-5, in that order), --curve-cases those of the curve.
# Each kind of loop device in turn: the same images attached as ordinary buffered loop devices
# (as `mount -o loop` does) and with direct I/O (`losetup --direct-io=on`). `--loops plain`
# (not in the default) runs W14 and W15 within the machine's own disk instead: the corpus and
# the W15 files copied to a directory of the filesystem that holds bench/.work, the copy made
# beside them (cases 6 and 7). Case 8 (not in the default) is the corpus within btrfs, a clone
# like case 1. For every case:
#   - mimeo -a (its default workers), cpz, fcp and xcp -r, `drop_caches` before every run, the
#     tools taking turns (the order rotates each round), one hyperfine run each;
#   - the read-only limit: a cold pass that reads every directory, inode and data byte of the
#     source with 16 readers (`find | xargs -P 16 cat`, beside a `find -ls` that reads every
#     inode); with --with-tar also single-threaded (`tar -cf - | cat`; 2-7x slower on 2 CPUs),
#     the faster in each round; for a clone within XFS or btrfs, which reads no file data, also a
#     metadata pass (16 `find -ls`);
#   - the device's raw sequential (1 MiB) and random (4 KiB, depth 32) read rates (fio, direct);
#   - the worker curve: the default against -j 2, 8 and 64, cold and warm;
#   - mimeo's peak RSS (/usr/bin/time) on each case, cold;
#   - with --before DIR, DIR/mimeo -a (another build) takes its turn with the tools and in the
#     curve too.
# Writes bench/results/<date>-<tag>-cold-trees.md (raw hyperfine JSON under bench/.work/cold-trees).
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
# shellcheck source=bench/lib/common.sh
source "$BENCH/lib/common.sh"
# shellcheck source=bench/lib/corpus.sh
source "$BENCH/lib/corpus.sh"

QUICK=0 ROUNDS=3 CURVE_ROUNDS="" CURVE=1 W15_FILES=50000 LOOPS=buffered,direct CASES=1,2,3,4,5
CURVE_CASES="" READERS=(read-16 read-meta) BEFORE=""
TAG=$(hostname -s) CORPUS=/usr/share
while (($#)); do
    case $1 in
        --quick) QUICK=1 ;;
        --rounds) ROUNDS=$2; shift ;;
        --curve-rounds) CURVE_ROUNDS=$2; shift ;;
        --no-curve) CURVE=0 ;;
        --w15-files) W15_FILES=$2; shift ;;
        --loops) LOOPS=$2; shift ;;
        --cases) CASES=$2; shift ;;
        --with-tar) READERS=(read-tar "${READERS[@]}") ;;
        --before) BEFORE=$2; shift ;;
        --curve-cases) CURVE_CASES=$2; shift ;;
        --corpus) CORPUS=$2; shift ;;
        --tag) TAG=$2; shift ;;
        -h | --help) sed -n '2,25p' "$0"; exit 0 ;;
        *) die "unknown option $1" ;;
    esac
    shift
done
CURVE_ROUNDS=${CURVE_ROUNDS:-$ROUNDS}
CURVE_CASES=${CURVE_CASES:-$CASES}
((QUICK)) && CORPUS=/usr/include W15_FILES=2000 ROUNDS=1 CURVE_ROUNDS=1
[[ $(id -u) == 0 ]] || die "needs root (loop devices, drop_caches)"
for t in hyperfine fio xfsprogs:mkfs.xfs btrfs-progs:mkfs.btrfs time:/usr/bin/time; do
    command -v "${t#*:}" >/dev/null || apt-get install -y -qq "${t%%:*}" >/dev/null
done
MIMEO=$ROOT/target/release/mimeo
TOOLS=$BENCH/.tools/bin
(cd "$ROOT" && cargo build --release --locked --quiet -p mimeo-cli)
for p in cpz fcp xcp; do
    [[ -x $TOOLS/$p ]] || cargo install --locked --quiet --root "$BENCH/.tools" "$p"
done

WORK=$BENCH/.work/cold-trees
RAW=$WORK/raw
OUT=$BENCH/results/$(date +%F)-$TAG-cold-trees.md
((QUICK)) && OUT=$WORK/results/$(date +%F)-$TAG-cold-trees.md
rm -rf "$RAW"
mkdir -p "$RAW" "$WORK/img" "$(dirname "$OUT")"

NAMES=(xfs btrfs ext4)
declare -A DEV MNT
teardown() {
    local n
    for n in "${NAMES[@]}"; do
        mountpoint -q "$WORK/mnt/$n" && { umount "$WORK/mnt/$n" || umount -l "$WORK/mnt/$n"; }
        [[ -n ${DEV[$n]:-} ]] && losetup -d "${DEV[$n]}" 2>/dev/null
    done
    rm -rf "$WORK/img" "$WORK/plain"
}
trap teardown EXIT

# The images, made once; each kind of loop device attaches the same files.
SIZE=$( ((QUICK)) && echo 4G || echo 24G)
for n in "${NAMES[@]}"; do
    truncate -s "$SIZE" "$WORK/img/$n.img"
    DEV[$n]=$(losetup --find --show "$WORK/img/$n.img")
    case $n in
        xfs) mkfs.xfs -q -f -m reflink=1 "${DEV[$n]}" ;;
        btrfs) mkfs.btrfs -q -f "${DEV[$n]}" >/dev/null ;;
        ext4) mkfs.ext4 -q -F -i 8192 -E lazy_itable_init=0,lazy_journal_init=0 "${DEV[$n]}" ;;
    esac
    MNT[$n]=$WORK/mnt/$n
    mkdir -p "${MNT[$n]}"
    mount "${DEV[$n]}" "${MNT[$n]}"
done
X=${MNT[xfs]} B=${MNT[btrfs]} E=${MNT[ext4]}
log "corpus from $CORPUS on XFS and btrfs; W15: $W15_FILES files of 100 KiB on XFS and ext4"
# Packages installed meanwhile make tar complain; the copy made is the corpus.
corpus_copy "$CORPUS" "$X/usr" || log "tar: $CORPUS changed while it was copied"
cp -a "$X/usr" "$B/usr"
python3 - "$X/w15" "$W15_FILES" <<'EOF'
import os, sys
dst, n = sys.argv[1], int(sys.argv[2])
block = os.urandom(1 << 20)
for i in range(n):
    d = os.path.join(dst, f"d{i % 100}")
    os.makedirs(d, exist_ok=True)
    off = (i * 4099) % ((1 << 20) - 102400)
    with open(os.path.join(d, f"f{i}"), "wb") as f:
        f.write(block[off:off + 102400])
EOF
cp -a "$X/w15" "$E/w15"
PLAIN=$WORK/plain
rm -rf "$PLAIN"
if [[ ,$LOOPS, == *,plain,* ]]; then
    mkdir -p "$PLAIN"
    cp -a "$X/usr" "$X/w15" "$PLAIN/"
fi
sync

# name|source|destination, numbered 1-8 for --cases.
ALL_CASES=(
    "W14 usr within XFS|$X/usr|$X/out"
    "W14 usr btrfs -> ext4|$B/usr|$E/out"
    "W14 usr XFS -> ext4|$X/usr|$E/out"
    "W15 XFS -> ext4|$X/w15|$E/out"
    "W15 within ext4|$E/w15|$E/out"
    "W14 usr within the disk|$PLAIN/usr|$PLAIN/out"
    "W15 within the disk|$PLAIN/w15|$PLAIN/out"
    "W14 usr within btrfs|$B/usr|$B/out"
)
# pick LIST : the cases numbered in LIST.
pick() {
    local i
    CASE_LIST=()
    for i in ${1//,/ }; do CASE_LIST+=("${ALL_CASES[i - 1]}"); done
}

# attach KIND : remounts every image on a loop device of that kind.
attach() {
    local n flag=off
    [[ $1 == plain ]] && { log "the machine's own disk: $(findmnt -n -o SOURCE,FSTYPE --target "$WORK")"; return; }
    [[ $1 == direct ]] && flag=on
    for n in "${NAMES[@]}"; do
        umount "${MNT[$n]}"
        losetup --direct-io="$flag" "${DEV[$n]}"
        mount "${DEV[$n]}" "${MNT[$n]}"
    done
    log "loop devices: $1 ($(cat "/sys/block/$(basename "${DEV[xfs]}")/loop/dio") = direct I/O)"
}

tool_cmd() {
    case $1 in
        mimeo) echo "$MIMEO -a $2 $3" ;;
        mimeo-j*) echo "$MIMEO -a -j ${1#mimeo-j} $2 $3" ;;
        mimeo-before) echo "$BEFORE/mimeo -a $2 $3" ;;
        cpz) echo "$TOOLS/cpz $2 $3" ;;
        fcp) echo "$TOOLS/fcp $2 $3" ;;
        xcp) echo "$TOOLS/xcp -r $2 $3" ;;
        read-tar) echo "tar -C $2 -cf - . | cat >/dev/null" ;;
        read-16) echo "cd $2 && { find . -ls >/dev/null & find . -type f -print0 | xargs -0 -r -P 16 -n 64 cat >/dev/null; wait; }" ;;
        read-meta) echo "cd $2 && find . -mindepth 1 -maxdepth 2 -type d -print0 | xargs -0 -r -P 16 -I{} find {} -maxdepth 1 -ls >/dev/null" ;;
    esac
}

# one JSON KIND CASE TOOL SRC DST COLD : one hyperfine run; its JSON is RAW/<n>.json, and a
# line "json kind case tool" goes to RAW/index.tsv.
RUN=0
one() {
    local kind=$1 case=$2 tool=$3 src=$4 dst=$5 cold=$6 prep json
    prep="rm -rf $dst; sync"
    ((cold)) && prep+="; echo 3 >/proc/sys/vm/drop_caches"
    json=$RAW/$((RUN += 1)).json
    hyperfine --runs 1 --style none --shell bash --prepare "$prep" --export-json "$json" \
        -i "$(tool_cmd "$tool" "$src" "$dst")" >/dev/null 2>>"$RAW/hyperfine.err"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$json" "$1" "$case" "$tool" "$( ((cold)) && echo cold || echo warm)" "$SET" >>"$RAW/index.tsv"
}

# rounds KIND COLD NROUNDS TOOL... : every case, the tools taking turns.
rounds() {
    local kind=$1 cold=$2 nr=$3 entry case src dst r i n t
    shift 3
    local tools=("$@")
    n=${#tools[@]}
    for entry in "${CASE_LIST[@]}"; do
        IFS='|' read -r case src dst <<<"$entry"
        log "$kind, $case: ${tools[*]} ($( ((cold)) && echo cold || echo warm))"
        # Warm runs read the source once first.
        ((cold)) || "$MIMEO" -a "$src" "$dst"
        for ((r = 0; r < nr; r++)); do
            for ((i = 0; i < n; i++)); do
                t=${tools[(i + r) % n]}
                # A clone copy reads no file data: its limit is a pass over the metadata.
                [[ $t == read-meta && $case != *within\ XFS* && $case != *within\ btrfs* ]] && continue
                one "$kind" "$case" "$t" "$src" "$dst" "$cold"
            done
        done
        rm -rf "$dst"
    done
}

# device KIND : fio's sequential and random read rates of each source device.
device() {
    local n mode
    local devs=(xfs btrfs ext4)
    # The plain disk: the block device under bench/.work, read as the loops' images are.
    [[ $1 == plain ]] && devs=(disk) DEV[disk]=$(findmnt -n -o SOURCE --target "$WORK")
    for n in "${devs[@]}"; do
        for mode in read:1M:1 randread:4k:32; do
            IFS=: read -r rw bs depth <<<"$mode"
            # A machine's own disk may refuse to be opened raw (it is in use): the report
            # then goes without its rates.
            fio --name=raw --filename="${DEV[$n]}" --readonly --direct=1 --ioengine=libaio \
                --rw="$rw" --bs="$bs" --iodepth="$depth" --runtime=8 --time_based \
                --output-format=json >"$RAW/fio-$1-$n-$rw.json" ||
                log "fio cannot read ${DEV[$n]}: no raw rates for it"
        done
    done
}

# rss KIND : mimeo's peak RSS on each case, cold.
rss() {
    local entry case src dst
    for entry in "${CASE_LIST[@]}"; do
        IFS='|' read -r case src dst <<<"$entry"
        rm -rf "$dst"
        drop_caches
        /usr/bin/time -f "%M" -o "$RAW/rss.tmp" "$MIMEO" -a "$src" "$dst"
        printf '%s\t%s\t%s\n' "$1" "$case" "$(cat "$RAW/rss.tmp")" >>"$RAW/rss.tsv"
        rm -rf "$dst"
    done
}

for kind in ${LOOPS//,/ }; do
    attach "$kind"
    device "$kind"
    if [[ $kind == plain ]]; then
        pick 6,7
    else
        pick "$CASES"
    fi
    SET=main
    rounds "$kind" 1 "$ROUNDS" mimeo ${BEFORE:+mimeo-before} cpz fcp xcp "${READERS[@]}"
    rss "$kind"
    if ((CURVE)); then
        [[ $kind == plain ]] || pick "$CURVE_CASES"
        SET=curve
        rounds "$kind" 1 "$CURVE_ROUNDS" mimeo ${BEFORE:+mimeo-before} mimeo-j2 mimeo-j8 mimeo-j64
        rounds "$kind" 0 "$CURVE_ROUNDS" mimeo ${BEFORE:+mimeo-before} mimeo-j2 mimeo-j8 mimeo-j64
    fi
done

python3 "$BENCH/lib/cold_report.py" "$RAW" "$OUT" \
    "commit $(git -C "$ROOT" rev-parse --short HEAD); $(date +%F); $TAG: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), Linux $(uname -r)" \
    "corpus $CORPUS ($(count_entries "$X/usr") entries, $(human "$(size_bytes "$X/usr")")); W15 $W15_FILES files of 100 KiB ($(count_entries "$X/w15") entries, $(human "$(size_bytes "$X/w15")")); $ROUNDS rounds, curve $CURVE_ROUNDS"
log "wrote $OUT"
