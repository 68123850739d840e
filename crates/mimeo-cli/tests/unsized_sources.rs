//! Sources that report no size and have nothing to read yet, such as `/proc/kmsg`: cp reads
//! them with blocking reads and waits for more; mimeo opens sources `O_NONBLOCK` (so that a
//! FIFO swapped in cannot hang the open) and must wait too, not fail with EAGAIN, while a stop
//! request still ends the run.

mod util;

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const KMSG: &str = "/proc/kmsg";

/// Logs `text` to the kernel ring buffer, where `/proc/kmsg` readers get it.
fn log_to_kernel(text: &str) {
    let mut dev = fs::OpenOptions::new()
        .write(true)
        .open("/dev/kmsg")
        .unwrap();
    dev.write_all(text.as_bytes()).unwrap();
}

/// Whether a file in `dir` (the copy, or its temporary) holds `marker`.
fn holds(dir: &Path, marker: &str) -> bool {
    fs::read_dir(dir).unwrap().any(|e| {
        let bytes = fs::read(e.unwrap().path()).unwrap_or_default();
        bytes.windows(marker.len()).any(|w| w == marker.as_bytes())
    })
}

/// Starts `cmd` copying `/proc/kmsg` into `dir/out`, logs a marker, and waits until a file in
/// `dir` holds it. The copy must still be running then (waiting for more, as cp waits); it
/// is stopped with SIGINT, which must end it within a few seconds. Returns its stderr.
fn reads_and_waits(mut cmd: Command, dir: &Path, who: &str) -> String {
    cmd.arg(KMSG).arg(dir.join("out"));
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child: Child = cmd.spawn().unwrap();
    let marker = format!("mimeo-unsized-{who}-{}", std::process::id());
    std::thread::sleep(Duration::from_millis(200));
    log_to_kernel(&format!("{marker}\n"));
    let start = Instant::now();
    while !holds(dir, &marker) {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "{who} ended ({status}) before reading the marker: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{who} read nothing"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Nothing more to read: it waits, as a blocking read waits.
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "{who} did not wait for more"
    );
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let stopped = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        stopped.elapsed() < Duration::from_secs(5),
        "{who} ignored SIGINT"
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_source_with_nothing_to_read_yet_is_waited_for_as_cp_waits() {
    let meta = fs::metadata(KMSG).unwrap();
    assert!(
        meta.is_file() && meta.len() == 0,
        "{KMSG}: a regular file of no size"
    );
    let tmp = tempfile::tempdir().unwrap();
    let (with_cp, with_mimeo) = (tmp.path().join("cp"), tmp.path().join("mimeo"));
    fs::create_dir(&with_cp).unwrap();
    fs::create_dir(&with_mimeo).unwrap();
    let cp = reads_and_waits(Command::new("cp"), &with_cp, "cp");
    assert_eq!(cp, "", "cp");
    let ours = reads_and_waits(util::mimeo(), &with_mimeo, "mimeo");
    assert!(!ours.contains("error reading"), "{ours}");
    // Stopped in the middle, the copy in progress is removed (guarantee of SIGINT).
    assert_eq!(fs::read_dir(&with_mimeo).unwrap().count(), 0);
}
