//! Rendering engine events: cp-style messages on stderr, `-v` lines, or JSON Lines.

use mimeo::{Event, Observer, Summary};
use std::ffi::OsStr;
use std::io::Write;
use std::path::Path;
use std::sync::OnceLock;

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

/// Prints `PROG: message` on stderr.
pub fn error(message: &str) {
    err_line(&format!("{}: {message}\n", prog()));
}

/// Prints a usage error as cp does: `PROG: message`, then where to find help.
pub fn usage_error(message: &str) {
    let prog = prog();
    err_line(&format!(
        "{prog}: {message}\nTry '{prog} --help' for more information.\n"
    ));
}

/// Prints events as they come from the workers.
#[derive(Debug)]
pub struct Printer {
    pub verbose: bool,
    /// `--debug`: after each file's `-v` line, how it was copied.
    pub debug: bool,
    pub json: bool,
    /// `-f`: how `-i` words its question about a file it may not write.
    pub force: bool,
}

impl Observer for Printer {
    fn event(&self, event: Event) {
        match &event {
            Event::Failed(err) => {
                if self.json {
                    let mut line = String::from("{\"type\":\"error\",\"path\":");
                    push_json_path(&mut line, &err.path);
                    line.push_str(",\"operation\":");
                    push_json_str(&mut line, err.op.name());
                    line.push_str(",\"message\":");
                    push_json_str(&mut line, &err.to_string());
                    line.push_str(",\"errno\":");
                    match err.errno() {
                        Some(n) => line.push_str(&n.to_string()),
                        None => line.push_str("null"),
                    }
                    line.push_str("}\n");
                    out(&line);
                }
                error(&err.to_string());
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
                    let mut line = format!("{} -> {}\n", quote(src), quote(dst));
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
    fn confirm_overwrite(&self, _src: &Path, dst: &Path) -> bool {
        let question = match unwritable_mode(dst) {
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

/// The permission bits of `dst` when it is a regular file this process (not root) may not
/// write.
fn unwritable_mode(dst: &Path) -> Option<u32> {
    use rustix::fs::{Access, AtFlags, CWD};
    if rustix::process::geteuid().is_root() {
        return None;
    }
    let m = std::fs::symlink_metadata(dst).ok()?;
    let writable = rustix::fs::accessat(CWD, dst, Access::WRITE_OK, AtFlags::EACCESS).is_ok();
    (m.is_file() && !writable)
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

fn quote(p: &Path) -> String {
    format!("'{}'", display(p))
}

/// A path as text for messages; bytes that are not UTF-8 are shown escaped.
pub fn display(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => bytes.escape_ascii().to_string(),
    }
}

pub fn out(s: &str) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(s.as_bytes());
}

pub fn err_line(s: &str) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(s.as_bytes());
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

fn push_json_path(out: &mut String, p: &Path) {
    push_json_str(out, &display(p));
}

fn push_json_str(out: &mut String, s: &str) {
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
    fn json_strings_are_escaped() {
        let mut s = String::new();
        push_json_str(&mut s, "a\"b\\c\nd\u{1}");
        assert_eq!(s, "\"a\\\"b\\\\c\\nd\\u0001\"");
    }
}
