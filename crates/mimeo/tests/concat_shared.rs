//! `mimeo::concat` with shared reads, on loop-mounted btrfs and XFS (reflink=1): clones made
//! with origin records are concatenated into a pipe, or into a file on ext4, while their
//! parent, which they are read through, is written, stored to through a mapping and synced.
//! Nobody writes the clones, so every output must be exactly their bytes.

use mimeo::{ConcatOptions, Control, NoObserver};
use mimeo_testkit::files::scratch;
use mimeo_testkit::mutate::Mapped;
use mimeo_testkit::rng::Rng;
use mimeo_testkit::{FsKind, LoopFs};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const MIB: u64 = 1 << 20;

fn random(n: u64, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; n as usize];
    Rng::new(seed).fill(&mut v);
    v
}

#[test]
fn clones_are_concatenated_exactly_while_their_parent_is_written() {
    for kind in [FsKind::Btrfs, FsKind::Xfs] {
        let (Some(fs), Some(ext4)) = (scratch(kind), LoopFs::try_new(FsKind::Ext4, 300)) else {
            continue;
        };
        let size = 8 * MIB;
        let parent = fs.path().join("parent");
        let expected = random(size, 41);
        let mut f = File::create(&parent).unwrap();
        f.write_all(&expected).unwrap();
        f.sync_all().unwrap();
        let mut o = mimeo::Options::default();
        o.record_origin = true;
        let parts: Vec<PathBuf> = (0..3)
            .map(|i| {
                let c = fs.path().join(format!("clone{i}"));
                mimeo::copy_file(&parent, &c, &o).unwrap();
                c
            })
            .collect();
        let want = expected.repeat(parts.len());
        let out = ext4.path().join("out");
        let mut shared = 0;
        for round in 0..10u64 {
            let writer = OpenOptions::new().read(true).write(true).open(&parent);
            let writer = writer.unwrap();
            let mut map = Mapped::new(&writer, size as usize).unwrap();
            // Settled, so that reads go through the parent until the writer starts.
            std::thread::sleep(Duration::from_millis(120));
            let stop = AtomicBool::new(false);
            let summary = std::thread::scope(|s| {
                s.spawn(|| {
                    let mut rng = Rng::new(round);
                    std::thread::sleep(Duration::from_millis(rng.below(60)));
                    while !stop.load(Ordering::Relaxed) {
                        let off = rng.below(size - 70_000);
                        match rng.below(3) {
                            0 => writer.write_all_at(&random(65536, off), off).unwrap(),
                            1 => map.store(off as usize, &random(4096, off)),
                            _ => writer.sync_data().unwrap(),
                        }
                        std::thread::sleep(Duration::from_millis(rng.below(4)));
                    }
                });
                let control = Control::new();
                let options = ConcatOptions::default();
                let s = if round % 2 == 0 {
                    // A pipe: bytes written cannot be taken back.
                    let mut cat = Command::new("cat")
                        .stdin(Stdio::piped())
                        .stdout(File::create(&out).unwrap())
                        .spawn()
                        .unwrap();
                    let pipe = cat.stdin.take().unwrap();
                    let name = PathBuf::from("pipe");
                    let s = mimeo::concat_with(
                        &parts,
                        pipe.as_fd(),
                        &name,
                        &options,
                        &NoObserver,
                        &control,
                    );
                    drop(pipe);
                    assert!(cat.wait().unwrap().success());
                    s
                } else {
                    let file = File::create(&out).unwrap();
                    mimeo::concat_with(&parts, file.as_fd(), &out, &options, &NoObserver, &control)
                };
                stop.store(true, Ordering::Relaxed);
                s
            });
            assert_eq!(summary.errors, 0, "{kind}: round {round}: {summary:?}");
            let got = std::fs::read(&out).unwrap();
            assert!(got == want, "{kind}: round {round}: the output differs");
            shared += summary.shared_read_bytes;
        }
        assert!(shared > 0, "{kind}: nothing was read through the parent");
        eprintln!("{kind}: {} MiB read through the parent", shared / MIB);
    }
}
