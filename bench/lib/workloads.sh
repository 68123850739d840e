# shellcheck shell=bash
# The workloads of bench/run.sh. Sourced, not executed. Each workload leaves hyperfine JSON
# files and JSON lines (see `record`) in $RAW; bench/lib/report.py turns them into tables.

# ---- trees ---------------------------------------------------------------------------------

# corpus_excludes : the concrete paths (relative to $CORPUS_ROOT) that CORPUS_EXCLUDE matches.
corpus_excludes() {
    local g p
    EXCL=()
    for g in $CORPUS_EXCLUDE; do
        while IFS= read -r p; do
            [[ -n $p ]] && EXCL+=("${p#"$CORPUS_ROOT"/}")
        done < <(compgen -G "$CORPUS_ROOT/$g" || true)
    done
}

# copy_excluding SRC DST REL : cp -a SRC to DST, leaving out the paths in EXCL. Only the
# directories on the way to an excluded path are recreated by hand (owner, mode, times).
copy_excluding() {
    local src=$1 dst=$2 rel=$3 child r e skip below
    mkdir "$dst"
    for child in "$src"/* "$src"/.[!.]*; do
        [[ -e $child || -L $child ]] || continue
        r=${rel:+$rel/}${child##*/}
        skip=0 below=0
        for e in "${EXCL[@]}"; do
            [[ $e == "$r" ]] && skip=1
            [[ $e == "$r"/* ]] && below=1
        done
        if ((skip)); then
            continue
        elif ((below)) && [[ -d $child && ! -L $child ]]; then
            copy_excluding "$child" "$dst/${child##*/}" "$r"
        else
            cp -a "$child" "$dst/"
        fi
    done
    chown --reference="$src" "$dst"
    chmod --reference="$src" "$dst"
    touch -r "$src" "$dst"
}

# prepare_trees FS... : the corpus and the generated trees on each filesystem.
#   $MNT/src/usr     copy of /usr without the largest vendored trees (quick: /usr/include)
#   $MNT/src/small   SMALL_FILES small files
#   $MNT/src/empty   EMPTY_FILES empty files (XFS only: W5)
prepare_trees() {
    local fs mnt first="" entries bytes
    corpus_excludes
    log "corpus: cp -a $CORPUS_ROOT without: ${EXCL[*]:-nothing}"
    for fs in "$@"; do
        mnt=$(fs_mnt "$fs")
        mkdir -p "$mnt/src"
        copy_excluding "$CORPUS_ROOT" "$mnt/src/usr" ""
        if [[ -z $first ]]; then
            first=$mnt
            "${TK_GEN_SMALL[@]}" --files "$SMALL_FILES" "$mnt/src/small" >/dev/null
        else
            cp -a "$first/src/small" "$mnt/src/small"
        fi
        entries=$(count_entries "$mnt/src/usr")
        bytes=$(size_bytes "$mnt/src/usr")
        record kind=tree fs="$fs" tree=usr entries="$entries" bytes="$bytes"
        log "$fs: corpus $entries entries, $(human "$bytes"); small tree $(count_entries "$mnt/src/small") entries, $(human "$(size_bytes "$mnt/src/small")")"
        record kind=tree fs="$fs" tree=small entries="$(count_entries "$mnt/src/small")" bytes="$(size_bytes "$mnt/src/small")"
    done
    if want w5; then
        mnt=$(fs_mnt xfs)
        log "xfs: generating $EMPTY_FILES empty files"
        "${TK_GEN_EMPTY[@]}" --files "$EMPTY_FILES" "$mnt/src/empty" >/dev/null
        record kind=tree fs=xfs tree=empty entries="$(count_entries "$mnt/src/empty")" bytes=0
    fi
    sync
}

# ---- helpers -------------------------------------------------------------------------------

# tree_tools SRC DST : "name<TAB>command" for every tree copier of W1.
tree_tools() {
    local s=$1 d=$2
    printf '%s\t%s\n' \
        mimeo "$MIMEO -a $s $d" \
        "cp -a" "cp -a --reflink=auto $s $d" \
        "cp -r" "cp -r $s $d" \
        xcp "$XCP -r $s $d" \
        cpz "$CPZ $s $d" \
        fcp "$FCP $s $d"
}

