//! The `mimeo` command's parts, shared with other front ends of the engine (`mimeo-mpi`):
//! cp's command line, the configuration it makes, the rendering of events and summaries, the
//! progress line, signal handling and the exit statuses.
//!
//! It is also the foundation of the whole family of commands (`mimeo`, `mimeo-cat`,
//! `mimeo-du`, `mimeo-dedupe`): [`family`] (the start and end of `main`, GNU command lines,
//! man pages and completions), [`cmdline`] (getopt_long's rules in cp's words), [`output`]
//! (names quoted as cp quotes them, standard output that reports write errors, JSON Lines),
//! [`signals`] (the stop switch) and [`progress`] (the progress line). It lives here rather
//! than in a crate of its own because `mimeo` is the command the others follow: the reading
//! of a command line is cp's, made for `mimeo` first, and a second crate would only split
//! one set of rules over two places. The other commands depend on this library; nothing in
//! it depends on them.

pub mod args;
pub mod cmdline;
pub mod config;
pub mod family;
pub mod output;
pub mod progress;
pub mod signals;

/// Exit status: some entry failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit status: a usage error.
pub const EXIT_USAGE: u8 = 2;

/// The exit status of a usage error: [`EXIT_USAGE`], except under the name `cp`, where it
/// is 1, as cp's.
pub fn usage_status() -> u8 {
    if output::prog() == "cp" {
        EXIT_FAILED
    } else {
        EXIT_USAGE
    }
}
/// Exit status: only sources that vanished during the run failed (rsync's convention).
pub const EXIT_VANISHED: u8 = 24;

/// The exit status of a run: 0 all copied; 1 some entry failed; 24 only sources that vanished
/// during the run failed; 128 + N when stopped by signal N.
pub fn exit_code(summary: &mimeo::Summary, stopped: &signals::Stopped) -> u8 {
    if let Some(code) = stopped.exit_code() {
        code
    } else if summary.errors > 0 && summary.errors == summary.vanished {
        EXIT_VANISHED
    } else if summary.errors > 0 {
        EXIT_FAILED
    } else {
        0
    }
}
