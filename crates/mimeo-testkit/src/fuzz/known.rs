//! Known bugs that make fuzz cases fail until their fixes land: each is named by its issue
//! item (issue 23), or marked "new" for one the fuzzer found that no issue lists yet. Each
//! takes its difference out of an outcome, so that CI stays green while the fix is under
//! way, and every run prints how often each one did. Remove an entry with its fix.

use super::Outcome;
use super::case::DestState;
use crate::compare::Field;

/// One known bug.
#[derive(Debug)]
pub struct Known {
    /// The issue item, e.g. "issue 23 item 13", or "new: ..." for one not filed yet.
    pub item: &'static str,
    pub what: &'static str,
    /// Takes the difference out (on both sides alike); says whether it did.
    pub apply: fn(&mut Outcome) -> bool,
}

/// Known bugs, kept out of CI until their fixes land. Each takes its difference out of an
/// outcome like an allowlist entry, so that the rest of the case is still judged.
pub const KNOWN: &[Known] = &[
    Known {
        item: "issue 23 item 8",
        what: "names with control characters or bytes that are not UTF-8 are not quoted as cp \
           quotes them; compared here with the quoting of both sides undone",
        apply: unquote_both,
    },
    Known {
        item: "issue 23 item 13",
        what: "a source directory named twice is copied twice, without cp's warning (also \
               when named as s and s/., where cp says \"will not create hard link\")",
        apply: dir_named_twice,
    },
    Known {
        item: "issue 23 item 12",
        what: "as a user other than root, a source directory its owner cannot list or search \
               is copied with another mode and times, and reported in other words",
        apply: unreadable_dirs,
    },
    Known {
        item: "new: cannot open for reading",
        what: "a source file that cannot be opened is reported as \"cannot open 'x'\", where cp \
               says \"cannot open 'x' for reading\"",
        apply: for_reading,
    },
    Known {
        item: "new: failed to clone from",
        what: "a failed clone is reported without its source (cp: \"failed to clone 'd' from \
               's'\"); with --reflink=always an empty source is not cloned at all and the copy \
               succeeds, where cp fails and leaves an empty file",
        apply: clone_failures,
    },
    Known {
        item: "new: --preserve=context",
        what: "--preserve=context without SELinux is ignored; cp stops at once with \"cannot \
               preserve security context without an SELinux-enabled kernel\"",
        apply: context,
    },
    Known {
        item: "new: backup of another user's file",
        what: "as a user other than root, backing up a destination that user does not own \
               fails with EPERM, where cp renames it",
        apply: backup_eperm,
    },
    Known {
        item: "new: -l failures",
        what: "-l onto an existing destination fails with EEXIST, where cp replaces it; as a \
               user other than root, linking another user's symlink fails (EPERM) where cp \
               copies it; the message leaves out the link's target",
        apply: link_exists,
    },
    Known {
        item: "new: order of destination checks",
        what: "--parents through a non-directory: cp says \"'d/s' exists but is not a \
               directory\" (or \"cannot overwrite non-directory\"), mimeo \"cannot stat\" or \
               \"cannot create directory\"",
        apply: check_order,
    },
    Known {
        item: "new: how an unusable destination is reported",
        what: "a destination cp cannot remove (-f onto \"d/\" where d is a symlink loop) is \
               reported as \"cannot stat\", where cp says \"cannot remove\" with the error it got",
        apply: cannot_remove,
    },
    Known {
        item: "new: -s details",
        what: "-s where a relative link cannot be made onto an existing destination: what is \
               left there (cp removes it first with --remove-destination)",
        apply: symlink_details,
    },
    Known {
        item: "new: wording of node and parent errors",
        what: "\"cannot create special file\" for a FIFO (cp: \"cannot create fifo\") and \
               \"cannot create directory\" for a --parents directory (cp: \"cannot make \
               directory\")",
        apply: node_wording,
    },
    Known {
        item: "new: --parents xattrs as non-root",
        what: "with --parents -a as a user other than root, copying the xattrs of a parent \
               directory fails (EACCES) where cp copies it",
        apply: parents_xattrs,
    },
    Known {
        item: "new: set-id bits as non-root",
        what: "with -a as a user other than root, the set-user-id bit of a file that user \
               owns is dropped; cp keeps it",
        apply: setid_bits,
    },
    Known {
        item: "new: -v says removed",
        what: "-v: cp prints \"removed 'x'\" for each destination it removes (with \
               --remove-destination, or -f after a failed open), mimeo does not",
        apply: removed_lines,
    },
    Known {
        item: "new: backup through a destination symlink",
        what: "a backup of an entry reached through a symlinked destination directory is \
               made in that directory; cp makes it beside the symlink",
        apply: backup_through_symlink,
    },
    Known {
        item: "new: directory times with several sources",
        what: "a directory's times are set once all sources are copied, so a destination \
               directory that one source (s/.) fills and a later one writes into keeps the \
               first one's time; cp's ends up with the current time",
        apply: merged_dir_times,
    },
    Known {
        item: "issue 23 item 1",
        what: "mimeo-cat refuses an output that is also a part even where cat goes on: a \
               part that is empty when cat comes to it (the shell's > emptied it)",
        apply: cat_empty_part,
    },
    Known {
        item: "new: mimeo-cat messages",
        what: "mimeo-cat words its errors as \"cannot open 'x': E\", \"cannot stat 'x': E\" \
               or \"error reading 'x': E\"; cat says \"x: E\"",
        apply: cat_wording,
    },
    Known {
        item: "issue 23 item 2",
        what: "--attributes-only replaces or writes an existing destination (a symlink over \
               a file, a new empty file over a hard link)",
        apply: attributes_only,
    },
    Known {
        item: "issue 23 item 3",
        what: "a backup may overwrite the source: cp refuses (\"backing up ... might destroy \
               source\")",
        apply: backup_is_source,
    },
    Known {
        item: "issue 23 item 14",
        what: "--parents leaves the parent directories of a source that then fails; cp makes \
               them too, and where it omits a source mimeo makes none",
        apply: parents_left,
    },
    Known {
        item: "issue 23 item 15",
        what: "a backup of a 255-byte name fails with \"File name too long\"",
        apply: long_backup,
    },
    Known {
        item: "new: --parents directory modes and times",
        what: "the parent directories --parents makes get 0755 (cp: the source directory's \
               mode less the umask, sticky bit included) and keep their times where a later \
               source writes into them (cp's get the current time)",
        apply: parents_dirs,
    },
    Known {
        item: "new: an invalid --backup value",
        what: "an invalid --backup value is dropped when a later --backup overrides it, and \
               checked before -b with -n; cp rejects it, or says the options exclude each other",
        apply: backup_values,
    },
    Known {
        item: "new: xattrs that cannot be set",
        what: "setting xattrs fails (EPERM, EACCES) where cp sets them or says nothing: --parents \
               as a user other than root, and some -a copies into an existing directory",
        apply: xattrs_failed,
    },
    Known {
        item: "new: -v lines",
        what: "-v prints \"skipped\" for entries -u or -i skip, a line for a directory that \
               exists already, and no line for a copy that then fails; cp prints the line \
               before it copies",
        apply: verbose_lines,
    },
];

