//! Command-line flags as cp spells them, parsed by clap, then checked into engine options.
//!
//! A command line is first read by `cmdline` with GNU getopt_long's rules (abbreviations,
//! cp's messages), then parsed by clap. Every flag may repeat, and a later one overrides an
//! earlier one, as in cp; the flags whose effects overlap (`-a`, `-d`, `-p`, `-H`, `-L`,
//! `-P`, `--preserve`, `--no-preserve`) are kept in command-line order in `attr_flags`.

use crate::cmdline;
use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, Command, CommandFactory, FromArgMatches, Parser, ValueEnum};
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum When {
    Auto,
    Always,
    Never,
}

/// `--sparse`'s values in cp's order, which its message for a bad one lists.
fn sparse_when() -> impl clap::builder::TypedValueParser<Value = When> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(["never", "auto", "always"])
        .map(|v: String| When::from_str(&v, false).expect("each value is a When"))
}

/// A file operand, empty ones included: clap's path parser refuses `''`, which cp takes as a
/// name that does not exist (`cannot stat ''`).
fn any_path() -> impl clap::builder::TypedValueParser<Value = PathBuf> {
    use clap::builder::TypedValueParser;
    clap::builder::OsStringValueParser::new().map(PathBuf::from)
}

/// `--update=UPDATE`: which existing destinations are replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Update {
    All,
    None,
    NoneFail,
    Older,
}

#[derive(Debug, Parser)]
#[command(
    name = "mimeo",
    version,
    about = "Copy files and trees: fast, faithful, copy-on-write aware.",
    long_about = "Copy SOURCE to DEST, or multiple SOURCE(s) to DIRECTORY.\n\n\
        Regular files are cloned where the filesystem can share extents (btrfs, XFS), \
        copied inside the kernel where it cannot, and streamed only as a last resort.",
    override_usage = "mimeo [OPTIONS] SOURCE DEST\n       mimeo [OPTIONS] SOURCE... DIRECTORY\n       mimeo [OPTIONS] -t DIRECTORY SOURCE...",
    after_long_help = "Long options and their values may be abbreviated to any unique prefix \
        (--recur, --reflink=al). Options may be repeated: a later one overrides an earlier one, \
        as in cp.",
    disable_help_flag = true,
    disable_version_flag = true,
    args_override_self = true
)]
pub struct Args {
    /// Same as -dR --preserve=all
    #[arg(short = 'a', long)]
    pub archive: bool,

    /// Don't copy the file data, just the attributes
    #[arg(long)]
    pub attributes_only: bool,

