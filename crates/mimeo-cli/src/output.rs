//! Rendering engine events: cp-style messages on stderr, `-v` lines, or JSON Lines.

use mimeo::{Event, Observer, Summary};
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static PROG: OnceLock<&'static str> = OnceLock::new();

/// Names the command for its messages (before any is printed): another front end of the
/// engine sets its own name.
pub fn set_prog(name: &'static str) {
    let _ = PROG.set(name);
}

/// The name every message starts with: `cp` when the command runs under that name (through
/// a link named cp, say), as cp's own messages do; `mimeo` otherwise.
pub fn prog() -> &'static str {
    PROG.get_or_init(|| {
        let argv0 = std::env::args_os().next().unwrap_or_default();
        if Path::new(&argv0).file_name() == Some(OsStr::new("cp")) {
            "cp"
        } else {
            "mimeo"
        }
    })
}

/// Messages go to stderr as JSON error objects instead of lines of text (see
/// [`errors_as_json`]).
static ERRORS_AS_JSON: AtomicBool = AtomicBool::new(false);

/// Makes [`error`] and [`usage_error`] write JSON error objects ([`error_object`]) instead of
/// lines of text, for a command whose JSON stream is on stderr (`mimeo-cat --json`), so that
/// no plain line is mixed into it.
pub fn errors_as_json(on: bool) {
    ERRORS_AS_JSON.store(on, Ordering::Relaxed);
}

/// Prints `PROG: message` on stderr.
pub fn error(message: &str) {
    if ERRORS_AS_JSON.load(Ordering::Relaxed) {
        err_line(&error_object("other", message));
    } else {
        err_line(&format!("{}: {message}\n", prog()));
    }
}

/// Prints a usage error as cp does: `PROG: message`, then where to find help.
pub fn usage_error(message: &str) {
    let prog = prog();
    if ERRORS_AS_JSON.load(Ordering::Relaxed) {
        err_line(&error_object("usage", message));
    } else {
        err_line(&format!(
            "{prog}: {message}\nTry '{prog} --help' for more information.\n"
        ));
    }
}

/// The JSON object of a failure that no path is to blame for (a usage error, a missing
/// target): `{"type":"error","path":null,"operation":OP,"message":…,"errno":null}`, with its
/// newline.
pub fn error_object(operation: &str, message: &str) -> String {
    Json::new("error")
        .with("path", serde_json::Value::Null)
        .with("operation", operation)
        .with("message", message)
        .with("errno", serde_json::Value::Null)
        .line()
}

/// Prints events as they come from the workers.
#[derive(Debug)]
pub struct Printer {
    pub verbose: bool,
    /// `--debug`: after each file's `-v` line, how it was copied.
    pub debug: bool,
    pub json: bool,
    /// `-f` or `--remove-destination`: how `-i` words its question about a file it may not
    /// write (cp's "replace ..., overriding mode").
    pub force: bool,
    /// How cp looks at a destination it asks about.
    pub looks: Looks,
}

/// How cp looks at an existing destination: through a symlink where it would write a
/// regular file through it, so `-i`'s question describes what the symlink leads to.
#[derive(Debug, Clone, Copy, Default)]
pub struct Looks {
    /// Never through a symlink: with -s, -l, a backup or --remove-destination.
    pub lstat_only: bool,
    /// Sources are looked at through symlinks (not -P).
    pub follow_src: bool,
    /// FIFOs and devices are read as regular files (not -r, or --copy-contents).
    pub as_regular: bool,
}

impl Looks {
    pub fn new(o: &mimeo::Options) -> Looks {
        Looks {
            lstat_only: o.link.is_some() || o.backup.is_some() || o.remove_destination,
            follow_src: o.dereference != mimeo::Dereference::Never,
            as_regular: !o.recursive || o.copy_contents,
        }
    }

    /// Whether cp looks at `dst` through a symlink when it copies `src` there.
    fn through(&self, src: &Path) -> bool {
        let m = if self.follow_src {
            std::fs::metadata(src)
        } else {
            std::fs::symlink_metadata(src)
        };
        let written = m.is_ok_and(|m| {
            let t = m.file_type();
            t.is_file() || self.as_regular && !t.is_dir() && !t.is_symlink()
        });
        !self.lstat_only && written
    }
}

