//! What every command of the family (`mimeo`, `mimeo-cat`, `mimeo-du`, `mimeo-dedupe`) does
//! the same way: the start of `main` (program name, stop switch, standard output watched), a
//! command line read with GNU's rules and refused in cp's words, the options they all take
//! (`--progress[=WHEN]`, `--generate`, `--help`, `--version`), man pages and completions, and
//! the end of `main` (a failed write to standard output is "write error", exit status 1).
//!
//! A command's `main` is: [`start`], [`parse`], its work (messages through
//! [`output`](crate::output), the progress line through [`Ticker`](crate::progress::Ticker)),
//! then [`finish`] with its exit status.

use crate::args::When;
use crate::output;
use crate::signals::Stopped;
use crate::{EXIT_FAILED, cmdline};
use clap::{ArgAction, ArgMatches, CommandFactory, FromArgMatches};
use mimeo::Control;
use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::Arc;

/// A command that has started.
#[derive(Debug)]
pub struct Started {
    /// Stopped by the first SIGINT or SIGTERM, or when the reader of standard output goes.
    pub control: Arc<Control>,
    /// Which signal stopped the run.
    pub stopped: Arc<Stopped>,
}

/// The start of `main`, first of all, so that a signal at any later moment is a clean stop:
/// names the command for its messages, installs the stop switch and watches standard output.
pub fn start(prog: &'static str) -> Started {
    output::set_prog(prog);
    output::watch_stdout();
    let control = Arc::new(Control::new());
    let stopped = Arc::new(Stopped::default());
    if let Err(e) = crate::signals::install(control.clone(), stopped.clone()) {
        output::error(&format!("cannot install signal handlers: {e}"));
    }
    Started { control, stopped }
}

/// The options every command but `mimeo` takes from here (`mimeo` has them in its own
/// table, in cp's order).
#[derive(Debug, clap::Args)]
pub struct FamilyOptions {
    /// Show a progress line on stderr: auto (when stderr is a terminal), always, never;
    /// without WHEN: always
    #[arg(long, value_name = "WHEN", num_args = 0..=1, require_equals = true,
          default_missing_value = "always", default_value = "auto")]
    pub progress: When,

    /// Print a man page or shell completions (man, bash, zsh, fish, elvish) and exit
    #[arg(long, value_name = "WHAT", value_parser = GENERATE)]
    pub generate: Option<String>,

    /// Print help
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,

    /// Print version
    #[arg(short = 'V', long, action = ArgAction::Version)]
    pub version: Option<bool>,
}

/// What `--generate` makes.
pub const GENERATE: [&str; 5] = ["man", "bash", "zsh", "fish", "elvish"];

impl FamilyOptions {
    /// Whether to draw the progress line.
    pub fn progress(&self) -> bool {
        want_progress(self.progress)
    }
}

/// Whether `--progress=WHEN` draws the line: auto draws it when stderr is a terminal.
pub fn want_progress(when: When) -> bool {
    match when {
        When::Always => true,
        When::Never => false,
        When::Auto => std::io::IsTerminal::is_terminal(&std::io::stderr()),
    }
}

/// Reads `argv` (program name first) with GNU getopt_long's rules (unique abbreviations of
/// long options and of values, repeated options, `--opt=value`, `--`), then with clap. `Err`
/// holds the exit status when there is nothing more to do: `--help` or `--version` printed,
/// or a usage error reported in cp's words.
pub fn parse<P: FromArgMatches + CommandFactory>(
    argv: Vec<OsString>,
) -> Result<(P, ArgMatches), ExitCode> {
    parse_json(argv, |_| {})
}

/// [`parse`] for a command with `--json`: when the command line asks for JSON ([`json_asked`])
/// and is wrong, `json_end(message)` is called after the usage message, to end the JSON
/// stream with the error object and the final object, where the command writes its JSON.
pub fn parse_json<P: FromArgMatches + CommandFactory>(
    argv: Vec<OsString>,
    json_end: impl FnOnce(&str),
) -> Result<(P, ArgMatches), ExitCode> {
    let json = json_asked(&argv);
    let refuse = |message: &str| {
        output::usage_error(message);
        if json {
            json_end(message);
        }
        finish(crate::usage_status())
    };
    let prog = output::prog();
    let mut cmd = P::command().name(prog).bin_name(prog);
    cmd.build();
    let argv = match cmdline::normalize_with(&cmd, argv, &[]) {
        Ok(argv) => argv,
        Err(refused) => return Err(refuse(&refused.message)),
    };
    let matches = match cmd.try_get_matches_from_mut(argv) {
        Ok(m) => m,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                output::out(&e.render().to_string());
                return Err(finish(0));
            }
            return Err(refuse(&cmdline::clap_message(&e)));
        }
    };
    match P::from_arg_matches(&matches) {
        Ok(args) => Ok((args, matches)),
        Err(e) => Err(refuse(&cmdline::clap_message(&e))),
    }
}

