//! The progress line in a real terminal. tmux runs the `mimeo` binary in a
//! detached window of a fixed size, and the pane is captured again and again
//! while the copy runs. The line must stay on one row and be redrawn in place
//! at 40, 80 and 200 columns, and after the window is resized it must fit the
//! new width from the next redraw on.
//!
//! Needs tmux(1). Without it the tests print `SKIPPED ...`, and fail instead
//! under `MIMEO_REQUIRE_FS=1` (CI installs tmux).

mod util;

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use mimeo_testkit::cmd::have_program;
use mimeo_testkit::{capture, fsimg};
use util::random_file;

/// No offload, and every buffer write sleeps 20 ms: with 64 KiB buffers the
/// copy runs at about 3 MiB/s, so the bar draws many times before it ends.
const SLOW: &str = "copy_file_range=return(EXDEV);write=sleep(20)";

/// Files of 1 MiB in the source tree: about 5 s of copying at that pace. The
/// tests stop as soon as they have seen enough redraws.
const FILES: usize = 16;

/// How long to wait for one expected redraw before giving up.
const PATIENCE: Duration = Duration::from_secs(15);

/// A tmux server of its own (its socket in a temporary directory) with one
/// detached session, `t`, that runs `mimeo -r` on a slow copy and then
/// waits. The server, and with it the copy, is killed on drop.
struct Pane {
    dir: tempfile::TempDir,
}

impl Pane {
    /// Starts the copy in a window `width` columns wide, or returns `None`
    /// after saying why the test is skipped.
    fn start(test: &str, width: usize) -> Option<Pane> {
        if !have_program("tmux") {
            assert!(
                !fsimg::required(),
                "{test}: tmux is required ({}=1) but not installed",
                fsimg::REQUIRE_ENV
            );
            // The real stderr: the harness hides `eprintln!` of passing tests.
            let _ = writeln!(io::stderr(), "SKIPPED {test}: no tmux");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        fs::create_dir(&src).unwrap();
        for i in 0..FILES {
            random_file(&src.join(format!("f{i:02}")), 1 << 20);
        }
        let script = dir.path().join("run.sh");
        fs::write(
            &script,
            format!(
                "MIMEO_FAILPOINTS={} {} -r -j1 --buffer-size 64K --progress=always {} {}\n\
                 echo $? > {}\n\
                 exec sleep 600\n",
                quote(SLOW),
                quote(env!("CARGO_BIN_EXE_mimeo")),
                quote(&src),
                quote(dir.path().join("dst")),
                quote(dir.path().join("status")),
            ),
        )
        .unwrap();
        let pane = Pane { dir };
        let (w, command) = (width.to_string(), format!("sh {}", quote(&script)));
        pane.tmux(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            &w,
            "-y",
            "20",
            &command,
        ]);
        assert_eq!(pane.width(), width, "tmux did not make the window {w} wide");
        Some(pane)
    }

    /// Runs `tmux args...` against this server and returns its stdout.
    fn tmux(&self, args: &[&str]) -> String {
        let out = capture(
            Command::new("tmux")
                .arg("-f")
                .arg("/dev/null")
                .arg("-S")
                .arg(self.dir.path().join("socket"))
                .args(args)
                .env_remove("TMUX"),
        )
        .expect("cannot run tmux");
        assert!(out.success(), "{out}");
        out.stdout
    }

    fn width(&self) -> usize {
        let w = self.tmux(&["display-message", "-p", "-t", "t", "#{pane_width}"]);
        w.trim().parse().unwrap()
    }

    fn resize(&self, width: usize) {
        self.tmux(&["resize-window", "-t", "t", "-x", &width.to_string()]);
        assert_eq!(self.width(), width, "tmux did not resize the window");
    }

    /// What the pane shows, one string per line, with wrapped rows joined
    /// (`-J`): a line that wrapped comes back longer than the pane is wide.
    fn capture(&self) -> Vec<String> {
        let shown = self.tmux(&["capture-pane", "-p", "-J", "-t", "t"]);
        shown.lines().map(str::to_owned).collect()
    }

    /// The copy has ended; its bar is gone.
    #[track_caller]
    fn assert_running(&self, waiting_for: &str) {
        let status = self.dir.path().join("status");
        assert!(
            !status.exists(),
            "the copy ended (status {}) while waiting for {waiting_for}; \
             last screen:\n{}",
            fs::read_to_string(&status).unwrap_or_default().trim(),
            self.capture().join("\n"),
        );
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = capture(
            Command::new("tmux")
                .arg("-S")
                .arg(self.dir.path().join("socket"))
                .arg("kill-server"),
        );
    }
}

/// `s` in single quotes for sh.
fn quote(s: impl AsRef<Path>) -> String {
    let s = s.as_ref().to_str().unwrap();
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Terminal columns taken by `line` (tmux shows one character per column
/// here: the bar is ASCII, and no test writes wide characters).
fn columns(line: &str) -> usize {
    line.chars().count()
}

/// Whether `line` begins like the progress line: the percentage, right
/// aligned in four columns. A line that wrapped shows its start on one row
/// and its end on the next, so a row that starts this way starts a line.
fn starts_like_the_bar(line: &str) -> bool {
    let rest = line.trim_start_matches(' ');
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    line.len() - rest.len() + digits == 3 && rest[digits..].starts_with('%')
}

/// The fields the line must and must not show at a width, as text they
/// contain: `[` the bar, `/s` the rate, `eta `, `entries`, and `cloned ` the
/// bytes by method.
struct Expect {
    width: usize,
    present: &'static [&'static str],
    absent: &'static [&'static str],
}