impl Printer {
    /// A `-v` line: cp's `'a' -> 'b'`, or its unquoted form for a directory made by
    /// `--parents` on the way to a copy (`a -> d/a`; quoted all the same where a name holds
    /// a control character or is not UTF-8: such bytes never reach the terminal raw).
    fn verbose_line(&self, src: &Path, dst: &Path, kind: mimeo::EntryKind) -> String {
        fn plain(p: &Path) -> Option<&str> {
            p.to_str().filter(|s| !s.chars().any(char::is_control))
        }
        let parent = kind == mimeo::EntryKind::ParentDirectory;
        match (plain(src), plain(dst)) {
            (Some(s), Some(d)) if parent => format!("{s} -> {d}\n"),
            _ => format!("{} -> {}\n", quote(src), quote(dst)),
        }
    }
}

impl Observer for Printer {
    fn event(&self, event: Event) {
        match &event {
            Event::Failed(err) => {
                if self.json {
                    error_json(err).print();
                }
                if !err.unsaid {
                    error(&err.to_string());
                }
            }
            Event::Warning(w) => {
                if self.json {
                    let mut line = String::from("{\"type\":\"warning\",\"message\":");
                    push_json_str(&mut line, &w.to_string());
                    line.push_str("}\n");
                    out(&line);
                }
                error(&w.to_string());
            }
            Event::Copied {
                src,
                dst,
                kind,
                outcome,
            } if self.verbose => {
                if self.json {
                    let mut line = entry_object("copied", src, dst);
                    line.push_str(",\"kind\":");
                    push_json_str(&mut line, kind.name());
                    if let Some(o) = outcome {
                        line.push_str(&format!(
                            ",\"method\":\"{}\",\"bytes\":{},\"hole_bytes\":{}",
                            o.method.name(),
                            o.bytes,
                            o.hole_bytes
                        ));
                    }
                    line.push_str("}\n");
                    out(&line);
                } else {
                    let mut line = self.verbose_line(src, dst, *kind);
                    if let (true, Some(o)) = (self.debug, outcome) {
                        line.push_str(&debug_line(o));
                    }
                    out(&line);
                }
            }
            Event::Planned {
                src,
                dst,
                kind,
                action,
            } => {
                if self.json {
                    let mut line = entry_object("planned", src, dst);
                    line.push_str(&format!(
                        ",\"kind\":\"{}\",\"action\":\"{}\"}}\n",
                        kind.name(),
                        action.name()
                    ));
                    out(&line);
                } else {
                    out(&format!(
                        "would {} {} {} (from {})\n",
                        action.name(),
                        kind.name().replace('_', " "),
                        quote(dst),
                        quote(src)
                    ));
                }
            }
            // cp's line for an entry it began to copy, printed before the copy fails.
            Event::Begun { src, dst } if self.verbose && !self.json => {
                out(&self.verbose_line(src, dst, mimeo::EntryKind::File));
            }
            Event::Removed { path } if self.verbose && !self.json => {
                out(&format!("removed {}\n", quote(path)));
            }
            // cp 9.1's -v says nothing of a file it leaves alone.
            Event::Skipped { src, dst } if self.verbose && self.json => {
                let mut line = entry_object("skipped", src, dst);
                line.push_str("}\n");
                out(&line);
            }
            _ => {}
        }
    }

    fn wants_entries(&self) -> bool {
        self.verbose
    }

    /// `-i`: cp's question on stderr, and a line of stdin as the answer (a terminal or not,
    /// as cp reads it); yes when it starts with y or Y. The end of input is a no.
    fn confirm_overwrite(&self, src: &Path, dst: &Path) -> bool {
        let question = match unwritable_mode(dst, self.looks.through(src)) {
            // cp's wording where it may not write the file (it then fails without -f).
            Some(mode) if self.force => format!(
                "{}: replace {}, overriding mode {:04o} ({})? ",
                prog(),
                quote(dst),
                mode,
                symbolic_mode(mode)
            ),
            Some(mode) => format!(
                "{}: unwritable {} (mode {:04o}, {}); try anyway? ",
                prog(),
                quote(dst),
                mode,
                symbolic_mode(mode)
            ),
            None => format!("{}: overwrite {}? ", prog(), quote(dst)),
        };
        err_line(&question);
        let mut answer = String::new();
        match std::io::stdin().read_line(&mut answer) {
            Ok(_) => answer.starts_with(['y', 'Y']),
            Err(_) => false,
        }
    }
}

