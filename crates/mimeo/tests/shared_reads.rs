//! Shared reads (`mimeo::SharedFile`) on loop-mounted btrfs and XFS (reflink=1): a clone's
//! shared ranges are read through its canonical file, and the bytes are always those of a
//! plain read, whatever writers do to either file meanwhile. ext4 and tmpfs, which share no
//! blocks, read plainly.

use mimeo::SharedFile;
use mimeo_testkit::files::scratch;
use mimeo_testkit::mutate::{
    Mapped, cached_pages, clone_range, mount_source, sectors_read, start_writeback,
};
use mimeo_testkit::rng::Rng;
use mimeo_testkit::{FsKind, LoopFs};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;
const BLOCK: u64 = 4096;

fn random(n: u64, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; n as usize];
    Rng::new(seed).fill(&mut v);
    v
}

fn rw(path: &Path) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
}

/// `dir/parent` with `size` random bytes on disk, and `dir/clone`, a clone of it.
fn parent_and_clone(dir: &Path, size: u64, seed: u64) -> (PathBuf, PathBuf) {
    let (a, b) = (dir.join("parent"), dir.join("clone"));
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&a)
        .expect("create parent");
    f.write_all(&random(size, seed)).expect("write parent");
    f.sync_all().expect("fsync parent");
    let g = File::create(&b).expect("create clone");
    rustix::fs::ioctl_ficlone(&g, &f).expect("FICLONE");
    (a, b)
}

/// A plain read of `len` bytes at `off`, as many as the file has.
fn plain(f: &File, off: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    let mut done = 0;
    while done < len {
        match f.read_at(&mut buf[done..], off + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => panic!("plain read: {e}"),
        }
    }
    buf.truncate(done);
    buf
}

fn drop_cache(f: &File) {
    rustix::fs::fadvise(f, 0, None, rustix::fs::Advice::DontNeed).expect("fadvise");
}

/// Waits until both files' ctimes are older than shared reads require.
fn settle() {
    std::thread::sleep(Duration::from_millis(120));
}

#[test]
fn a_clone_read_after_its_parent_is_cached_adds_almost_nothing_to_the_page_cache() {
    for kind in [FsKind::Btrfs, FsKind::Xfs] {
        let Some(fs) = scratch(kind) else { continue };
        let size = 48 * MIB;
        let (a, b) = parent_and_clone(fs.path(), size, 1);
        let (fa, fb) = (File::open(&a).unwrap(), File::open(&b).unwrap());
        fb.sync_all().unwrap();
        drop_cache(&fa);
        drop_cache(&fb);
        settle();
        let expected = plain(&fa, 0, size as usize);
        // The parent fully cached. Tests run side by side, and once in a CI-sized run a few of
        // its pages were reclaimed right after the read: those are read again.
        for _ in 0..3 {
            if cached_pages(fa.as_fd(), 0, 0).unwrap().0 == size / 4096 {
                break;
            }
            plain(&fa, 0, size as usize);
        }
        assert_eq!(cached_pages(fa.as_fd(), 0, 0).unwrap().0, size / 4096);
        let dev = mount_source(fs.path()).expect("the loop device");
        let sectors = sectors_read(&dev).expect("diskstats");

        let mut clone = SharedFile::options().canonical(&a).open(&b).unwrap();
        let mut got = Vec::new();
        clone.read_to_end(&mut got).unwrap();
        assert!(got == expected, "{kind}: the clone's bytes");
        let stats = clone.stats();
        assert_eq!(stats.canonical_bytes, size, "{kind}: {stats:?}");
        // The clone's own cache stays (almost) empty, and the device was (almost) not read:
        // its bytes came out of the parent's cache.
        let (cached, _) = cached_pages(fb.as_fd(), 0, 0).unwrap();
        assert!(
            cached <= size / 4096 / 100,
            "{kind}: clone cached {cached} pages"
        );
        let read = sectors_read(&dev).unwrap() - sectors;
        assert!(
            read * 512 <= size / 50,
            "{kind}: {read} sectors read from {dev}"
        );

        // A plain read of the clone, for contrast, fills its own cache from the device.
        assert!(plain(&fb, 0, size as usize) == expected);
        let (cached, _) = cached_pages(fb.as_fd(), 0, 0).unwrap();
        assert_eq!(cached, size / 4096, "{kind}: a plain read caches the clone");
        assert!(
            (sectors_read(&dev).unwrap() - sectors) * 512 >= size,
            "{kind}"
        );
    }
}