// With 17 entries, the fields take: percent 4, bytes 18, ETA 10, rate 10,
// entries 14, bar at least 10, bytes by method 50, one space between each.
// So percent, bytes and ETA come to 34 columns, and the rate would make 45;
// everything but the bytes by method comes to 71, and all of it to 122.
const AT_40: Expect = Expect {
    width: 40,
    present: &["eta "],
    absent: &["[", "/s", "entries", "cloned "],
};
const AT_80: Expect = Expect {
    width: 80,
    present: &["[", "/s", "eta ", "entries"],
    absent: &["cloned "],
};
const AT_100: Expect = Expect {
    width: 100,
    present: &["[", "/s", "eta ", "entries"],
    absent: &["cloned "],
};
const AT_200: Expect = Expect {
    width: 200,
    present: &[
        "[",
        "/s",
        "eta ",
        "entries",
        "cloned ",
        "offloaded ",
        "copied ",
    ],
    absent: &[],
};

/// Captures the pane until the bar has been drawn `draws` times with
/// different contents, each time as `expect` says, and checks every capture
/// on the way:
///
/// - The bar is the last line on screen, one row that starts like the bar
///   and is no wider than the pane (`-J` would join a wrapped row to it).
/// - With `strict` (no resize so far), no line at all is wider than the pane,
///   there is only one bar, and it is always on the same row.
///
/// After a resize, captures taken before the first redraw at the new width
/// are passed over; the checks start with that redraw.
fn watch(pane: &Pane, expect: &Expect, draws: usize, strict: bool) {
    let width = expect.width;
    let wait = format!("{draws} draws at {width} columns");
    let deadline = Instant::now() + PATIENCE;
    let mut seen = BTreeSet::new();
    let mut row = None;
    let mut redrawn = strict;
    while seen.len() < draws {
        pane.assert_running(&wait);
        assert!(Instant::now() < deadline, "gave up waiting for {wait}");
        let lines = pane.capture();
        let screen = || format!("at {width} columns:\n{}", lines.join("\n"));
        let bars: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].contains('%'))
            .collect();
        if strict {
            for line in &lines {
                assert!(columns(line) <= width, "a line wrapped {}", screen());
            }
            assert!(bars.len() <= 1, "more than one bar {}", screen());
        }
        let last = lines.iter().rposition(|l| !l.trim().is_empty());
        let Some(last) = last.filter(|l| bars.contains(l)) else {
            // Nothing drawn yet, or a capture between erasing and drawing.
            thread::sleep(Duration::from_millis(20));
            continue;
        };
        let bar = lines[last].trim_end();
        if !redrawn {
            // Still the line drawn for the old width, which the terminal
            // re-wrapped, or a draw from before the resize.
            let fresh = columns(bar) <= width
                && starts_like_the_bar(bar)
                && expect.present.iter().all(|f| bar.contains(f))
                && !expect.absent.iter().any(|f| bar.contains(f));
            if !fresh {
                thread::sleep(Duration::from_millis(20));
                continue;
            }
            redrawn = true;
        }
        assert!(
            columns(&lines[last]) <= width,
            "the bar wrapped {}",
            screen()
        );
        assert!(
            starts_like_the_bar(bar),
            "the bar row does not start with the percentage {}",
            screen()
        );
        for field in expect.absent {
            assert!(!bar.contains(field), "{field:?} shown {}", screen());
        }
        if strict {
            let row = *row.get_or_insert(last);
            assert_eq!(row, last, "the bar moved {}", screen());
        }
        // A capture can catch a line half drawn: count only whole ones.
        if expect.present.iter().all(|f| bar.contains(f)) {
            seen.insert(bar.to_owned());
        }
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn progress_line_fits_40_columns() {
    if let Some(pane) = Pane::start("progress_line_fits_40_columns", 40) {
        watch(&pane, &AT_40, 5, true);
    }
}

#[test]
fn progress_line_fits_80_columns() {
    if let Some(pane) = Pane::start("progress_line_fits_80_columns", 80) {
        watch(&pane, &AT_80, 5, true);
    }
}

#[test]
fn progress_line_fits_200_columns() {
    if let Some(pane) = Pane::start("progress_line_fits_200_columns", 200) {
        watch(&pane, &AT_200, 5, true);
    }
}

/// Narrower, wider, and back: each resize takes effect at the next redraw.
#[test]
fn progress_line_follows_resizes() {
    let Some(pane) = Pane::start("progress_line_follows_resizes", 200) else {
        return;
    };
    watch(&pane, &AT_200, 2, true);
    for expect in [&AT_40, &AT_100, &AT_80] {
        pane.resize(expect.width);
        watch(&pane, expect, 3, false);
    }
}