/// `--debug`'s line about one file, in the form of cp's: whether the data went by copy
/// offload (`copy_file_range`) or was shared (reflink), and whether holes were found
/// (`SEEK_HOLE`) in the source.
fn debug_line(o: &mimeo::FileOutcome) -> String {
    use mimeo::Method;
    let (offload, reflink) = match o.method {
        Method::Clone => ("avoided", "yes"),
        Method::Offload => ("yes", "no"),
        _ => ("no", "no"),
    };
    let holes = if o.hole_bytes > 0 { "SEEK_HOLE" } else { "no" };
    format!("copy offload: {offload}, reflink: {reflink}, sparse detection: {holes}\n")
}

/// The permission bits of `dst` (what it leads to, where cp looks through a symlink) when
/// this process (not root) may not write it: any entry but a symlink, a directory too, as
/// cp asks.
fn unwritable_mode(dst: &Path, follow: bool) -> Option<u32> {
    use rustix::fs::{Access, AtFlags, CWD};
    if rustix::process::geteuid().is_root() {
        return None;
    }
    let m = if follow {
        std::fs::metadata(dst)
    } else {
        std::fs::symlink_metadata(dst)
    }
    .ok()?;
    let writable = rustix::fs::accessat(CWD, dst, Access::WRITE_OK, AtFlags::EACCESS).is_ok();
    (!m.is_symlink() && !writable)
        .then(|| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o7777)
}

/// `rw-r--r--`, as `ls -l` and cp's questions show permission bits.
fn symbolic_mode(mode: u32) -> String {
    let mut s = String::new();
    for (shift, special, on, off) in [
        (6, 0o4000, 's', 'S'),
        (3, 0o2000, 's', 'S'),
        (0, 0o1000, 't', 'T'),
    ] {
        let bits = (mode >> shift) & 7;
        s.push(if bits & 4 != 0 { 'r' } else { '-' });
        s.push(if bits & 2 != 0 { 'w' } else { '-' });
        s.push(match (bits & 1 != 0, mode & special != 0) {
            (true, true) => on,
            (false, true) => off,
            (true, false) => 'x',
            (false, false) => '-',
        });
    }
    s
}

/// The final JSON summary line. Field names are stable.
pub fn summary_json(s: &Summary) -> String {
    format!(
        concat!(
            "{{\"type\":\"summary\",\"files\":{},\"directories\":{},\"symlinks\":{},",
            "\"hard_links\":{},\"specials\":{},\"skipped\":{},\"bytes\":{},",
            "\"by_method\":{{\"clone\":{},\"offload\":{},\"stream\":{}}},",
            "\"files_by_method\":{{\"clone\":{},\"offload\":{},\"stream\":{}}},",
            "\"hole_bytes\":{},\"shared_read_bytes\":{},\"resumed_bytes\":{},\"errors\":{},\"vanished\":{},",
            "\"interrupted\":{},\"elapsed_s\":{:.6}}}\n"
        ),
        s.files,
        s.directories,
        s.symlinks,
        s.hard_links,
        s.specials,
        s.skipped,
        s.bytes,
        s.clone_bytes,
        s.offload_bytes,
        s.stream_bytes,
        s.clone_files,
        s.offload_files,
        s.stream_files,
        s.hole_bytes,
        s.shared_read_bytes,
        s.resumed_bytes,
        s.errors,
        s.vanished,
        s.interrupted,
        s.elapsed.as_secs_f64()
    )
}

