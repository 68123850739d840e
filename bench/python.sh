#!/usr/bin/env bash
# W12: mimeo's Python binding against shutil (copytree of the corpus, copy2 of 10 KB in a
# loop, copy2 of 1 GiB) on btrfs, XFS and ext4. See bench/README.md.
#
#   bench/python.sh            full run (corpus = /usr less vendored trees, 1 GiB file)
#   bench/python.sh --quick    /usr/include and 256 MiB: proves the plumbing
#
# Needs root (loop devices, mount). Builds the binding with maturin into bench/.work/py-venv,
# and unmounts and detaches everything on exit.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
WORK=$BENCH/.work
# shellcheck source=bench/lib/common.sh
source "$BENCH/lib/common.sh"
# shellcheck source=bench/lib/fs.sh
source "$BENCH/lib/fs.sh"
# shellcheck source=bench/lib/workloads.sh
source "$BENCH/lib/workloads.sh"

QUICK=0
ONLY=tree,small,big
TAG=2core-vm
OUT=$BENCH/results
while (($#)); do
    case $1 in
        --quick) QUICK=1; OUT=$WORK/results ;;
        --only) ONLY=$2; shift ;;
        --tag) TAG=$2; shift ;;
        --out) OUT=$2; shift ;;
        *) die "usage: bench/python.sh [--quick] [--only tree,small,big] [--tag TAG] [--out DIR]" ;;
    esac
    shift
done
[[ $(id -u) -eq 0 ]] || die "run as root (loop devices, mount)"
# A run of some cases only gets a file of its own (…-python-small.md).
[[ $ONLY == tree,small,big ]] || SUFFIX=-${ONLY//,/-}

if ((QUICK)); then
    CORPUS_ROOT=/usr/include; RUNS=2; CALLS=100; REPEATS=6; BIG_MIB=256
    declare -A IMG_SIZE=([btrfs]=4G [xfs]=4G [ext4]=4G)
else
    CORPUS_ROOT=/usr; RUNS=3; CALLS=200; REPEATS=30; BIG_MIB=1024
    declare -A IMG_SIZE=([btrfs]=12G [xfs]=16G [ext4]=20G)
fi
CORPUS_EXCLUDE=${CORPUS_EXCLUDE:-"lib/jvm lib/google-cloud-sdk lib/llvm-* lib/android-sdk share/dotnet local/lib/rustup local/rustup local/cargo local/share/dotnet opt"}

trap 'fs_teardown; rm -rf "$WORK/img"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The binding, built as a user would build it, into a virtual environment of its own.
VENV=$WORK/py-venv
if [[ ! -x $VENV/bin/maturin ]]; then
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet "maturin>=1.5,<2"
fi
log "building the binding (maturin develop --release)"
(cd "$ROOT/crates/mimeo-py" &&
    VIRTUAL_ENV=$VENV CARGO_TARGET_DIR=$ROOT/target/py-build \
        "$VENV/bin/maturin" develop --release --locked --quiet)
cargo build --quiet --release --locked -p mimeo-testkit --manifest-path "$ROOT/Cargo.toml"
TESTKIT=$ROOT/target/release/mimeo-testkit

corpus_excludes
specs=()
for fs in btrfs xfs ext4; do
    fs_setup "$fs" "${IMG_SIZE[$fs]}"
    mnt=$(fs_mnt "$fs")
    mkdir -p "$mnt/src"
    if [[ ,$ONLY, == *,tree,* ]]; then
        copy_excluding "$CORPUS_ROOT" "$mnt/src/usr" ""
        log "$fs: corpus $(count_entries "$mnt/src/usr") entries, $(human "$(size_bytes "$mnt/src/usr")")"
    fi
    "$VENV/bin/python" - "$mnt/big" "$BIG_MIB" <<'PY'
import sys
block = bytes(range(256)) * 4096
with open(sys.argv[1], "wb") as f:
    for i in range(int(sys.argv[2])):
        f.write(block[i % 256:] + block[:i % 256])
PY
    specs+=(--fs "$fs=$mnt")
done
sync

mkdir -p "$OUT"
commit=$(git -C "$ROOT" rev-parse --short HEAD)
meta=$(printf '{"date": "%s", "commit": "%s", "machine": "%s, %s cores, %s GiB", "corpus_root": "%s"}' \
    "$(date +%F)" "$commit" "$(uname -r)" "$(nproc)" \
    "$(($(meminfo_kb MemTotal) / 1048576))" "$CORPUS_ROOT")
"$VENV/bin/python" "$BENCH/lib/w12.py" "${specs[@]}" --runs "$RUNS" --calls "$CALLS" \
    --repeats "$REPEATS" --big-mib "$BIG_MIB" --testkit "$TESTKIT" --meta "$meta" \
    --cases "$ONLY" --out "$OUT/$(date +%F)-$TAG-python${SUFFIX:-}"
log "results: $OUT/$(date +%F)-$TAG-python${SUFFIX:-}.md"
