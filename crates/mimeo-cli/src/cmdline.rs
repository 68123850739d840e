//! Reading a command line as cp does, before clap parses it.
//!
//! cp parses with GNU `getopt_long`, which accepts any unique abbreviation of a long option
//! (`--recur`), and checks option values with `argmatch`, which accepts any unique
//! abbreviation of a value (`--reflink=al`). clap knows neither rule in cp's form, nor cp's
//! wording for usage errors. So [`normalize`] walks the command line once with those rules,
//! using the clap definition for what each option is, and hands clap a command line with
//! every long option and value spelled out in full. Anything it finds wrong is reported in
//! cp's words.
//!
//! mimeo has long options that cp does not (`--stats`, `--sync`, ...). Where one of them
//! shares a prefix with cp's options, a prefix that names exactly one of cp's options means
//! what it means to cp (`--st` is `--strip-trailing-slashes`, not `--stats`), so that a cp
//! command line never changes meaning (`--sy` is `--symbolic-link`, not `--sync`). If cp's
//! reading were an option that mimeo lacks, the prefix would be ambiguous.

use clap::builder::PossibleValue;
use clap::{ArgAction, Command};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// cp 9.1's long options, in the order `getopt_long` lists them when a prefix is ambiguous.
/// (It also has `--path`, a deprecated synonym of `--parents`.)
const CP_LONG_OPTIONS: &[&str] = &[
    "archive",
    "attributes-only",
    "backup",
    "copy-contents",
    "dereference",
    "force",
    "interactive",
    "link",
    "no-clobber",
    "no-dereference",
    "no-preserve",
    "no-target-directory",
    "one-file-system",
    "parents",
    "preserve",
    "recursive",
    "remove-destination",
    "sparse",
    "reflink",
    "strip-trailing-slashes",
    "suffix",
    "symbolic-link",
    "target-directory",
    "update",
    "verbose",
    "context",
    "help",
    "version",
];

/// Whether an option takes a value, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
    Nothing,
    /// Only attached: `--reflink=always`. `--reflink always` is the flag and an operand.
    Optional,
    /// Attached or as the next argument, even one that starts with `-`.
    Required,
}

/// What `normalize` needs to know about one option of the clap definition.
#[derive(Debug)]
struct Opt {
    long: Option<String>,
    shorts: Vec<char>,
    takes: Takes,
    /// The allowed values, when the option has a fixed set.
    choices: Vec<String>,
    /// `--help` and `--version` end the reading: cp acts on them at once.
    ends: bool,
}

impl Opt {
    fn of(arg: &clap::Arg) -> Opt {
        let takes = if !arg.get_action().takes_values() {
            Takes::Nothing
        } else if arg.is_require_equals_set()
            && arg.get_num_args().is_some_and(|n| n.min_values() == 0)
        {
            Takes::Optional
        } else {
            Takes::Required
        };
        Opt {
            long: arg.get_long().map(str::to_owned),
            shorts: arg
                .get_short()
                .into_iter()
                .chain(arg.get_all_short_aliases().unwrap_or_default())
                .collect(),
            takes,
            choices: arg
                .get_possible_values()
                .iter()
                .map(PossibleValue::get_name)
                .map(str::to_owned)
                .collect(),
            ends: matches!(arg.get_action(), ArgAction::Help | ArgAction::Version),
        }
    }
}

/// The first usage error of a command line, and what was read before it.
#[derive(Debug)]
pub struct Refused {
    /// cp's message.
    pub message: String,
    /// The arguments before the one refused, spelled out: cp has acted on these options (its
    /// warnings) by the time it stops.
    pub read: Vec<OsString>,
}

/// Returns `argv` with every long option, abbreviated or not, spelled out in full, and every
/// value of an option with a fixed set of values spelled out too; or cp's message for the
/// first usage error. `cmd` must be built (`Command::build`).
pub fn normalize(cmd: &Command, argv: Vec<OsString>) -> Result<Vec<OsString>, Refused> {
    normalize_with(cmd, argv, CP_LONG_OPTIONS)
}

