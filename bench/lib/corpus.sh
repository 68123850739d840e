# shellcheck shell=bash
# The corpus of the stand-alone benchmarks (builds.sh, cold.sh): the machine's /usr without its
# largest vendored trees, as in bench/run.sh's W1, and a tree of small files. Sourced.

CORPUS_EXCLUDE=${CORPUS_EXCLUDE:-"lib/jvm lib/google-cloud-sdk lib/llvm-* lib/rustlib local/rustup local/cargo share/dotnet lib/android-sdk"}

# corpus_copy FROM DST : FROM (a /usr-like tree) into DST without the excluded trees. tar keeps
# owners, modes, times, hard links, xattrs and ACLs.
corpus_copy() {
    local from=$1 dst=$2 g p args=()
    for g in $CORPUS_EXCLUDE; do
        for p in $from/$g; do
            [[ -e $p ]] && args+=(--exclude="./${p#"$from"/}")
        done
    done
    mkdir -p "$dst"
    (cd "$from" && tar --xattrs --acls -cf - "${args[@]}" .) | (cd "$dst" && tar --xattrs --acls -xpf -)
}

# small_tree DST N : N small files (100 B to 6 KB) of random bytes in 100 directories.
small_tree() {
    local dst=$1 n=$2 i
    mkdir -p "$dst"
    for ((i = 0; i < n; i++)); do
        mkdir -p "$dst/d$((i % 100))"
        head -c $((i % 7 * 1000 + 100)) /dev/urandom >"$dst/d$((i % 100))/f$i"
    done
}