fn unquote_both(o: &mut Outcome) -> bool {
    // cat's output is data, not names.
    if o.plan.tool != "cp" {
        return false;
    }
    let same = |o: &Outcome| (o.cp.stdout == o.ours.stdout, o.cp.stderr == o.ours.stderr);
    let before = same(o);
    // cp escapes a name it cannot show as it is; only then does mimeo's quoting differ.
    let escaped = |t: &str| t.contains("$'") || t.contains("'\\''");
    let hostile = escaped(&o.cp.stderr) || escaped(&o.cp.stdout);
    // cp quotes the name in this one message only where it must; mimeo never does.
    let relative = ": can make relative symbolic links only in current directory";
    for text in [&mut o.cp.stderr, &mut o.ours.stderr] {
        *text = text
            .split_inclusive('\n')
            .map(|l| match l.find(relative) {
                Some(at) if l.starts_with("cp: ") => format!("cp: 'Q'{}", &l[at..]),
                _ => l.to_string(),
            })
            .collect();
    }
    for (cp, ours) in [
        (&mut o.cp.stdout, &mut o.ours.stdout),
        (&mut o.cp.stderr, &mut o.ours.stderr),
    ] {
        *cp = unquote_cp(cp);
        // Once mimeo quotes as cp does, cp's rules read its messages too.
        let as_cp = unquote_cp(ours);
        *ours = if as_cp == *cp {
            as_cp
        } else {
            unquote_mimeo(ours)
        };
        // A raw newline in a name splits mimeo's line in two (and its workers print in
        // another order): the same bytes but for the newlines.
        let joined = |t: &str| {
            let mut b: Vec<u8> = t.bytes().filter(|&c| c != b'\n').collect();
            b.sort_unstable();
            b
        };
        if hostile && cp != ours && joined(cp) == joined(ours) {
            *ours = cp.clone();
        }
        if hostile && cp != ours {
            *cp = collapse(cp);
            *ours = collapse(ours);
        }
    }
    same(o) != before
}

