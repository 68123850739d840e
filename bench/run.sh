#!/usr/bin/env bash
# mimeo benchmark harness. See bench/README.md.
#
#   bench/run.sh                  full run (all workloads, ~40 min on 2 cores)
#   bench/run.sh --quick          smoke run with small trees (~3 min)
#   bench/run.sh --only w1,w3     only some workloads (w1 w2 w3 w4 w5 sys)
#
# Needs root (loop devices, mount, drop_caches). Sets up its own tools and filesystems,
# and unmounts and detaches everything on exit.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
WORK=$BENCH/.work
TOOLS=$BENCH/.tools
# shellcheck source=bench/lib/common.sh
source "$BENCH/lib/common.sh"
# shellcheck source=bench/lib/fs.sh
source "$BENCH/lib/fs.sh"
# shellcheck source=bench/lib/setup.sh
source "$BENCH/lib/setup.sh"
# shellcheck source=bench/lib/workloads.sh
source "$BENCH/lib/workloads.sh"

usage() {
    cat <<'EOF'
usage: bench/run.sh [options]

  --quick            small trees and few runs: proves the plumbing end to end (~3 min)
  --only LIST        comma-separated workloads to run: w1,w2,w3,w4,w5,sys (default: all)
  --fs LIST          filesystems for W1/W2: btrfs,xfs,ext4 (default: all three)
  --tag TAG          machine tag in the result file name (default: short hostname)
  --out DIR          where to write <date>-<tag>.md/.json (default: bench/results,
                     or bench/.work/results for --quick)
  --standin          benchmark `cp` in place of mimeo even if mimeo works (harness testing)
  --no-install       do not apt-get/cargo install anything; fail if a tool is missing
  --keep-images      leave the filesystem images in bench/.work/img (still unmounted)
  --no-readme        do not update the results table in bench/README.md (only a run of
                     every workload updates it)
  -h, --help         this text

Environment: CORPUS_EXCLUDE (space-separated paths below /usr to leave out of the corpus),
JAVA25_HOME (a JDK 25 home if it is not found under /usr/lib/jvm or /opt).
EOF
}

QUICK=0
ALL_WORKLOADS="w1,w2,w3,w4,w5,sys"
ONLY=$ALL_WORKLOADS
FS_LIST="btrfs,xfs,ext4"
TAG=""
OUT=""
STANDIN=0
INSTALL=1
KEEP_IMAGES=0
README_UPDATE=1
while (($#)); do
    case $1 in
        --quick) QUICK=1 ;;
        --only) ONLY=$2; shift ;;
        --only=*) ONLY=${1#*=} ;;
        --fs) FS_LIST=$2; shift ;;
        --fs=*) FS_LIST=${1#*=} ;;
        --tag) TAG=$2; shift ;;
        --tag=*) TAG=${1#*=} ;;
        --out) OUT=$2; shift ;;
        --out=*) OUT=${1#*=} ;;
        --standin) STANDIN=1 ;;
        --no-install) INSTALL=0 ;;
        --keep-images) KEEP_IMAGES=1 ;;
        --no-readme) README_UPDATE=0 ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown option $1" ;;
    esac
    shift
done

[[ $(id -u) -eq 0 ]] || die "run as root (loop devices, mount, drop_caches)"

want() { [[ ",$ONLY," == *",$1,"* ]]; }
IFS=, read -r -a FSS <<<"$FS_LIST"

# ---- sizes: full run and quick run -------------------------------------------------------
if ((QUICK)); then
    MODE=quick
    CORPUS_ROOT=/usr/include          # ~9k entries: the shape, not the size
    SMALL_FILES=5000
    EMPTY_FILES=20000
    BIG_MIB=256
    W1_TREES="usr small"
    W1_RUNS=2; W1_WARMUP=0; W1_SMALL_RUNS=2; W1_SMALL_WARMUP=0
    W2_SIZES="10K 1M 100M"; W2_COW_ITERS=300; W2_DATA_MIB=256; W2_CP_MAX_RUNS=20; W2_REPEATS=1
    W3_RUNS=1
    W4_RUNS=1; W4_JOBS="1 2 4"
    SYS_FILES=500
    declare -A IMG_SIZE=([btrfs]=4G [xfs]=4G [ext4]=4G)
    [[ -n $OUT ]] || OUT=$WORK/results