/// [`normalize`] for a command whose abbreviations follow `first`'s meaning where they name
/// exactly one of `first` (cp's options for `mimeo`; none for the other commands, whose
/// prefixes need only be unique).
pub fn normalize_with(
    cmd: &Command,
    argv: Vec<OsString>,
    first: &[&str],
) -> Result<Vec<OsString>, Refused> {
    let opts: Vec<Opt> = cmd
        .get_arguments()
        .filter(|a| !a.is_positional())
        .map(Opt::of)
        .collect();
    let mut out = Vec::with_capacity(argv.len());
    let mut rest = argv.into_iter();
    out.extend(rest.next());
    // The last `--backup=CONTROL` read, for a later bare `--backup`.
    let mut control = None;
    while let Some(token) = rest.next() {
        let bytes = token.as_bytes();
        if bytes == b"--" {
            out.push(token);
            break;
        }
        let read = out.len();
        let opt = if let Some(body) = bytes.strip_prefix(b"--") {
            long_option(&opts, first, &token, body, &mut rest, &mut out)
        } else if bytes.len() > 1 && bytes[0] == b'-' {
            short_options(&opts, &token, &mut rest, &mut out)
        } else {
            out.push(token);
            Ok(None)
        };
        let opt = match opt {
            Ok(opt) => opt,
            Err(message) => {
                out.truncate(read);
                return Err(Refused { message, read: out });
            }
        };
        if opt.is_some_and(|o| o.long.as_deref() == Some("backup")) {
            keep_backup_control(&mut out[read..], &mut control);
        }
        if opt.is_some_and(|o| o.ends) {
            break;
        }
    }
    out.extend(rest);
    Ok(out)
}

/// A bare `--backup` (`read`, as spelled out) given the last CONTROL (`control`) that came
/// before it: cp sets the version control only where a CONTROL is given, so a later bare
/// `--backup` keeps it. Done here, where an option's value (`-S --backup=t`, a suffix) is
/// told from an option.
fn keep_backup_control(read: &mut [OsString], control: &mut Option<OsString>) {
    let [token] = read else { return };
    match token.as_bytes().strip_prefix(b"--backup=") {
        Some(value) => *control = Some(OsStr::from_bytes(value).to_owned()),
        None => {
            if let Some(value) = control {
                let mut spelled = OsString::from("--backup=");
                spelled.push(value);
                *token = spelled;
            }
        }
    }
}

/// One `--name[=value]` argument (`body` is what follows `--`), spelled out onto `out`, with
/// its value taken from `rest` when it is the next argument. Returns the option.
fn long_option<'o>(
    opts: &'o [Opt],
    first: &[&str],
    token: &OsString,
    body: &[u8],
    rest: &mut impl Iterator<Item = OsString>,
    out: &mut Vec<OsString>,
) -> Result<Option<&'o Opt>, String> {
    let (name, value) = match body.iter().position(|&b| b == b'=') {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    // Quoted as cp quotes names, escapes and all: cp's getopt prints it raw to the terminal.
    let given = mimeo::quote_arg(token);
    let opt = std::str::from_utf8(name)
        .ok()
        .map(|name| find_long(opts, first, name, &given))
        .unwrap_or_else(|| Err(format!("unrecognized option {given}")))?;
    let long = opt.long.as_deref().expect("found by its long name");
    let mut spelled = OsString::from(format!("--{long}"));
    match (opt.takes, value) {
        (Takes::Nothing, Some(_)) => {
            return Err(format!("option '--{long}' doesn't allow an argument"));
        }
        (Takes::Nothing | Takes::Optional, None) => out.push(spelled),
        (_, Some(value)) => {
            spelled.push("=");
            spelled.push(choice(opt, &format!("--{long}"), value)?);
            out.push(spelled);
        }
        (Takes::Required, None) => {
            let Some(value) = rest.next() else {
                return Err(format!("option '--{long}' requires an argument"));
            };
            let value = choice(opt, &format!("--{long}"), value.as_bytes())?;
            out.extend([spelled, value]);
        }
    }
    Ok(Some(opt))
}

/// The option `--name` stands for, by getopt_long's rules and the precedence of `first`
/// (module docs).
fn find_long<'o>(
    opts: &'o [Opt],
    first: &[&str],
    name: &str,
    // The option as given, quoted for a message.
    given: &str,
) -> Result<&'o Opt, String> {
    let by_long = |long: &str| opts.iter().find(|o| o.long.as_deref() == Some(long));
    if let Some(exact) = by_long(name) {
        return Ok(exact);
    }
    let ours: Vec<&str> = opts
        .iter()
        .filter_map(|o| o.long.as_deref())
        .filter(|l| l.starts_with(name))
        .collect();
    let cps: Vec<&str> = first
        .iter()
        .copied()
        .filter(|l| l.starts_with(name))
        .collect();
    let pick = match (ours.as_slice(), cps.as_slice()) {
        (_, [cp]) if ours.contains(cp) => Some(*cp),
        ([only], []) => Some(*only),
        _ => None,
    };
    if let Some(long) = pick.and_then(by_long) {
        return Ok(long);
    }
    // Where cp finds the prefix ambiguous too, its message (and its list) is the one given.
    let mut all = cps;
    if all.len() < 2 {
        all.extend(ours.iter().filter(|l| !first.contains(l)));
    }
    if all.len() < 2 {
        // Unknown, or only one of cp's options that mimeo does not have.
        return Err(format!("unrecognized option {given}"));
    }
    let possibilities: String = all.iter().map(|l| format!(" '--{l}'")).collect();
    Err(format!(
        "option {given} is ambiguous; possibilities:{possibilities}"
    ))
}

