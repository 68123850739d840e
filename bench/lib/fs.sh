# shellcheck shell=bash
# Loop-mounted btrfs, XFS (reflink=1) and ext4 images under $WORK/img, mounted on $WORK/mnt.
# Sourced by bench/run.sh. Everything set up here is undone by fs_teardown, which run.sh calls
# from its EXIT trap, so an interrupted run leaves no mounts or loop devices behind.

MOUNTED=()   # mount points, in mount order
LOOPS=()     # loop devices we attached

# fs_setup NAME SIZE : create, format and mount the image for NAME (btrfs|xfs|ext4);
# prints nothing, sets MNT_<NAME>.
fs_setup() {
    local name=$1 size=$2 img="$WORK/img/$1.img" mnt="$WORK/mnt/$1" dev
    mkdir -p "$WORK/img" "$mnt"
    if mountpoint -q "$mnt"; then
        die "$mnt is already mounted (a previous run still active?)"
    fi
    rm -f "$img"
    truncate -s "$size" "$img"
    # Direct I/O keeps the loop device from caching every block twice (once for the image
    # file, once for the filesystem on it), so "cold cache" and page-cache figures mean what
    # they say. Fall back to buffered loop I/O where the host filesystem refuses it.
    if ! dev=$(losetup --find --show --direct-io=on "$img" 2>/dev/null); then
        dev=$(losetup --find --show "$img")
    fi
    LOOPS+=("$dev")
    case $name in
        btrfs) mkfs.btrfs -q -f "$dev" >/dev/null ;;
        xfs) mkfs.xfs -q -f -m reflink=1 "$dev" ;;
        # Enough inodes for the generated trees; no lazy init, so no background writes later.
        ext4) mkfs.ext4 -q -F -i 8192 -E lazy_itable_init=0,lazy_journal_init=0 "$dev" ;;
        *) die "unknown filesystem $name" ;;
    esac
    mount "$dev" "$mnt"
    MOUNTED+=("$mnt")
    printf -v "MNT_${name^^}" '%s' "$mnt"
    log "mounted $name ($size image, $dev) on $mnt"
}

fs_teardown() {
    local i mnt dev
    for ((i = ${#MOUNTED[@]} - 1; i >= 0; i--)); do
        mnt=${MOUNTED[i]}
        if mountpoint -q "$mnt"; then
            umount "$mnt" 2>/dev/null || umount -l "$mnt" || true
        fi
    done
    MOUNTED=()
    for dev in "${LOOPS[@]}"; do
        losetup -d "$dev" 2>/dev/null || true
    done
    LOOPS=()
}

# fs_mnt NAME : the mount point of NAME.
fs_mnt() {
    local v="MNT_${1^^}"
    [[ -n ${!v:-} ]] || die "filesystem $1 is not set up"
    printf '%s\n' "${!v}"
}
