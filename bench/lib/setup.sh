# shellcheck shell=bash
# Tool setup for bench/run.sh: packages, peer copiers, our own binaries, the JDK, and probes
# that decide whether mimeo and mimeo-testkit can be used yet. Sourced, not executed.

PEERS=(xcp fcp cpz)

# Debian package that provides each command we need.
declare -A PKG_FOR=(
    [hyperfine]=hyperfine
    [mkfs.btrfs]=btrfs-progs
    [mkfs.xfs]=xfsprogs
    [mkfs.ext4]=e2fsprogs
    [strace]=strace
    [/usr/bin/time]=time
    [fincore]=util-linux
    [losetup]=mount
    [python3]=python3
    [dd]=coreutils
)

setup_packages() {
    local cmd missing=()
    for cmd in "${!PKG_FOR[@]}"; do
        command -v "$cmd" >/dev/null 2>&1 || missing+=("${PKG_FOR[$cmd]}")
    done
    if ((${#missing[@]})); then
        ((INSTALL)) || die "missing packages: ${missing[*]} (and --no-install given)"
        log "installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

setup_peers() {
    local p missing=()
    for p in "${PEERS[@]}"; do
        [[ -x $TOOLS/bin/$p ]] || missing+=("$p")
    done
    if ((${#missing[@]})); then
        ((INSTALL)) || die "missing peers: ${missing[*]} (and --no-install given)"
        log "cargo install ${missing[*]} into $TOOLS"
        cargo install --locked --quiet --root "$TOOLS" "${missing[@]}"
    fi
    # Used by bench/lib/workloads.sh.
    # shellcheck disable=SC2034
    XCP=$TOOLS/bin/xcp FCP=$TOOLS/bin/fcp CPZ=$TOOLS/bin/cpz
}

# Builds mimeo, mimeo-testkit and the copy_loop example. A package that does not build is
# treated as absent (mimeo gets a stand-in, the testkit its fallbacks); the report says so.
setup_build() {
    local pkg
    MIMEO_BIN=$ROOT/target/release/mimeo
    TESTKIT_BIN=$ROOT/target/release/mimeo-testkit
    COPY_LOOP=$ROOT/target/release/examples/copy_loop
    BUILD_FAILED=""
    for pkg in mimeo-testkit mimeo-cli; do
        log "cargo build --release --locked -p $pkg"
        if ! (cd "$ROOT" && cargo build --release --locked --quiet -p "$pkg"); then
            log "warning: $pkg does not build; going on without it"
            BUILD_FAILED+=" $pkg"
            [[ $pkg == mimeo-cli ]] && MIMEO_BIN=""
            [[ $pkg == mimeo-testkit ]] && TESTKIT_BIN=""
        fi
    done
    if ! (cd "$ROOT" && cargo build --release --locked --quiet -p mimeo --example copy_loop); then
        log "warning: the copy_loop example does not build; going on without it"
        BUILD_FAILED+=" copy_loop"
        COPY_LOOP=""
    fi
}

# Finds a JDK 25 (Files.copy clones there) and compiles bench/java/CopyLoop.java with it.
setup_java() {
    local home candidates=()
    JAVA=""
    if [[ -n ${JAVA25_HOME:-} ]]; then
        candidates+=("$JAVA25_HOME")
    fi
    for home in /usr/lib/jvm/*25* /opt/*25* /opt/java/* /usr/lib/jvm/*; do
        [[ -d $home ]] && candidates+=("$home")
    done
    for home in "${candidates[@]}"; do
        if [[ -x $home/bin/javac ]] && "$home/bin/java" -version 2>&1 | grep -q 'version "25'; then
            JAVA=$home/bin/java
            mkdir -p "$WORK/java"
            "$home/bin/javac" -d "$WORK/java" "$BENCH/java/CopyLoop.java"
            log "JDK 25: $home"
            return
        fi
    done
    log "warning: no JDK 25 found (set JAVA25_HOME); W2 runs without the JDK column"
}

# ---- probes --------------------------------------------------------------------------------

# The testkit is preferred for tree generation and comparison; bench/lib/treetool.py stands in
# for each subcommand that does not work yet.
probe_testkit() {
    local d=$WORK/probe
    rm -rf "$d"
    mkdir -p "$d/a" "$d/b"
    echo x >"$d/a/f"
    TK_COMPARE=(python3 "$BENCH/lib/treetool.py" compare)
    TK_GEN_SMALL=(python3 "$BENCH/lib/treetool.py" gen-small)
    TK_GEN_EMPTY=(python3 "$BENCH/lib/treetool.py" gen-empty)
    COMPARER=treetool.py
    if [[ -n $TESTKIT_BIN && -x $TESTKIT_BIN ]]; then
        if ! "$TESTKIT_BIN" compare --no-atime "$d/a" "$d/b" >/dev/null 2>&1 &&
            "$TESTKIT_BIN" compare --no-atime "$d/a" "$d/a" >/dev/null 2>&1; then
            TK_COMPARE=("$TESTKIT_BIN" compare)
            COMPARER=mimeo-testkit
        fi
        if "$TESTKIT_BIN" gen-small --files 3 "$d/s" >/dev/null 2>&1 &&
            (($(find "$d/s" -type f | wc -l) >= 3)); then
            TK_GEN_SMALL=("$TESTKIT_BIN" gen-small)
        fi
        if "$TESTKIT_BIN" gen-empty --files 3 "$d/e" >/dev/null 2>&1 &&
            (($(find "$d/e" -type f -empty | wc -l) >= 3)); then
            TK_GEN_EMPTY=("$TESTKIT_BIN" gen-empty)
        fi
    fi
    log "compare: ${TK_COMPARE[0]##*/}, gen-small: ${TK_GEN_SMALL[0]##*/} ${TK_GEN_SMALL[1]##*/}, gen-empty: ${TK_GEN_EMPTY[0]##*/} ${TK_GEN_EMPTY[1]##*/}"
    rm -rf "$d"
}

# mimeo is benchmarked only if `mimeo -a` really copies a small tree faithfully; otherwise
# (or with --standin) bench/lib/mimeo-standin.sh runs cp in its place and the report says so.
probe_mimeo() {
    local d=$WORK/probe
    rm -rf "$d"
    mkdir -p "$d"
    "${TK_GEN_SMALL[@]}" --files 50 "$d/a" >/dev/null
    ln -s nowhere "$d/a/link"
    MIMEO_OK=0
    if ((!STANDIN)) && [[ -n $MIMEO_BIN && -x $MIMEO_BIN ]] &&
        timeout 60 "$MIMEO_BIN" -a "$d/a" "$d/b" >/dev/null 2>&1 &&
        [[ -d $d/b ]] && "${TK_COMPARE[@]}" --no-atime "$d/a" "$d/b" >/dev/null 2>&1; then
        MIMEO_OK=1
        MIMEO=$MIMEO_BIN
        log "mimeo: $MIMEO ($("$MIMEO" --version 2>/dev/null || echo 'no --version'))"
    else
        MIMEO=$BENCH/lib/mimeo-standin.sh
        log "warning: mimeo cannot copy a tree yet (or --standin): benchmarking cp in its place"
    fi
    # The library loop is usable if it copies one file.
    COPY_LOOP_OK=0
    head -c 100000 /dev/urandom >"$d/one-src"
    if [[ -n $COPY_LOOP && -x $COPY_LOOP ]] && timeout 60 "$COPY_LOOP" "$d/one-src" "$d/one" 3 1 >/dev/null 2>&1 &&
        cmp -s "$d/one-src" "$d/one"; then
        COPY_LOOP_OK=1
    else
        log "warning: mimeo::copy_file does not work yet: W2 runs without the mimeo column"
    fi
    rm -rf "$d"
}

tool_version() {
    case $1 in
        cp | dd) "$1" --version | head -1 ;;
        xcp | cpz | fcp) "$TOOLS/bin/$1" --version 2>&1 | head -1 | tr -d '\n' ;;
        hyperfine) hyperfine --version ;;
        java) [[ -n $JAVA ]] && "$JAVA" -version 2>&1 | head -1 ;;
    esac
}

write_meta() {
    local commit dirty
    commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
    dirty=$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null | head -1)
    python3 - "$1" <<EOF
import json, sys
meta = {
    "date": "$DATE", "stamp": "$STAMP", "tag": "$TAG", "mode": "$MODE", "workloads": "$ONLY",
    "kernel": "$(uname -r)", "cpu": "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)",
    "cores": $(nproc), "mem_gib": round($(meminfo_kb MemTotal) / 1048576, 1),
    "commit": "$commit", "dirty": bool("$dirty"),
    "mimeo_standin": not $MIMEO_OK, "copy_loop_ok": bool($COPY_LOOP_OK),
    "comparer": "$COMPARER", "build_failed": "${BUILD_FAILED# }", "corpus_root": "$CORPUS_ROOT", "corpus_exclude": "$CORPUS_EXCLUDE",
    "versions": {
        "cp": "$(tool_version cp)", "dd": "$(tool_version dd)", "xcp": "$(tool_version xcp)",
        "cpz": "$(tool_version cpz)", "fcp": "$(tool_version fcp)",
        "hyperfine": "$(tool_version hyperfine)", "java": '$(tool_version java | tr -d "'")',
    },
    "runs": {"w1": $W1_RUNS, "w1_warmup": $W1_WARMUP, "w1_small": $W1_SMALL_RUNS, "w1_small_warmup": $W1_SMALL_WARMUP, "w3": $W3_RUNS, "w4": $W4_RUNS},
}
json.dump(meta, open(sys.argv[1], "w"), indent=1)
EOF
}