/// One `-abc` argument: a cluster of short options, the last of which may take a value (the
/// rest of the argument, or the next one). Returns the option that ends the reading, if one
/// does.
fn short_options<'o>(
    opts: &'o [Opt],
    token: &OsString,
    rest: &mut impl Iterator<Item = OsString>,
    out: &mut Vec<OsString>,
) -> Result<Option<&'o Opt>, String> {
    let bytes = token.as_bytes();
    let text = String::from_utf8_lossy(&bytes[1..]);
    for (at, c) in text.char_indices() {
        let Some(opt) = opts.iter().find(|o| o.shorts.contains(&c)) else {
            // Escaped where it is a control character (see `long_option`).
            return Err(format!(
                "invalid option -- {}",
                mimeo::quote_arg(c.to_string())
            ));
        };
        if opt.ends {
            out.push(token.clone());
            return Ok(Some(opt));
        }
        if opt.takes != Takes::Required {
            // A short option's optional value (-Z) is never attached: -Zv is -Z -v.
            continue;
        }
        // The value is the rest of the argument (-tDIR), else the next one (-t DIR).
        let flags = OsString::from_vec(bytes[..1 + at + c.len_utf8()].to_vec());
        let attached = &bytes[1 + at + c.len_utf8()..];
        let option = opt
            .long
            .as_deref()
            .map_or_else(|| format!("-{c}"), |l| format!("--{l}"));
        let value = if !attached.is_empty() {
            choice(opt, &option, attached)?
        } else if let Some(next) = rest.next() {
            choice(opt, &option, next.as_bytes())?
        } else {
            return Err(format!("option requires an argument -- '{c}'"));
        };
        out.extend([flags, value]);
        return Ok(None);
    }
    out.push(token.clone());
    Ok(None)
}

/// `value` spelled out in full when `opt` (named `option` in messages) has a fixed set of
/// values.
fn choice(opt: &Opt, option: &str, value: &[u8]) -> Result<OsString, String> {
    // cp checks an attribute list where it reads it, before any later option (--help).
    if matches!(option, "--preserve" | "--no-preserve") {
        for item in value.split(|&b| b == b',') {
            crate::config::preserve_item(OsStr::from_bytes(item), option)?;
        }
        return Ok(OsString::from_vec(value.to_vec()));
    }
    if opt.choices.is_empty() {
        return Ok(OsString::from_vec(value.to_vec()));
    }
    let text = String::from_utf8_lossy(value);
    let choices: Vec<&str> = opt.choices.iter().map(String::as_str).collect();
    match choose(&text, &choices) {
        Ok(i) => Ok(OsString::from(choices[i])),
        Err(bad) => Err(bad.message(OsStr::from_bytes(value), option, &choices)),
    }
}

/// Why a value is not one of a fixed set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadChoice {
    /// It begins none of them.
    Invalid,
    /// It begins more than one.
    Ambiguous,
}

impl BadChoice {
    /// cp's message (argmatch's), e.g. `invalid argument 'x' for '--sparse'` and the list of
    /// valid values. The value is quoted as cp quotes it, its control characters and bytes
    /// that are not UTF-8 escaped (`'x\033y'`), so none reaches the terminal raw.
    pub fn message(self, value: &OsStr, option: &str, choices: &[&str]) -> String {
        let what = match self {
            BadChoice::Invalid => "invalid",
            BadChoice::Ambiguous => "ambiguous",
        };
        let value = mimeo::quote_arg(value);
        let mut msg = format!("{what} argument {value} for '{option}'\nValid arguments are:");
        for c in choices {
            msg.push_str(&format!("\n  - '{c}'"));
        }
        msg
    }
}

/// The index of the choice `value` names: an exact match, or the only choice it begins.
pub fn choose(value: &str, choices: &[&str]) -> Result<usize, BadChoice> {
    if let Some(i) = choices.iter().position(|c| *c == value) {
        return Ok(i);
    }
    let mut begun = choices
        .iter()
        .enumerate()
        .filter(|(_, c)| c.starts_with(value));
    match (begun.next(), begun.next()) {
        (Some((i, _)), None) => Ok(i),
        (None, _) => Err(BadChoice::Invalid),
        (Some(_), Some(_)) => Err(BadChoice::Ambiguous),
    }
}

