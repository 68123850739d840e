#!/usr/bin/env bash
# W13: mimeo-mpi against mpiFileUtils' dcp -p under mpirun, at 1, 2 and 4 ranks, on XFS and
# ext4; the corpus and one 4 GiB file. Also mimeo-mpi on one rank against single-node
# `mimeo -a`, the differences from the source of every copy (the testkit's comparer), and
# what the ranks sent each other (for the cost model). See bench/README.md, W13.
#
#   bench/w13-mpi.sh [--quick] [--runs N] [--trees corpus,big] [--bind-to POLICY] [--tag TAG]
#                    [--out DIR] [--name NAME]
#
# Open MPI 4's mpirun binds each rank to one core by default when a job has one or two ranks
# (to a socket with more), and a mimeo-mpi rank then starts one worker, since it sizes its
# pool by the CPUs it may use.
# `--bind-to none` lets every rank use every core, as single-node mimeo does.
#
# Needs root (loop devices, mount), OpenMPI, hyperfine, and dcp: $DCP, dcp on the PATH, or
# /var/tmp/mpifileutils/bin/dcp. Build it from mpiFileUtils' sources with libcircle, lwgrp and
# dtcmp as its build instructions say (none of it is part of this repository), and give its
# version in $DCP_VERSION for the report.
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

QUICK=0 RUNS=2 TAG="" OUT="" TREES="corpus big" BIND="" NAME=w13-mpi
while (($#)); do
    case $1 in
        --quick) QUICK=1 ;;
        --runs) RUNS=$2; shift ;;
        --trees) TREES=${2//,/ }; shift ;;
        --bind-to) BIND=$2; shift ;;
        --name) NAME=$2; shift ;;
        --tag) TAG=$2; shift ;;
        --out) OUT=$2; shift ;;
        -h | --help) sed -n 2,12p "$0"; exit 0 ;;
        *) die "unknown option $1" ;;
    esac
    shift
done
[[ $(id -u) -eq 0 ]] || die "run as root (loop devices, mount)"

if ((QUICK)); then
    CORPUS_ROOT=/usr/include BIG_MIB=256 RUNS=1 IMG=4G
    [[ -n $OUT ]] || OUT=$WORK/results
else
    CORPUS_ROOT=/usr BIG_MIB=4096 IMG=24G
    [[ -n $OUT ]] || OUT=$BENCH/results
fi
CORPUS_EXCLUDE=${CORPUS_EXCLUDE:-"lib/jvm lib/google-cloud-sdk lib/llvm-* lib/android-sdk share/dotnet local/lib/rustup local/rustup local/cargo local/share/dotnet opt"}
[[ -n $TAG ]] || TAG=$(hostname -s 2>/dev/null || echo machine)
NPS="1 2 4"
STAMP=$(date +%Y%m%d-%H%M%S)
RAW=$WORK/raw/w13-$STAMP
RECORDS=$RAW/records.jsonl
mkdir -p "$RAW" "$OUT"
: >"$RECORDS"
want() { false; }  # prepare_trees' optional parts are not used here