/// The `--stats` summary for people.
pub fn summary_text(s: &Summary) -> String {
    use indicatif::HumanBytes;
    let secs = s.elapsed.as_secs_f64();
    let rate = if secs > 0.0 {
        format!("{}/s", HumanBytes((s.bytes as f64 / secs) as u64))
    } else {
        "-".into()
    };
    format!(
        concat!(
            "copied: {} files, {} directories, {} symlinks, {} hard links, {} special files\n",
            "skipped: {}   errors: {} ({} vanished){}\n",
            "data: {} in {:.2}s ({})\n",
            "  cloned    {} in {} files\n",
            "  offloaded {} in {} files\n",
            "  streamed  {} in {} files\n",
            "  holes     {}\n",
            "  read through a canonical file {}\n",
            "  resumed   {}\n"
        ),
        s.files,
        s.directories,
        s.symlinks,
        s.hard_links,
        s.specials,
        s.skipped,
        s.errors,
        s.vanished,
        if s.interrupted { "   interrupted" } else { "" },
        HumanBytes(s.bytes),
        secs,
        rate,
        HumanBytes(s.clone_bytes),
        s.clone_files,
        HumanBytes(s.offload_bytes),
        s.offload_files,
        HumanBytes(s.stream_bytes),
        s.stream_files,
        HumanBytes(s.hole_bytes),
        HumanBytes(s.shared_read_bytes),
        HumanBytes(s.resumed_bytes),
    )
}

/// A name quoted as cp quotes it in messages and `-v` lines: `'a b'`, `'x'$'\033'`.
pub fn quote(p: &Path) -> String {
    mimeo::quote(p)
}

/// A path as text where it must be one string: quoted as [`quote`] quotes it when it holds
/// anything a terminal would act on, else as it is.
pub fn display(path: &Path) -> String {
    let bytes = path.as_os_str().as_bytes();
    match std::str::from_utf8(bytes) {
        Ok(s) if !s.chars().any(char::is_control) => s.to_owned(),
        _ => quote(path),
    }
}

/// The first error writing standard output, as an errno (0 while none).
static STDOUT_ERROR: AtomicI32 = AtomicI32::new(0);

/// Standard output was closed when the command started (see [`watch_stdout`]).
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Notes whether standard output was closed when the command started. Rust's runtime opens
/// a closed descriptor 0, 1 or 2 on `/dev/null`, read-write, before `main`; a shell opens
/// `/dev/null` for writing only, so a read-write `/dev/null` on 1 is taken for a closed
/// standard output, which cp and cat report ("Bad file descriptor") when they write to it.
pub fn watch_stdout() {
    use rustix::fs::{FileType, OFlags};
    let stdout = std::io::stdout();
    let read_write =
        rustix::fs::fcntl_getfl(&stdout).is_ok_and(|f| f & OFlags::RWMODE == OFlags::RDWR);
    let dev_null = rustix::fs::fstat(&stdout).is_ok_and(|st| {
        FileType::from_raw_mode(st.st_mode) == FileType::CharacterDevice
            && st.st_rdev == rustix::fs::makedev(1, 3)
    });
    STDOUT_CLOSED.store(read_write && dev_null, Ordering::Relaxed);
}

/// Writes `s` to standard output. A reader that went away (EPIPE) stops the run as SIGPIPE
/// would ([`signals::stop_as`](crate::signals::stop_as)); any other error is kept for
/// [`stdout_error`], and nothing more is written after it, as with cp's buffered stdout.
pub fn out(s: &str) {
    out_bytes(s.as_bytes());
}

/// [`out`] for bytes.
pub fn out_bytes(b: &[u8]) {
    if STDOUT_ERROR.load(Ordering::Relaxed) != 0 {
        return;
    }
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        stdout_failed(&std::io::Error::from_raw_os_error(
            rustix::io::Errno::BADF.raw_os_error(),
        ));
        return;
    }
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(b).and_then(|()| o.flush()) {
        stdout_failed(&e);
    }
}

/// Whether standard output was closed when the command started ([`watch_stdout`]).
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Records a failed write to standard output.
fn stdout_failed(e: &std::io::Error) {
    let errno = e
        .raw_os_error()
        .unwrap_or(rustix::io::Errno::IO.raw_os_error());
    if STDOUT_ERROR
        .compare_exchange(0, errno, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
        && errno == rustix::io::Errno::PIPE.raw_os_error()
    {
        crate::signals::stop_as(crate::signals::SIGPIPE);
    }
}

/// The error that writing standard output met, if any, after flushing what is left. A
/// reader that went away is not one: it stopped the run instead.
pub fn stdout_error() -> Option<std::io::Error> {
    if STDOUT_ERROR.load(Ordering::SeqCst) == 0 {
        if let Err(e) = std::io::stdout().lock().flush() {
            stdout_failed(&e);
        }
    }
    match STDOUT_ERROR.load(Ordering::SeqCst) {
        0 => None,
        e if e == rustix::io::Errno::PIPE.raw_os_error() => None,
        e => Some(std::io::Error::from_raw_os_error(e)),
    }
}

pub fn err_line(s: &str) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(s.as_bytes());
}