/// A usage error from clap itself, which `normalize` left for it (values that do not parse,
/// such as `--jobs x`), in cp's manner: one line, no "error:" and no usage.
pub fn clap_message(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let context = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.as_str()),
        _ => None,
    };
    if let (Some(arg), Some(value)) = (
        context(ContextKind::InvalidArg),
        context(ContextKind::InvalidValue),
    ) {
        // "--jobs <N>" or "--reflink[=<WHEN>]": the option's name is the first word.
        let option = arg.split([' ', '[', '=']).next().unwrap_or(arg);
        let why = std::error::Error::source(e).map_or_else(String::new, |s| format!(": {s}"));
        let value = mimeo::quote_arg(value);
        return format!("invalid argument {value} for '{option}'{why}");
    }
    let rendered = e.render().to_string();
    let first = rendered.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalized(args: &[&str]) -> Result<Vec<String>, String> {
        let mut cmd = crate::args::command("mimeo");
        cmd.build();
        let argv = std::iter::once("mimeo").chain(args.iter().copied());
        normalize(&cmd, argv.map(OsString::from).collect())
            .map_err(|r| r.message)
            .map(|v| {
                v.into_iter()
                    .skip(1)
                    .map(|a| a.into_string().unwrap())
                    .collect()
            })
    }

    #[test]
    fn unique_abbreviations_are_spelled_out() {
        assert_eq!(
            normalized(&["--recur", "--no-cl", "--verb", "a", "b"]).unwrap(),
            ["--recursive", "--no-clobber", "--verbose", "a", "b"]
        );
        assert_eq!(
            normalized(&["--reflink=al", "--spa", "n", "--preserve", "x"]).unwrap(),
            ["--reflink=always", "--sparse", "never", "--preserve", "x"]
        );
    }

    #[test]
    fn cp_reading_wins_on_shared_prefixes() {
        assert_eq!(normalized(&["--st"]).unwrap(), ["--strip-trailing-slashes"]);
        assert_eq!(normalized(&["--pr=mode"]).unwrap(), ["--preserve=mode"]);
        assert_eq!(normalized(&["--sta"]).unwrap(), ["--stats"]);
        // --sy begins --symbolic-link and mimeo's --sync: cp's reading.
        assert_eq!(normalized(&["--sy"]).unwrap(), ["--symbolic-link"]);
        assert_eq!(normalized(&["--syn"]).unwrap(), ["--sync"]);
        assert_eq!(normalized(&["--in"]).unwrap(), ["--interactive"]);
        assert_eq!(normalized(&["--inp"]).unwrap(), ["--inplace"]);
    }

    #[test]
    fn values_of_options_are_values() {
        // -t takes the next argument whatever it looks like, as getopt does.
        assert_eq!(
            normalized(&["-vt", "--re", "a"]).unwrap(),
            ["-vt", "--re", "a"]
        );
        assert_eq!(normalized(&["-tdir", "a"]).unwrap(), ["-t", "dir", "a"]);
        assert_eq!(normalized(&["--", "--re"]).unwrap(), ["--", "--re"]);
        assert_eq!(
            normalized(&["--help", "--bogus"]).unwrap(),
            ["--help", "--bogus"]
        );
    }

    #[test]
    fn errors_are_worded_as_cp_words_them() {
        assert_eq!(
            normalized(&["--re"]).unwrap_err(),
            "option '--re' is ambiguous; possibilities: '--recursive' '--remove-destination' '--reflink'"
        );
        assert_eq!(
            normalized(&["--bogus=3"]).unwrap_err(),
            "unrecognized option '--bogus=3'"
        );
        assert_eq!(normalized(&["-k"]).unwrap_err(), "invalid option -- 'k'");
        assert_eq!(
            normalized(&["--verb=3"]).unwrap_err(),
            "option '--verbose' doesn't allow an argument"
        );
        assert_eq!(
            normalized(&["-t"]).unwrap_err(),
            "option requires an argument -- 't'"
        );
        assert_eq!(
            normalized(&["--target"]).unwrap_err(),
            "option '--target-directory' requires an argument"
        );
        assert_eq!(
            normalized(&["--sparse=a"]).unwrap_err(),
            "ambiguous argument 'a' for '--sparse'\nValid arguments are:\n  - 'never'\n  - 'auto'\n  - 'always'"
        );
    }

    #[test]
    fn choices_follow_argmatch() {
        let c = [
            "mode",
            "timestamps",
            "ownership",
            "links",
            "context",
            "xattr",
            "all",
        ];
        assert_eq!(choose("mo", &c), Ok(0));
        assert_eq!(choose("all", &c), Ok(6));
        assert_eq!(choose("", &c), Err(BadChoice::Ambiguous));
        assert_eq!(
            choose("a", &["auto", "always", "never"]),
            Err(BadChoice::Ambiguous)
        );
        assert_eq!(choose("q", &c), Err(BadChoice::Invalid));
    }
}
