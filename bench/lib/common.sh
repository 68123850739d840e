# shellcheck shell=bash
# Shared helpers for bench/run.sh and bench/syscalls.sh. Sourced, not executed.

log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "error: $*"; exit 1; }

# record KEY=VALUE... : append one JSON object to $RECORDS. Values that look like numbers are
# written as numbers, everything else as strings (no quotes or backslashes expected).
record() {
    local out="{" sep="" kv k v
    for kv in "$@"; do
        k=${kv%%=*}
        v=${kv#*=}
        if [[ $v =~ ^-?[0-9]+(\.[0-9]+)?$ ]]; then
            out+="$sep\"$k\":$v"
        else
            v=${v//\\/\\\\}
            v=${v//\"/\\\"}
            out+="$sep\"$k\":\"$v\""
        fi
        sep=","
    done
    printf '%s}\n' "$out" >>"$RECORDS"
}

# Drop the page cache (and dentries/inodes) after flushing dirty data.
drop_caches() {
    sync
    echo 3 >/proc/sys/vm/drop_caches
}

# meminfo_kb FIELD : a /proc/meminfo field in KiB.
meminfo_kb() {
    awk -v f="$1:" '$1 == f { print $2 }' /proc/meminfo
}

# count_entries DIR : number of entries below DIR, DIR included.
count_entries() {
    find "$1" -xdev | wc -l
}

# size_bytes DIR : apparent size of the tree in bytes.
size_bytes() {
    du -sb --apparent-size "$1" | cut -f1
}

# human BYTES
human() {
    numfmt --to=iec-i --suffix=B --format='%.1f' "$1"
}

# warm_memory_cmd GIB : a shell command that writes GIB GiB of memory and frees it. On a VM that
# hands freed memory back to its host (virtio-balloon free page reporting, after about 2 s),
# a run that writes gigabytes right after files were deleted pays to fault that memory back in,
# and the same copy varies by up to 8x; run just before it (hyperfine --prepare), this puts
# memory the guest holds on the free lists for the run to take. Measured: a 4 GiB copy within
# ext4, 6 runs, 1.66-12.38 s without it, 1.57-2.31 s with 6 GiB.
warm_memory_cmd() {
    printf "python3 -c 'b = b\"x\" * (%d << 30)'" "$1"
}

# dontneed_cmd FILE : a shell command that drops FILE's clean pages from the page cache
# (POSIX_FADV_DONTNEED), for hyperfine's --prepare or `bash -c`.
dontneed_cmd() {
    printf "python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' %q" "$1"
}