# hf OUT PREPARE RUNS WARMUP NAME CMD [NAME CMD]... : one hyperfine invocation.
# Failures are ignored (-i) so that one broken peer does not stop the run; the exit codes are
# in the JSON and the report flags them.
hf() {
    local out=$1 prepare=$2 runs=$3 warmup=$4 args=()
    shift 4
    while (($#)); do
        args+=(-n "$1" "$2")
        shift 2
    done
    # HF_NOSHELL=1: run the commands without a shell (-N). For commands that take about a
    # millisecond, hyperfine's correction for the shell's start-up time is as large as the
    # measurement itself.
    local noshell=()
    [[ ${HF_NOSHELL:-0} == 1 ]] && noshell=(-N)
    hyperfine --style basic -i "${noshell[@]}" --runs "$runs" --warmup "$warmup" --prepare "$prepare" \
        --export-json "$out" "${args[@]}" 2>&1 | tee -a "$RAW/hyperfine.log" >&2
}

# timev OUT CMD : run CMD (a simple command line, split on spaces) under /usr/bin/time -v;
# prints "<exit status> <max RSS KiB> <wall seconds>".
timev() {
    local out=$1 status=0 cmd rss wall
    read -r -a cmd <<<"$2"
    /usr/bin/time -v -o "$out" "${cmd[@]}" </dev/null >/dev/null 2>>"$out.stderr" || status=$?
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$out")
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$out" |
        awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
    printf '%s %s %s\n' "$status" "${rss:-0}" "${wall:-0}"
}

# diff_count FILE : the number of differences a compare run reported: the number before
# "difference" on its summary line ("3 differences", "0 difference(s) in 0 of 9 entries").
diff_count() {
    local n
    n=$(grep -oE '[0-9]+ difference' "$1" | tail -n 1 | cut -d' ' -f1 || true)
    printf '%s\n' "${n:--1}"
}

# ---- W1: tree copy, warm cache -------------------------------------------------------------
w1_tree_copy() {
    local fs mnt tree src dst name cmd hfargs out st rss wall status n
    for fs in "${FSS[@]}"; do
        mnt=$(fs_mnt "$fs")
        for tree in $W1_TREES; do
            src=$mnt/src/$tree
            dst=$mnt/dst/$tree
            mkdir -p "$mnt/dst"
            log "W1 $fs/$tree"
            hfargs=()
            while IFS=$'\t' read -r name cmd; do
                hfargs+=("$name" "$cmd")
            done < <(tree_tools "$src" "$dst")
            out=$RAW/w1-$fs-$tree.json
            if [[ $tree == usr ]]; then
                hf "$out" "rm -rf $dst && sync" "$W1_RUNS" "$W1_WARMUP" "${hfargs[@]}"
            else
                hf "$out" "rm -rf $dst && sync" "$W1_SMALL_RUNS" "$W1_SMALL_WARMUP" "${hfargs[@]}"
            fi
            record kind=hyperfine workload=W1 fs="$fs" tree="$tree" file="${out##*/}"
            # Fidelity and peak RSS: one more run of each tool, then compare with the source.
            while IFS=$'\t' read -r name cmd; do
                rm -rf "$dst"
                sync
                st="$RAW/w1-$fs-$tree-${name// /}"
                read -r status rss wall < <(timev "$st.time" "$cmd")
                n=-1
                # Comparing reads both trees (about 20 s for `usr`): on the other trees, only
                # mimeo's copy is checked, to keep the full run near its time budget.
                if [[ $tree != usr && $name != mimeo ]]; then
                    n=""
                elif [[ -e $dst ]]; then
                    "${TK_COMPARE[@]}" --no-atime "$src" "$dst" </dev/null >"$st.compare" 2>&1 || true
                    n=$(diff_count "$st.compare")
                    gzip -f "$st.compare"
                fi
                record kind=fidelity workload=W1 fs="$fs" tree="$tree" tool="$name" \
                    status="$status" rss_kb="$rss" wall_s="$wall" diffs="$n"
                log "  $name: exit $status, ${n:-unchecked} differences, max RSS $((rss / 1024)) MiB"
            done < <(tree_tools "$src" "$dst")
            rm -rf "$dst"
        done
    done
}

# ---- W4: worker count ----------------------------------------------------------------------
w4_workers() {
    local fs mnt src dst j hfargs out
    for fs in xfs ext4; do
        mnt=$(fs_mnt "$fs")
        src=$mnt/src/usr
        dst=$mnt/dst/w4
        mkdir -p "$mnt/dst"
        log "W4 $fs: mimeo -a -j {$W4_JOBS}"
        hfargs=()
        for j in $W4_JOBS; do
            hfargs+=("mimeo -j $j" "$MIMEO -a -j $j $src $dst")
        done
        out=$RAW/w4-$fs.json
        # No warmup: W1 has just read the same source tree.
        hf "$out" "rm -rf $dst && sync" "$W4_RUNS" 0 "${hfargs[@]}"
        record kind=hyperfine workload=W4 fs="$fs" tree=usr file="${out##*/}"
        rm -rf "$dst"
    done
}

# ---- W5: peak memory on the empty-file tree ------------------------------------------------
w5_memory() {
    local mnt src dst name cmd status rss wall
    mnt=$(fs_mnt xfs)
    src=$mnt/src/empty
    dst=$mnt/dst/empty
    mkdir -p "$mnt/dst"
    log "W5 xfs: $EMPTY_FILES empty files"
    while IFS=$'\t' read -r name cmd; do
        rm -rf "$dst"
        sync
        read -r status rss wall < <(timev "$RAW/w5-${name// /}.time" "$cmd")
        record kind=memory workload=W5 fs=xfs tree=empty tool="$name" status="$status" \
            rss_kb="$rss" wall_s="$wall"
        log "  $name: exit $status, max RSS $((rss / 1024)) MiB, ${wall} s"
    done < <(tree_tools "$src" "$dst")
    rm -rf "$dst"
    # The tree is only needed here; free the inodes for what follows.
    rm -rf "$src"
}

# ---- W2: one file, ops/s by size -----------------------------------------------------------
size_bytes_of() { numfmt --from=iec "$1"; }

w2_one_file() {
    local fs mnt size bytes iters warm cpruns src out
    for fs in "${FSS[@]}"; do
        mnt=$(fs_mnt "$fs")
        mkdir -p "$mnt/w2"
        for size in $W2_SIZES; do
            bytes=$(size_bytes_of "$size")
            src=$mnt/w2/src-$size
            head -c "$bytes" /dev/urandom >"$src"
            sync
            # Clones cost the same at every size; data copies are bounded by a byte budget.
            if [[ $fs == ext4 ]]; then
                iters=$((W2_DATA_MIB * 1048576 / bytes))
                ((iters > W2_COW_ITERS)) && iters=$W2_COW_ITERS
                ((iters < 3)) && iters=3
            else
                iters=$W2_COW_ITERS
            fi
            warm=$((iters / 5))
            ((warm < 1)) && warm=1
            ((warm > 500)) && warm=500
            cpruns=$((iters / 10))
            ((cpruns > W2_CP_MAX_RUNS)) && cpruns=$W2_CP_MAX_RUNS
            ((cpruns < 3)) && cpruns=3
            log "W2 $fs $size: $iters iterations, $W2_REPEATS times"
            # The two loops take turns, so that a noisy moment hits both; the report takes
            # each one's median.
            for ((rep = 0; rep < W2_REPEATS; rep++)); do
                if ((COPY_LOOP_OK)); then
                    out=$("$COPY_LOOP" "$src" "$mnt/w2/dst-mimeo" "$iters" "$warm") || out=""
                    w2_record "$fs" "$size" "$bytes" mimeo "$out"
                fi
                if [[ -n $JAVA ]]; then
                    out=$("$JAVA" -cp "$WORK/java" CopyLoop "$src" "$mnt/w2/dst-jdk" "$iters" "$warm") || out=""
                    w2_record "$fs" "$size" "$bytes" jdk "$out"
                fi
            done
            out=$RAW/w2-$fs-$size-cp.json
            HF_NOSHELL=1 hf "$out" "true" "$cpruns" 1 cp "cp $src $mnt/w2/dst-cp" >/dev/null 2>&1
            record kind=hyperfine workload=W2 fs="$fs" size="$size" bytes="$bytes" tool=cp file="${out##*/}"
            rm -f "$mnt"/w2/dst-* "$src"
            sync
        done
    done
}

# w2_record FS SIZE BYTES TOOL JSONLINE
w2_record() {
    local ops secs
    ops=$(grep -oE '"ops_per_sec":[0-9.]+' <<<"$5" | cut -d: -f2 || true)
    secs=$(grep -oE '"seconds":[0-9.]+' <<<"$5" | cut -d: -f2 || true)
    record kind=ops workload=W2 fs="$1" size="$2" bytes="$3" tool="$4" ops_per_sec="${ops:-0}" seconds="${secs:-0}"
    log "  $4: ${ops:-failed} ops/s"
}

# ---- W3: large file, cold cache ------------------------------------------------------------
w3_large_file() {
    local ext4 xfs src target dst name cmd hfargs out c0 c1 fsrc fdst tlog argv
    ext4=$(fs_mnt ext4)
    xfs=$(fs_mnt xfs)
    src=$ext4/big/big.bin
    mkdir -p "$ext4/big" "$ext4/w3" "$xfs/w3"
    log "W3: writing a $BIG_MIB MiB file on ext4"
    dd if=/dev/urandom of="$src" bs=1M count="$BIG_MIB" status=none
    sync
    for target in ext4 xfs; do
        dst=$(fs_mnt "$target")/w3/big.bin
        hfargs=()
        tlog=$RAW/w3-$target.timed
        : >"$tlog"
        while IFS=$'\t' read -r name cmd; do
            hfargs+=("$name" "$BENCH/lib/timed.sh $tlog.${name// /} -- $cmd")
        done < <(w3_tools "$src" "$dst")
        log "W3 ext4 -> $target"
        out=$RAW/w3-$target.json
        hf "$out" "rm -f $dst; sync; echo 3 > /proc/sys/vm/drop_caches" "$W3_RUNS" 0 "${hfargs[@]}"
        record kind=hyperfine workload=W3 target="$target" bytes="$((BIG_MIB * 1048576))" file="${out##*/}"
        # Page-cache footprint: one more cold run per tool, then what is cached afterwards.
        while IFS=$'\t' read -r name cmd; do
            rm -f "$dst"
            drop_caches
            c0=$(meminfo_kb Cached)
            read -r -a argv <<<"$cmd"
            "${argv[@]}" </dev/null >/dev/null 2>&1 || true
            sync
            c1=$(meminfo_kb Cached)
            fsrc=$(fincore --bytes --noheadings --output RES "$src" 2>/dev/null | tr -d ' ' || echo 0)
            fdst=$(fincore --bytes --noheadings --output RES "$dst" 2>/dev/null | tr -d ' ' || echo 0)
            record kind=pagecache workload=W3 target="$target" tool="$name" \
                cached_delta_kb="$((c1 - c0))" src_cached="${fsrc:-0}" dst_cached="${fdst:-0}"
            log "  $name: page cache +$(((c1 - c0) / 1024)) MiB (src $(human "${fsrc:-0}"), dst $(human "${fdst:-0}"))"
        done < <(w3_tools "$src" "$dst")
        rm -f "$dst"
    done
    rm -f "$src"
}

w3_tools() {
    local s=$1 d=$2
    printf '%s\t%s\n' \
        mimeo "$MIMEO $s $d" \
        cp "cp $s $d" \
        "dd bs=8M" "dd if=$s of=$d bs=8M status=none" \
        xcp "$XCP $s $d" \
        cpz "$CPZ $s $d"
}

# ---- syscall counts ------------------------------------------------------------------------
sys_counts() {
    local mnt
    mnt=$(fs_mnt xfs)
    log "syscalls: strace -c on $SYS_FILES small files (xfs)"
    "$BENCH/syscalls.sh" --dir "$mnt/sys" --files "$SYS_FILES" --mimeo "$MIMEO" \
        --json "$RAW/syscalls.json" >"$RAW/syscalls.md"
    record kind=syscalls file=syscalls.json
    rm -rf "$mnt/sys"
}