/// One JSON Lines object, its fields in the order given; names in the family's lossless
/// encoding ([`push_json_path`]).
#[derive(Debug, Default)]
pub struct Json(String);

impl Json {
    /// An object whose `type` is `kind`.
    pub fn new(kind: &str) -> Json {
        Json::default().with("type", kind)
    }

    fn key(&mut self, key: &str) {
        self.0.push(if self.0.is_empty() { '{' } else { ',' });
        push_json_str(&mut self.0, key);
        self.0.push(':');
    }

    /// Adds a field whose value is not a name.
    pub fn with(mut self, key: &str, value: impl Into<serde_json::Value>) -> Json {
        self.key(key);
        self.0.push_str(&value.into().to_string());
        self
    }

    /// Adds a name.
    pub fn path(mut self, key: &str, path: &Path) -> Json {
        self.key(key);
        push_json_path(&mut self.0, path);
        self
    }

    /// Adds a list of names.
    pub fn paths<P: AsRef<Path>>(mut self, key: &str, paths: &[P]) -> Json {
        self.key(key);
        self.0.push('[');
        for (i, p) in paths.iter().enumerate() {
            if i > 0 {
                self.0.push(',');
            }
            push_json_path(&mut self.0, p.as_ref());
        }
        self.0.push(']');
        self
    }

    /// The object as one line of text, with its newline.
    pub fn line(mut self) -> String {
        self.0.push_str("}\n");
        self.0
    }

    /// Prints it on standard output.
    pub fn print(self) {
        out(&self.line());
    }
}

/// The object of an engine failure: `{"type":"error","path","operation","message","errno"}`.
pub fn error_json(e: &mimeo::Error) -> Json {
    Json::new("error")
        .path("path", &e.path)
        .with("operation", e.op.name())
        .with("message", e.to_string())
        .with("errno", e.errno())
}

/// The start of a JSON object about one entry: `{"type":…,"src":…,"dst":…` (left open).
fn entry_object(kind: &str, src: &Path, dst: &Path) -> String {
    let mut line = String::from("{\"type\":");
    push_json_str(&mut line, kind);
    line.push_str(",\"src\":");
    push_json_path(&mut line, src);
    line.push_str(",\"dst\":");
    push_json_path(&mut line, dst);
    line
}

/// A name in JSON, losslessly: a string when it is UTF-8, else `{"hex":"…"}` with its bytes
/// in lower-case hexadecimal (`x\xff\ny` is `{"hex":"78ff0a79"}`), the encoding every command
/// of the family uses.
pub fn push_json_path(out: &mut String, p: &Path) {
    let bytes = p.as_os_str().as_bytes();
    match std::str::from_utf8(bytes) {
        Ok(s) => push_json_str(out, s),
        Err(_) => {
            out.push_str("{\"hex\":\"");
            for b in bytes {
                let _ = write!(out, "{b:02x}");
            }
            out.push_str("\"}");
        }
    }
}

/// `s` as a JSON string.
pub fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_names_are_lossless() {
        let json = |bytes: &[u8]| {
            let mut s = String::new();
            push_json_path(&mut s, Path::new(OsStr::from_bytes(bytes)));
            s
        };
        assert_eq!(json(b"x\xff\ny"), r#"{"hex":"78ff0a79"}"#);
        assert_eq!(json(br"x\xff\ny"), r#""x\\xff\\ny""#);
        assert_eq!(json("é\n".as_bytes()), r#""é\n""#);
    }

    #[test]
    fn json_strings_are_escaped() {
        let mut s = String::new();
        push_json_str(&mut s, "a\"b\\c\nd\u{1}");
        assert_eq!(s, "\"a\\\"b\\\\c\\nd\\u0001\"");
    }
}