#[test]
fn files_opened_in_one_process_find_each_other_by_their_blocks() {
    for kind in [FsKind::Btrfs, FsKind::Xfs] {
        let Some(fs) = scratch(kind) else { continue };
        let size = 6 * MIB + 123;
        let (a, b) = parent_and_clone(fs.path(), size, 2);
        // A second clone, of the clone, and an unrelated file with the same bytes.
        let c = fs.path().join("grandchild");
        rustix::fs::ioctl_ficlone(File::create(&c).unwrap(), File::open(&b).unwrap()).unwrap();
        std::fs::write(fs.path().join("copy"), std::fs::read(&a).unwrap()).unwrap();
        File::open(fs.path().join("copy"))
            .unwrap()
            .sync_all()
            .unwrap();
        settle();
        let expected = std::fs::read(&a).unwrap();
        let mut parent = SharedFile::open(&a).unwrap();
        assert_eq!(
            parent.canonical_count(),
            0,
            "{kind}: the first file is its own"
        );
        for path in [&b, &c] {
            let mut f = SharedFile::open(path).unwrap();
            assert_eq!(f.canonical_count(), 1, "{kind}: {}", path.display());
            assert_eq!(f.shared_len(), size.div_ceil(BLOCK) * BLOCK, "{kind}");
            let mut got = Vec::new();
            f.read_to_end(&mut got).unwrap();
            assert!(got == expected, "{kind}: {}", path.display());
            assert_eq!(f.stats().canonical_bytes, size, "{kind}");
        }
        let copy = SharedFile::open(fs.path().join("copy")).unwrap();
        assert_eq!(
            copy.canonical_count(),
            0,
            "{kind}: equal bytes are not shared blocks"
        );
        let mut got = Vec::new();
        parent.read_to_end(&mut got).unwrap();
        assert!(got == expected);
        assert_eq!(parent.stats().canonical_bytes, 0);

        // Once the parent's reader is gone, the next file registers itself instead.
        drop(parent);
        let b1 = SharedFile::open(&b).unwrap();
        assert_eq!(
            b1.canonical_count(),
            0,
            "{kind}: the registry let the parent go"
        );
        let c1 = SharedFile::open(&c).unwrap();
        assert_eq!(
            c1.canonical_count(),
            1,
            "{kind}: now read through the clone"
        );
        // The registry can be left out.
        let c2 = SharedFile::options().registry(false).open(&c).unwrap();
        assert_eq!(c2.canonical_count(), 0);
    }
}

#[test]
fn without_shared_blocks_reads_are_plain() {
    for kind in FsKind::ALL {
        let Some(fs) = scratch(kind) else { continue };
        let size = 3 * MIB + 5;
        let a = fs.path().join("a");
        std::fs::write(&a, random(size, 3)).unwrap();
        let b = fs.path().join("b");
        std::fs::copy(&a, &b).unwrap();
        if kind.reflinks() {
            // A copy made without sharing.
            let mut g = rw(&b);
            g.write_all(&random(size, 3)).unwrap();
        }
        settle();
        let mut f = SharedFile::options().canonical(&a).open(&b).unwrap();
        let mut got = Vec::new();
        f.read_to_end(&mut got).unwrap();
        assert!(got == std::fs::read(&a).unwrap(), "{kind}");
        let s = f.stats();
        assert_eq!((s.canonical_bytes, s.own_bytes), (0, size), "{kind}: {s:?}");
    }
    // tmpfs: no FIEMAP and no sharing at all.
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        let dir = tempfile::tempdir_in(shm).unwrap();
        let a = dir.path().join("a");
        std::fs::write(&a, random(MIB, 4)).unwrap();
        let mut f = SharedFile::options().canonical(&a).open(&a).unwrap();
        let mut got = Vec::new();
        f.read_to_end(&mut got).unwrap();
        assert_eq!(got, std::fs::read(&a).unwrap());
        assert_eq!(f.stats().canonical_bytes, 0);
    }
}

