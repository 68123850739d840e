# shellcheck shell=bash
# W9 and W10 for bench/space.sh: setup, the trees, and the timed runs. Sourced, not executed.
# Every measurement becomes one JSON line in $RECORDS (see `record`); space_report.py turns
# them into tables.

# ---- setup ---------------------------------------------------------------------------------

space_setup() {
    local cmd missing=()
    declare -A pkg=([hyperfine]=hyperfine [mkfs.btrfs]=btrfs-progs [mkfs.xfs]=xfsprogs
        [duperemove]=duperemove [jdupes]=jdupes [/usr/bin/time]=time [python3]=python3)
    for cmd in "${!pkg[@]}"; do
        command -v "$cmd" >/dev/null 2>&1 || missing+=("${pkg[$cmd]}")
    done
    if ((${#missing[@]})); then
        ((INSTALL)) || die "missing packages: ${missing[*]} (and --no-install given)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    # compsize is a peer where Debian has it.
    if ! command -v compsize >/dev/null 2>&1 && ((INSTALL)); then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq compsize >/dev/null 2>&1 || true
    fi
    COMPSIZE=$(command -v compsize || true)
    FCLONES=${FCLONES:-$TOOLS/bin/fclones}
    if [[ ! -x $FCLONES ]]; then
        ((INSTALL)) || die "fclones missing (and --no-install given)"
        log "cargo install fclones into $TOOLS"
        cargo install --locked --quiet --root "$TOOLS" fclones
        FCLONES=$TOOLS/bin/fclones
    fi
    log "cargo build --release --locked -p mimeo-du -p mimeo-dedupe"
    (cd "$ROOT" && cargo build --release --locked --quiet -p mimeo-du -p mimeo-dedupe)
    DU=$ROOT/target/release/mimeo-du
    DEDUPE=$ROOT/target/release/mimeo-dedupe
}

space_meta() {
    local commit dirty
    commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
    dirty=$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null | head -1)
    python3 - "$1" <<EOF
import json, sys
json.dump({
    "date": "$DATE", "stamp": "$STAMP", "tag": "$TAG", "mode": "$MODE", "workloads": "$ONLY",
    "kernel": "$(uname -r)", "cpu": "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)",
    "cores": $(nproc), "mem_gib": round($(meminfo_kb MemTotal) / 1048576, 1),
    "commit": "$commit", "dirty": bool("$dirty"), "load_start": "$(cut -d' ' -f1-3 /proc/loadavg)",
    "corpus_root": "$CORPUS_ROOT", "corpus_exclude": "$CORPUS_EXCLUDE",
    "runs": {"w9": $W9_RUNS, "w10": $W10_RUNS}, "w10_parts": "$W10_PARTS",
    "versions": {
        "btrfs": "$(btrfs --version | head -1)", "duperemove": "$(duperemove --version 2>&1 | head -1)",
        "jdupes": "$(jdupes --version | head -1)", "fclones": "$("$FCLONES" --version)",
        "compsize": "${COMPSIZE:+installed}", "hyperfine": "$(hyperfine --version)",
    },
}, open(sys.argv[1], "w"), indent=1)
EOF
}

# space_corpus FS... : $MNT/src/usr on each filesystem, as bench/run.sh builds it.
space_corpus() {
    local fs mnt
    corpus_excludes
    log "corpus: cp -a $CORPUS_ROOT without: ${EXCL[*]:-nothing}"
    for fs in "$@"; do
        mnt=$(fs_mnt "$fs")
        mkdir -p "$mnt/src"
        copy_excluding "$CORPUS_ROOT" "$mnt/src/usr" ""
        sync
        record kind=tree fs="$fs" tree=usr entries="$(count_entries "$mnt/src/usr")" \
            bytes="$(size_bytes "$mnt/src/usr")"
    done
}

# ---- helpers -------------------------------------------------------------------------------

# usage_of PATH : "total exclusive shared unknown_bytes" from mimeo-du --json -s.
usage_of() {
    "$DU" --json -s --progress=never "$1" | python3 -c '
import json, sys
for line in sys.stdin:
    v = json.loads(line)
    if v["type"] == "path":
        print(v["total"], v["exclusive"], v["shared"], v["unknown_bytes"])'
}

# timed NAME OUT CMD... : runs CMD under /usr/bin/time -v; prints "status rss_kib wall user sys".
timed() {
    local out=$2 status=0 rss wall user sys
    shift 2
    /usr/bin/time -v -o "$out" "$@" </dev/null >"$out.stdout" 2>"$out.stderr" || status=$?
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$out")
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$out" |
        awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
    user=$(awk -F': ' '/User time/ {print $2}' "$out")
    sys=$(awk -F': ' '/System time/ {print $2}' "$out")
    printf '%s %s %s %s %s\n' "$status" "${rss:-0}" "${wall:-0}" "${user:-0}" "${sys:-0}"
}

# ---- W9: space accounting ------------------------------------------------------------------

# w9_tree T SRC : the corpus (a plain copy), a cloned copy, and a cloned copy of which every
# fourth file of 8 KiB or more has 4 KiB rewritten in its middle.
w9_tree() {
    local t=$1 src=$2
    rm -rf "$t"
    mkdir -p "$t"
    cp -a --reflink=never "$src" "$t/usr"
    cp -a --reflink=always "$t/usr" "$t/clone"
    cp -a --reflink=always "$t/usr" "$t/rewritten"
    python3 - "$t/rewritten" <<'EOF'
import os, sys
files = []
for d, _, names in os.walk(sys.argv[1]):
    for n in names:
        p = os.path.join(d, n)
        if os.path.isfile(p) and not os.path.islink(p) and os.path.getsize(p) >= 8192:
            files.append(p)
files.sort()
block = os.urandom(4096)
for p in files[::4]:
    st = os.stat(p)
    os.chmod(p, 0o600)
    fd = os.open(p, os.O_WRONLY)
    os.pwrite(fd, block, (st.st_size // 2) // 4096 * 4096)
    os.close(fd)
    os.chmod(p, st.st_mode & 0o7777)
EOF
    sync
}

# w9_tools T FS : "name<TAB>command" of every W9 tool.
w9_tools() {
    local t=$1 fs=$2 j
    printf '%s\t%s\n' mimeo-du "$DU -s --progress=never $t"
    if [[ $fs == btrfs ]]; then
        printf '%s\t%s\n' "btrfs fi du" "btrfs filesystem du -s $t"
        [[ -n $COMPSIZE ]] && printf '%s\t%s\n' compsize "$COMPSIZE $t"
    fi
    printf '%s\t%s\n' "du (counts clones in full)" "du -s $t"
    for j in 1 16; do
        printf '%s\t%s\n' "mimeo-du -j $j" "$DU -s -j $j --progress=never $t"
    done
}

w9_du() {
    local fs=$1 mnt t name cmd args=() out read_ total excl shared unknown line bt be bs
    mnt=$(fs_mnt "$fs")
    t=$mnt/w9
    log "W9 $fs: building the tree (corpus, cloned copy, partly rewritten copy)"
    w9_tree "$t" "$mnt/src/usr"
    record kind=tree fs="$fs" tree=w9 entries="$(count_entries "$t")" bytes="$(size_bytes "$t")"
    read -r total excl shared unknown < <(usage_of "$t")
    record kind=w9_numbers fs="$fs" tool=mimeo-du total="$total" exclusive="$excl" \
        shared="$shared" unknown="$unknown"
    if [[ $fs == btrfs ]]; then
        local line
        line=$(btrfs filesystem du -s --raw "$t" | tail -n 1)
        read -r bt be bs _ <<<"$line"
        record kind=w9_numbers fs="$fs" tool="btrfs fi du" total="$bt" exclusive="$be" shared="$bs"
        log "  numbers: mimeo-du $total/$excl/$shared (unknown $unknown), btrfs fi du $bt/$be/$bs"
    fi
    while IFS=$'\t' read -r name cmd; do args+=(-n "$name" "$cmd"); done < <(w9_tools "$t" "$fs")
    for read_ in warm cold; do
        out=$RAW/w9-$fs-$read_.json
        local prepare=true warmup=1
        if [[ $read_ == cold ]]; then
            prepare="sync; echo 3 > /proc/sys/vm/drop_caches"
            warmup=0
        fi
        log "W9 $fs $read_: $W9_RUNS runs per tool"
        hyperfine --style basic -i --runs "$W9_RUNS" --warmup "$warmup" --prepare "$prepare" \
            --export-json "$out" "${args[@]}" 2>&1 | tee -a "$RAW/hyperfine.log" >&2
        record kind=hyperfine workload=W9 fs="$fs" cache="$read_" file="${out##*/}"
    done
    while IFS=$'\t' read -r name cmd; do
        read -r -a argv <<<"$cmd"
        read -r status rss wall user sys < <(timed "$name" "$RAW/w9-$fs-${name//[ ()]/}.time" "${argv[@]}")
        record kind=memory workload=W9 fs="$fs" tool="$name" status="$status" rss_kb="$rss" wall_s="$wall"
    done < <(w9_tools "$t" "$fs")
    rm -rf "$t"
    trim "$mnt"
}

# ---- W10: dedupe ---------------------------------------------------------------------------

# trim MNT : hands the blocks of deleted files back to the host's disk (the images are sparse).
trim() {
    sync
    fstrim "$1" 2>/dev/null || true
}

# w10_tree T SRC : three plain copies of the corpus (of its W10_PARTS), flushed and out of the
# page cache.
w10_tree() {
    local t=$1 src=$2 c p
    rm -rf "$t"
    trim "${t%/*}"
    mkdir -p "$t"
    for c in a b c; do
        if [[ -z $W10_PARTS ]]; then
            cp -a --reflink=never "$src" "$t/$c"
        else
            mkdir "$t/$c"
            for p in $W10_PARTS; do
                cp -a --reflink=never "$src/$p" "$t/$c/$p"
            done
        fi
    done
    drop_caches
}

# w10_cmd TOOL T : the command line of one tool.
w10_cmd() {
    case $1 in
        mimeo-dedupe) echo "$DEDUPE --progress=never $2" ;;
        duperemove) echo "duperemove -dr -q $2" ;;
        "jdupes -B") echo "jdupes -r -B -q $2" ;;
        "fclones group+dedupe") echo "sh -c \"$FCLONES group $2 | $FCLONES dedupe\"" ;;
    esac
}