    /// Make a backup of each existing destination file: CONTROL is none or off, simple or
    /// never, existing or nil (the default, or $VERSION_CONTROL), numbered or t
    #[arg(long, value_name = "CONTROL", num_args = 0..=1, require_equals = true,
          value_parser = clap::value_parser!(OsString))]
    pub backup: Option<Option<OsString>>,

    /// Like --backup but does not accept an argument
    #[arg(short = 'b')]
    pub backup_default: bool,

    /// Copy the contents of special files (FIFOs, devices) when recursive
    #[arg(long)]
    pub copy_contents: bool,

    /// Same as --no-dereference --preserve=links
    #[arg(short = 'd')]
    pub no_deref_preserve_links: bool,

    /// Replace an existing destination even if it cannot be opened or linked over (mimeo
    /// replaces files by rename, so it always can); -n wins over it
    #[arg(short = 'f', long)]
    pub force: bool,

    /// Follow command-line symbolic links in SOURCE
    #[arg(short = 'H')]
    pub deref_command_line: bool,

    /// Always follow symbolic links in SOURCE
    #[arg(short = 'L', long = "dereference")]
    pub dereference: bool,

    /// Prompt before overwrite (a later -n overrides it)
    #[arg(short = 'i', long)]
    pub interactive: bool,

    /// Hard link files instead of copying
    #[arg(short = 'l', long)]
    pub link: bool,

    /// Write an existing destination file in place, as cp does, so every hard link of it
    /// sees the new data (not atomic)
    #[arg(long)]
    pub inplace: bool,

    /// Do not overwrite an existing file (wins over -f; a later -i overrides it)
    #[arg(short = 'n', long)]
    pub no_clobber: bool,

    /// Never follow symbolic links in SOURCE
    #[arg(short = 'P', long = "no-dereference")]
    pub no_dereference: bool,

    /// Same as --preserve=mode,ownership,timestamps
    #[arg(short = 'p')]
    pub preserve_default: bool,

    /// Preserve the attributes in ATTR_LIST (mode,ownership,timestamps,links,xattr,all), and
    /// sharing: extents shared between source files stay shared in the copy (part of all)
    #[arg(long, value_name = "ATTR_LIST", num_args = 0..=1, require_equals = true,
          default_missing_value = BARE_PRESERVE, action = ArgAction::Append)]
    pub preserve: Vec<String>,

    /// Use full source file name under DIRECTORY
    #[arg(long)]
    pub parents: bool,

    /// Don't preserve the attributes in ATTR_LIST
    #[arg(long, value_name = "ATTR_LIST", action = ArgAction::Append, allow_hyphen_values = true)]
    pub no_preserve: Vec<String>,

    /// Copy directories recursively
    #[arg(short = 'r', short_alias = 'R', long)]
    pub recursive: bool,

    /// Remove each existing destination file before copying (the copy keeps nothing of it;
    /// it still replaces it atomically)
    #[arg(long)]
    pub remove_destination: bool,

    /// When to clone (share extents): auto (default), always, never; without WHEN: always
    #[arg(long, value_name = "WHEN", num_args = 0..=1, require_equals = true,
          default_missing_value = "always")]
    pub reflink: Option<When>,

    /// How to handle holes: auto (keep them, default), always (also make holes of zero
    /// runs when streaming), never (write every byte); --reflink=always needs auto
    #[arg(long, value_name = "WHEN", allow_hyphen_values = true, value_parser = sparse_when())]
    pub sparse: Option<When>,

    /// Remove any trailing slashes from each SOURCE that is copied into a directory
    #[arg(long)]
    pub strip_trailing_slashes: bool,

    /// Make symbolic links instead of copying
    #[arg(short = 's', long)]
    pub symbolic_link: bool,

    /// Override the usual backup suffix (~)
    #[arg(short = 'S', long, value_name = "SUFFIX", allow_hyphen_values = true)]
    pub suffix: Option<OsString>,

    /// Copy all SOURCE arguments into DIRECTORY
    #[arg(short = 't', long, value_name = "DIRECTORY", action = ArgAction::Append,
          allow_hyphen_values = true, value_parser = any_path())]
    pub target_directory: Vec<PathBuf>,

    /// Treat DEST as a normal file
    #[arg(short = 'T', long)]
    pub no_target_directory: bool,

    /// Control which existing destination files are replaced: all (the default without
    /// it), none (skip them), none-fail (skip them and fail), older (the default of -u:
    /// replace only those that are incomplete, of another size or older than the source)
    #[arg(short = 'u', long, value_name = "UPDATE", num_args = 0..=1, require_equals = true,
          default_missing_value = "older")]
    pub update: Option<Update>,

    /// Explain how each file is copied (cloned, offloaded or streamed, and whether holes
    /// were found); implies -v
    #[arg(long)]
    pub debug: bool,

    /// Copy a directory onto an existing symlink to a directory through that symlink
    #[arg(long)]
    pub keep_directory_symlink: bool,

    /// Explain what is being done
    #[arg(short = 'v', long)]
    pub verbose: bool,

    /// Stay on the source's filesystems
    #[arg(short = 'x', long)]
    pub one_file_system: bool,

    /// Set the SELinux context of copies to the default type, or to CTX: ignored, as cp does
    /// without SELinux (with a warning for CTX)
    #[arg(short = 'Z', long, value_name = "CTX", num_args = 0..=1, require_equals = true,
          action = ArgAction::Append)]
    pub context: Vec<OsString>,

    /// Worker threads for tree copies (1 to 256)
    #[arg(short = 'j', long, value_name = "N", value_parser = parse_jobs, allow_hyphen_values = true)]
    pub jobs: Option<usize>,

    /// Copy files of at least twice SIZE in ranges of SIZE (at least 1M), several workers at
    /// once (off: never, the default)
    #[arg(long, value_name = "SIZE", value_parser = parse_split, allow_hyphen_values = true)]
    pub split: Option<u64>,

    /// Buffer size for streamed copies, e.g. 1M
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    pub buffer_size: Option<usize>,

    /// Print JSON Lines on stdout: errors, entries (with -v) and a final summary
    #[arg(long)]
    pub json: bool,

    /// Show a progress line on stderr: auto (when stderr is a terminal), always, never;
    /// without WHEN: always
    #[arg(long, value_name = "WHEN", num_args = 0..=1, require_equals = true,
          default_missing_value = "always", default_value = "auto")]
    pub progress: When,

    /// No progress bar
    #[arg(short = 'q', long)]
    pub quiet: bool,

    /// Print a summary of what was copied, and how, at the end
    #[arg(long)]
    pub stats: bool,

    /// Show what would be created, replaced or skipped, and change nothing
    #[arg(long)]
    pub dry_run: bool,

    /// Re-read every copied file and compare it with its source (BLAKE3; clones by extent map)
    #[arg(long)]
    pub verify: bool,

    /// Drop copied data from the page cache as the copy goes
    #[arg(long)]
    pub nocache: bool,

    /// On each clone, record the file it was cloned from (xattr user.mimeo.origin; a clone
    /// of a clone names the first origin), so that readers share its page cache
    #[arg(long)]
    pub record_origin: bool,

    /// Read every byte from its own file, never through another source file that holds the
    /// same blocks (for measurements)
    #[arg(long)]
    pub no_shared_reads: bool,

    /// When stopped by SIGINT or SIGTERM, keep the written part of large files being copied,
    /// marked incomplete, for a later -u to resume
    #[arg(long)]
    pub partial: bool,

    /// Flush every file and directory to stable storage before counting it as copied
    #[arg(long)]
    pub sync: bool,

    /// Also remove temporaries and markers that runs on other hosts left behind (only when
    /// no run on another host is still copying into the same tree)
    #[arg(long)]
    pub clean_other_hosts: bool,

    /// Print a man page or shell completions (man, bash, zsh, fish, elvish) and exit
    #[arg(long, value_name = "WHAT", value_parser = crate::family::GENERATE)]
    pub generate: Option<String>,

    /// Print help
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,

    /// Print version
    #[arg(short = 'V', long, action = ArgAction::Version)]
    pub version: Option<bool>,

    /// The files and directories to copy, then DEST or DIRECTORY (none with -t)
    #[arg(value_name = "SOURCE", value_parser = any_path())]
    pub operands: Vec<PathBuf>,

    /// `-a`, `-d`, `-p`, `-H`, `-L`, `-P`, `--preserve` and `--no-preserve` in command-line
    /// order: each sets some of the same settings, and the later one wins, as in cp.
    #[arg(skip)]
    pub attr_flags: Vec<AttrFlag>,

    /// Whether `-Z` or `--context` was given (`context` holds only the values given).
    #[arg(skip)]
    pub context_given: bool,

    /// `-i` came after the last `-n` (or there is no `-n`): the later of the two counts.
    #[arg(skip)]
    pub interactive_last: bool,
}