#[test]
fn seek_and_positioned_reads_agree_with_plain_reads_past_the_end() {
    let Some(fs) = scratch(FsKind::Btrfs) else {
        return;
    };
    let size = 5 * MIB + 777;
    let (a, b) = parent_and_clone(fs.path(), size, 5);
    settle();
    let mut f = SharedFile::options()
        .canonical(&a)
        .buffer(64 << 10)
        .open(&b)
        .unwrap();
    let fb = File::open(&b).unwrap();
    let mut rng = Rng::new(9);
    for _ in 0..200 {
        let off = rng.below(size + 3000);
        let len = rng.range(1, 3 * MIB) as usize;
        let mut buf = vec![0u8; len];
        let n = f.read_at(&mut buf, off).unwrap();
        buf.truncate(n);
        assert!(buf == plain(&fb, off, len), "read_at {off}+{len}");
        f.seek(SeekFrom::Start(off)).unwrap();
        let mut buf = vec![0u8; len.min(100_000)];
        let n = f.read(&mut buf).unwrap();
        assert!(
            buf[..n] == plain(&fb, off, n)[..],
            "read after seek to {off}"
        );
        assert_eq!(n == 0, off >= size);
    }
    assert_eq!(f.seek(SeekFrom::End(-7)).unwrap(), size - 7);
    let mut tail = Vec::new();
    f.read_to_end(&mut tail).unwrap();
    assert_eq!(tail, plain(&fb, size - 7, 7));
    assert!(f.read_exact_at(&mut [0; 8], size - 7).is_err());
    assert!(f.stats().canonical_bytes > 0);
}

#[test]
fn deleting_the_canonical_file_lets_it_go_and_reads_stay_right() {
    for kind in [FsKind::Btrfs, FsKind::Xfs] {
        let Some(fs) = scratch(kind) else { continue };
        let size = 8 * MIB;
        let (a, b) = parent_and_clone(fs.path(), size, 6);
        settle();
        let expected = std::fs::read(&a).unwrap();
        let f = SharedFile::options().canonical(&a).open(&b).unwrap();
        let mut head = vec![0u8; MIB as usize];
        f.read_exact_at(&mut head, 0).unwrap();
        assert_eq!(f.stats().canonical_bytes, MIB);
        std::fs::remove_file(&a).unwrap();
        settle();
        let mut all = vec![0u8; size as usize];
        f.read_exact_at(&mut all, 0).unwrap();
        assert!(all == expected, "{kind}");
        assert_eq!(
            f.canonical_count(),
            0,
            "{kind}: the deleted file was let go"
        );
        assert_eq!(
            f.stats().canonical_bytes,
            MIB,
            "{kind}: nothing more through it"
        );
        // No descriptor of the deleted file is left open in this process.
        let open_deleted = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.unwrap().path()).ok())
            .any(|t| t == a.with_file_name("parent (deleted)"));
        assert!(!open_deleted, "{kind}: the parent is still held open");
    }
}