w10_dedupe() {
    local fs=$1 mnt t round tool tools before after total excl shared unknown status rss wall user sys
    mnt=$(fs_mnt "$fs")
    t=$mnt/w10
    tools=("mimeo-dedupe" "duperemove" "jdupes -B" "fclones group+dedupe")
    for ((round = 1; round <= W10_RUNS; round++)); do
        for tool in "${tools[@]}"; do
            log "W10 $fs round $round: $tool"
            w10_tree "$t" "$mnt/src/usr"
            read -r total excl shared unknown < <(usage_of "$t")
            before=$((excl + shared))
            drop_caches
            if [[ $tool == "fclones group+dedupe" ]]; then
                read -r status rss wall user sys < <(timed "$tool" "$RAW/w10-$fs-$round-fclones.time" \
                    sh -c "$FCLONES group $t | $FCLONES dedupe")
            else
                read -r -a argv <<<"$(w10_cmd "$tool" "$t")"
                read -r status rss wall user sys < <(timed "$tool" "$RAW/w10-$fs-$round-${tool%% *}.time" "${argv[@]}")
            fi
            read -r total excl shared unknown < <(usage_of "$t")
            after=$((excl + shared))
            record kind=w10 fs="$fs" round="$round" tool="$tool" status="$status" rss_kb="$rss" \
                wall_s="$wall" user_s="$user" sys_s="$sys" before="$before" after="$after" \
                saved="$((before - after))"
            log "  exit $status, ${wall} s, RSS $((rss / 1024)) MiB, saved $(human $((before - after)))"
            record kind=tree fs="$fs" tree=w10 entries="$(count_entries "$t")" bytes="$(size_bytes "$t")"
            if [[ $tool == mimeo-dedupe ]]; then
                # Everything shares now: the second run, cold as the first.
                drop_caches
                read -r status rss wall user sys < <(timed second "$RAW/w10-$fs-$round-second.time" \
                    "$DEDUPE" --progress=never "$t")
                record kind=w10_second fs="$fs" round="$round" tool="$tool" status="$status" \
                    rss_kb="$rss" wall_s="$wall" user_s="$user" sys_s="$sys"
                log "  second run: ${wall} s"
            fi
        done
        # The next round starts with another tool, so that a noisy moment does not always
        # hit the same one.
        tools=("${tools[@]:1}" "${tools[0]}")
    done
    rm -rf "$t"
    trim "$mnt"
}