/// A flag that sets attributes to keep or how to treat symlinks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttrFlag {
    /// `-a`: `-dR --preserve=all`.
    Archive,
    /// `-d`: `-P --preserve=links`.
    NoDerefPreserveLinks,
    /// `-H`.
    DerefCommandLine,
    /// `-L`.
    DerefAlways,
    /// `-P`.
    DerefNever,
    /// `-p` or a bare `--preserve`: mode, ownership and timestamps, which leaves cp's note
    /// that `--no-preserve=mode` was given (unlike `--preserve=mode`).
    PreserveDefault,
    /// `--preserve=LIST`.
    Preserve(String),
    /// `--no-preserve=LIST`.
    NoPreserve(String),
}

/// How a command line ended without arguments to run with.
#[derive(Debug)]
pub enum Stop {
    /// `--help` or `--version`: print this on stdout and exit 0.
    Display(clap::Error),
    /// A usage error, worded as cp words it.
    Usage(String),
}

/// The command as it presents itself when run as `prog` (`mimeo`, or `cp` through a link).
pub fn command(prog: &'static str) -> Command {
    let cmd = Args::command()
        .name(prog)
        .bin_name(prog)
        .override_usage(format!(
            "{prog} [OPTIONS] SOURCE DEST\n       {prog} [OPTIONS] SOURCE... DIRECTORY\n       \
         {prog} [OPTIONS] -t DIRECTORY SOURCE..."
        ));
    if prog == "mimeo" {
        cmd
    } else {
        cmd.version(concat!("(mimeo) ", env!("CARGO_PKG_VERSION")))
    }
}

