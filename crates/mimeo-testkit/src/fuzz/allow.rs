//! The deliberate differences between mimeo (called as `cp`) and GNU cp 9.1: the ONE place
//! where the fuzzers tolerate a difference. Each entry names the difference, says why it
//! is deliberate and where the documentation says so; `apply` takes the difference out of
//! an outcome (on both sides alike) and says whether it did. Anything not taken out here
//! fails the case.
//!
//! [`KNOWN`] is different: known bugs, listed by their issue item, that are being fixed.
//! They are temporary, and counted and printed in every run.

use std::path::Path;

use super::Outcome;
use super::case::FIXED_TIME;
use crate::compare::Field;

/// One deliberate difference.
#[derive(Debug)]
pub struct Allowed {
    pub name: &'static str,
    pub reason: &'static str,
    /// Where the user reads about it.
    pub docs: &'static str,
    pub apply: fn(&mut Outcome) -> bool,
}

/// One known bug that makes cases fail until it is fixed.
#[derive(Debug)]
pub struct Known {
    /// The issue item, e.g. "issue 23 item 13".
    pub item: &'static str,
    pub what: &'static str,
    pub apply: fn(&mut Outcome) -> bool,
}

const DOCS: &str = "docs/cp.md, Differences from cp";

/// The allowlist.
pub const ALLOWLIST: &[Allowed] = &[
    Allowed {
        name: "usage-exit-2",
        reason: "a wrong command line exits 2, so scripts can tell it from a failed copy",
        docs: "docs/cp.md, Differences from cp: \"Exit 2 for usage errors\"",
        apply: usage_exit,
    },
    Allowed {
        name: "verbose-method",
        reason: "-v names how each file was copied (clone, offload, stream) and not the backup",
        docs: "docs/cp.md, Differences from cp: \"-v shows how each file was copied\"",
        apply: verbose_method,
    },
    Allowed {
        name: "message-order",
        reason: "workers copy in parallel, so lines come in another order; the lines are the same",
        docs: DOCS,
        apply: message_order,
    },
    Allowed {
        name: "symlink-destination-replaced",
        reason: "a destination symlink is replaced by the copy, never written through (also \
                 a dangling one, which cp refuses)",
        docs: "docs/cp.md, Differences from cp: \"A destination symlink is replaced, never \
               written through\"",
        apply: symlink_replaced,
    },
    Allowed {
        name: "replaced-file-times",
        reason: "an existing file is replaced by a new one (atomic rename): its directory's \
                 mtime and its own atime are new, where cp wrote into the old file",
        docs: "docs/cp.md, Differences from cp: \"An existing file is replaced atomically\"",
        apply: replaced_times,
    },
    Allowed {
        name: "help-and-version",
        reason: "--help and --version describe mimeo",
        docs: "docs/cp.md, Differences from cp (the help text is mimeo's own)",
        apply: help_text,
    },
];

/// Known bugs, kept out of CI until their fixes land. Each takes its difference out of an
/// outcome like an allowlist entry, so that the rest of the case is still judged.
pub const KNOWN: &[Known] = &[Known {
    item: "issue 23 item 8",
    what: "names with control characters or bytes that are not UTF-8 are not quoted as cp \
           quotes them; compared here with the quoting of both sides undone",
    apply: unquote_both,
}];

fn unquote_both(o: &mut Outcome) -> bool {
    let same = |o: &Outcome| (o.cp.stdout == o.ours.stdout, o.cp.stderr == o.ours.stderr);
    let before = same(o);
    for text in [&mut o.cp.stdout, &mut o.cp.stderr] {
        *text = unquote_cp(text);
    }
    for text in [&mut o.ours.stdout, &mut o.ours.stderr] {
        *text = unquote_mimeo(text);
    }
    same(o) != before
}

/// `text` with cp's shell quoting (`'...'`, `$'...'` with C escapes, `\\'`) replaced by
/// [`canonical`] quoting of the same bytes.
pub fn unquote_cp(text: &str) -> String {
    let mut out = String::new();
    let b = text.as_bytes();
    let mut i = 0;
    let mut run: Option<Vec<u8>> = None;
    while i < b.len() {
        let name = run.get_or_insert_with(Vec::new);
        match b[i] {
            b'\'' => {
                let end = b[i + 1..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map_or(b.len(), |p| i + 1 + p);
                name.extend_from_slice(&b[i + 1..end.min(b.len())]);
                i = end + 1;
            }
            b'$' if b.get(i + 1) == Some(&b'\'') => i = ansi(b, i + 2, name),
            b'\\' if b.get(i + 1) == Some(&b'\'') => {
                name.push(b'\'');
                i += 2;
            }
            c => {
                if let Some(name) = run.take().filter(|n| !n.is_empty()) {
                    out.push_str(&canonical(&name));
                }
                let len = utf8_len(c);
                out.push_str(&String::from_utf8_lossy(&b[i..(i + len).min(b.len())]));
                i += len;
            }
        }
    }
    if let Some(name) = run.filter(|n| !n.is_empty()) {
        out.push_str(&canonical(&name));
    }
    out
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xf0..=0xff => 4,
        0xe0..=0xef => 3,
        0xc0..=0xdf => 2,
        _ => 1,
    }
}

/// One quoting for both sides: printable ASCII as it is, anything else as `\xNN`.
pub fn canonical(name: &[u8]) -> String {
    let mut s = String::from("'");
    for &c in name {
        if (0x20..0x7f).contains(&c) && c != b'\'' && c != b'\\' {
            s.push(c as char);
        } else {
            s.push_str(&format!("\\x{c:02x}"));
        }
    }
    s.push('\'');
    s
}