/// A canonical file of the registry deleted while its reader is still open: files opened
/// later are not read through it, and the first of them takes its extents over, for those
/// opened after it.
#[test]
fn a_deleted_canonical_file_hands_its_extents_to_the_next_file_opened() {
    for kind in [FsKind::Btrfs, FsKind::Xfs] {
        let Some(fs) = scratch(kind) else { continue };
        let size = 4 * MIB;
        let (a, b) = parent_and_clone(fs.path(), size, 8);
        let c = fs.path().join("second");
        rustix::fs::ioctl_ficlone(File::create(&c).unwrap(), File::open(&a).unwrap()).unwrap();
        settle();
        let expected = std::fs::read(&a).unwrap();
        let registry_only = || {
            let mut o = SharedFile::options();
            o.origin(false);
            o
        };
        let parent = registry_only().open(&a).unwrap();
        std::fs::remove_file(&a).unwrap();
        let first = registry_only().open(&b).unwrap();
        assert_eq!(first.canonical_count(), 0, "{kind}: not the deleted file");
        let mut later = registry_only().open(&c).unwrap();
        assert_eq!(
            later.canonical_count(),
            1,
            "{kind}: read through the file that took over"
        );
        let mut got = Vec::new();
        later.read_to_end(&mut got).unwrap();
        assert!(got == expected, "{kind}");
        assert_eq!(later.stats().canonical_bytes, size, "{kind}");
        drop((parent, first));
    }
}

#[test]
fn truncating_the_canonical_file_reads_the_rest_from_the_clone() {
    for kind in [FsKind::Btrfs, FsKind::Xfs] {
        let Some(fs) = scratch(kind) else { continue };
        let size = 8 * MIB;
        let (a, b) = parent_and_clone(fs.path(), size, 7);
        let expected = std::fs::read(&b).unwrap();
        settle();
        let f = SharedFile::options().canonical(&a).open(&b).unwrap();
        rw(&a).set_len(3 * MIB + 100).unwrap();
        settle();
        let mut all = vec![0u8; size as usize];
        f.read_exact_at(&mut all, 0).unwrap();
        assert!(all == expected, "{kind}");
        let s = f.stats();
        assert!(
            s.canonical_bytes >= 3 * MIB && s.canonical_bytes < 4 * MIB,
            "{kind}: {s:?}"
        );
        // Shrunk and grown again: the new tail is the canonical file's own, never shared.
        rw(&a).set_len(size).unwrap();
        settle();
        f.read_exact_at(&mut all, 0).unwrap();
        assert!(all == expected, "{kind}");
    }
}

/// What one file under test is: a read-write descriptor and a shared mapping.
struct Target {
    file: File,
    map: Mapped,
}

/// One random change to `t`: a write (which may extend the file), an mmap store, a
/// truncation, or a punched hole. `size` is the files' starting size.
fn change(t: &mut Target, rng: &mut Rng, size: u64) {
    let cur = t.file.metadata().unwrap().len();
    match rng.below(100) {
        0..=39 => {
            let off = rng.below(cur + 64 * 1024);
            let len = rng.range(1, 256 * 1024);
            t.file.write_at(&random(len, rng.next_u64()), off).unwrap();
        }
        40..=79 => {
            // Stores stay below the file's size: a page wholly past its end is SIGBUS.
            let end = cur.min(t.map.len() as u64);
            if end > 0 {
                let off = rng.below(end);
                let len = rng.range(1, 64 * 1024).min(end - off);
                t.map.store(off as usize, &random(len, rng.next_u64()));
            }
        }
        80..=86 => {
            let new = rng.range(size / 2, size + size / 4);
            t.file.set_len(new).unwrap();
        }
        _ => {
            let off = rng.below(cur.max(1));
            let len = rng.range(1, 512 * 1024);
            let _ = rustix::fs::fallocate(
                &t.file,
                rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE,
                off,
                len,
            );
        }
    }
}

/// Whether to make a change now. Time runs in cycles of busy phases (a change every few
/// ms) and quiet ones, in which the files settle and reads go through the canonical file;
/// now and then a change lands in a quiet phase, racing with those reads.
fn now_or_never(rng: &mut Rng, start: Instant) -> bool {
    const CYCLE: u128 = 400;
    const BUSY: u128 = 150;
    start.elapsed().as_millis() % CYCLE < BUSY || rng.chance(1)
}

fn nap(rng: &mut Rng) {
    std::thread::sleep(Duration::from_millis(rng.range(1, 5)));
}