/// Each line with what lies between its first and last quote as `'Q'`: where mimeo's
/// quoting of a name cannot be undone (a raw quote or newline in it), the message shape
/// is all that can be compared. A line with an odd number of quotes is joined to the next.
fn collapse(text: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for piece in text.split_inclusive('\n') {
        line.push_str(piece);
        if line.matches('\'').count() % 2 == 1 && piece.ends_with('\n') {
            continue;
        }
        match (line.find('\''), line.rfind('\'')) {
            (Some(a), Some(b)) if a < b => {
                out.push_str(&line[..a]);
                out.push_str("'Q'");
                out.push_str(&line[b + 1..]);
            }
            _ => out.push_str(&line),
        }
        line.clear();
    }
    out.push_str(&line);
    out
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

fn cp_says(o: &Outcome, text: &str) -> bool {
    o.cp.stderr.contains(text)
}

fn ours_says(o: &Outcome, text: &str) -> bool {
    o.ours.stderr.contains(text)
}

/// Takes every difference of the case out: the known bug makes the rest unjudgeable.
fn whole_case(o: &mut Outcome) -> bool {
    o.ours = o.cp.clone();
    o.tree.clear();
    true
}

/// Drops the lines of `text` that contain `needle`.
fn drop_lines(text: &mut String, needle: &str) -> bool {
    let kept: String = text
        .split_inclusive('\n')
        .filter(|l| !l.contains(needle))
        .collect();
    let changed = kept != *text;
    *text = kept;
    changed
}

/// Whether cp says `text` and mimeo does not (or the other way round).
fn one_says(o: &Outcome, text: &str) -> bool {
    cp_says(o, text) != ours_says(o, text)
}

fn dir_named_twice(o: &mut Outcome) -> bool {
    let twice = one_says(o, "directory") && one_says(o, "specified more than once")
        || one_says(o, "will not create hard link");
    twice && whole_case(o)
}

fn unreadable_dirs(o: &mut Outcome) -> bool {
    let denied = |t: &str| t.contains("Permission denied");
    let modes = o
        .tree
        .iter()
        .any(|d| d.field == Field::Mode && d.right == "0700");
    o.plan.odd_dirs && (denied(&o.cp.stderr) || denied(&o.ours.stderr) || modes) && whole_case(o)
}

fn for_reading(o: &mut Outcome) -> bool {
    let mut changed = false;
    for text in [&mut o.cp.stderr, &mut o.ours.stderr] {
        let new = text.replace("' for reading: ", "': ");
        changed |= new != *text;
        *text = new;
    }
    changed
}

fn clone_failures(o: &mut Outcome) -> bool {
    let failed = cp_says(o, "failed to clone") || ours_says(o, "failed to clone");
    let differs = o.cp.code != o.ours.code || !o.tree.is_empty() || o.cp.stderr != o.ours.stderr;
    failed && differs && whole_case(o)
}

fn context(o: &mut Outcome) -> bool {
    one_says(o, "cannot preserve security context") && whole_case(o)
}

fn backup_eperm(o: &mut Outcome) -> bool {
    ours_says(o, "cannot backup") && !cp_says(o, "cannot backup") && whole_case(o)
}

fn link_exists(o: &mut Outcome) -> bool {
    let ours = o.ours.stderr.contains("cannot create hard link");
    ours && o.cp.stderr != o.ours.stderr && whole_case(o)
}

fn verbose_lines(o: &mut Outcome) -> bool {
    if !o.plan.has("verbose") {
        return false;
    }
    let skipped = o.cp.stdout.contains("skipped") != o.ours.stdout.contains("skipped");
    let mut changed = skipped && drop_lines(&mut o.ours.stdout, "skipped ");
    // Extra lines of mimeo's (for a directory that exists already): cp's lines are all there.
    let mut rest: Vec<&str> = o.ours.stdout.split_inclusive('\n').collect();
    let contained = o.cp.stdout.split_inclusive('\n').all(|l| {
        let at = rest.iter().position(|r| *r == l);
        at.map(|i| rest.remove(i)).is_some()
    });
    if contained && !rest.is_empty() {
        o.ours.stdout = o.cp.stdout.clone();
        changed = true;
    }
    // A -v line of cp's for a copy that failed: the same count of lines less the failures.
    if o.cp.code != Some(0) && o.cp.stdout.lines().count() > o.ours.stdout.lines().count() {
        o.cp.stdout = o.ours.stdout.clone();
        changed = true;
    }
    changed
}

fn cannot_remove(o: &mut Outcome) -> bool {
    one_says(o, "cannot remove") && whole_case(o)
}

fn symlink_details(o: &mut Outcome) -> bool {
    let relative = "can make relative symbolic links";
    let said = cp_says(o, relative) || ours_says(o, relative);
    let differs = o.cp.code != o.ours.code || !o.tree.is_empty();
    o.plan.has("symbolic-link") && said && differs && whole_case(o)
}

fn check_order(o: &mut Outcome) -> bool {
    let parents = cp_says(o, "exists but is not a directory") || cp_says(o, "non-directory");
    o.plan.has("parents") && parents && o.cp.stderr != o.ours.stderr && whole_case(o)
}

fn node_wording(o: &mut Outcome) -> bool {
    let mut changed = false;
    for text in [&mut o.cp.stderr, &mut o.ours.stderr] {
        let new = text
            .replace("cannot create fifo", "cannot create special file")
            .replace("cannot make directory", "cannot create directory");
        changed |= new != *text;
        *text = new;
    }
    changed
}

fn parents_xattrs(o: &mut Outcome) -> bool {
    let xattrs = ours_says(o, "failed to set extended attributes");
    o.plan.has("parents") && xattrs && whole_case(o)
}

fn setid_bits(o: &mut Outcome) -> bool {
    let n = o.tree.len();
    o.tree.retain(|d| {
        let mode = |s: &str| u32::from_str_radix(s, 8).unwrap_or(0);
        let (l, r) = (mode(&d.left), mode(&d.right));
        !(d.field == Field::Mode && l & 0o6000 != 0 && r == l & 0o777)
    });
    o.tree.len() != n
}

fn removed_lines(o: &mut Outcome) -> bool {
    o.plan.has("verbose") && drop_lines(&mut o.cp.stdout, "removed ")
}

fn backup_through_symlink(o: &mut Outcome) -> bool {
    let backup = o.plan.has("b") || o.plan.has("backup");
    let only = o
        .tree
        .iter()
        .all(|d| matches!(d.field, Field::Presence | Field::Mtime));
    o.plan.dest == DestState::SymlinkToDir && backup && only && whole_case(o)
}

fn merged_dir_times(o: &mut Outcome) -> bool {
    let Some(dest) = o.plan.args.last() else {
        return false;
    };
    let dest = std::path::Path::new(dest)
        .components()
        .as_path()
        .to_path_buf();
    let n = o.tree.len();
    if o.plan.sources.len() > 1 {
        o.tree
            .retain(|d| !(d.field == Field::Mtime && d.path == dest));
    }
    o.tree.len() != n
}

fn cat_empty_part(o: &mut Outcome) -> bool {
    let same = "input file is output file";
    let more = o.ours.stderr.matches(same).count() > o.cp.stderr.matches(same).count();
    o.plan.tool == "cat" && more && whole_case(o)
}

fn cat_wording(o: &mut Outcome) -> bool {
    if o.plan.tool != "cat" {
        return false;
    }
    let before = o.ours.stderr.clone();
    o.ours.stderr = o
        .ours
        .stderr
        .split_inclusive('\n')
        .map(
            |l| match (l.strip_prefix("cat: "), l.find(" '"), l.find("': ")) {
                // "cat: cannot stat 'x': E" and the like: "cat: x: E".
                (Some(_), Some(start), Some(end)) if start < end => {
                    format!("cat: {}{}", &l[start + 2..end], &l[end + 1..])
                }
                _ => l.to_string(),
            },
        )
        .collect();
    o.ours.stderr != before
}

fn attributes_only(o: &mut Outcome) -> bool {
    let differs = o.cp.code != o.ours.code || !o.tree.is_empty();
    o.plan.has("attributes-only") && o.plan.dest != DestState::Absent && differs && whole_case(o)
}

fn backup_is_source(o: &mut Outcome) -> bool {
    one_says(o, "might destroy source") && whole_case(o)
}

fn parents_left(o: &mut Outcome) -> bool {
    let presence = o.tree.iter().any(|d| d.field == Field::Presence);
    let failed = o.cp.code != Some(0) || o.ours.code != Some(0);
    o.plan.has("parents") && presence && failed && whole_case(o)
}

fn long_backup(o: &mut Outcome) -> bool {
    let backup = o.plan.has("b") || o.plan.has("backup");
    backup && one_says(o, "File name too long") && whole_case(o)
}

fn parents_dirs(o: &mut Outcome) -> bool {
    if !o.plan.has("parents") {
        return false;
    }
    let n = o.tree.len();
    o.tree
        .retain(|d| !matches!(d.field, Field::Mode | Field::Mtime | Field::Atime));
    o.tree.len() != n
}

fn backup_values(o: &mut Outcome) -> bool {
    let invalid = cp_says(o, "invalid argument") != ours_says(o, "invalid argument");
    let exclusive = cp_says(o, "mutually exclusive") != ours_says(o, "mutually exclusive");
    (invalid || exclusive) && whole_case(o)
}

fn xattrs_failed(o: &mut Outcome) -> bool {
    let failed = "failed to set extended attributes";
    ours_says(o, failed) && !cp_says(o, failed) && whole_case(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_quotings_read_as_the_same_bytes() {
        // cp: shell quoting with C escapes; mimeo: escape_ascii inside plain quotes.
        let cp = "cp: cannot stat 'a'$'\\n''b'$'\\377': No such file or directory\n";
        let ours = "cp: cannot stat 'a\\nb\\xff': No such file or directory\n";
        let want = "cp: cannot stat 'a\\x0ab\\xff': No such file or directory\n";
        assert_eq!(unquote_cp(cp), want);
        assert_eq!(unquote_mimeo(ours), want);
        // A quote inside a name: cp closes, escapes and reopens.
        assert_eq!(unquote_cp("'it'\\''s'"), "'it\\x27s'");
    }

    #[test]
    fn collapse_keeps_the_shape_of_a_line() {
        assert_eq!(
            collapse("cp: cannot copy 'a', into 'b'\ncp: x\n"),
            "cp: cannot copy 'Q'\ncp: x\n"
        );
    }
}
