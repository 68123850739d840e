#!/usr/bin/env bash
# timed.sh LOG -- COMMAND...
#
# Runs COMMAND, then `sync`, and appends one line to LOG:
#   <exit status> <ns until COMMAND returned> <ns until sync returned>
# Used by workload W3, where hyperfine times the whole thing (durable copy) and this log
# supplies the "as returned" time of the same runs.
set -euo pipefail

log=$1
shift
[[ ${1:-} == -- ]] && shift

t0=$(date +%s%N)
status=0
"$@" || status=$?
t1=$(date +%s%N)
sync
t2=$(date +%s%N)
printf '%d %d %d\n' "$status" "$((t1 - t0))" "$((t2 - t0))" >>"$log"
exit "$status"