/// Random writers on the clone and on its canonical file, a flusher that moves pages
/// between dirty, writeback and clean, and readers that compare every shared read of the
/// clone with a plain read of it taken under the same lock.
///
/// The lock guards the clone's bytes: writers to the clone (and range clones into it) hold
/// it exclusively, readers hold it shared for the shared read and the plain read together,
/// so "a plain read under the same lock" is well defined. The canonical file is written,
/// mmap-stored, truncated and punched with no lock at all, during the readers' shared reads,
/// and the flusher (which never changes a file's bytes) runs freely: those are the dangers
/// the checks must catch.
fn race(kind: FsKind, seed: u64, secs: u64) {
    let Some(fs) = LoopFs::try_new(kind, 600) else {
        return;
    };
    let size = 12 * MIB;
    let (a, b) = parent_and_clone(fs.path(), size, seed);
    let map_len = (2 * size) as usize;
    let target = |p: &Path| {
        let file = rw(p);
        let map = Mapped::new(&file, map_len).unwrap();
        Mutex::new(Target { file, map })
    };
    let (parent, clone) = (target(&a), target(&b));
    settle();
    let lock = RwLock::new(());
    let stop = AtomicBool::new(false);
    let [compared, writes, shared, own, rejected] = [(); 5].map(|_| AtomicU64::new(0));
    let clone_plain = File::open(&b).unwrap();
    let open = || Arc::new(SharedFile::options().canonical(&a).open(&b).unwrap());
    let readers_file = Mutex::new(open());
    let retire = |f: &SharedFile| {
        let st = f.stats();
        shared.fetch_add(st.canonical_bytes, Ordering::Relaxed);
        own.fetch_add(st.own_bytes, Ordering::Relaxed);
        rejected.fetch_add(st.rejected_bytes, Ordering::Relaxed);
    };
    let start = Instant::now();
    let deadline = start + Duration::from_secs(secs);
    std::thread::scope(|s| {
        // The canonical file's writer: no lock.
        s.spawn(|| {
            let mut rng = Rng::new(seed * 100);
            while !stop.load(Ordering::Relaxed) {
                nap(&mut rng);
                if now_or_never(&mut rng, start) {
                    change(&mut parent.lock().unwrap(), &mut rng, size);
                    writes.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        // The clone's writer: the lock, held exclusively. Besides changes like the
        // parent's, it clones the parent, or ranges of it, into the clone, sharing them
        // again.
        s.spawn(|| {
            let mut rng = Rng::new(seed * 100 + 1);
            while !stop.load(Ordering::Relaxed) {
                nap(&mut rng);
                let _g = lock.write().unwrap();
                if !now_or_never(&mut rng, start) {
                    continue;
                }
                {
                    if rng.chance(10) {
                        // Emptied first: an unaligned end of the parent may not land in the
                        // middle of the clone.
                        let (pa, pb) = (parent.lock().unwrap(), clone.lock().unwrap());
                        pb.file.set_len(0).unwrap();
                        rustix::fs::ioctl_ficlone(&pb.file, &pa.file).unwrap();
                    } else if rng.chance(40) {
                        let (pa, pb) = (parent.lock().unwrap(), clone.lock().unwrap());
                        let la = pa.file.metadata().unwrap().len();
                        let lb = pb.file.metadata().unwrap().len();
                        let end = la.min(lb) / BLOCK * BLOCK;
                        if end > BLOCK {
                            let off = rng.below(end / BLOCK) * BLOCK;
                            let len = rng.range(1, (end - off) / BLOCK) * BLOCK;
                            clone_range(pa.file.as_fd(), off, pb.file.as_fd(), off, len)
                                .unwrap_or_else(|e| {
                                    panic!("{kind}: clone {off}+{len} of {la} into {lb}: {e}")
                                });
                        }
                    } else {
                        change(&mut clone.lock().unwrap(), &mut rng, size);
                    }
                    writes.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        // The flusher: writeback started by hand, fdatasync, and clean pages dropped.
        s.spawn(|| {
            let mut rng = Rng::new(seed * 100 + 2);
            let files = [&parent, &clone].map(|t| t.lock().unwrap().file.try_clone().unwrap());
            while !stop.load(Ordering::Relaxed) {
                let f = &files[rng.below(2) as usize];
                match rng.below(3) {
                    0 => {
                        let off = rng.below(size) / BLOCK * BLOCK;
                        let _ = start_writeback(f.as_fd(), off, rng.range(BLOCK, 4 * MIB));
                    }
                    1 => {
                        let _ = f.sync_data();
                    }
                    _ => drop_cache(f),
                }
                std::thread::sleep(Duration::from_micros(rng.below(3000)));
            }
        });
        // Readers: positioned reads from two threads on one shared reader, which one of
        // them now and then replaces with a fresh one (finding the ranges shared again
        // since), and one reader through Read + Seek on a reader of its own.
        for r in 0..3u64 {
            let (lock, compared, clone_plain) = (&lock, &compared, &clone_plain);
            let (readers_file, open, retire) = (&readers_file, &open, &retire);
            let (a, b) = (&a, &b);
            s.spawn(move || {
                let mut rng = Rng::new(seed * 100 + 10 + r);
                let mut mine = SharedFile::options()
                    .canonical(a)
                    .buffer(1 << 20)
                    .open(b)
                    .unwrap();
                while Instant::now() < deadline {
                    if r == 0 && rng.chance(5) {
                        let old = std::mem::replace(&mut *readers_file.lock().unwrap(), open());
                        retire(&old);
                    }
                    if r == 2 && rng.chance(5) {
                        let next = SharedFile::options().canonical(a).buffer(1 << 20).open(b);
                        retire(&std::mem::replace(&mut mine, next.unwrap()));
                    }
                    let off = if rng.chance(20) {
                        rng.below(2 * size)
                    } else {
                        rng.below(size)
                    };
                    let len = if rng.chance(20) {
                        rng.range(8 * MIB, 14 * MIB)
                    } else {
                        rng.range(1, 3 * MIB)
                    } as usize;
                    let shared_file = readers_file.lock().unwrap().clone();
                    let _g = lock.read().unwrap();
                    let got = if r < 2 {
                        let mut buf = vec![0u8; len];
                        let n = shared_file.read_at(&mut buf, off).unwrap();
                        buf.truncate(n);
                        buf
                    } else {
                        mine.seek(SeekFrom::Start(off)).unwrap();
                        let mut buf = Vec::with_capacity(len);
                        (&mut mine).take(len as u64).read_to_end(&mut buf).unwrap();
                        buf
                    };
                    let want = plain(clone_plain, off, len);
                    if got != want {
                        let at = got.iter().zip(&want).position(|(x, y)| x != y);
                        panic!(
                            "{kind}: reader {r}: read of {len} at {off} differs from a plain \
                             read: {} bytes against {}, first difference at {at:?}",
                            got.len(),
                            want.len()
                        );
                    }
                    compared.fetch_add(got.len() as u64, Ordering::Relaxed);
                }
                retire(&mine);
            });
        }
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        stop.store(true, Ordering::Relaxed);
    });
    retire(&readers_file.lock().unwrap());
    let [compared, writes, through, plainly, rejected] =
        [compared, writes, shared, own, rejected].map(|c| c.load(Ordering::Relaxed));
    eprintln!(
        "{kind}: {writes} changes; compared {} MiB: {} MiB read through the parent, {} MiB \
         from the clone, {} MiB read through the parent and rejected by the checks after",
        compared / MIB,
        through / MIB,
        plainly / MIB,
        rejected / MIB
    );
    assert!(
        compared > 100 * MIB,
        "{kind}: too little was read to mean anything"
    );
    assert!(through > 20 * MIB, "{kind}: shared reads seldom happened");
    assert!(plainly > 20 * MIB, "{kind}: reads seldom fell back");
}

#[test]
fn concurrent_writers_never_change_what_shared_reads_return_btrfs() {
    race(FsKind::Btrfs, 11, 8);
}

#[test]
fn concurrent_writers_never_change_what_shared_reads_return_xfs() {
    race(FsKind::Xfs, 12, 8);
}

/// A tree of clones copied to ext4 while their parent is written, stored to through a
/// mapping and truncated: every clone, which nobody writes, is copied exactly, though its
/// ranges are read through the parent wherever the checks pass.
#[test]
fn a_tree_copy_reads_clones_exactly_through_a_parent_being_written() {
    for kind in [FsKind::Btrfs, FsKind::Xfs] {
        let (Some(fs), Some(ext4)) = (scratch(kind), LoopFs::try_new(FsKind::Ext4, 600)) else {
            continue;
        };
        let size = 8 * MIB;
        let src = fs.path().join("src");
        std::fs::create_dir_all(src.join("c")).unwrap();
        let (parent, _) = parent_and_clone(&src, size, 21);
        std::fs::remove_file(src.join("clone")).unwrap();
        let expected = std::fs::read(&parent).unwrap();
        for i in 0..4 {
            let c = File::create(src.join("c").join(format!("clone{i}"))).unwrap();
            rustix::fs::ioctl_ficlone(&c, File::open(&parent).unwrap()).unwrap();
        }
        let mut shared = 0;
        for round in 0..12u64 {
            let writer = rw(&parent);
            writer.set_len(size).unwrap();
            let mut map = Mapped::new(&writer, size as usize).unwrap();
            settle();
            let stop = AtomicBool::new(false);
            let dst = ext4.path().join("dst");
            let summary = std::thread::scope(|s| {
                s.spawn(|| {
                    let mut rng = Rng::new(round);
                    // Quiet at first, so that reads go through the parent, then busy.
                    std::thread::sleep(Duration::from_millis(rng.below(40)));
                    while !stop.load(Ordering::Relaxed) {
                        let off = rng.below(size - 70_000);
                        match rng.below(3) {
                            0 => writer.write_at(&random(65536, off), off).map(drop).unwrap(),
                            1 => map.store(off as usize, &random(4096, off)),
                            _ => writer.sync_data().unwrap(),
                        }
                        std::thread::sleep(Duration::from_millis(rng.below(4)));
                    }
                });
                let mut opts = mimeo::Options::archive();
                opts.jobs = 1 + round as usize % 2;
                let s = mimeo::copy(
                    &[mimeo::CopyPair::new(&src, &dst)],
                    &opts,
                    &mimeo::NoObserver,
                );
                stop.store(true, Ordering::Relaxed);
                s
            });
            // The parent changed as it was read: its copy may fail. Nothing else may.
            assert!(summary.errors <= 1, "{kind}: {summary:?}");
            for i in 0..4 {
                let got = std::fs::read(dst.join("c").join(format!("clone{i}"))).unwrap();
                assert!(got == expected, "{kind}: round {round}: clone{i} differs");
            }
            shared += summary.shared_read_bytes;
            std::fs::remove_dir_all(&dst).unwrap();
        }
        assert!(shared > 0, "{kind}: nothing was read through the parent");
    }
}

/// Readers of a file and of its clone opened and dropped at once from several threads: the
/// registry lets a file go while others look it up, and nobody waits for ever.
#[test]
fn the_registry_survives_readers_coming_and_going() {
    let Some(fs) = scratch(FsKind::Btrfs) else {
        return;
    };
    let (a, b) = parent_and_clone(fs.path(), 2 * MIB, 31);
    settle();
    let (done, finished) = std::sync::mpsc::channel();
    for t in 0..4 {
        let (a, b, done) = (a.clone(), b.clone(), done.clone());
        std::thread::spawn(move || {
            let mut head = vec![0u8; 4096];
            for i in 0..300 {
                let f = SharedFile::open(if (i + t) % 2 == 0 { &a } else { &b }).unwrap();
                f.read_exact_at(&mut head, 0).unwrap();
            }
            done.send(()).unwrap();
        });
    }
    for _ in 0..4 {
        finished
            .recv_timeout(Duration::from_secs(120))
            .expect("a reader is stuck");
    }
}