cleanup() {
    local status=$?
    set +e
    fs_teardown
    rm -rf "$WORK/img"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- tools ---------------------------------------------------------------------------------
command -v hyperfine >/dev/null || { apt-get update -qq && apt-get install -y -qq hyperfine >/dev/null; }
command -v mpirun >/dev/null || { apt-get update -qq && apt-get install -y -qq openmpi-bin libopenmpi-dev libclang-dev >/dev/null; }
log "building mimeo, mimeo-testkit and mimeo-mpi (release)"
(cd "$ROOT" && cargo build --release --locked -q -p mimeo-cli -p mimeo-testkit)
(cd "$ROOT/crates/mimeo-mpi" && cargo build --release --locked -q)
MIMEO=$ROOT/target/release/mimeo
MIMEO_MPI=$ROOT/crates/mimeo-mpi/target/release/mimeo-mpi
COMPARE=("$ROOT/target/release/mimeo-testkit" compare --no-atime)
DCP=${DCP:-$(command -v dcp || echo /var/tmp/mpifileutils/bin/dcp)}
[[ -x $DCP ]] || die "no dcp at $DCP: build mpiFileUtils (with libcircle, lwgrp and dtcmp) and set DCP"
DCP_VERSION=${DCP_VERSION:-}
MPIRUN=(mpirun --allow-run-as-root --oversubscribe)
[[ -z $BIND ]] || MPIRUN+=(--bind-to "$BIND")
MPI_VERSION=$(mpirun --version | head -n 1)
cat >"$RAW/meta.json" <<JSON
{"date": "$(date +%F)", "host": "$TAG", "commit": "$(git -C "$ROOT" rev-parse --short HEAD)",
 "cpus": $(nproc), "mem_gib": $(($(meminfo_kb MemTotal) / 1048576)), "kernel": "$(uname -r)",
 "mpi": "$MPI_VERSION", "dcp": "${DCP_VERSION:-unknown}", "runs": $RUNS, "quick": $QUICK,
 "corpus_root": "$CORPUS_ROOT", "big_mib": $BIG_MIB, "bind_to": "${BIND:-default}"}
JSON

# ---- filesystems and trees -----------------------------------------------------------------
fs_setup xfs "$IMG"
fs_setup ext4 "$IMG"
corpus_excludes
for fs in xfs ext4; do
    mnt=$(fs_mnt "$fs")
    mkdir -p "$mnt/src" "$mnt/dst"
    log "$fs: corpus (cp -a $CORPUS_ROOT without ${EXCL[*]:-nothing})"
    copy_excluding "$CORPUS_ROOT" "$mnt/src/corpus" ""
    mkdir -p "$mnt/src/big"
    if [[ $fs == xfs ]]; then
        log "$fs: one ${BIG_MIB} MiB file of random bytes"
        head -c "$((BIG_MIB << 20))" /dev/urandom >"$mnt/src/big/file"
    else
        cp "$(fs_mnt xfs)/src/big/file" "$mnt/src/big/file"
    fi
    for tree in corpus big; do
        record kind=tree fs="$fs" tree="$tree" entries="$(count_entries "$mnt/src/$tree")" \
            bytes="$(size_bytes "$mnt/src/$tree")"
    done
done
sync

# tools SRC DST : "name<TAB>command" of every copier measured.
tools() {
    local s=$1 d=$2 np
    printf '%s\t%s\n' "mimeo -a" "$MIMEO -a $s $d"
    for np in $NPS; do
        printf '%s\t%s\n' "mimeo-mpi np$np" "${MPIRUN[*]} -np $np $MIMEO_MPI -a $s $d"
    done
    for np in $NPS; do
        printf '%s\t%s\n' "dcp -p np$np" "${MPIRUN[*]} -np $np $DCP -p -q $s $d"
    done
}

# ---- W13 -----------------------------------------------------------------------------------
# What starting a job costs, whatever it runs: the floor under every mpirun figure. `true`
# is mpirun's own start; `mimeo-mpi --version` adds MPI_Init and MPI_Finalize in every rank
# (Open MPI loads and probes its transports there), which every MPI program pays.
log "launch: mpirun -np N true, and mimeo-mpi --version"
out=$RAW/w13-launch.json
hf "$out" true "$((RUNS + 1))" 0 "mpirun np1 true" "${MPIRUN[*]} -np 1 true" \
    "mpirun np4 true" "${MPIRUN[*]} -np 4 true" \
    "mpi start np1" "${MPIRUN[*]} -np 1 $MIMEO_MPI --version" \
    "mpi start np4" "${MPIRUN[*]} -np 4 $MIMEO_MPI --version"
record kind=launch file="${out##*/}"
for fs in xfs ext4; do
    mnt=$(fs_mnt "$fs")
    for tree in $TREES; do
        src=$mnt/src/$tree dst=$mnt/dst/$tree
        log "W13 $fs/$tree"
        hfargs=()
        while IFS=$'\t' read -r name cmd; do hfargs+=("$name" "$cmd"); done < <(tools "$src" "$dst")
        out=$RAW/w13-$fs-$tree.json
        hf "$out" "rm -rf $dst && sync && $(warm_memory_cmd 6)" "$RUNS" 0 "${hfargs[@]}"
        record kind=hyperfine workload=W13 fs="$fs" tree="$tree" file="${out##*/}"
        # Fidelity: one more run of each, compared with the source.
        while IFS=$'\t' read -r name cmd; do
            rm -rf "$dst" && sync
            st=$RAW/w13-$fs-$tree-${name// /}
            status=0
            $cmd </dev/null >"$st.out" 2>&1 || status=$?
            "${COMPARE[@]}" "$src" "$dst" </dev/null >"$st.compare" 2>&1 || true
            n=$(diff_count "$st.compare")
            record kind=fidelity workload=W13 fs="$fs" tree="$tree" tool="$name" status="$status" diffs="$n"
            log "  $name: exit $status, $n differences"
        done < <(tools "$src" "$dst")
        # Cost: what the ranks sent each other.
        for np in 2 4; do
            rm -rf "$dst" && sync
            MIMEO_MPI_RANK_STATS=1 "${MPIRUN[@]}" -np "$np" "$MIMEO_MPI" -a "$src" "$dst" \
                </dev/null >/dev/null 2>"$RAW/w13-$fs-$tree-ranks$np.jsonl" || true
            record kind=ranks workload=W13 fs="$fs" tree="$tree" np="$np" file="w13-$fs-$tree-ranks$np.jsonl"
        done
        rm -rf "$dst"
    done
done

python3 "$BENCH/lib/w13report.py" "$RAW" "$OUT/$(date +%F)-$TAG-$NAME"
log "results: $OUT/$(date +%F)-$TAG-$NAME.md and .json"