/// Decodes a `$'...'` body from `i`; returns the index after its closing quote.
fn ansi(b: &[u8], mut i: usize, out: &mut Vec<u8>) -> usize {
    while i < b.len() && b[i] != b'\'' {
        if b[i] != b'\\' || i + 1 >= b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let c = b[i + 1];
        i += 2;
        match c {
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                while i < b.len() && (b'0'..=b'7').contains(&b[i]) && v < 0o40 {
                    v = v * 8 + u32::from(b[i] - b'0');
                    i += 1;
                }
                out.push(v as u8);
            }
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'e' | b'E' => out.push(0x1b),
            b'f' => out.push(12),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(11),
            other => out.push(other),
        }
    }
    i + 1
}

/// `text` with mimeo's quoting (`'...'` with `escape_ascii` escapes for names that are not
/// UTF-8) replaced by [`canonical`] quoting of the same bytes.
pub fn unquote_mimeo(text: &str) -> String {
    let mut out = String::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\'' {
            let len = utf8_len(b[i]);
            out.push_str(&String::from_utf8_lossy(&b[i..(i + len).min(b.len())]));
            i += len;
            continue;
        }
        let mut name = Vec::new();
        i += 1;
        while i < b.len() && b[i] != b'\'' {
            if b[i] == b'\\' && i + 1 < b.len() {
                i += 1;
                match b[i] {
                    b'n' => name.push(b'\n'),
                    b'r' => name.push(b'\r'),
                    b't' => name.push(b'\t'),
                    b'x' if i + 2 < b.len() => {
                        let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok();
                        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                            Some(v) => {
                                name.push(v);
                                i += 2;
                            }
                            None => name.extend_from_slice(b"\\x"),
                        }
                    }
                    c => name.push(c),
                }
            } else {
                name.push(b[i]);
            }
            i += 1;
        }
        i += 1;
        out.push_str(&canonical(&name));
    }
    out
}

fn usage_exit(o: &mut Outcome) -> bool {
    let usage = o.cp.stderr.contains("Try 'cp --help'");
    if usage && o.cp.code == Some(1) && o.ours.code == Some(2) {
        o.ours.code = Some(1);
        return true;
    }
    false
}

fn verbose_method(o: &mut Outcome) -> bool {
    let mut changed = false;
    for how in [" (clone)", " (offload)", " (stream)"] {
        if o.ours.stdout.contains(how) {
            o.ours.stdout = o.ours.stdout.replace(how, "");
            changed = true;
        }
    }
    let cut = strip_backup_note(&o.cp.stdout);
    changed |= cut != o.cp.stdout;
    o.cp.stdout = cut;
    changed
}

/// cp's `-v` line `'a' -> 'b' (backup: 'b~')` without the part in parentheses.
fn strip_backup_note(text: &str) -> String {
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        match line.find(" (backup: ") {
            Some(at) => {
                out.push_str(&line[..at]);
                if line.ends_with('\n') {
                    out.push('\n');
                }
            }
            None => out.push_str(line),
        }
    }
    out
}

fn message_order(o: &mut Outcome) -> bool {
    let same = |o: &Outcome| (o.cp.stdout == o.ours.stdout, o.cp.stderr == o.ours.stderr);
    let before = same(o);
    for text in [
        &mut o.cp.stdout,
        &mut o.cp.stderr,
        &mut o.ours.stdout,
        &mut o.ours.stderr,
    ] {
        *text = sorted_lines(text);
    }
    same(o) != before
}

fn sorted_lines(text: &str) -> String {
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    lines.sort_unstable();
    lines.concat()
}

fn help_text(o: &mut Outcome) -> bool {
    if o.plan.has("help") || o.plan.has("version") {
        let changed = o.cp.stdout != o.ours.stdout;
        o.cp.stdout.clear();
        o.ours.stdout.clear();
        return changed;
    }
    false
}

/// Where cp wrote through a symlink (it stays a symlink on cp's side, and its target
/// changed) and mimeo replaced it: the symlink, its target `t` or `f`, and cp's refusal of a
/// dangling one.
fn symlink_replaced(o: &mut Outcome) -> bool {
    let replaced = o
        .tree
        .iter()
        .any(|d| d.field == Field::Type && d.left == "symlink" && d.right == "file");
    if !replaced {
        return false;
    }
    o.tree.retain(|d| {
        let target = d.path == Path::new("t") || d.path == Path::new("f");
        let link = d.field == Field::Type && d.left == "symlink";
        !(link || target && d.field != Field::Presence)
    });
    let dangling = "not writing through dangling symlink";
    if o.cp.stderr.contains(dangling) {
        o.cp.stderr =
            o.cp.stderr
                .split_inclusive('\n')
                .filter(|l| !l.contains(dangling))
                .collect();
        if o.cp.stderr.is_empty() && o.cp.code == Some(1) {
            o.cp.code = o.ours.code;
        }
    }
    true
}

/// A time cp kept on a destination entry the case made (the fixed time) where mimeo's
/// replacement took one from the clock (before 2033: not a generated time).
fn replaced_times(o: &mut Outcome) -> bool {
    let fixed = format!("{FIXED_TIME}.000000000");
    let n = o.tree.len();
    o.tree.retain(|d| {
        let clock = d.right.as_str() > fixed.as_str() && d.right.as_str() < "2000000000";
        !(matches!(d.field, Field::Mtime | Field::Atime) && d.left == fixed && clock)
    });
    o.tree.len() != n
}