else
    MODE=full
    CORPUS_ROOT=/usr
    SMALL_FILES=100000
    EMPTY_FILES=1000000
    BIG_MIB=4096
    W1_TREES="usr small"
    W1_RUNS=3; W1_WARMUP=1; W1_SMALL_RUNS=2; W1_SMALL_WARMUP=0
    W2_SIZES="10K 100K 1M 10M 100M 1G"; W2_COW_ITERS=20000; W2_DATA_MIB=3072; W2_CP_MAX_RUNS=100
    W2_REPEATS=3
    W3_RUNS=3
    W4_RUNS=2; W4_JOBS="1 2 4 8 16"
    SYS_FILES=2000
    # Sparse images; what a workload deletes stays allocated in them, so keep them modest.
    declare -A IMG_SIZE=([btrfs]=12G [xfs]=16G [ext4]=20G)
    [[ -n $OUT ]] || OUT=$BENCH/results
fi
# Largest vendored trees under /usr, left out so that the corpus has the shape of a root
# filesystem rather than of one toolchain. Globs are relative to /usr.
CORPUS_EXCLUDE=${CORPUS_EXCLUDE:-"lib/jvm lib/google-cloud-sdk lib/llvm-* lib/android-sdk share/dotnet local/lib/rustup local/rustup local/cargo local/share/dotnet opt"}

[[ -n $TAG ]] || TAG=$(hostname -s 2>/dev/null || echo machine)
DATE=$(date +%F)
STAMP=$(date +%Y%m%d-%H%M%S)
RAW=$WORK/raw/$STAMP
RECORDS=$RAW/records.jsonl
mkdir -p "$RAW" "$OUT"
: >"$RECORDS"

cleanup() {
    local status=$?
    set +e
    fs_teardown
    if ((!KEEP_IMAGES)); then
        rm -rf "$WORK/img"
    fi
    if ((status != 0)); then
        log "failed (exit $status); raw data kept in $RAW"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

START_S=$SECONDS
log "mode $MODE, workloads $ONLY, filesystems ${FSS[*]}, raw data in $RAW"

# ---- tools ---------------------------------------------------------------------------------
setup_packages
setup_peers
setup_build
setup_java
probe_testkit
probe_mimeo
write_meta "$RAW/meta.json"

# ---- filesystems and corpus ----------------------------------------------------------------
need_fs=()
for fs in "${FSS[@]}"; do need_fs+=("$fs"); done
# W3 copies ext4 -> ext4 and ext4 -> XFS; W4 runs on XFS and ext4; W5 and sys on XFS.
if want w3 || want w4; then need_fs+=(ext4 xfs); fi
if want w5 || want sys; then need_fs+=(xfs); fi
mapfile -t need_fs < <(printf '%s\n' "${need_fs[@]}" | awk '!seen[$0]++')
for fs in "${need_fs[@]}"; do
    fs_setup "$fs" "${IMG_SIZE[$fs]}"
done

if want w1 || want w4 || want w5 || want sys; then
    prepare_trees "${need_fs[@]}"
fi

# ---- workloads -----------------------------------------------------------------------------
if want w1; then w1_tree_copy; fi
if want w4; then w4_workers; fi
if want w5; then w5_memory; fi
if want w2; then w2_one_file; fi
if want w3; then w3_large_file; fi
if want sys; then sys_counts; fi

# ---- report --------------------------------------------------------------------------------
record kind=run seconds=$((SECONDS - START_S))
report_args=("$RAW" "$OUT/$DATE-$TAG")
# Only a run of every workload replaces the README's table; an --only run would drop the rest.
if ((README_UPDATE)) && [[ $MODE == full && $ONLY == "$ALL_WORKLOADS" ]]; then
    report_args+=(--readme "$BENCH/README.md")
fi
python3 "$BENCH/lib/report.py" "${report_args[@]}"
log "results: $OUT/$DATE-$TAG.md and .json ($(((SECONDS - START_S) / 60)) min)"
