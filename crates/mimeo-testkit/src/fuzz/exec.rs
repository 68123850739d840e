//! Running one side of a case: the program in the place, as the case's user, with a
//! deadline, while FIFOs in the place are fed or drained so that no run waits forever.

use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use rustix::fs::{Mode, OFlags};

use crate::cmd::as_user;

/// What a run left behind besides the tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ran {
    /// The exit code; `None` when a signal ended it (a timeout included).
    pub code: Option<i32>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
}

/// How to run one side.
#[derive(Debug, Clone)]
pub struct Runner<'a> {
    /// Directories put first on `PATH`, where `cp` is found.
    pub path: &'a OsStr,
    pub user: Option<u32>,
    pub timeout: Duration,
}

impl Runner<'_> {
    /// Runs `cp args...` with the current directory `place`, stdin from /dev/null.
    pub fn run(
        &self,
        place: &Path,
        args: &[std::ffi::OsString],
        env: &[(String, String)],
    ) -> io::Result<Ran> {
        let mut cmd = as_user(self.user, "cp");
        cmd.args(args)
            .current_dir(place)
            .env_clear()
            .env("PATH", self.path)
            .env("LC_ALL", "C")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn()?;
        let out = reader(child.stdout.take());
        let err = reader(child.stderr.take());
        let (code, timed_out) = wait(&mut child, self.timeout)?;
        Ok(Ran {
            code,
            timed_out,
            stdout: out.join().unwrap_or_default(),
            stderr: err.join().unwrap_or_default(),
        })
    }
}

pub(crate) fn reader(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Waits for `child` until `timeout`, then kills it.
pub(crate) fn wait(child: &mut Child, timeout: Duration) -> io::Result<(Option<i32>, bool)> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok((status.code(), false));
        }
        if Instant::now() > deadline {
            child.kill()?;
            child.wait()?;
            return Ok((None, true));
        }
        thread::sleep(Duration::from_millis(2));
    }
}

/// Feeds one FIFO once and drains others while a run goes on.
#[derive(Debug)]
pub struct Pump {
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

/// What the writer puts into the fed FIFO.
pub const FEED: &[u8] = b"data from the fifo\n";

impl Pump {
    /// Opens the drains now (so that a writer never waits) and starts feeding `feed` once a
    /// reader has it open.
    pub fn start(place: &Path, feed: Option<&Path>, drains: &[PathBuf]) -> Pump {
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let readers: Vec<OwnedFd> = drains
            .iter()
            .filter_map(|p| rustix::fs::open(place.join(p), flags, Mode::empty()).ok())
            .collect();
        let feed = feed.map(|p| place.join(p));
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = thread::spawn(move || pump(readers, feed, &flag));
        Pump {
            stop,
            thread: Some(thread),
        }
    }

    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn pump(readers: Vec<OwnedFd>, mut feed: Option<PathBuf>, stop: &AtomicBool) {
    let mut buf = vec![0u8; 1 << 16];
    let wflags = OFlags::WRONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    while !stop.load(Ordering::Relaxed) {
        for r in &readers {
            while matches!(rustix::io::read(r, &mut buf), Ok(n) if n > 0) {}
        }
        if let Some(path) = &feed {
            match rustix::fs::open(path, wflags, Mode::empty()) {
                Ok(fd) => {
                    let _ = rustix::io::write(&fd, FEED);
                    feed = None;
                }
                // No reader yet.
                Err(rustix::io::Errno::NXIO) => {}
                Err(_) => feed = None,
            }
        }
        thread::sleep(Duration::from_millis(1));
    }
}
