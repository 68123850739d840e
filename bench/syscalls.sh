#!/usr/bin/env bash
# syscalls.sh: system calls per file of mimeo, cp -a and cpz on a tree of small files.
#
#   bench/syscalls.sh [--files N] [--dir DIR] [--mimeo BIN] [--json OUT]
#
# Generates N small files (default 2000) under DIR (default bench/.work/sys), copies them
# with each tool under `strace -c -f`, and prints a Markdown table of calls per file by
# syscall name. --json also writes the counts as JSON. Use it to see where a copy spends its
# system calls; bench/run.sh runs it on XFS as its last workload.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
# shellcheck source=bench/lib/common.sh
source "$BENCH/lib/common.sh"

FILES=2000
DIR=$BENCH/.work/sys
MIMEO=$ROOT/target/release/mimeo
JSON=""
while (($#)); do
    case $1 in
        --files) FILES=$2; shift ;;
        --dir) DIR=$2; shift ;;
        --mimeo) MIMEO=$2; shift ;;
        --json) JSON=$2; shift ;;
        -h | --help) sed -n '2,10p' "$0"; exit 0 ;;
        *) die "unknown option $1" ;;
    esac
    shift
done
command -v strace >/dev/null || die "strace is not installed"
CPZ=$BENCH/.tools/bin/cpz

rm -rf "$DIR"
mkdir -p "$DIR/out"
TESTKIT=$ROOT/target/release/mimeo-testkit
if [[ -x $TESTKIT ]] && "$TESTKIT" gen-small --files "$FILES" "$DIR/src" >/dev/null 2>&1 &&
    [[ -d $DIR/src ]]; then
    :
else
    rm -rf "$DIR/src"
    python3 "$BENCH/lib/treetool.py" gen-small --files "$FILES" "$DIR/src"
fi
sync

tools=(mimeo "cp -a")
cmds=("$MIMEO -a $DIR/src $DIR/dst" "cp -a $DIR/src $DIR/dst")
if [[ -x $CPZ ]]; then
    tools+=(cpz)
    cmds+=("$CPZ $DIR/src $DIR/dst")
fi
traces=()
for i in "${!tools[@]}"; do
    rm -rf "$DIR/dst"
    sync
    out=$DIR/out/${tools[i]// /}.strace
    read -r -a argv <<<"${cmds[i]}"
    strace -c -f -o "$out" -- "${argv[@]}" >/dev/null || log "warning: ${tools[i]} exited $?"
    traces+=("${tools[i]}=$out")
done
rm -rf "$DIR/dst"

entries=$(count_entries "$DIR/src")
args=(--files "$FILES" --entries "$entries")
[[ -n $JSON ]] && args+=(--json "$JSON")
python3 "$BENCH/lib/stracesum.py" "${args[@]}" "${traces[@]}"
