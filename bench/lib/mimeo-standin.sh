#!/usr/bin/env bash
# Stand-in for the mimeo binary while it cannot copy a tree yet: accepts the mimeo flags the
# benchmark uses and runs GNU cp with the rest. Results produced with it are marked as such
# in the report and are not mimeo's.
set -euo pipefail

args=()
while (($#)); do
    case $1 in
        -j | --jobs) shift ;;         # worker count: cp has none
        -j* | --jobs=*) ;;
        --json) ;;
        *) args+=("$1") ;;
    esac
    shift
done
exec cp "${args[@]}"
