#!/usr/bin/env bash
# W9 (space accounting: mimeo-du) and W10 (dedupe: mimeo-dedupe) against their peers, on
# loop-mounted btrfs and XFS. See bench/README.md.
#
#   bench/space.sh                 both workloads on the `usr` corpus (~1 h on 2 cores)
#   bench/space.sh --quick         /usr/include as the corpus, one run each (~5 min)
#   bench/space.sh --only w9 --fs btrfs
#
# Needs root (loop devices, mount, drop_caches). Unmounts and detaches everything on exit.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
WORK=$BENCH/.work
TOOLS=$BENCH/.tools
# shellcheck source=bench/lib/common.sh
source "$BENCH/lib/common.sh"
# shellcheck source=bench/lib/fs.sh
source "$BENCH/lib/fs.sh"
# shellcheck source=bench/lib/workloads.sh
source "$BENCH/lib/workloads.sh"
# shellcheck source=bench/lib/space.sh
source "$BENCH/lib/space.sh"

usage() {
    cat <<'EOF'
usage: bench/space.sh [options]

  --quick            /usr/include as the corpus and fewer runs: proves the plumbing (~5 min)
  --only LIST        w9,w10 (default: both)
  --fs LIST          btrfs,xfs (default: both)
  --w9-runs N        timed runs per W9 tool, warm and cold (default 3, quick 2)
  --w10-runs N       rounds of W10, every tool once per round (default 2, quick 1)
  --tag TAG          machine tag in the result file name (default: short hostname)
  --out DIR          where to write <date>-<tag>-space.md/.json (default: bench/results,
                     or bench/.work/results for --quick)
  --no-install       do not apt-get/cargo install anything; fail if a tool is missing
  -h, --help         this text

Environment: CORPUS_EXCLUDE (as for bench/run.sh), W10_PARTS (the subdirectories of the corpus
W10 copies three times; default "share include", "" for all of it), FCLONES (an fclones
binary; default bench/.tools/bin/fclones, installed with cargo if missing).
EOF
}

QUICK=0
ONLY=w9,w10
FS_LIST=btrfs,xfs
TAG=""
OUT=""
INSTALL=1
W9_RUNS=""
W10_RUNS=""
while (($#)); do
    case $1 in
        --quick) QUICK=1 ;;
        --only) ONLY=$2; shift ;;
        --only=*) ONLY=${1#*=} ;;
        --fs) FS_LIST=$2; shift ;;
        --fs=*) FS_LIST=${1#*=} ;;
        --w9-runs) W9_RUNS=$2; shift ;;
        --w10-runs) W10_RUNS=$2; shift ;;
        --tag) TAG=$2; shift ;;
        --tag=*) TAG=${1#*=} ;;
        --out) OUT=$2; shift ;;
        --out=*) OUT=${1#*=} ;;
        --no-install) INSTALL=0 ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown option $1" ;;
    esac
    shift
done

[[ $(id -u) -eq 0 ]] || die "run as root (loop devices, mount, drop_caches)"
want() { [[ ",$ONLY," == *",$1,"* ]]; }
IFS=, read -r -a FSS <<<"$FS_LIST"

if ((QUICK)); then
    MODE=quick
    CORPUS_ROOT=/usr/include
    W9_RUNS=${W9_RUNS:-2}
    W10_RUNS=${W10_RUNS:-1}
    W10_PARTS=""
    IMG=4G
    [[ -n $OUT ]] || OUT=$WORK/results
else
    MODE=full
    CORPUS_ROOT=/usr
    W9_RUNS=${W9_RUNS:-3}
    W10_RUNS=${W10_RUNS:-2}
    # W10 holds its tree four times (in the corpus and three plain copies): on this disk,
    # shared with other work, it takes the corpus's share/ and include/ (the space the host
    # has left decides; W10_PARTS="" takes all of it).
    W10_PARTS=${W10_PARTS-"share include"}
    IMG=16G
    [[ -n $OUT ]] || OUT=$BENCH/results
fi
CORPUS_EXCLUDE=${CORPUS_EXCLUDE:-"lib/jvm lib/google-cloud-sdk lib/llvm-* lib/android-sdk share/dotnet local/lib/rustup local/rustup local/cargo local/share/dotnet opt"}

[[ -n $TAG ]] || TAG=$(hostname -s 2>/dev/null || echo machine)
DATE=$(date +%F)
STAMP=$(date +%Y%m%d-%H%M%S)
RAW=$WORK/raw/space-$STAMP
RECORDS=$RAW/records.jsonl
mkdir -p "$RAW" "$OUT"
: >"$RECORDS"

cleanup() {
    local status=$?
    set +e
    fs_teardown
    rm -rf "$WORK/img"
    ((status == 0)) || log "failed (exit $status); raw data kept in $RAW"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

START_S=$SECONDS
log "space benchmarks: mode $MODE, workloads $ONLY, filesystems ${FSS[*]}, raw data in $RAW"
space_setup
space_meta "$RAW/meta.json"
# One filesystem at a time, its image deleted before the next, to hold the host's disk to one
# image's worth.
for fs in "${FSS[@]}"; do
    fs_setup "$fs" "$IMG"
    space_corpus "$fs"
    if want w9; then w9_du "$fs"; fi
    if want w10; then w10_dedupe "$fs"; fi
    fs_teardown
    rm -f "$WORK/img/$fs.img"
done
record kind=run seconds=$((SECONDS - START_S)) load_end="$(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$BENCH/lib/space_report.py" "$RAW" "$OUT/$DATE-$TAG-space"
log "results: $OUT/$DATE-$TAG-space.md and .json ($(((SECONDS - START_S) / 60)) min)"