/// Parses `argv` (program name first) as `prog`.
pub fn parse(prog: &'static str, argv: Vec<OsString>) -> Result<Args, Stop> {
    let mut cmd = command(prog);
    cmd.build();
    let argv = cmdline::normalize(&cmd, argv).map_err(|refused| {
        // cp warns about each --context=CTX as it reads it: those before the option it
        // stops at are said first.
        for warning in crate::config::context_warnings(&refused.read) {
            crate::output::error(&warning);
        }
        Stop::Usage(refused.message)
    })?;
    let matches = cmd
        .try_get_matches_from_mut(argv.clone())
        .map_err(|e| match e.kind() {
            clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                // cp stops at --help or --version as it reads it, having warned about each
                // --context=CTX before it.
                let mut options = argv.iter().take_while(|a| *a != "--");
                let stop = options.position(|a| *a == "--help" || *a == "--version");
                let read = &argv[..stop.unwrap_or(argv.len())];
                for warning in crate::config::context_warnings(read) {
                    crate::output::error(&warning);
                }
                Stop::Display(e)
            }
            _ => Stop::Usage(cmdline::clap_message(&e)),
        })?;
    let mut args =
        Args::from_arg_matches(&matches).map_err(|e| Stop::Usage(cmdline::clap_message(&e)))?;
    args.attr_flags = attr_flags(&matches);
    args.context_given = matches.value_source("context") == Some(ValueSource::CommandLine);
    args.interactive_last = args.interactive
        && (!args.no_clobber || matches.index_of("interactive") > matches.index_of("no_clobber"));
    Ok(args)
}

/// What a bare `--preserve` gives clap: no argument can hold a NUL byte, so this tells it
/// from `--preserve=mode,ownership,timestamps`, which cp takes differently (see
/// [`AttrFlag::PreserveDefault`]).
const BARE_PRESERVE: &str = "\0";

/// The attribute and symlink flags given, in command-line order.
fn attr_flags(m: &ArgMatches) -> Vec<AttrFlag> {
    let mut found: Vec<(usize, AttrFlag)> = Vec::new();
    let given = |id: &str| m.value_source(id) == Some(ValueSource::CommandLine);
    for (id, flag) in [
        ("archive", AttrFlag::Archive),
        ("no_deref_preserve_links", AttrFlag::NoDerefPreserveLinks),
        ("deref_command_line", AttrFlag::DerefCommandLine),
        ("dereference", AttrFlag::DerefAlways),
        ("no_dereference", AttrFlag::DerefNever),
        ("preserve_default", AttrFlag::PreserveDefault),
    ] {
        // clap keeps only the last of repeats. That is enough: a flag always sets the same
        // values, so its last occurrence decides which of them hold.
        if given(id) {
            if let Some(i) = m.index_of(id) {
                found.push((i, flag));
            }
        }
    }
    for (id, make) in [
        ("preserve", AttrFlag::Preserve as fn(String) -> AttrFlag),
        ("no_preserve", AttrFlag::NoPreserve),
    ] {
        if !given(id) {
            continue;
        }
        let (Some(indices), Some(values)) = (m.indices_of(id), m.get_many::<String>(id)) else {
            continue;
        };
        for (i, list) in indices.zip(values) {
            let flag = if list == BARE_PRESERVE {
                AttrFlag::PreserveDefault
            } else {
                make(list.clone())
            };
            found.push((i, flag));
        }
    }
    found.sort_by_key(|&(i, _)| i);
    found.into_iter().map(|(_, f)| f).collect()
}

/// Parses sizes such as 65536, 128K, 1M, 8MiB.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: usize = num.parse().map_err(|_| format!("invalid size '{s}'"))?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("invalid size unit in '{s}'")),
    };
    n.checked_mul(mult)
        .filter(|&v| v > 0)
        .ok_or_else(|| format!("invalid size '{s}'"))
}

/// The most worker threads `-j` accepts: far beyond where more of them copy faster (bench
/// W14 found the gains end at 16-32 on 2 CPUs), and few enough that their buffers and
/// stacks stay well within memory.
pub const MAX_JOBS: usize = 256;

/// The smallest range `--split` accepts: below it the cost of handing out ranges exceeds
/// the gain of copying them at once.
pub const MIN_SPLIT: u64 = 1 << 20;

/// `-j N`: 1 to [`MAX_JOBS`].
pub fn parse_jobs(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_JOBS).contains(&n) => Ok(n),
        _ => Err(format!("must be a number from 1 to {MAX_JOBS}")),
    }
}

/// `--split`: a size of at least [`MIN_SPLIT`], or `off` (0).
pub fn parse_split(s: &str) -> Result<u64, String> {
    if s == "off" {
        return Ok(0);
    }
    match parse_size(s) {
        Ok(n) if n as u64 >= MIN_SPLIT => Ok(n as u64),
        Ok(_) => Err("must be at least 1M, or off".into()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_definition_is_consistent() {
        Args::command().debug_assert();
        command("mimeo").debug_assert();
        command("cp").debug_assert();
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("128K"), Ok(128 << 10));
        assert_eq!(parse_size("8MiB"), Ok(8 << 20));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("0").is_err());
        assert!(parse_size("1X").is_err());
    }
}