/// Reports a usage error as cp does (`PROG: message`, then `Try 'PROG --help' ...`): exit
/// status 2, or 1 under the name `cp` ([`crate::usage_status`]).
pub fn usage(message: &str) -> ExitCode {
    output::usage_error(message);
    finish(crate::usage_status())
}

/// Whether `argv` asks for JSON (`--json`, or a prefix of it that names it alone), before
/// the options are read: usage errors are then also given as JSON error objects.
pub fn json_asked(argv: &[OsString]) -> bool {
    argv.iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .any(|a| a.len() >= 4 && a.to_str().is_some_and(|a| "--json".starts_with(a)))
}

/// The exit status of a run: 128 + the signal that stopped it, 1 after failures, else 0.
pub fn status(stopped: &Stopped, failed: bool) -> u8 {
    match stopped.exit_code() {
        Some(code) => code,
        None if failed => EXIT_FAILED,
        None => 0,
    }
}

/// The end of `main`: standard output flushed, and a failed write to it reported as cp
/// reports it ("PROG: write error: No space left on device"), with exit status 1 unless a
/// signal stopped the run. A reader that went away is not reported: it stopped the run
/// (status 141).
pub fn finish(code: u8) -> ExitCode {
    match output::stdout_error() {
        Some(e) => {
            output::error(&format!("write error: {}", strerror(&e)));
            ExitCode::from(if code >= 128 { code } else { EXIT_FAILED })
        }
        None => ExitCode::from(code),
    }
}

/// strerror's text, without Rust's " (os error N)".
fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// What a man page says beyond the options: every usage form for its synopsis, the exit
/// statuses and examples.
#[derive(Debug)]
pub struct Page {
    /// Each way to call the command, without its name: `[OPTION]... SOURCE DEST`.
    pub usages: &'static [&'static str],
    /// Each status and what it means.
    pub exit_status: &'static [(&'static str, &'static str)],
    /// Each command line, without the command's name, and what it does.
    pub examples: &'static [(&'static str, &'static str)],
}

/// `--generate WHAT`: the man page of `cmd` (with `page`) or a completion script, on stdout.
pub fn generate(cmd: clap::Command, page: &Page, what: &str) -> ExitCode {
    let mut cmd = cmd;
    let name = cmd.get_name().to_owned();
    let mut text = Vec::new();
    let shell = match what {
        "man" => None,
        "bash" => Some(clap_complete::Shell::Bash),
        "zsh" => Some(clap_complete::Shell::Zsh),
        "fish" => Some(clap_complete::Shell::Fish),
        "elvish" => Some(clap_complete::Shell::Elvish),
        other => {
            return usage(&format!(
                "cannot generate '{other}': use man, bash, zsh, fish or elvish"
            ));
        }
    };
    match shell {
        Some(shell) => clap_complete::generate(shell, &mut cmd, name, &mut text),
        None => man(cmd, page, &mut text),
    }
    output::out_bytes(&text);
    finish(0)
}

/// The man page: clap's sections, with a synopsis of every usage form, and the EXIT STATUS
/// and EXAMPLES sections of `page`.
fn man(cmd: clap::Command, page: &Page, w: &mut Vec<u8>) {
    use clap_mangen::roff::{Roff, bold, roman};
    let name = cmd.get_name().to_owned();
    let man = clap_mangen::Man::new(cmd);
    let into = "rendering into memory cannot fail";
    man.render_title(w).expect(into);
    man.render_name_section(w).expect(into);
    let mut roff = Roff::default();
    roff.control("SH", ["SYNOPSIS"]);
    for (i, usage) in page.usages.iter().enumerate() {
        if i > 0 {
            roff.control("br", [] as [&str; 0]);
        }
        roff.text([bold(name.as_str()), roman(format!(" {usage}"))]);
    }
    roff.to_writer(w).expect(into);
    man.render_description_section(w).expect(into);
    man.render_options_section(w).expect(into);
    let mut roff = Roff::default();
    for (title, entries) in [
        ("EXIT STATUS", page.exit_status),
        ("EXAMPLES", page.examples),
    ] {
        roff.control("SH", [title]);
        for (head, text) in entries {
            roff.control("TP", [] as [&str; 0]);
            let head = if title == "EXAMPLES" {
                bold(format!("{name} {head}"))
            } else {
                bold(*head)
            };
            roff.text([head]);
            roff.text([roman(*text)]);
        }
    }
    roff.to_writer(w).expect(into);
    man.render_version_section(w).expect(into);
}
