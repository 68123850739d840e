//! The deliberate differences between mimeo (called as `cp`) and GNU cp 9.1: the ONE place
//! where the fuzzers tolerate a difference. Each entry names the difference, says why it
//! is deliberate and where the documentation says so; `apply` takes the difference out of
//! an outcome (on both sides alike) and says whether it did. Anything not taken out here
//! fails the case.
//!
//! Known bugs are not here: they are in [`super::known`], temporary, and counted in every run.

use std::path::{Path, PathBuf};

use super::Outcome;
use super::case::{DestState, FIXED_TIME};
use crate::compare::Field;

/// One deliberate difference.
#[derive(Debug)]
pub struct Allowed {
    pub name: &'static str,
    pub reason: &'static str,
    /// Where the user reads about it.
    pub docs: &'static str,
    pub apply: fn(&mut Outcome) -> bool,
    /// Applied only after the known bugs (which need the lines as printed).
    pub last: bool,
}

/// Where the order of lines from parallel workers is documented.
const DOCS: &str = "docs/cp.md, Differences from cp, \"`-v` lines come in completion order\"";

/// The allowlist.
pub const ALLOWLIST: &[Allowed] = &[
    Allowed {
        name: "symlink-to-a-member-met-first",
        reason: "with -s and --preserve=links the names of one file are hard links of one \
                 symlink, which points to the member each program met first: cp meets them \
                 in its directory order, which the case cannot fix; allowed only where both \
                 targets name one file on each side",
        docs: "docs/cp.md, Differences from cp, \"-v lines come in completion order\"",
        apply: member_met_first,
        last: false,
    },
    Allowed {
        name: "usage-exit-2",
        reason: "a wrong command line exits 2, so scripts can tell it from a failed copy \
                 (run as `cp`, 1 as cp's; this entry then applies to nothing)",
        docs: "docs/cp.md, Differences from cp, \"Exit 2 for usage errors\"",
        apply: usage_exit,
        last: false,
    },
    Allowed {
        name: "verbose-method",
        reason: "-v does not name the backup (and earlier versions named how each file was \
                 copied, now --debug's)",
        docs: DOCS,
        apply: verbose_method,
        last: false,
    },
    Allowed {
        name: "message-order",
        reason: "workers copy in parallel, so lines (and -i's questions about the entries of a \
                 tree) come in another order; the lines are the same",
        docs: DOCS,
        apply: message_order,
        last: true,
    },
    Allowed {
        name: "symlink-destination-replaced",
        reason: "a destination symlink is replaced by the copy, never written through (also \
                 a dangling one, which cp refuses); a later source of the same name is then \
                 refused a replacement without a write bit, as cp refuses such a file",
        docs: "docs/cp.md, Differences from cp, \"A destination symlink is replaced, never \
               written through\"",
        apply: symlink_replaced,
        last: false,
    },
    Allowed {
        name: "replaced-file-times",
        reason: "an existing file is replaced by a new one (atomic rename): its directory's \
                 mtime and its own atime are new, where cp wrote into the old file",
        docs: "docs/cp.md, Differences from cp, \"An existing file is replaced atomically\"",
        apply: replaced_times,
        last: false,
    },
    // Before update-compares-sizes, which would take one of its pair (-u -b).
    Allowed {
        name: "parents-lookup-stops-cp",
        reason: "an absolute source named twice under --parents with simple backups: cp 9.1 \
                 looks for its first copy under the target-relative name from the working \
                 directory, fails, and ends the whole run there (\"cp: DIR: No such file or \
                 directory\"); mimeo says the same and goes on with the later sources",
        docs: "docs/cp.md, cp 9.1 where later releases differ",
        apply: later_sources_after_a_stop,
        last: true,
    },
    Allowed {
        name: "simple-backup-in-place",
        reason: "cp 9.1 puts a simple backup (NAME~) of a file it copies into another \
                 directory in the working directory instead (a bug of 9.1, which numbered \
                 backups do not have; with --parents, at the destination's path below its \
                 target, so a source directory's: `./s/x~` for `d/s/x`); mimeo puts it beside \
                 the file it keeps and never changes a source (and where the copy then fails, \
                 cp cannot rename it back: \"cannot un-backup\"; so a name linked over its \
                 group's copy under --parents loses that copy, and later names of the group \
                 fail to link to it, where mimeo puts it back as cp does numbered backups; \
                 and a second failed clone onto a name backs up the empty file cp left at the \
                 first, where mimeo left nothing to back up, as each further one does, to the \
                 same backup name)",
        docs: "docs/cp.md, cp 9.1 where later releases differ",
        apply: simple_backup_in_place,
        last: false,
    },
    Allowed {
        name: "update-compares-sizes",
        reason: "-u replaces a destination of another size even when it is not older",
        docs: "docs/cp.md, Differences from cp, \"`-u` also compares sizes\"",
        apply: update_sizes,
        last: false,
    },
    Allowed {
        name: "help-and-version",
        reason: "--help and --version describe mimeo",
        // Not listed there yet: mimeo's --help describes mimeo's own options.
        docs: "docs/cp.md, Usage (\"mimeo --help prints the same options\")",
        apply: help_text,
        last: false,
    },
    Allowed {
        name: "quote-overrun",
        reason: "cp cuts the closing quote of a later name in a message where its quoting \
                 outgrows the buffer sized for it (a name with a single quote that ends in an \
                 escaped byte); mimeo prints the name in full",
        docs: "docs/cp.md, Differences from cp, \"Names are quoted in full\"",
        apply: quote_overrun,
        last: false,
    },
    Allowed {
        name: "option-name-escaped",
        reason: "an unknown or ambiguous option is named with its control characters \
                 escaped ('--x\\033'), as cp names values and files; cp's getopt prints it raw \
                 to the terminal",
        docs: "docs/cp.md, Differences from cp, \"Names are quoted in full\"",
        apply: option_escaped,
        last: false,
    },
    Allowed {
        name: "parents-verbose-quoted",
        reason: "-v --parents prints the directories it makes unquoted, as cp does, but quotes \
                 a name with a control character or bytes that are not UTF-8, which cp prints \
                 raw",
        docs: "docs/cp.md, Differences from cp, \"Names are quoted in full\"",
        apply: parents_quoted,
        last: false,
    },
    Allowed {
        name: "hard-linked-destination-replaced",
        reason: "a hard-linked destination file is replaced by a new file (atomic rename), so \
                 its other links keep the old bytes and attributes, where cp writes into the \
                 file (and gives it the source's mode, owner and xattrs under -p)",
        docs: "docs/cp.md, Differences from cp, \"An existing file is replaced atomically\" \
               (Hard-linked destinations)",
        apply: linked_destination,
        last: false,
    },
    Allowed {
        name: "relative-symlink-backup",
        reason: "-s with --backup where a relative link cannot be made leaves the destination \
                 alone; cp renames it to its backup name and back, which gives its directory \
                 the current time (and -v says \"(unbackup)\")",
        docs: "docs/cp.md, Differences from cp, \"A refused relative `-s` link touches \
               nothing\"",
        apply: relative_symlink_backup,
        last: false,
    },
    Allowed {
        name: "into-itself-refused-first",
        reason: "a directory copied into itself is refused before anything is made; cp makes \
                 the copy and fills it in inode order until it meets the copy itself, so what \
                 it leaves (and reports on the way) depends on inode numbers, and a later \
                 source copied to the copy's name finds it there; below a directory the user \
                 may not list, cp never meets the copy; under -L (or -l -r, which follows \
                 as -L does, also to a copy named through a symlink in the source) both stop \
                 a source where they meet the copy, each after what its own order reached; \
                 a source named again after one cp failed to make is refused again, where \
                 cp tries again and may make it (an earlier source under -p gave the \
                 destination its mode)",
        docs: "docs/cp.md, Differences from cp, \"A copy into itself makes nothing\"",
        apply: into_itself,
        last: false,
    },
    Allowed {
        name: "copy-reached-through-a-symlink",
        reason: "under -L, a directory the run made that comes up again as a source (through a \
                 symlink leading above the destination) is refused; cp copies the copy into \
                 itself until the names outgrow PATH_MAX (and says what it meets on the way, \
                 in the source and in the copy, and its directory gets the current time); \
                 the directory holding cp's copy of the copy is a copy of a directory the run \
                 writes into (the destination, reached through the symlink), and holds what \
                 each had copied there when it listed it, in its own order (a directory mimeo \
                 had made but not filled then is copied with the owner-only mode it has then)",
        docs: "docs/cp.md, Differences from cp, \"A copy into itself makes nothing\"",
        apply: copy_reached_again,
        last: false,
    },
    Allowed {
        name: "told-copy-order",
        reason: "where both tell a copy reached again through a symlink under -L (or -l -r, \
                 which follows symlinks as -L does) as a copy into itself (the same line), \
                 each stops that source there: what each had copied into the destination \
                 before then, and the cyclic symbolic links it met on the way, follow its own \
                 order (cp's is by inode)",
        docs: "docs/cp.md, Differences from cp, \"A copy into itself makes nothing\"",
        apply: told_copy_order,
        last: false,
    },
    Allowed {
        name: "failed-copy-keeps-backups",
        reason: "under --backup, a copy that fails before it is made (a source that cannot be \
                 opened, a link or node that cannot be made) leaves the destination, its \
                 directory's times and an older backup alone; cp renames the destination to \
                 its backup name and back (-v says \"(unbackup)\"), losing an older simple \
                 backup",
        docs: "docs/cp.md, Differences from cp, \"A copy that fails before it is made touches \
               nothing\"",
        apply: failed_copy_keeps_backups,
        last: false,
    },
    Allowed {
        name: "failed-clone-leaves-nothing",
        reason: "a --reflink=always copy whose clone fails leaves no file (no half file that \
                 looks whole), where cp leaves an empty one; a file written in place is left \
                 empty with the sticky bit that marks it incomplete; the file a destination \
                 symlink leads to is left alone, where cp empties it (an empty one gets the \
                 time of that); an existing empty file is left as it was, where cp's \
                 truncation gives it a new mtime and clears its set-id bits, or where cp \
                 removes it first (--remove-destination, or -f where it cannot open it), a \
                 new empty file of the user running cp, with the source's mode and new times \
                 and without the old one's other names (a hard link of the source) or xattrs; \
                 a later copy onto that name in the run meets cp's empty file, which cp asks \
                 about under -i (and, unanswered, keeps), skips under -n or -u, or cannot \
                 back up under a name too long, where mimeo fails to clone again",
        docs: "docs/cp.md, Differences from cp, \"An existing file is replaced atomically\"",
        apply: failed_clone_leaves_nothing,
        last: false,
    },
    Allowed {
        name: "forced-onto-a-looping-slash",
        reason: "a directory copied under -f onto \"d/\" where d is a symlink loop is \
                 reported as \"cannot stat\" (ELOOP); cp goes on with a stat buffer its \
                 failed look left unset and asks it whether d is a directory, so what it does \
                 depends on leftover memory (a non-directory's copy never asks, and is cp's)",
        docs: "docs/cp.md, Differences from cp, \"`-f` onto \"d/\" where d is a symlink loop\"",
        apply: forced_onto_a_looping_slash,
        last: false,
    },
    Allowed {
        name: "foreign-set-id-dropped",
        reason: "with the mode kept but not the owner, a copy that belongs to someone other \
                 than the source's owner loses the set-id bits (and a file's sticky bit); cp \
                 keeps them, so root copying a user's set-uid program makes a set-uid root one",
        docs: "docs/cp.md, Differences from cp, \"Set-id bits of someone else's file\"",
        apply: foreign_set_id_dropped,
        last: false,
    },
    Allowed {
        name: "source-path-kept",
        reason: "under --remove-destination, a destination symlink that the source is reached \
                 through (cp --remove-destination lf lf) is kept: cp removes it and then fails \
                 to open the source; mimeo fails alike (same words, same status) without \
                 removing the way to a source, since a run never changes a source",
        docs: "docs/cp.md, Differences from cp, \"A copy that fails before it is made touches \
               nothing\"",
        apply: source_path_kept,
        last: false,
    },
    Allowed {
        name: "sticky-mark-not-kept",
        reason: "with the mode kept, a regular file copied onto one that has the sticky bit, \
                 from a source without it, does not keep the bit: on a regular file it is \
                 mimeo's mark of an incomplete copy, which no complete copy carries; cp sets \
                 the mode through the ACL, which leaves the old file's sticky bit",
        docs: "docs/cp.md, Differences from cp, \"An old file's sticky bit\"",
        apply: sticky_mark_not_kept,
        last: false,
    },
    Allowed {
        name: "own-copy-kept-in-its-group",
        reason: "under --preserve=links, a tree entry whose group's copy is this very entry \
                 (a file named on its own and again through its directory, cp -a s/f s/. d) \
                 keeps that copy; cp removes it where another link of the group has joined \
                 it already (which depends on its directory order), then fails to link to \
                 what it removed, losing the name the run had copied and the names of the \
                 group it reads afterwards; a name that is its group's copy in cp's order \
                 fails to link to itself and is lost (under backups: put back), where \
                 mimeo's order linked it to another name's copy (and kept the backup)",
        docs: "docs/cp.md, Differences from cp, \"A file named again through its directory \
               keeps its copy\"",
        apply: own_copy_kept,
        last: false,
    },
    Allowed {
        name: "update-skip-not-relinked",
        reason: "under -u, a destination skipped as up to date is left as it is under -l \
                 (whatever --preserve says), or without --preserve=links where it is a name \
                 linked onto itself; cp links \
                 it to the copy of an earlier name of the same source file (replacing the \
                 data -u was told to keep, or failing to link a name to itself)",
        docs: "docs/cp.md, Differences from cp, \"`-u` leaves a skipped file alone\"",
        apply: update_skip_not_relinked,
        last: false,
    },
];

/// The two paths of a "cannot create hard link 'X' to 'Y': WHY" line of cp's alone.
fn hard_link_pair(line: &str, why: &str) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let rest = line.strip_prefix("cp: cannot create hard link ")?;
    let rest = rest.strip_suffix(why)?.strip_suffix(": ")?;
    let mut at = 0;
    while let Some(i) = rest[at..].find(" to ") {
        let (x, y) = (&rest[..at + i], &rest[at + i + 4..]);
        if let (Some(x), Some(y)) = (unquote(x), unquote(y)) {
            return Some((x, y));
        }
        at += i + 4;
    }
    None
}

/// The names in cp's line "will not create hard link X to directory Y", unquoted. Y, the
/// line's last name, may have lost its closing quote (see `quote-overrun` in [`ALLOWLIST`]).
fn dir_link_pair(line: &str) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let rest = line.strip_prefix("cp: will not create hard link ")?;
    let unquote_last = |y: &str| unquote(y).or_else(|| unquote(&format!("{y}'")));
    let mut at = 0;
    while let Some(i) = rest[at..].find(" to directory ") {
        let (x, y) = (&rest[..at + i], &rest[at + i + 14..]);
        if let (Some(x), Some(y)) = (unquote(x), unquote_last(y)) {
            return Some((x, y));
        }
        at += i + 14;
    }
    None
}

/// Takes cp's lines that `pick` chooses (and mimeo does not print) out of its stderr; the
/// pairs they name. Where cp is left saying what mimeo says, its failure was those lines.
fn drop_link_lines(
    o: &mut Outcome,
    pick: &dyn Fn(&str) -> Option<(std::path::PathBuf, std::path::PathBuf)>,
) -> Vec<(std::path::PathBuf, std::path::PathBuf)> {
    let mut pairs = Vec::new();
    let ours = o.ours.stderr.clone();
    let kept: String =
        o.cp.stderr
            .split_inclusive('\n')
            .filter(|l| {
                let line = l.trim_end_matches('\n');
                match pick(line) {
                    Some(p) if !ours.lines().any(|m| m == line) => {
                        pairs.push(p);
                        false
                    }
                    _ => true,
                }
            })
            .collect();
    o.cp.stderr = kept;
    // What is left is what both said (warnings, which fail nothing), or nothing.
    if !pairs.is_empty() && o.cp.stderr == o.ours.stderr {
        o.cp.code = o.ours.code;
    }
    pairs
}

/// cp's failed link of a tree entry onto its own copy (`d/./f` to `d/f`), and the copy it
/// removed first: absent on cp's side, left out of cp's group, its directory's time.
fn own_copy_kept(o: &mut Outcome) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let same = |x: &Path, y: &Path| x.components().eq(y.components());
    let enoent = "No such file or directory";
    // The group's copy may be this very name as spelt (`--parents s s/y/f`: `d/s/y/f` to
    // itself), where cp's walk met it before the other names of its group: cp removes it and
    // fails to link to it; under backups it moved it to its backup and puts it back. Where
    // mimeo's walk copied another name of the group first, it links this one to that (and
    // keeps the backup cp undid).
    let backups = ["b", "backup", "suffix"].iter().any(|id| o.plan.has(id));
    let own = |l: &str| hard_link_pair(l, enoent).filter(|(x, y)| same(x, y));
    // Names of the group that cp reaches after it removed the copy fail to link to it too
    // (which of them do depends on its directory order): their lines follow the own one's.
    let mut removed: Vec<std::path::PathBuf> = Vec::new();
    let mut later: Vec<String> = Vec::new();
    for l in o.cp.stderr.lines() {
        if let Some((_, y)) = own(l) {
            removed.push(y);
        } else if hard_link_pair(l, enoent)
            .is_some_and(|(_, y)| removed.iter().any(|r| same(r, &y)))
        {
            later.push(l.to_string());
        }
    }
    let pick = |l: &str| {
        own(l).or_else(|| match later.iter().any(|m| m == l) {
            true => hard_link_pair(l, enoent),
            false => None,
        })
    };
    let pairs = drop_link_lines(o, &pick);
    if pairs.is_empty() {
        return false;
    }
    // The tree names the copy where it is: a destination symlink (d to td) is looked through.
    let (target, real) = (o.plan.target_path(), o.plan.target_dir());
    let in_tree = |y: &Path| match y.strip_prefix(&target) {
        Ok(rest) => real.join(rest),
        Err(_) => y.components().collect(),
    };
    // What cp lost: the copy it removed, and the later names that could not link to it.
    let lost: Vec<_> = pairs
        .iter()
        .map(|(x, y)| if same(x, y) { in_tree(y) } else { in_tree(x) })
        .collect();
    let named = |group: &str, p: &Path| group.contains(&format!("{p:?}"));
    o.tree.retain(|d| {
        !lost.iter().any(|y| {
            let y = y.as_path();
            let gone = d.path == *y && d.field == Field::Presence && d.left == "absent";
            let group = d.field == Field::HardLinks && named(&d.right, y) && !named(&d.left, y);
            let dir = d.field == Field::Mtime && y.parent() == Some(d.path.as_path());
            let backup = backups
                && d.field == Field::Presence
                && (d.left.as_str(), d.right.as_str()) == ("absent", "file")
                && d.path.parent() == y.parent()
                && d.path.as_os_str().len() > y.as_os_str().len()
                && d.path
                    .as_os_str()
                    .as_bytes()
                    .starts_with(y.as_os_str().as_bytes());
            gone || group || dir || backup
        })
    });
    true
}

/// cp's links of skipped -u destinations to an earlier name's copy: the lines where that
/// failed, and the groups cp made (with the data the linked names took on). Also under -l,
/// which links to sources, not to earlier copies: there cp's skip links to an earlier copy
/// all the same, and only a failed link to a name in the destination is one of those.
fn update_skip_not_relinked(o: &mut Outcome) -> bool {
    let hard = o.plan.has("link");
    // Under -l whatever --preserve says; otherwise only without links kept.
    let links = ["archive", "d"].iter().any(|id| o.plan.has(id));
    if !o.plan.has("update") || !hard && (links || preserves_links(&o.plan.args)) {
        return false;
    }
    let target = o.plan.target_path();
    let pick = |l: &str| {
        let rest = l.strip_prefix("cp: cannot create hard link ")?;
        let why = rest.rsplit_once(": ")?.1;
        hard_link_pair(l, why).filter(|(_, earlier)| !hard || earlier.starts_with(&target))
    };
    let lines = !drop_link_lines(o, &pick).is_empty();
    let named = |group: &str, p: &Path| group.contains(&format!("{p:?}"));
    let groups: Vec<_> = o
        .tree
        .iter()
        // Names of one file -u skipped are linked as cp links them, except under -l.
        .filter(|d| hard && d.field == Field::HardLinks && d.left.len() > d.right.len())
        .cloned()
        .collect();
    let data = |f: Field| {
        matches!(
            f,
            Field::Size
                | Field::Content
                | Field::Mtime
                | Field::Atime
                | Field::Blocks
                | Field::Mode
        )
    };
    // cp's -v says "removed 'd/b'" for each such link it made, also of a name onto itself
    // (`d/./f` onto `d/f`, from `cp -u -r s/f s/. d`), which changes nothing.
    let relinked = |p: &Path| {
        use std::os::unix::ffi::OsStrExt;
        let dot = p
            .as_os_str()
            .as_bytes()
            .split(|b| *b == b'/')
            .any(|c| c == b".");
        dot || groups.iter().any(|g| named(&g.left, p))
    };
    let ours = o.ours.stdout.clone();
    let kept: String =
        o.cp.stdout
            .split_inclusive('\n')
            .filter(|l| {
                let line = l.trim_end_matches('\n');
                let gone = line.strip_prefix("removed ").and_then(unquote);
                let ours_too = ours.lines().any(|m| m == line);
                ours_too || !gone.is_some_and(|p| relinked(&p))
            })
            .collect();
    let said = kept != o.cp.stdout;
    o.cp.stdout = kept;
    let n = o.tree.len();
    o.tree.retain(|d| {
        !groups
            .iter()
            .any(|g| d == g || data(d.field) && named(&g.left, &d.path))
    });
    lines || said || o.tree.len() != n
}

/// Whether a `--preserve` among `args` (in any abbreviation) names links or all: a bare one
/// keeps mode, ownership and timestamps only.
fn preserves_links(args: &[std::ffi::OsString]) -> bool {
    args.iter().any(|a| {
        let a = a.to_string_lossy();
        let Some((name, list)) = a.split_once('=') else {
            return false;
        };
        name.len() > "--p".len()
            && "--preserve".starts_with(name)
            && list.split(',').any(|v| v == "links" || v == "all")
    })
}

/// A symlink on mimeo's side only, where cp removed it under --remove-destination and then
/// failed to reach the source through it: the same words and status are required; the
/// directory it stays in keeps its time, and cp's `-v` line for the removal goes.
fn source_path_kept(o: &mut Outcome) -> bool {
    let failed = |l: &str| {
        l.ends_with("for reading: No such file or directory")
            || l.starts_with("cp: cannot create hard link ")
                && l.ends_with(": No such file or directory")
    };
    if !o.plan.has("remove-destination")
        || o.cp.code != o.ours.code
        || o.cp.stderr != o.ours.stderr
        || !o.cp.stderr.lines().any(failed)
    {
        return false;
    }
    let kept: Vec<std::path::PathBuf> = o
        .tree
        .iter()
        .filter(|d| d.field == Field::Presence && d.left == "absent" && d.right == "symlink")
        .map(|d| d.path.clone())
        .collect();
    if kept.is_empty() {
        return false;
    }
    let holds = |p: &Path| kept.iter().any(|k| k.parent() == Some(p));
    o.tree
        .retain(|d| !(kept.contains(&d.path) || d.field == Field::Mtime && holds(&d.path)));
    let ours = o.ours.stdout.clone();
    o.cp.stdout =
        o.cp.stdout
            .split_inclusive('\n')
            .filter(|l| !l.starts_with("removed ") || ours.contains(*l))
            .collect();
    true
}

/// A regular file whose mode differs by the sticky bit alone, which cp's has.
fn sticky_mark_not_kept(o: &mut Outcome) -> bool {
    let octal = |s: &str| u32::from_str_radix(s, 8).ok();
    let n = o.tree.len();
    let regular = &o.regular;
    o.tree.retain(|d| {
        let sticky = match (octal(&d.left), octal(&d.right)) {
            (Some(cp), Some(ours)) => ours & 0o1000 == 0 && cp == ours | 0o1000,
            _ => false,
        };
        !(d.field == Field::Mode && sticky && regular.contains(&d.path))
    });
    o.tree.len() != n
}

/// Set-id (and sticky) bits on cp's side only, where the owner may not have been kept: the
/// rest of the mode must still be the same.
fn foreign_set_id_dropped(o: &mut Outcome) -> bool {
    let unowned = o.plan.has("no-preserve")
        || (o.plan.has("preserve") && !o.plan.has("archive") && !o.plan.has("p"));
    if !unowned {
        return false;
    }
    let octal = |s: &str| u32::from_str_radix(s, 8).ok();
    let dropped = |d: &crate::compare::Difference| {
        let (Some(cp), Some(ours)) = (octal(&d.left), octal(&d.right)) else {
            return false;
        };
        let special = cp & 0o7000;
        d.field == Field::Mode && special != 0 && ours & 0o7000 == 0 && cp & 0o777 == ours
    };
    let n = o.tree.len();
    o.tree.retain(|d| !dropped(d));
    o.tree.len() != n
}

/// The directory times cp's rename to the backup name and back gave, and the older backup it
/// lost (absent on cp's side only), where both failed with the same words.
fn failed_copy_keeps_backups(o: &mut Outcome) -> bool {
    let backup = ["b", "backup", "suffix"].iter().any(|id| o.plan.has(id));
    if !backup || o.cp.code == Some(0) || o.cp.code != o.ours.code || o.cp.stderr != o.ours.stderr {
        return false;
    }
    let n = o.tree.len();
    o.tree.retain(|d| {
        let lost = d.field == Field::Presence && d.left == "absent";
        !(lost || d.field == Field::Mtime)
    });
    let unbackup = drop_unbackup(o);
    o.tree.len() != n || unbackup
}

/// Takes out cp's `-v` line for renaming a backup back after a failed copy ("'d~' -> 'd'
/// (unbackup)"): mimeo made no backup there, so it has none to rename back. Whether any
/// line went.
fn drop_unbackup(o: &mut Outcome) -> bool {
    let kept: String =
        o.cp.stdout
            .split_inclusive('\n')
            .filter(|l| !l.ends_with(" (unbackup)\n"))
            .collect();
    let dropped = kept != o.cp.stdout;
    o.cp.stdout = kept;
    dropped
}

/// cp's empty (or emptied) file where its clone failed, where mimeo's side has nothing or
/// the entry that was there; the same words and exit status are still required.
fn failed_clone_leaves_nothing(o: &mut Outcome) -> bool {
    let met_again = met_again(o);
    if !o.cp.stderr.contains("failed to clone") || o.cp.stderr != o.ours.stderr {
        return false;
    }
    // Where cp's side has a file that mimeo's lacks, or an empty one where mimeo kept what
    // was there.
    let emptied = |d: &crate::compare::Difference| match d.field {
        Field::Presence => d.left == "file" && d.right == "absent",
        Field::Type => d.left == "file",
        Field::Size => d.left == "0",
        _ => false,
    };
    // The file a destination symlink leads to (`f`, `t`), empty before: cp's truncation
    // through the symlink gave it the time of that, mimeo left it as it was.
    let fixed = format!("{FIXED_TIME}.000000000");
    let target = |d: &crate::compare::Difference| {
        let through = d.path == Path::new("f") || d.path == Path::new("t");
        through && d.field == Field::Mtime && d.right == fixed && d.left != fixed
    };
    let octal = |s: &str| u32::from_str_radix(s, 8).ok();
    let marked = |d: &crate::compare::Difference| match (octal(&d.left), octal(&d.right)) {
        (Some(cp), Some(ours)) => d.field == Field::Mode && cp & 0o1000 == 0 && ours == cp | 0o1000,
        _ => false,
    };
    let left: Vec<std::path::PathBuf> = o
        .tree
        .iter()
        .filter(|d| emptied(d))
        .map(|d| d.path.clone())
        .collect();
    // An existing file cp failed to clone onto, empty before: cp's truncation gave it a new
    // mtime and, as a write does, cleared its set-id bits; mimeo left it as it was.
    let cloned_onto: Vec<std::path::PathBuf> =
        o.cp.stderr
            .lines()
            .filter_map(|l| {
                l.strip_prefix("cp: failed to clone ")?
                    .rsplit_once(" from ")
            })
            .filter_map(|(dst, _)| unquote(dst))
            .collect();
    let secs = |t: &str| t.parse::<f64>().ok();
    let later = |a: &str, b: &str| matches!((secs(a), secs(b)), (Some(a), Some(b)) if a > b);
    let truncated = |d: &crate::compare::Difference| {
        let set_id_cleared = match (octal(&d.left), octal(&d.right)) {
            (Some(cp), Some(ours)) => cp != ours && cp == ours & !0o6000,
            _ => false,
        };
        cloned_onto.contains(&d.path)
            && (d.field == Field::Mtime && later(&d.left, &d.right)
                || d.field == Field::Mode && set_id_cleared)
    };
    // An existing empty file cp removed (--remove-destination, or -f where it could not
    // open it) and made anew before the clone failed: the new one has a new mtime, the
    // running user as its owner and the source's mode; mimeo kept the old one as it was.
    let removes = o.plan.has("remove-destination") || o.plan.has("force");
    let runner = |uid: &str| uid == "0" || uid == super::NOBODY.to_string();
    let foreign = |p: &Path| {
        let owner = |d: &&crate::compare::Difference| d.path == p && d.field == Field::Uid;
        o.tree.iter().filter(owner).any(|d| !runner(&d.left))
    };
    let renewed: Vec<PathBuf> = o
        .tree
        .iter()
        .filter(|d| removes && d.field == Field::Mtime && later(&d.left, &d.right))
        .filter(|d| cloned_onto.contains(&d.path) && o.regular.contains(&d.path))
        .filter(|d| !foreign(&d.path))
        .map(|d| d.path.clone())
        .collect();
    let made_anew = |d: &crate::compare::Difference| {
        let owner = matches!(d.field, Field::Uid | Field::Gid | Field::Mode);
        let times = matches!(d.field, Field::Mtime | Field::Atime);
        (owner || times) && renewed.contains(&d.path)
    };
    // The old file cp removed kept its other names (a hard link of the source) and its
    // xattrs, which cp's new empty file has none of: mimeo's name is still one of them.
    let unlinked = |d: &crate::compare::Difference| match d.field {
        Field::Xattr => d.left.ends_with("=absent") && renewed.contains(&d.path),
        Field::HardLinks => {
            let (cp, ours) = (group_members(&d.left), group_members(&d.right));
            renewed.iter().any(|p| {
                let rest: Vec<&PathBuf> = ours.iter().filter(|o| *o != p).collect();
                let alone = cp.len() == 1 && cp[0] == *p;
                let left_behind =
                    cp.len() == rest.len() && cp.iter().zip(&rest).all(|(a, b)| a == *b);
                ours.contains(p) && rest.len() + 1 == ours.len() && (alone || left_behind)
            })
        }
        _ => false,
    };
    // The directory cp's file was made in has the time of that.
    let holds = |p: &Path| left.iter().any(|l| l.parent() == Some(p));
    let n = o.tree.len();
    o.tree.retain(|d| {
        let kept = target(d) || marked(d) || truncated(d) || made_anew(d) || unlinked(d);
        !(left.contains(&d.path) || d.field == Field::Mtime && holds(&d.path) || kept)
    });
    o.tree.len() != n || met_again
}

/// A later copy onto a destination whose clone failed earlier in the run: cp meets the empty
/// file it left there, mimeo nothing, so mimeo fails to clone again where cp asks "overwrite
/// 'D'?" (-i, unanswered: cp keeps the file), fails to back it up under a name too long
/// ("cannot backup 'D': File name too long"), or says nothing (-n and -u skip the file). Where cp's lines are mimeo's with only those in
/// place of mimeo's second failed clones (in cp's order, or in any order where workers walk
/// trees: see message-order), mimeo's are taken as cp's. Says whether it did.
fn met_again(o: &mut Outcome) -> bool {
    let clone_dst = |l: &str| {
        let (dst, _) = l
            .strip_prefix("cp: failed to clone ")?
            .rsplit_once(" from ")?;
        Some((dst.to_string(), unquote(dst)?))
    };
    // The same file, named with or without `./` inside (`d/./f` from a source `s/.`).
    let same = |a: &Path, b: &Path| a.components().eq(b.components());
    let asks = o.plan.has("interactive");
    let backs_up = ["b", "backup", "suffix"].iter().any(|id| o.plan.has(id));
    let skips = o.plan.has("no-clobber") || o.plan.has("update");
    let trees = o.plan.has("recursive") || o.plan.has("archive");
    let mut theirs = pieces(&o.cp.stderr, true);
    let ours = pieces(&o.ours.stderr, true);
    // mimeo's lines that are cp's too; the rest are to be explained.
    let mut matched = vec![true; ours.len()];
    for (i, l) in ours.iter().enumerate() {
        match theirs.iter().position(|t| t == l) {
            Some(at) => drop(theirs.remove(at)),
            None => matched[i] = false,
        }
    }
    let failed: Vec<PathBuf> = ours
        .iter()
        .zip(&matched)
        .filter(|(_, m)| **m)
        .filter_map(|(l, _)| clone_dst(l).map(|(_, p)| p))
        .collect();
    let mut rewritten = String::new();
    for (l, m) in ours.iter().zip(&matched) {
        if *m {
            rewritten.push_str(l);
            continue;
        }
        let Some((quoted, _)) = clone_dst(l).filter(|(_, p)| failed.iter().any(|f| same(f, p)))
        else {
            return false;
        };
        let question = format!("cp: overwrite {quoted}? ");
        let backup = format!("cp: cannot backup {quoted}: File name too long\n");
        let cp_said = [(asks, question), (backs_up, backup)]
            .into_iter()
            .find_map(|(when, said)| theirs.iter().position(|t| when && *t == said));
        match cp_said {
            Some(at) => rewritten.push_str(theirs.remove(at)),
            // -n and -u skip cp's empty file without a word.
            None if skips => {}
            None => return false,
        }
    }
    let in_order = rewritten == o.cp.stderr;
    let reordered = trees && sorted_lines(&rewritten, true) == sorted_lines(&o.cp.stderr, true);
    if !theirs.is_empty() || matched.iter().all(|m| *m) || !(in_order || reordered) {
        return false;
    }
    o.ours.stderr = o.cp.stderr.clone();
    true
}

/// mimeo's "cannot stat 'd/': Too many levels of symbolic links" under -f, for a directory
/// copied onto "d/" where d (the destination, or an entry of the source tree) is a symlink
/// loop: whatever cp did instead is not judged (see the entry). Not where cp's outcome is a
/// non-directory's, which mimeo must match.
fn forced_onto_a_looping_slash(o: &mut Outcome) -> bool {
    const LOOPED: &str = ": Too many levels of symbolic links";
    // The loop is the case's destination, or an entry of the source tree named as one.
    let looping_dest = matches!(
        o.plan.dest,
        DestState::SymlinkLoop | DestState::InsideSource
    );
    let Some(quoted) = o.ours.stderr.lines().find_map(|l| {
        let q = l.strip_prefix("cp: cannot stat ")?.strip_suffix(LOOPED)?;
        q.ends_with("/'").then(|| q.to_string())
    }) else {
        return false;
    };
    if !looping_dest || !o.plan.has("force") {
        return false;
    }
    // What cp does for a non-directory there depends on nothing left unset, and mimeo does
    // it: its -v line for the destination, or its failure to make or remove the entry.
    let verbs = [
        "cannot create symbolic link",
        "cannot create hard link",
        "cannot create fifo",
        "cannot create special file",
        "cannot create regular file",
        "cannot remove",
    ];
    let non_directory =
        o.cp.stdout
            .lines()
            .any(|l| l.ends_with(&format!(" -> {quoted}")))
            || o.cp.stderr.lines().any(|l| {
                verbs
                    .iter()
                    .any(|v| l.starts_with(&format!("cp: {v} {quoted}")))
            });
    if non_directory {
        return false;
    }
    o.ours = o.cp.clone();
    o.tree.clear();
    true
}

/// cp's last line is the bare "DIR: No such file or directory" of its lookup of a made file's
/// directory, which ends cp's run, and mimeo's lines start with all of cp's: what mimeo did
/// after it (entries cp's side lacks, the times of the directories they went into, and
/// mimeo's later lines) goes.
fn later_sources_after_a_stop(o: &mut Outcome) -> bool {
    let backup = ["b", "backup", "suffix"].iter().any(|id| o.plan.has(id));
    if !o.plan.has("parents") || !backup || o.cp.code != Some(1) || o.ours.code != Some(1) {
        return false;
    }
    let Some(last) = o.cp.stderr.lines().last() else {
        return false;
    };
    let bare = last
        .strip_prefix("cp: ")
        .and_then(|l| l.strip_suffix(": No such file or directory"))
        .is_some_and(|dir| !dir.starts_with(['\'', '/']) && !dir.contains(" '"));
    if !bare || !o.ours.stderr.starts_with(&o.cp.stderr) {
        return false;
    }
    let later = |d: &crate::compare::Difference| match d.field {
        Field::Presence => d.left == "absent",
        Field::Mtime | Field::Atime => true,
        _ => false,
    };
    if !o.tree.iter().all(later) {
        return false;
    }
    o.tree.clear();
    o.ours.stderr = o.cp.stderr.clone();
    true
}

/// cp's backup in the working directory (present there on cp's side only) where mimeo's is
/// beside the file, in a directory below (present there on mimeo's side only), and the
/// working directory's time, which cp's rename into it changed; under --parents, cp's backup
/// is below the working directory at the destination's path below its target (in a source
/// directory `s` for `d/s/x`), and that directory's time goes with it. Where the copy then failed (a
/// relative `-s` link refused), cp looks for the backup beside the file to rename it back
/// ("cannot un-backup 'd/x': No such file or directory"): the destination stays moved into the
/// working directory, where mimeo left it in place; those lines go with the pairs.
fn simple_backup_in_place(o: &mut Outcome) -> bool {
    if !["b", "backup", "suffix"].iter().any(|id| o.plan.has(id)) {
        return false;
    }
    let lost = self_link_lost(o);
    let presence = |d: &crate::compare::Difference, cp: bool| {
        let (here, gone) = if cp {
            (&d.left, &d.right)
        } else {
            (&d.right, &d.left)
        };
        d.field == Field::Presence && gone == "absent" && here != "absent"
    };
    // cp names the backup as the destination below its target directory, from the working
    // directory: one name deep, or under --parents the source's path (`s/x~` for `d/s/x`).
    let parents = o.plan.has("parents");
    let mut pairs: Vec<(std::path::PathBuf, std::path::PathBuf)> = o
        .tree
        .iter()
        .filter(|d| presence(d, true) && (parents || d.path.components().count() == 1))
        .filter_map(|cwd| {
            let beside = o.tree.iter().find(|d| {
                let below = d.path.components().count() > cwd.path.components().count();
                presence(d, false) && below && d.path.ends_with(&cwd.path)
            })?;
            Some((cwd.path.clone(), beside.path.clone()))
        })
        .collect();
    // The directories below the working directory cp's renames went into (under --parents,
    // a source's, which mimeo never changes): their times.
    let renamed_into: Vec<PathBuf> = pairs
        .iter()
        .filter_map(|(cwd, _)| cwd.parent())
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .collect();
    pairs.extend(not_backed_up_again(o, &presence));
    if pairs.is_empty() {
        return lost;
    }
    let fixed = format!("{FIXED_TIME}.000000000");
    o.tree.retain(|d| {
        let pair = pairs.iter().any(|(a, b)| d.path == *a || d.path == *b);
        let cwd_time = d.path.as_os_str().is_empty() && d.field == Field::Mtime && d.right == fixed;
        let dir_time = d.field == Field::Mtime && renamed_into.contains(&d.path);
        !(pair || cwd_time || dir_time)
    });
    true
}

/// Under --parents, a name linked over its group's copy, which is that very name (`cp -a -b
/// --parents s/ s/x d`: "cannot create hard link 'd/s/x' to 'd/s/x'", as with numbered
/// backups, which mimeo's are like): cp 9.1 first moved the copy to its backup below the
/// working directory (`./s/x~`, in the source), so it cannot rename it back ("cannot
/// un-backup 'd/s/x'") and the copy is lost. Later names of the group then fail to link to
/// it, and a walk through that source directory copies the backup beside them (`td/ls/x~`
/// through `ls` to `s`). All of that goes: the lines mimeo does not print, the lost copy and
/// the later names (on mimeo's side only), the backups (on cp's side only), and the times of
/// the directories they are in. Nothing goes unless each part is there.
fn self_link_lost(o: &mut Outcome) -> bool {
    use crate::compare::Difference;
    let enoent = "No such file or directory";
    if !o.plan.has("parents") {
        return false;
    }
    let unbackup = |l: &str| {
        let rest = l.strip_prefix("cp: cannot un-backup ")?;
        unquote(rest.strip_suffix(enoent)?.strip_suffix(": ")?)
    };
    let onto_itself = |x: &Path| {
        let line = |l: &str| hard_link_pair(l, enoent).is_some_and(|(a, b)| a == x && b == x);
        o.cp.stderr.lines().any(line) && o.ours.stderr.lines().any(line)
    };
    let cp_only = |d: &Difference| d.field == Field::Presence && d.right == "absent";
    let ours_only = |d: &Difference| d.field == Field::Presence && d.left == "absent";
    let has = |p: &Path, side: &dyn Fn(&Difference) -> bool| {
        o.tree.iter().any(|d| side(d) && d.path == p)
    };
    let (target, real) = (o.plan.target_path(), o.plan.target_dir());
    let mut lines: Vec<String> = Vec::new();
    let mut gone: Vec<PathBuf> = Vec::new();
    for l in o.cp.stderr.lines() {
        let Some(x) = unbackup(l).filter(|x| onto_itself(x)) else {
            continue;
        };
        let Ok(rel) = x.strip_prefix(&target) else {
            return false;
        };
        let copy = real.join(rel);
        // cp's backup: the destination's path below the target, with the suffix.
        let base = rel.file_name().map_or(&[][..], |n| n.as_encoded_bytes());
        let backup = o.tree.iter().find(|d| {
            let name = d.path.file_name().map_or(&[][..], |n| n.as_encoded_bytes());
            let named = name.len() > base.len() && name.starts_with(base);
            cp_only(d) && named && d.path.parent() == rel.parent()
        });
        let Some(backup) = backup.map(|d| d.path.clone()) else {
            return false;
        };
        if !has(&copy, &ours_only) {
            return false;
        }
        lines.push(l.to_string());
        // The later names that failed to link to the lost copy, and their copies of the backup.
        for m in o.cp.stderr.lines() {
            let Some((z, _)) = hard_link_pair(m, enoent).filter(|(z, y)| *y == x && *z != x) else {
                continue;
            };
            let later = match z.strip_prefix(&target) {
                Ok(zrel) if !o.ours.stderr.lines().any(|n| n == m) => real.join(zrel),
                _ => return false,
            };
            if !has(&later, &ours_only) {
                return false;
            }
            let copied = later.with_file_name(backup.file_name().unwrap_or_default());
            if has(&copied, &cp_only) {
                gone.push(copied);
            }
            lines.push(m.to_string());
            gone.push(later);
        }
        gone.extend([copy, backup]);
    }
    if gone.is_empty() {
        return false;
    }
    o.cp.stderr =
        o.cp.stderr
            .split_inclusive('\n')
            .filter(|l| !lines.iter().any(|m| m == l.trim_end_matches('\n')))
            .collect();
    if o.cp.stderr == o.ours.stderr {
        o.cp.code = o.ours.code;
    }
    let dirs: Vec<&Path> = gone.iter().filter_map(|p| p.parent()).collect();
    o.tree.retain(|d| {
        let entry = d.field == Field::Presence && gone.contains(&d.path);
        let time = d.field == Field::Mtime && dirs.contains(&d.path.as_path());
        !(entry || time)
    });
    true
}

/// [`simple_backup_in_place`]'s destinations cp moved into the working directory and could
/// not rename back: each a backup there on cp's side only, and the destination whose name it
/// starts with, below, of the same type, on mimeo's side only; one for each name in cp's
/// "cannot un-backup" lines (a name backed up again by a later failed clone onto it once for
/// all of its lines), which are taken out. None unless all of them pair. Where cp's failed
/// copy was a clone, cp made the file before the clone failed (failed-clone-leaves-nothing):
/// the destination is then a regular file on cp's side where mimeo kept what was there; and
/// where nothing was there before, the file cp moved away is the one it left where an earlier
/// clone onto that name failed, so cp's side has a file there (the next failed clone's) where
/// mimeo's has nothing.
fn not_backed_up_again(
    o: &mut Outcome,
    presence: &dyn Fn(&crate::compare::Difference, bool) -> bool,
) -> Vec<(std::path::PathBuf, std::path::PathBuf)> {
    let unbackup = |l: &str| {
        l.starts_with("cp: cannot un-backup ") && l.ends_with(": No such file or directory\n")
    };
    let named: Vec<&str> =
        o.cp.stderr
            .lines()
            .filter_map(|l| {
                let rest = l.strip_prefix("cp: cannot un-backup ")?;
                rest.strip_suffix(": No such file or directory")
            })
            .collect();
    if named.is_empty() {
        return Vec::new();
    }
    let cloned = o.cp.stderr.contains("cp: failed to clone ");
    // A name cp backed up again (each later failed clone onto it moves the file the one
    // before left to the same backup name, over the last) pairs once for all its lines, and
    // only where as many clones onto it failed.
    let failed_clones = |quoted: &str| {
        let onto = |l: &&str| {
            l.strip_prefix("cp: failed to clone ")
                .and_then(|rest| rest.rsplit_once(" from "))
                .is_some_and(|(dst, _)| dst == quoted)
        };
        o.cp.stderr.lines().filter(onto).count()
    };
    let mut distinct = named.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let again = |q: &&str| {
        let lines = named.iter().filter(|n| *n == q).count();
        lines == 1 || failed_clones(q) >= lines
    };
    if !distinct.iter().all(again) {
        return Vec::new();
    }
    let failed = distinct.len();
    // How many of cp's clones onto `p` failed.
    let clones_onto = |p: &Path| {
        let onto = |l: &&str| {
            l.strip_prefix("cp: failed to clone ")
                .and_then(|rest| rest.rsplit_once(" from "))
                .and_then(|(dst, _)| unquote(dst))
                .is_some_and(|dst| dst == p)
        };
        o.cp.stderr.lines().filter(onto).count()
    };
    let moved: Vec<_> = o
        .tree
        .iter()
        .filter(|d| presence(d, true) && d.path.components().count() == 1)
        .filter_map(|cwd| {
            let name = cwd.path.file_name()?.as_encoded_bytes();
            let left = o.tree.iter().find(|d| {
                let below = d.path.components().count() > 1;
                let base = d.path.file_name().map(|n| n.as_encoded_bytes());
                let named = base.is_some_and(|b| name.len() > b.len() && name.starts_with(b));
                // The empty file cp made there before its clone failed.
                let made = d.field == Field::Type && d.left == "file" && cloned;
                let same = (presence(d, false) || made) && d.right == cwd.left;
                // Nothing there before: the empty file cp left where one clone failed is
                // the backup, the one it left where the next failed is the file there.
                let remade = presence(d, true) && d.left == "file" && cwd.left == "file";
                let remade = remade && clones_onto(&d.path) >= 2;
                below && named && (same || remade || made_over_a_file(o, d, &cwd.left, cloned))
            })?;
            Some((cwd.path.clone(), left.path.clone()))
        })
        .collect();
    if moved.len() != failed {
        return Vec::new();
    }
    o.cp.stderr =
        o.cp.stderr
            .split_inclusive('\n')
            .filter(|l| !unbackup(l))
            .collect();
    moved
}

/// Where the file cp moved away was itself a file and its clone failed: the empty file cp
/// made in its place differs from the one mimeo kept only in what a file holds (size, bytes,
/// mode, times), never in presence or type.
fn made_over_a_file(
    o: &Outcome,
    d: &crate::compare::Difference,
    moved: &str,
    cloned: bool,
) -> bool {
    let held = [
        Field::Size,
        Field::Content,
        Field::Mode,
        Field::Mtime,
        Field::Atime,
    ];
    // Anchored on the size: cp's file there is the empty one.
    let anchor = d.field == Field::Size && d.left == "0";
    let mut there = o.tree.iter().filter(|e| e.path == d.path);
    cloned && moved == "file" && anchor && there.all(|e| held.contains(&e.field))
}

/// A symlink target that names another member of the hard-link group its source is in (the
/// comparer marks those it checked, [`super::ONE_FILE`]).
fn member_met_first(o: &mut Outcome) -> bool {
    let n = o.tree.len();
    o.tree.retain(|d| {
        let checked = d.left == d.right && d.left.ends_with(super::ONE_FILE);
        !(d.field == Field::Target && checked)
    });
    o.tree.len() != n
}

/// Where both tell the same copy into itself under -L (or -l -r): the entries only one side
/// copied into the destination before it stopped, the times of the directories there, and
/// the cyclic symbolic links each met on the way go.
fn told_copy_order(o: &mut Outcome) -> bool {
    let no_follow = ["archive", "d", "no-dereference"]
        .iter()
        .any(|id| o.plan.has(id));
    let follows =
        o.plan.has("dereference") || o.plan.has("link") && o.plan.has("recursive") && !no_follow;
    let told = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.contains("cannot copy a directory, ") && l.contains(", into itself, "))
            .map(String::from)
            .collect()
    };
    let ours = told(&o.ours.stderr);
    if !follows || !told(&o.cp.stderr).iter().any(|l| ours.contains(l)) {
        return false;
    }
    let mut dests = vec![o.plan.target_dir()];
    dests.extend(o.target_leads.clone());
    let n = o.tree.len();
    o.tree.retain(|d| {
        let below = dests.iter().any(|t| d.path.starts_with(t) && d.path != *t);
        let at = dests.iter().any(|t| d.path.starts_with(t));
        let times = matches!(d.field, Field::Mtime | Field::Atime);
        !(below && d.field == Field::Presence || at && times)
    });
    let cyclic = |l: &&str| !l.contains("cannot copy cyclic symbolic link");
    let mut changed = o.tree.len() != n;
    for text in [&mut o.cp.stderr, &mut o.ours.stderr] {
        let kept: String = text.split_inclusive('\n').filter(cyclic).collect();
        changed |= kept != *text;
        *text = kept;
    }
    changed
}

/// cp's deeper tree and its "File name too long" where mimeo refused a directory it made:
/// what cp made beyond mimeo's tree, and the lines each side says about it, go.
fn copy_reached_again(o: &mut Outcome) -> bool {
    // Only mimeo's own refusals: one cp makes too (of a later source) stays to be judged.
    let refused = |l: &&str| {
        let into_itself = l.contains("cannot copy a directory, ") && l.contains("into itself");
        into_itself && !o.cp.stderr.lines().any(|c| c == *l)
    };
    let ours: Vec<String> = o
        .ours
        .stderr
        .lines()
        .filter(refused)
        .map(String::from)
        .collect();
    let too_long = |l: &&str| l.ends_with(": File name too long");
    if ours.is_empty() || !o.cp.stderr.lines().any(|l| too_long(&l)) {
        return false;
    }
    // A line dropped keeps the -i questions asked before it (which end without a newline).
    let keep = |text: &str, drop: &dyn Fn(&str) -> bool| -> String {
        text.split_inclusive('\n')
            .map(|l| {
                let (asked, said) = after_questions(l);
                if drop(said.trim_end_matches('\n')) {
                    asked
                } else {
                    l
                }
            })
            .collect()
    };
    o.cp.stderr = keep(&o.cp.stderr, &|l| too_long(&l));
    // What cp said on its way through the source it copied into itself (a file it may not
    // read, say), which mimeo refused as a whole.
    let refusals: Vec<(&str, &str)> = ours
        .iter()
        .filter_map(|l| l.split("cannot copy a directory, ").nth(1))
        .filter_map(|r| r.split_once(", into itself, "))
        .collect();
    let sources: Vec<String> = refusals
        .iter()
        .map(|(src, _)| src[..src.len().saturating_sub(1)].to_string())
        .collect();
    // And what it could not make in the copy (a device node a user may not make), named
    // below the copy: the copy's name without its closing quote, as a directory.
    let below: Vec<String> = refusals
        .iter()
        .map(|(_, dst)| {
            let open = &dst[..dst.len().saturating_sub(1)];
            if open.ends_with('/') {
                open.to_string()
            } else {
                format!("{open}/")
            }
        })
        .collect();
    // cp names an entry there unquoted where it needs no quotes ("cp: ls/ls/f: can make
    // relative symbolic links only in current directory").
    let bare: Vec<String> = sources
        .iter()
        .filter_map(|s| s.strip_prefix('\''))
        .filter(|s| !s.contains(['\'', '$']))
        .map(|s| format!("cp: {s}/"))
        .collect();
    let said = o.ours.stderr.clone();
    let on_the_way = |l: &str| {
        let named = sources.iter().chain(&below).any(|s| l.contains(s.as_str()))
            || bare.iter().any(|b| l.starts_with(b.as_str()));
        named && !said.contains(l)
    };
    o.cp.stderr = keep(&o.cp.stderr, &on_the_way);
    o.ours.stderr = keep(&o.ours.stderr, &|l| {
        ours.iter().any(|r| after_questions(r).1 == l)
    });
    // And the -v lines of what cp copied of it (the copy again, deeper each time).
    let lines: Vec<String> = o.ours.stdout.lines().map(String::from).collect();
    // cp quotes a name holding both a quote and a control character from an empty `''`
    // ("'''ls/a'\''b'$'\t'"): the same name.
    let copied = |l: &str| {
        let name = l.strip_prefix("''").unwrap_or(l);
        !lines.iter().any(|o| o == l) && sources.iter().any(|s| name.starts_with(s))
    };
    o.cp.stdout = keep(&o.cp.stdout, &copied);
    // Which path first meets a symlink loop depends on how far each went into the copy.
    let cyclic = |l: &str| l.contains("cannot copy cyclic symbolic link");
    o.cp.stderr = keep(&o.cp.stderr, &cyclic);
    o.ours.stderr = keep(&o.ours.stderr, &cyclic);
    // What cp made, and the times of the directories it made it in.
    let made: Vec<std::path::PathBuf> = o
        .tree
        .iter()
        .filter(|d| d.field == Field::Presence && d.right == "absent")
        .map(|d| d.path.clone())
        .collect();
    o.tree
        .retain(|d| !(d.field == Field::Presence && d.right == "absent"));
    o.tree
        .retain(|d| !(d.field == Field::Presence && d.left == "absent" && d.right == "directory"));
    // The directory that holds cp's copy of the copy is itself a copy of a directory the run
    // writes into (reached through the symlink): it holds what each had copied there when it
    // listed it, in its own order (cp's by inode), so mimeo may have copied more of it first.
    let holders: Vec<&Path> = made.iter().filter_map(|m| m.parent()).collect();
    o.tree.retain(|d| {
        let ours_only = d.field == Field::Presence && d.left == "absent";
        !(ours_only && d.path.parent().is_some_and(|p| holders.contains(&p)))
    });
    o.tree.retain(|d| {
        let times = matches!(d.field, Field::Mtime | Field::Atime);
        !(times && made.iter().any(|m| m.starts_with(&d.path) && m != &d.path))
    });
    // A directory the run had made but not yet filled when it was copied again (mimeo makes
    // a level's directories before it fills them; cp fills each as it makes it) has the
    // owner-only mode it is made with until it is filled: its copy keeps that.
    o.tree.retain(|d| {
        let unfilled = d.field == Field::Mode
            && octal(&d.left).is_some_and(|l| octal(&d.right) == Some(l & 0o700));
        !(unfilled && made.iter().any(|m| m.starts_with(&d.path) && m != &d.path))
    });
    true
}

/// A mode as the tree comparison prints it (`0755`).
fn octal(mode: &str) -> Option<u32> {
    u32::from_str_radix(mode, 8).ok()
}

/// A line of stderr split into the -i questions asked before its message (each ends in "? "
/// without a newline) and the message.
fn after_questions(line: &str) -> (&str, &str) {
    line.rfind("? cp: ")
        .map_or(("", line), |at| line.split_at(at + "? ".len()))
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
    // Workers walk trees in parallel: -i's questions about the entries of a tree come in
    // their order too. (Roots are taken in command-line order, so without -r questions and
    // messages stay in cp's.)
    let trees = o.plan.has("recursive") || o.plan.has("archive");
    for text in [
        &mut o.cp.stdout,
        &mut o.cp.stderr,
        &mut o.ours.stdout,
        &mut o.ours.stderr,
    ] {
        *text = sorted_lines(text, trees);
    }
    same(o) != before
}

/// cp's lines that are mimeo's but for one single quote cut (see [`ALLOWLIST`]) take
/// mimeo's.
fn quote_overrun(o: &mut Outcome) -> bool {
    let mut changed = false;
    for (cp, ours) in [
        (&mut o.cp.stdout, &o.ours.stdout),
        (&mut o.cp.stderr, &o.ours.stderr),
    ] {
        let theirs: Vec<&str> = ours.split_inclusive('\n').collect();
        let fixed: String = cp
            .split_inclusive('\n')
            .map(|l| match theirs.iter().find(|t| quote_cut(t, l)) {
                Some(t) if !theirs.contains(&l) => *t,
                _ => l,
            })
            .collect();
        changed |= fixed != *cp;
        *cp = fixed;
    }
    changed
}

/// Whether cp's line `l` is mimeo's `t` with one single quote cut, and in its place
/// whatever followed cp's buffer in memory (nothing when that was a NUL byte). Bytes in its
/// place are allowed only for the quote that closes a `$'..'` escape, where cp's buffer ends.
fn quote_cut(t: &str, l: &str) -> bool {
    let (t, l) = (t.as_bytes(), l.as_bytes());
    let closes_escape = |before: &[u8]| {
        before
            .iter()
            .rposition(|&c| c == b'\'')
            .is_some_and(|p| p > 0 && before[p - 1] == b'$')
    };
    (0..t.len()).any(|i| {
        let rest = &t[i + 1..];
        t[i] == b'\''
            && l.len() >= i + rest.len()
            && t[..i] == l[..i]
            && l.ends_with(rest)
            && (l.len() == i + rest.len() || closes_escape(&t[..i]))
    })
}

/// cp's raw `--parents` lines that hold a control character or bytes that are not UTF-8,
/// against as many quoted lines of mimeo's.
fn parents_quoted(o: &mut Outcome) -> bool {
    if !o.plan.has("parents") || !o.plan.has("verbose") {
        return false;
    }
    // Each quoted line of mimeo's that cp printed raw (a raw newline in a name splits cp's
    // line in two, so the raw text is looked for in the whole output).
    let mut changed = false;
    let mut kept_ours = String::new();
    for line in o.ours.stdout.clone().split_inclusive('\n') {
        let quoted = line.contains("$'") && !o.cp.stdout.split_inclusive('\n').any(|l| l == line);
        let raw = quoted.then(|| raw_verbose_line(line)).flatten();
        match raw.and_then(|r| o.cp.stdout.find(&r).map(|at| (at, r.len()))) {
            Some((at, len)) => {
                o.cp.stdout.replace_range(at..at + len, "");
                changed = true;
            }
            None => kept_ours.push_str(line),
        }
    }
    o.ours.stdout = kept_ours;
    changed
}

/// mimeo's line naming an option cp's getopt printed raw: the same line but for the quoted
/// option, which has no control character in mimeo's. It takes cp's.
fn option_escaped(o: &mut Outcome) -> bool {
    const GETOPT: [&str; 3] = [
        "cp: unrecognized option '",
        "cp: invalid option -- '",
        "cp: option '",
    ];
    let raw = |l: &str| l.trim_end_matches('\n').contains(char::is_control);
    let theirs: Vec<&str> =
        o.cp.stderr
            .split_inclusive('\n')
            .filter(|l| raw(l) && GETOPT.iter().any(|g| l.starts_with(g)))
            .collect();
    let mut changed = false;
    let fixed: String = o
        .ours
        .stderr
        .split_inclusive('\n')
        .map(|l| {
            let same_frame = |t: &&&str| {
                let (Some(a), Some(b)) = (t.find('\''), l.find('\'')) else {
                    return false;
                };
                let (Some(y), Some(z)) = (t.rfind('\''), l.rfind('\'')) else {
                    return false;
                };
                t[..a] == l[..b] && t[y..] == l[z..]
            };
            match theirs.iter().find(same_frame) {
                Some(t) if !raw(l) => {
                    changed = true;
                    *t
                }
                _ => l,
            }
        })
        .collect();
    o.ours.stderr = fixed;
    changed
}

/// cp's unquoted `-v` line (`a -> d/a`, bytes that are not UTF-8 as the output reads them)
/// for mimeo's quoted one (`'a'$'\n' -> 'd/a'$'\n'`).
fn raw_verbose_line(line: &str) -> Option<String> {
    let (src, rest) = shell_word(line.strip_suffix('\n')?)?;
    let (dst, rest) = shell_word(rest.strip_prefix(" -> ")?)?;
    if !rest.is_empty() {
        return None;
    }
    let mut raw = src;
    raw.extend_from_slice(b" -> ");
    raw.extend_from_slice(&dst);
    raw.push(b'\n');
    Some(String::from_utf8_lossy(&raw).into_owned())
}

/// The bytes of one word as cp's shell-escape quoting writes it ('..', $'..' with C escapes,
/// \' and plain characters), up to a space outside quotes; and what follows it.
fn shell_word(text: &str) -> Option<(Vec<u8>, &str)> {
    let (mut out, b) = (Vec::new(), text.as_bytes());
    let mut i = 0;
    while i < b.len() && b[i] != b' ' {
        if b[i..].starts_with(b"$'") {
            i += 2;
            while *b.get(i)? != b'\'' {
                if b[i] != b'\\' {
                    out.push(b[i]);
                    i += 1;
                    continue;
                }
                let c = *b.get(i + 1)?;
                i += 2;
                let byte = match c {
                    b'n' => b'\n',
                    b't' => b'\t',
                    b'r' => b'\r',
                    b'a' => 7,
                    b'b' => 8,
                    b'f' => 12,
                    b'v' => 11,
                    b'0'..=b'7' => {
                        let digits = std::str::from_utf8(b.get(i - 1..i + 2)?).ok()?;
                        i += 2;
                        u8::from_str_radix(digits, 8).ok()?
                    }
                    other => other,
                };
                out.push(byte);
            }
            i += 1;
        } else if b[i] == b'\'' {
            let end = i + 1 + b[i + 1..].iter().position(|&c| c == b'\'')?;
            out.extend_from_slice(&b[i + 1..end]);
            i = end + 1;
        } else if b[i] == b'\\' {
            out.push(*b.get(i + 1)?);
            i += 2;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some((out, &text[i..]))
}

/// The destination's link group, split by mimeo's replacement: the split and what the other
/// links kept (their size, content and times).
fn linked_destination(o: &mut Outcome) -> bool {
    let dest = o.plan.target_path();
    let named = |group: &str, p: &Path| group.contains(&format!("{p:?}"));
    let Some(split) = o
        .tree
        .iter()
        .find(|d| {
            d.field == Field::HardLinks && named(&d.left, &dest) && d.left.len() > d.right.len()
        })
        .cloned()
    else {
        return false;
    };
    let kept = |d: &crate::compare::Difference| {
        // Its bytes, and the attributes -p gave the file cp wrote.
        let data = matches!(
            d.field,
            Field::Size
                | Field::Content
                | Field::Mtime
                | Field::Atime
                | Field::Blocks
                | Field::Mode
                | Field::Uid
                | Field::Gid
                | Field::Xattr
        );
        // A member of cp's group that mimeo's grouping (as seen where the split was found:
        // at the destination, or at another member) keeps apart from the destination.
        let apart = named(&split.right, &d.path) != named(&split.right, &dest);
        let other = named(&split.left, &d.path) && apart;
        *d == split || data && d.path != dest && other
    };
    o.tree.retain(|d| !kept(d));
    true
}

/// The lines of `text` in sorted order; with `questions`, each of -i's questions (which end
/// in "? " and no newline) counts as a line of its own.
fn sorted_lines(text: &str, questions: bool) -> String {
    let mut lines = pieces(text, questions);
    lines.sort_unstable();
    lines.concat()
}

/// The lines of `text`, in order; with `questions`, each of -i's questions (which end in
/// "? " and no newline, so the next message follows on the same line) is a piece of its own.
fn pieces(text: &str, questions: bool) -> Vec<&str> {
    let mut lines: Vec<&str> = Vec::new();
    for line in text.split_inclusive('\n') {
        let mut rest = line;
        // A question ends where the next message begins (or the text ends).
        while let Some(at) = questions
            .then(|| rest.match_indices("? ").map(|(at, _)| at + 2))
            .into_iter()
            .flatten()
            .find(|&at| rest[at..].is_empty() || rest[at..].starts_with("cp: "))
        {
            lines.push(&rest[..at]);
            rest = &rest[at..];
        }
        if !rest.is_empty() {
            lines.push(rest);
        }
    }
    lines
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

/// Where cp wrote through a symlink or left it (it stays a symlink on cp's side, and its
/// target changed) and mimeo replaced it: the symlink, its target `t` or `f`, and cp's
/// refusal of a dangling one.
fn symlink_replaced(o: &mut Outcome) -> bool {
    let replaced = o
        .tree
        .iter()
        .any(|d| d.field == Field::Type && d.left == "symlink");
    let refused = o.cp.stderr.contains("not writing through dangling symlink");
    if !replaced && !refused {
        return false;
    }
    dangling_refused(o);
    // cp could not write through the symlink (its target is another user's, say). Each of
    // its lines goes that mimeo has not: a later source of the same name can fail on mimeo's
    // replacement in words of its own that match cp's for that name.
    let through = "cannot create regular file";
    let ours: Vec<&str> = o.ours.stderr.split_inclusive('\n').collect();
    let unmatched = |l: &&str| l.contains(through) && !ours.contains(l);
    if replaced && o.cp.stderr.split_inclusive('\n').any(|l| unmatched(&l)) {
        o.cp.stderr =
            o.cp.stderr
                .split_inclusive('\n')
                .filter(|l| !unmatched(l))
                .collect();
        if only_warnings(&o.cp.stderr) && o.cp.code == Some(1) {
            o.cp.code = o.ours.code;
        }
    }
    if replaced {
        later_copy_refused(o);
    }
    let copies = if replaced {
        target_copies(o)
    } else {
        Vec::new()
    };
    let is_target = |p: &Path| {
        p == Path::new("t") || p == Path::new("f") || o.through.contains(&p.to_path_buf())
    };
    o.tree.retain(|d| {
        // The file a replaced symlink led to elsewhere in the case (one of the source's).
        let target = is_target(&d.path);
        let link = d.field == Field::Type && d.left == "symlink";
        // A later copy of a target that cp wrote through the symlink has what cp wrote.
        let copy = copies.contains(&d.path);
        // A later name of the same source file, linked by cp to what it wrote through the
        // symlink (it links through a symlink under -L): the target joins cp's group alone.
        let joined = replaced && d.field == Field::HardLinks && {
            let cp_group = group_members(&d.left);
            cp_group.iter().any(|p| is_target(p))
                && cp_group
                    .into_iter()
                    .filter(|p| !is_target(p))
                    .eq(group_members(&d.right))
        };
        !(link || joined || (target || copy) && d.field != Field::Presence)
    });
    true
}

/// A later source of a name whose symlink mimeo replaced finds the file its first copy made
/// there, of its source's mode; one without a write bit refuses a user other than root as it
/// would refuse cp had cp replaced the symlink too ("cannot create regular file 'd/./x':
/// Permission denied"), where cp wrote through the symlink again. Only that refusal of a
/// name whose symlink the tree shows replaced goes, and with it mimeo's failing status.
fn later_copy_refused(o: &mut Outcome) {
    let replaced: Vec<&Path> = o
        .tree
        .iter()
        .filter(|d| d.field == Field::Type && d.left == "symlink" && d.right == "file")
        .map(|d| d.path.as_path())
        .collect();
    let (target, real) = (o.plan.target_path(), o.plan.target_dir());
    // The places a copy named in a message is in the tree: `d/./x` is `d/x`, which is
    // `td/x` through the destination symlink, or where a source's symlink led it.
    let places = |named: &Path| {
        let named = named.components().as_path().to_path_buf();
        let mut at = vec![named.clone()];
        if let Ok(rest) = named.strip_prefix(&target) {
            at.push(real.join(rest));
            if let Some(leads) = &o.target_leads {
                at.push(leads.join(rest));
            }
        }
        at
    };
    let refused = |l: &str| {
        let Some(quoted) = l
            .strip_prefix("cp: cannot create regular file ")
            .and_then(|r| r.strip_suffix(": Permission denied\n"))
        else {
            return false;
        };
        unquote(quoted).is_some_and(|named| {
            places(&named)
                .iter()
                .any(|p| replaced.contains(&p.as_path()))
        })
    };
    let cp: Vec<&str> = o.cp.stderr.split_inclusive('\n').collect();
    let ours: String = o
        .ours
        .stderr
        .split_inclusive('\n')
        .filter(|l| cp.contains(l) || !refused(l))
        .collect();
    if ours != o.ours.stderr {
        o.ours.stderr = ours;
        if only_warnings(&o.ours.stderr) && o.ours.code == Some(1) {
            o.ours.code = o.cp.code;
        }
    }
}

/// The members of a hard-link group as the comparison shows it (`["a", "b"]`, each
/// written as a path's `Debug` form, whose quotes inside a name are escaped).
fn group_members(shown: &str) -> Vec<PathBuf> {
    let Some(inner) = shown
        .strip_prefix("[\"")
        .and_then(|r| r.strip_suffix("\"]"))
    else {
        return Vec::new();
    };
    inner
        .split("\", \"")
        // The quote and backslash escapes undone; other escapes stay (a name that needs
        // them is then not recognised as a target, and its difference stays).
        .map(|item| PathBuf::from(item.replace("\\\"", "\"").replace("\\\\", "\\")))
        .collect()
}

/// Whether what is left of cp's messages says of no failure (a warning, such as of a source
/// named twice, leaves the exit status alone).
fn only_warnings(stderr: &str) -> bool {
    stderr.lines().all(|l| l.starts_with("cp: warning: "))
}

/// Where the sources that name a symlink's target (`f`, or `lf` followed) are copied into
/// the target directory.
fn target_copies(o: &Outcome) -> Vec<std::path::PathBuf> {
    let dir = o.plan.target_dir();
    o.plan
        .sources
        .iter()
        .filter_map(|s| {
            let s = Path::new(s);
            let name = s.file_name()?;
            let top = s
                .parent()
                .is_none_or(|p| p.as_os_str().is_empty() || p.is_absolute());
            (top && (name == "f" || name == "lf")).then(|| dir.join(name))
        })
        .collect()
}

/// cp refuses a dangling destination symlink; mimeo replaces it, or with -i asks first.
fn dangling_refused(o: &mut Outcome) {
    let dangling = "not writing through dangling symlink";
    // With -i mimeo refuses it too.
    if o.cp.stderr.contains(dangling) && !o.ours.stderr.contains(dangling) {
        o.cp.stderr =
            o.cp.stderr
                .split_inclusive('\n')
                .filter(|l| !l.contains(dangling))
                .collect();
        if only_warnings(&o.cp.stderr) && o.cp.code == Some(1) {
            o.cp.code = o.ours.code;
        }
        // What mimeo said and printed instead: the -i question, and -v lines.
        o.ours.stderr = o
            .ours
            .stderr
            .split_inclusive('\n')
            .filter(|l| !l.starts_with("cp: overwrite "))
            .collect();
        o.cp.stdout = o.ours.stdout.clone();
    }
}

/// The directory times cp's backup and its undoing changed around a refused relative link.
fn relative_symlink_backup(o: &mut Outcome) -> bool {
    // -S makes backups too.
    let backup = ["b", "backup", "suffix"].iter().any(|id| o.plan.has(id));
    let refused =
        o.cp.stderr
            .contains("can make relative symbolic links only in current directory");
    if !(o.plan.has("symbolic-link") && backup && refused) {
        return false;
    }
    let n = o.tree.len();
    o.tree.retain(|d| d.field != Field::Mtime);
    let unbackup = drop_unbackup(o);
    o.tree.len() != n || unbackup
}

fn update_sizes(o: &mut Outcome) -> bool {
    if !o.plan.has("update") {
        return false;
    }
    // With -i, mimeo asks about what it would replace where cp skipped (in cp's words for
    // an entry it may not write).
    let question = ["cp: overwrite ", "cp: unwritable ", "cp: replace "];
    let asked = |l: &str| question.iter().any(|q| l.starts_with(q)) && !o.cp.stderr.contains(l);
    // A question may follow a message line, so pieces end at either.
    let without: String = o
        .ours
        .stderr
        .split_inclusive('\n')
        .flat_map(|l| l.split_inclusive("? "))
        .filter(|l| !asked(l))
        .collect();
    // The destinations mimeo asked about: declined (no answer), they are not the copy a
    // source named again is linked onto, where cp skipped and linked (and, where the user
    // may not link the file, failed to: "cannot create hard link 'd' to 'd'").
    let declined: Vec<String> = o
        .ours
        .stderr
        .split_inclusive('\n')
        .flat_map(|l| l.split_inclusive("? "))
        .filter(|l| asked(l))
        .filter_map(|l| l.strip_prefix("cp: overwrite ")?.strip_suffix("? "))
        .map(str::to_string)
        .collect();
    let onto_itself = |l: &str| {
        let rest = l.strip_prefix("cp: cannot create hard link ");
        declined.iter().any(|d| {
            rest.and_then(|r| r.strip_prefix(&format!("{d} to {d}: ")))
                .is_some()
        })
    };
    let relinks = ["b", "backup", "suffix"].iter().any(|id| o.plan.has(id));
    let cp_kept: String =
        o.cp.stderr
            .split_inclusive('\n')
            .filter(|l| !(relinks && onto_itself(l)))
            .collect();
    if o.plan.has("interactive") && without == cp_kept {
        o.ours.stderr = without;
        if cp_kept != o.cp.stderr {
            o.cp.stderr = cp_kept;
            o.cp.code = o.ours.code;
        }
    }
    // With -s, what mimeo would replace where cp skipped may be a link it cannot make (a
    // relative one outside the working directory), and with -l or -s one that finds the
    // destination there (no -f): the refusal, and the failure, are that.
    let relative = "can make relative symbolic links only in current directory";
    let link_exists = |l: &str| {
        let link =
            l.contains("cannot create hard link ") || l.contains("cannot create symbolic link ");
        link && l.ends_with(": File exists\n")
    };
    // With --reflink, it may be a clone the filesystem cannot make (ext4). With a backup, it
    // may be one whose name is too long (the suffix added to a name of 255 bytes).
    let links = o.plan.has("symbolic-link") || o.plan.has("link");
    let reflink = o.plan.has("reflink");
    let backup = ["b", "backup", "suffix"].iter().any(|id| o.plan.has(id));
    let refused = |l: &str| {
        let link = links && (l.contains(relative) || link_exists(l));
        let clone = reflink && l.contains("failed to clone ");
        let long =
            backup && l.starts_with("cp: cannot backup ") && l.ends_with(": File name too long\n");
        (link || clone || long) && !o.cp.stderr.contains(l)
    };
    let without: String = o
        .ours
        .stderr
        .split_inclusive('\n')
        .filter(|l| !refused(l))
        .collect();
    let mut changed = false;
    if without != o.ours.stderr && without == o.cp.stderr {
        o.ours.stderr = without;
        o.ours.code = o.cp.code;
        changed = true;
    }
    if o.cp.stderr != o.ours.stderr {
        return false;
    }
    let n = o.tree.len();
    // What mimeo replaced (and backed up) where cp skipped (also an entry of another
    // type, which is not complete); never what it left out.
    o.tree
        .retain(|d| d.field == Field::Presence && d.right == "absent");
    // A replacement that then failed (a refusal taken out above) removed the destination
    // first where cp removes one it replaces first: under --remove-destination, and under -P
    // (also from -a, -d and -R) for a source that is not a regular file.
    let removes_first = [
        "remove-destination",
        "no-dereference",
        "archive",
        "d",
        "recursive",
    ];
    if changed && removes_first.iter().any(|id| o.plan.has(id)) {
        o.tree.retain(|d| d.left == "directory");
    }
    // A source named again (with backups) after cp skipped it: cp links the destination onto
    // itself ("removed 'd'" under -v), where mimeo replaced it the first time ("-> 'd'"), or
    // asked about replacing it and was told no.
    let relinked = |l: &str| {
        let Some(d) = l.strip_prefix("removed ") else {
            return false;
        };
        let copied = o.ours.stdout.contains(&format!(" -> {d}"));
        let asked = declined
            .iter()
            .any(|q| d.strip_suffix('\n') == Some(q.as_str()));
        (copied || asked) && !o.ours.stdout.contains(l)
    };
    if ["b", "backup", "suffix"].iter().any(|id| o.plan.has(id)) {
        let kept: String =
            o.cp.stdout
                .split_inclusive('\n')
                .filter(|l| !relinked(l))
                .collect();
        changed |= kept != o.cp.stdout;
        o.cp.stdout = kept;
    }
    // And its -v lines for them ("'s' -> 'd'", "removed 'd'"), where cp's are all there.
    changed |= drop_extra_lines(&mut o.ours.stdout, &o.cp.stdout);
    changed || o.tree.len() != n
}

/// Takes out of `ours` the lines that `theirs` lacks, where every line of `theirs` is in
/// `ours`; says whether it did.
fn drop_extra_lines(ours: &mut String, theirs: &str) -> bool {
    let mut rest: Vec<&str> = ours.split_inclusive('\n').collect();
    let contained = theirs.split_inclusive('\n').all(|l| {
        let at = rest.iter().position(|r| *r == l);
        at.map(|i| rest.remove(i)).is_some()
    });
    if !contained || rest.is_empty() {
        return false;
    }
    *ours = theirs.to_string();
    true
}

/// A time cp kept on a destination entry the case made (the fixed time) where mimeo's
/// replacement took one from the clock (before 2033: not a generated time).
fn replaced_times(o: &mut Outcome) -> bool {
    let fixed = format!("{FIXED_TIME}.000000000");
    // The destination named on the command line may have any time of its own before (and
    // so may the directory it is in).
    let dest = Some(o.plan.target_path());
    let parent = dest
        .as_ref()
        .and_then(|d| d.parent())
        .map(Path::to_path_buf);
    // A source directory copied onto the destination itself (`s/.`) gives it its times
    // (with -p), and a later source may then replace a file in it.
    let onto_itself = o.plan.sources.len() > 1
        && o.plan
            .sources
            .iter()
            .any(|s| Path::new(s).ends_with(".") || s.as_encoded_bytes().ends_with(b"/."));
    // With --parents a later source is copied below the target along its own path, where an
    // earlier source's copy may have made its directory (with its times) and the file.
    let later_parents: Vec<PathBuf> = if o.plan.has("parents") {
        let dir = o.plan.target_dir();
        o.plan.sources[1.min(o.plan.sources.len())..]
            .iter()
            .filter_map(|s| {
                let s: PathBuf = Path::new(s).components().collect();
                dir.join(s).parent().map(Path::to_path_buf)
            })
            .collect()
    } else {
        Vec::new()
    };
    let n = o.tree.len();
    o.tree.retain(|d| {
        let clock = d.right.as_str() > fixed.as_str() && d.right.as_str() < "2000000000";
        let old = d.left == fixed
            || d.field == Field::Atime && Some(&d.path) == dest.as_ref()
            || d.field == Field::Mtime && Some(&d.path) == parent.as_ref()
            || d.field == Field::Mtime && onto_itself && Some(&d.path) == dest.as_ref()
            // The same where the destination is a symlink to the directory (`d` to `td`).
            || d.field == Field::Mtime && onto_itself && d.path == o.plan.target_dir()
            || d.field == Field::Mtime && later_parents.contains(&d.path);
        !(matches!(d.field, Field::Mtime | Field::Atime) && old && clock)
    });
    o.tree.len() != n
}

/// Where both refuse a directory copied into itself (the same line): what cp made in the
/// copy before it met itself, the -v lines and messages of that, and the times of the
/// directories above it.
fn into_itself(o: &mut Outcome) -> bool {
    let said = |t: &str| {
        t.lines()
            .filter(|l| l.contains("cannot copy a directory, "))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    // Where cp cannot make the copy (a user who may not write into the source), or anything
    // in a copy that is there already, it fails with that before it could see the copy is in
    // the source; mimeo refuses first.
    // So too where cp refuses another source as a copy into itself (its order of sources
    // decides which one meets the copy first).
    // A source named again after a refused one: cp forgot the copy it failed to make and
    // tries again, so mimeo refuses it again; cp's later try may make the copy (an earlier
    // source's walk under -p gave the destination its mode) and say so once. Each of cp's
    // lines matches one of mimeo's, as often as cp says it.
    let mut bridged = false;
    let mut cp_said = said(&o.cp.stderr);
    {
        let ours_lines: Vec<String> = o.ours.stderr.lines().map(str::to_string).collect();
        for l in said(&o.ours.stderr) {
            if let Some(i) = cp_said.iter().position(|c| *c == l) {
                cp_said.swap_remove(i);
                continue;
            }
            let Some(dst) = l.split(", into itself, ").nth(1) else {
                continue;
            };
            let src = l
                .split("cannot copy a directory, ")
                .nth(1)
                .and_then(|r| r.split(", into itself, ").next())
                .unwrap_or_default();
            // A source that holds one named before it: cp meets that one below it, where it
            // went, and calls this source named twice.
            let twice = format!("warning: source directory {src} specified more than once");
            let failed = format!("cannot create directory {dst}: ");
            // The names compared unquoted: cp quotes a name below the copy in pieces that
            // need not start as the copy's own quoting does (`'s/a'$'\r''/b'`).
            let denied_below = |c: &str| {
                let kinds = ["directory ", "regular file ", "symbolic link ", "fifo "];
                let Some(rest) = c
                    .strip_prefix("cp: cannot create ")
                    .and_then(|r| r.strip_suffix(": Permission denied"))
                else {
                    return false;
                };
                let named = kinds
                    .iter()
                    .find_map(|k| rest.strip_prefix(k))
                    .and_then(unquote);
                // By bytes, `.` kept: `s/h/./h` is below `s/h/.`, `s/h/h` is not.
                let (Some(named), Some(copy)) = (named, unquote(dst)) else {
                    return false;
                };
                let mut below = copy.as_os_str().as_encoded_bytes().to_vec();
                below.push(b'/');
                named.as_os_str().as_encoded_bytes().starts_with(&below)
            };
            // A source named through a symlink it follows (-H): cp meets the copy below
            // itself under another name, which it calls a hard link to the copy.
            // Or a directory named before, met below the source where the copy would be.
            // The names are compared unquoted: cp quotes a name below the copy in pieces
            // that need not start as the copy's own quoting does.
            let linked = |c: &str| {
                let (Some((x, y)), Some(copy)) = (dir_link_pair(c), unquote(dst)) else {
                    return false;
                };
                y == copy || x.starts_with(&copy) && x != copy
            };
            // A directory between the source and the copy that the user may not list: cp's
            // walk cannot enter it, so it never meets the copy made below it. An absolute
            // source names it absolutely, the copy may be named relatively: one form.
            let unlisted = |c: &str| {
                let Some(dir) = c
                    .strip_prefix("cp: cannot access ")
                    .and_then(|r| r.strip_suffix(": Permission denied"))
                    .and_then(unquote)
                else {
                    return false;
                };
                let (Some(src), Some(copy)) = (unquote(src), unquote(dst)) else {
                    return false;
                };
                let [mut dir, mut src, copy] = [dir, src, copy].map(|p| o.plan.in_place(&p));
                // A source named through a symlink (`s/l/` to `..`): cp names what is below it
                // through that name, the copy is named as it is: both where they lead.
                let leads = o
                    .source_leads
                    .iter()
                    .find(|(named, _)| o.plan.in_place(named) == src);
                if let Some((_, real)) = leads
                    && let Ok(rest) = dir.strip_prefix(&src)
                {
                    dir = real.join(rest);
                    src = real.clone();
                }
                // Paths compare by components, `.` left out. A copy named `d/.` is the
                // existing `d`, which cp fills without making it: where that is the directory
                // cp cannot list, cp never meets what it made in it.
                let filled = dst.ends_with("/.'");
                dir.starts_with(&src) && copy.starts_with(&dir) && (copy != dir || filled)
            };
            // A question of -i glued before the line is not part of it.
            let cp_pieces = pieces(&o.cp.stderr, true);
            let cp_line = cp_pieces
                .iter()
                .map(|p| p.trim_end_matches('\n'))
                .find(|c| {
                    !ours_lines.iter().any(|o| o == c)
                        && (c.contains(&failed)
                            || denied_below(c)
                            || linked(c)
                            || unlisted(c)
                            || c.ends_with(&twice))
                });
            if let Some(cp_line) = cp_line.map(str::to_string) {
                o.cp.stderr = o.cp.stderr.replacen(&cp_line, &l, 1);
                bridged = true;
            }
        }
    }
    // The same refusals, in any order: mimeo refuses each before it copies anything.
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    let lines = said(&o.cp.stderr);
    if lines.is_empty() || sorted(lines.clone()) != sorted(said(&o.ours.stderr)) {
        return bridged;
    }
    // The quoted source and copy of each line, without their closing quotes: the start of
    // any name at or below them.
    let mut starts = Vec::new();
    let mut roots = Vec::new();
    let mut copies = Vec::new();
    for l in &lines {
        let Some(rest) = l.split("cannot copy a directory, ").nth(1) else {
            continue;
        };
        if let Some((src, dst)) = rest.split_once(", into itself, ") {
            starts.push(src[..src.len().saturating_sub(1)].to_string());
            starts.push(dst[..dst.len().saturating_sub(1)].to_string());
            roots.extend([src, dst].into_iter().filter_map(unquote));
            // A copy named `d/.` is `d` itself: cp filled it, so a later source copied into
            // it finds what cp made there (named `d/x`, without the `.`).
            if let Some(dir) = dst.strip_suffix("/.'") {
                starts.push(format!("{dir}/"));
            }
            if let Some(copy) = unquote(dst) {
                // A copy made through the destination symlink is where it leads.
                let (target, real) = (o.plan.target_path(), o.plan.target_dir());
                if let Ok(rest) = copy.strip_prefix(&target) {
                    copies.push(real.join(rest));
                    // Or through a symlink in the source (to `.`): where it led.
                    if let Some(leads) = &o.target_leads {
                        copies.push(leads.join(rest));
                    }
                }
                copies.push(copy);
            }
        }
    }
    let before = (o.cp.clone(), o.tree.len());
    let ours = (o.ours.stdout.clone(), o.ours.stderr.clone());
    // Also where cp names them bare (its relative -s refusal: "cp: s/d/x: can make ..."),
    // or unquoted, as -v names the directories --parents makes ("s -> s/d/s"), or not at
    // all: an xattr of what it copied into the copy, which cp names by the attribute alone
    // (libattr's "getting attribute 'user.k' of 'user.k'").
    // A later source named through a dot (`s/.` copied to `d/s/.`) names the copy's path with
    // a `/./` in it ("cannot overwrite directory 'd/s/./p'"): the same name. The line is
    // matched as said too: a source named `s/.` starts the names below it with that dot
    // (`'s/./x'`), which the flattened line no longer starts the same way.
    let mentions = |said: &str| {
        fn plain(s: &str) -> &str {
            s.trim_start_matches('\'')
        }
        let names = |l: &str| {
            let bare = |s: &String| l.starts_with(&format!("cp: {}", plain(s)));
            let parent =
                |s: &String| !l.starts_with('\'') && l.contains(" -> ") && l.contains(plain(s));
            // A -v line names them unquoted too: cp quotes a name holding a quote and a
            // control character from an empty `''` where it stands alone (the refusal), and
            // without it where a plainer piece comes first (`'s/a'\''b'$'\303''/x'`).
            let below = |n: std::path::PathBuf| roots.iter().any(|r| n.starts_with(r));
            let verbose = l.split(" -> ").filter_map(unquote).any(below);
            verbose
                || starts
                    .iter()
                    .any(|s| l.contains(s.as_str()) || bare(s) || parent(s))
        };
        let attribute = said.starts_with("cp: getting attribute ")
            || said.starts_with("cp: setting attribute ");
        attribute || names(said) || names(&said.replace("/./", "/"))
    };
    // A line the other side says too is kept as often as it says it: cp's walk through the
    // copy may fail the same way again (a --parents link to the same name). A question of
    // -i is judged apart from the message that follows it on its line: one about an entry
    // outside the copy stays where cp went on into the copy.
    let only_cp = |text: &str, other: &str, questions: bool| -> String {
        let mut others: Vec<&str> = pieces(other, questions);
        pieces(text, questions)
            .into_iter()
            .filter(|l| match others.iter().position(|o| o == l) {
                Some(i) => {
                    others.swap_remove(i);
                    true
                }
                None => !mentions(l),
            })
            .collect()
    };
    o.cp.stdout = only_cp(&o.cp.stdout, &ours.0, false);
    o.cp.stderr = only_cp(&o.cp.stderr, &ours.1, true);
    // Under -L, both stop a source once they meet the copy in it (mimeo once its parallel
    // walk does), so each may have said more of it than the other.
    o.ours.stdout = only_cp(&o.ours.stdout, &before.0.stdout, false);
    o.ours.stderr = only_cp(&o.ours.stderr, &before.0.stderr, true);
    // The copy where cp made it and mimeo did not: absent, or what a later source of that
    // name made there (cp found its copy there). A destination that is a symlink in the
    // source leads where its name does not say: that copy is known by its name alone.
    let names: Vec<_> = copies
        .iter()
        .filter_map(|c| c.file_name().map(ToOwned::to_owned))
        .collect();
    copies.extend(o.tree.iter().filter_map(|d| {
        let made = d.field == Field::Presence && d.left == "directory" && d.right == "absent";
        let named = d.field == Field::Type
            && d.left == "directory"
            && d.path
                .file_name()
                .is_some_and(|n| names.iter().any(|c| c == n));
        (made || named).then(|| d.path.clone())
    }));
    // A later source cp copied onto a file of the copy: cp 9.1 renamed that file to its
    // simple backup named from the working directory, not the destination
    // (simple-backup-in-place), so the backup of `s/s/x` is `./s/x~`, which mimeo never made.
    let backups = ["b", "backup", "suffix"].iter().any(|id| o.plan.has(id));
    let dirs = [o.plan.target_path(), o.plan.target_dir()];
    let misplaced = |d: &crate::compare::Difference| {
        let cp_only = d.field == Field::Presence && d.right == "absent";
        let moved = |c: &std::path::PathBuf| dirs.iter().any(|t| t.join(&d.path).starts_with(c));
        backups && cp_only && copies.iter().any(moved)
    };
    o.tree.retain(|d| {
        let below = copies.iter().any(|c| d.path.starts_with(c));
        let above = copies
            .iter()
            .any(|c| c.starts_with(&d.path) && c != &d.path);
        // cp may reach the copy through a symlink: any directory's times.
        !(below || above || misplaced(d) || matches!(d.field, Field::Mtime | Field::Atime))
    });
    bridged
        || before != (o.cp.clone(), o.tree.len())
        || ours != (o.ours.stdout.clone(), o.ours.stderr.clone())
}

/// The name cp quotes as `quoted` (its shell quoting: `'a b'`, `'d'$'\n''x'`, `'it'\''s'`),
/// or None where it is not one.
fn unquote(quoted: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let mut out = Vec::new();
    let mut chars = quoted.bytes().peekable();
    while let Some(c) = chars.next() {
        match c {
            b'\'' => loop {
                match chars.next()? {
                    b'\'' => break,
                    b => out.push(b),
                }
            },
            b'$' if chars.peek() == Some(&b'\'') => {
                chars.next();
                loop {
                    match chars.next()? {
                        b'\'' => break,
                        b'\\' => {
                            let e = chars.next()?;
                            out.push(match e {
                                b'n' => b'\n',
                                b't' => b'\t',
                                b'r' => b'\r',
                                b'a' => 7,
                                b'b' => 8,
                                b'f' => 12,
                                b'v' => 11,
                                b'0'..=b'7' => {
                                    let mut v = u32::from(e - b'0');
                                    for _ in 0..2 {
                                        match chars.peek() {
                                            Some(&d @ b'0'..=b'7') => {
                                                v = v * 8 + u32::from(d - b'0');
                                                chars.next();
                                            }
                                            _ => break,
                                        }
                                    }
                                    u8::try_from(v).ok()?
                                }
                                other => other,
                            });
                        }
                        b => out.push(b),
                    }
                }
            }
            b'\\' => out.push(chars.next()?),
            b => out.push(b),
        }
    }
    (!out.is_empty()).then(|| std::ffi::OsString::from_vec(out).into())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::compare::Difference;
    use crate::fuzz::case::{DestState, Plan};
    use crate::fuzz::exec::Ran;

    fn ran(code: i32, stderr: &str) -> Ran {
        Ran {
            code: Some(code),
            timed_out: false,
            stdout: String::new(),
            stderr: stderr.to_string(),
        }
    }

    /// A directory's copy onto a loop named with a slash, under -f: cp's outcome depends on
    /// leftover memory, and is let through; a non-directory's (fuzz seed 0x4c1b98dc3210399d,
    /// a loop in the source tree) is cp's, and is not.
    #[test]
    fn forced_onto_a_looping_slash_lets_through_only_a_directorys_copy() {
        let looped = "cp: cannot stat 's/54/': Too many levels of symbolic links\n";
        let forced = |cp: &str, dest| {
            let mut o = outcome(cp, looped);
            o.plan.opts = vec!["force", "recursive"];
            o.plan.dest = dest;
            o.plan.target = "s/54/".into();
            o
        };
        let directory = "cp: cannot create directory 's/54/': File exists\n";
        for dest in [DestState::SymlinkLoop, DestState::InsideSource] {
            let mut o = forced(directory, dest);
            assert!(forced_onto_a_looping_slash(&mut o), "{dest:?}");
            assert_eq!(o.ours, o.cp);
        }
        let filled = "cp: cannot remove 's/54/x': Too many levels of symbolic links\n";
        assert!(forced_onto_a_looping_slash(&mut forced(
            filled,
            DestState::InsideSource
        )));
        for cp in [
            "cp: cannot create symbolic link 's/54/': Not a directory\n",
            "cp: cannot create hard link 's/54/' to 'f': Not a directory\n",
            "cp: cannot create fifo 's/54/': File exists\n",
            "cp: cannot remove 's/54/': Not a directory\n",
        ] {
            let mut o = forced(cp, DestState::InsideSource);
            assert!(!forced_onto_a_looping_slash(&mut o), "{cp}");
        }
        let mut verbose = forced("", DestState::SymlinkLoop);
        verbose.cp.stdout = "'f' -> 's/54/'\n".into();
        assert!(!forced_onto_a_looping_slash(&mut verbose));
        let mut unforced = forced(directory, DestState::SymlinkLoop);
        unforced.plan.opts = vec!["recursive"];
        assert!(!forced_onto_a_looping_slash(&mut unforced));
    }

    pub(crate) fn outcome(cp: &str, ours: &str) -> Outcome {
        Outcome {
            plan: Plan {
                tool: "cp",
                seed: 0,
                args: Vec::new(),
                env: Vec::new(),
                opts: vec!["archive", "dereference"],
                dest: DestState::SourceItself,
                target: "ls".into(),
                sources: vec!["ls".into(), "s".into()],
                feed: None,
                drains: Vec::new(),
                odd_dirs: false,
                place: "/p/case".into(),
            },
            cp: ran(1, cp),
            ours: ran(1, ours),
            tree: Vec::new(),
            through: Vec::new(),
            regular: Vec::new(),
            target_leads: None,
            source_leads: Vec::new(),
        }
    }

    pub(crate) fn diff(path: &str, field: Field, left: &str, right: &str) -> Difference {
        Difference {
            path: path.into(),
            field,
            left: left.into(),
            right: right.into(),
        }
    }

    /// `cp -v --remove-destination lf lf`: cp removes lf and fails to open it; mimeo keeps it.
    #[test]
    fn a_symlink_the_source_is_reached_through_is_kept_under_remove_destination() {
        let err = "cp: cannot open 'lf' for reading: No such file or directory\n";
        let mut o = outcome(err, err);
        o.plan.opts = vec!["remove-destination", "verbose"];
        o.cp.stdout = "removed 'lf'\n".into();
        o.tree = vec![
            diff("lf", Field::Presence, "absent", "symlink"),
            diff("", Field::Mtime, "2", "1"),
            diff("g", Field::Size, "0", "1"),
        ];
        assert!(source_path_kept(&mut o));
        assert_eq!(o.tree, vec![diff("g", Field::Size, "0", "1")]);
        assert_eq!(o.cp.stdout, "");
        // Without the removal asked for, or with other words, it is not this difference.
        for (opts, ours) in [(vec!["verbose"], err), (vec!["remove-destination"], "")] {
            let mut o = outcome(err, ours);
            o.plan.opts = opts;
            o.tree = vec![diff("lf", Field::Presence, "absent", "symlink")];
            assert!(!source_path_kept(&mut o));
        }
    }

    #[test]
    fn what_cp_made_of_a_copy_into_itself_is_not_judged_in_its_verbose_lines() {
        // --parents: cp makes the copy's parent, says so unquoted, then refuses.
        let refused = "cp: cannot copy a directory, 's/d', into itself, 's/d/s/d'\n";
        let mut o = outcome(refused, refused);
        o.plan.opts = vec!["parents", "verbose", "recursive"];
        o.cp.stdout = "s -> s/d/s\n".into();
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stdout, "");
        // -L through a symlink loop: cp copies the copy into itself until the names are too
        // long; mimeo refuses it at once.
        let long = "cp: cannot stat 'ls/ls/ls/x': File name too long\n";
        let ours = "cp: cannot copy a directory, 'ls', into itself, 'ls/ls'\n";
        let mut o = outcome(long, ours);
        o.cp.stdout = "'ls' -> 'ls/ls'\n'ls/ls/x' -> 'ls/ls/ls/x'\n'f' -> 'ls/f'\n".into();
        o.ours.stdout = "'f' -> 'ls/f'\n".into();
        assert!(copy_reached_again(&mut o));
        assert_eq!(o.cp.stdout, o.ours.stdout);
    }

    /// `cp -R --attributes-only --link s/. s/h6` (s/h6 a symlink to `..`, the destination):
    /// cp copies `s/./h6` into `h6` before it links `s/./f` there, mimeo after, so only
    /// mimeo's `h6` (the copy of the destination) holds `f`, beside cp's copy of the copy
    /// (fuzz seed 0x991eb6a1eca2bdf9). An entry elsewhere stays.
    #[test]
    fn what_mimeo_copied_into_the_destination_before_it_listed_it_again_is_not_judged() {
        let long = "cp: cannot stat 's/./h6/h6/h6/f': File name too long\n";
        let ours = "cp: cannot copy a directory, 's/.', into itself, 's/h6/.'\n";
        let mut o = outcome(long, ours);
        let elsewhere = diff("g/f", Field::Presence, "absent", "file");
        o.tree = vec![
            diff("h6/f", Field::Presence, "absent", "file"),
            diff("h6/h6", Field::Presence, "directory", "absent"),
            elsewhere.clone(),
        ];
        assert!(copy_reached_again(&mut o));
        assert_eq!(o.tree, vec![elsewhere]);
    }

    /// `cp -LRp -i s/. s/38ff` (s/38ff holding a symlink to `..`): mimeo makes `38ff/vu8yt`
    /// (0700 under -p) before it fills it, and copies it, unfilled, into its copy of the copy
    /// `38ff/38ff/vu8yt`; cp filled it first (fuzz seed 0x39360b73e90f591f). Only the
    /// owner-only mode, only of a directory cp made something in, is not judged.
    #[test]
    fn a_directory_copied_again_before_mimeo_filled_it_keeps_its_owner_only_mode() {
        let long = "cp: cannot stat 's/./38ff/38ff/38ff/f': File name too long\n";
        let ours = "cp: cannot copy a directory, 's/.', into itself, 's/38ff/.'\n";
        let mut o = outcome(long, ours);
        let other_mode = diff("38ff/vu8yt", Field::Mode, "0755", "0750");
        let elsewhere = diff("g", Field::Mode, "0755", "0700");
        o.tree = vec![
            diff("38ff/38ff", Field::Presence, "directory", "absent"),
            diff("38ff/vu8yt", Field::Mode, "0755", "0700"),
            diff("38ff/vu8yt/f", Field::Presence, "file", "absent"),
            elsewhere.clone(),
            other_mode.clone(),
        ];
        assert!(copy_reached_again(&mut o));
        assert_eq!(o.tree, vec![elsewhere, other_mode]);
    }

    /// -L through a symlink loop, with a name cp quotes from an empty `''` (a quote and a
    /// control character in it): its -v lines are what cp copied of the copy too (fuzz seed
    /// 0x6a90a079f50ef145). A line of another source stays.
    #[test]
    fn verbose_lines_of_a_copy_reached_again_quoted_from_an_empty_quote_are_not_judged() {
        let long = "cp: cannot stat 'ls/ls/ls/x': File name too long\n";
        let ours = "cp: cannot copy a directory, 'ls', into itself, 'ls/ls'\n";
        let mut o = outcome(long, ours);
        let other = "'''f'\\''$'\\t' -> 'g'\n";
        o.cp.stdout = format!("'''ls/x'\\''$'\\t' -> '''ls/ls/x'\\''$'\\t'\n{other}");
        assert!(copy_reached_again(&mut o));
        assert_eq!(o.cp.stdout, other);
    }

    #[test]
    fn questions_about_a_tree_may_come_in_another_order() {
        let cp = "cp: overwrite 'd/a'? cp: overwrite 'd/s/b'? cp: -r not specified\n";
        let ours = "cp: -r not specified\ncp: overwrite 'd/s/b'? cp: overwrite 'd/a'? ";
        let mut o = outcome(cp, ours);
        assert!(message_order(&mut o));
        assert_eq!(o.cp.stderr, o.ours.stderr);
        // Without -r, a question is not moved: roots are taken in command-line order.
        let mut o = outcome(cp, ours);
        o.plan.opts = vec!["interactive"];
        message_order(&mut o);
        assert_ne!(o.cp.stderr, o.ours.stderr);
        // A question mark inside a name does not end a question.
        assert_eq!(
            sorted_lines("cp: overwrite 'a? b'? cp: overwrite 'a'? ", true),
            "cp: overwrite 'a'? cp: overwrite 'a? b'? "
        );
    }

    #[test]
    fn a_replaced_linked_destination_leaves_its_other_name_alone_wherever_the_split_shows() {
        let group = r#"["s/a", "s/d"]"#;
        for (at, right) in [("s/d", r#"["s/d"]"#), ("s/a", r#"["s/a"]"#)] {
            let mut o = outcome("", "");
            o.plan.target = "s/d".into();
            o.tree = vec![
                diff(at, Field::HardLinks, group, right),
                diff("s/a", Field::Size, "0", "7"),
                diff("s/a", Field::Mtime, "1", "2"),
                // The mode (and owner) -p gave cp's written file.
                diff("s/a", Field::Mode, "0644", "0777"),
                diff("s/a", Field::Uid, "0", "65534"),
                diff("s/b", Field::Size, "0", "7"),
            ];
            assert!(linked_destination(&mut o), "{at}");
            // What is not of the group stays.
            assert_eq!(o.tree, vec![diff("s/b", Field::Size, "0", "7")], "{at}");
        }
    }

    #[test]
    fn a_copy_of_a_target_written_through_a_symlink_is_allowed_to_differ() {
        let plan = Plan {
            tool: "cp",
            seed: 0,
            args: Vec::new(),
            env: Vec::new(),
            opts: Vec::new(),
            dest: DestState::Dir,
            target: "d".into(),
            sources: vec!["s/x".into(), "f".into()],
            feed: None,
            drains: Vec::new(),
            odd_dirs: false,
            place: "/p/case".into(),
        };
        let mut o = Outcome {
            plan,
            cp: ran(0, ""),
            ours: ran(0, ""),
            tree: vec![
                diff("d/x", Field::Type, "symlink", "file"),
                diff("f", Field::Size, "0", "1"),
                diff("d/f", Field::Size, "0", "1"),
                diff("d/g", Field::Size, "0", "1"),
            ],
            through: Vec::new(),
            regular: Vec::new(),
            target_leads: None,
            source_leads: Vec::new(),
        };
        assert!(symlink_replaced(&mut o));
        let left: Vec<_> = o.tree.iter().map(|d| d.path.clone()).collect();
        assert_eq!(left, [Path::new("d/g")]);
    }

    /// `cp -a s/x s -L s d` with d/x a symlink to f: cp writes s/x through it into f, and
    /// links d/s/x to f (through the symlink); mimeo replaced d/x. Only cp's target joins the
    /// group; a group that differs otherwise stays.
    #[test]
    fn a_later_name_cp_linked_to_what_it_wrote_through_a_symlink_is_allowed() {
        let mut o = outcome("", "");
        o.tree = vec![
            diff("d/x", Field::Type, "symlink", "file"),
            diff("f", Field::Size, "0", "1"),
            diff(
                "d/s/x",
                Field::HardLinks,
                "[\"d/s/x\", \"f\"]",
                "[\"d/s/x\"]",
            ),
            diff(
                "d/s/y",
                Field::HardLinks,
                "[\"d/s/y\", \"f\"]",
                "[\"d/s/y\", \"d/z\"]",
            ),
        ];
        assert!(symlink_replaced(&mut o));
        let left: Vec<_> = o.tree.iter().map(|d| d.path.clone()).collect();
        assert_eq!(left, [Path::new("d/s/y")]);
        assert_eq!(
            group_members("[\"a\\\"b\", \"c\"]"),
            [PathBuf::from("a\"b"), PathBuf::from("c")]
        );
    }

    /// `cp f s/l` where s/l is an absolute symlink to s/x: cp writes f into s/x, mimeo
    /// replaces s/l; s/x keeps what it had on mimeo's side. Another file still fails.
    #[test]
    fn a_symlink_cp_could_not_write_through_takes_its_exit_status_past_a_warning() {
        let through = "cp: cannot create regular file 'd/x': Permission denied\n";
        let warning = "cp: warning: source file 's/x' specified more than once\n";
        let mut o = outcome(&format!("{through}{warning}"), warning);
        o.ours.code = Some(0);
        o.tree = vec![diff("td/x", Field::Type, "symlink", "file")];
        assert!(symlink_replaced(&mut o));
        assert_eq!((o.cp.stderr.as_str(), o.cp.code), (warning, Some(0)));

        // Another failure of cp's keeps its status.
        let other = "cp: cannot stat 's/y': No such file or directory\n";
        let mut o = outcome(&format!("{through}{other}"), other);
        o.ours.code = Some(0);
        o.tree = vec![diff("td/x", Field::Type, "symlink", "file")];
        assert!(symlink_replaced(&mut o));
        assert_eq!(o.cp.code, Some(1));
    }

    /// `cp -a s/x s/. d` (d/x a symlink to a file nobody may not write): cp fails to write
    /// through it twice; mimeo replaces it for `s/x`, and the second copy of the same file
    /// fails on that read-only replacement in the words cp uses for `d/./x`.
    #[test]
    fn a_symlink_cp_could_not_write_through_twice_leaves_what_mimeo_says_of_the_second() {
        let first = "cp: cannot create regular file 'd/x': Permission denied\n";
        let second = "cp: cannot create regular file 'd/./x': Permission denied\n";
        let mut o = outcome(&format!("{first}{second}"), second);
        o.tree = vec![diff("td/x", Field::Type, "symlink", "file")];
        assert!(symlink_replaced(&mut o));
        assert_eq!((o.cp.stderr.as_str(), o.cp.code), (second, Some(1)));
    }

    /// `cp -r s/x ABS/s/. f d` as nobody (d a symlink to td, d/x a symlink to f, s/x of mode
    /// 0444): cp writes s/x through the symlink twice; mimeo replaces it with a copy of mode
    /// 0444, onto which the second copy of s/x is refused as cp refuses it there.
    #[test]
    fn a_later_copy_refused_by_the_read_only_file_that_replaced_a_symlink_is_allowed() {
        let second = "cp: cannot create regular file 'd/./x': Permission denied\n";
        let replaced = |cp: &str, ours: &str| {
            let mut o = outcome(cp, ours);
            o.cp.code = Some(0);
            o.plan.dest = DestState::SymlinkToDir;
            o.plan.target = "d".into();
            o.tree = vec![
                diff("td/x", Field::Type, "symlink", "file"),
                diff("f", Field::Size, "0", "70000"),
            ];
            o.through = vec!["f".into()];
            o
        };
        let mut o = replaced("", second);
        assert!(symlink_replaced(&mut o));
        assert_eq!((o.ours.stderr.as_str(), o.ours.code), ("", Some(0)));
        assert!(o.tree.is_empty());

        // Another name's refusal, or another failure of the same name, stays, and so does
        // mimeo's status.
        for other in [
            "cp: cannot create regular file 'd/./y': Permission denied\n",
            "cp: cannot create regular file 'd/./x': No space left on device\n",
            "cp: cannot remove 'd/./x': Permission denied\n",
        ] {
            let mut o = replaced("", other);
            assert!(symlink_replaced(&mut o));
            assert_eq!((o.ours.stderr.as_str(), o.ours.code), (other, Some(1)));
        }
        // A refusal beside another failure drops only itself.
        let stat = "cp: cannot stat 's/z': No such file or directory\n";
        let mut o = replaced(stat, &format!("{second}{stat}"));
        o.cp.code = Some(1);
        assert!(symlink_replaced(&mut o));
        assert_eq!((o.ours.stderr.as_str(), o.ours.code), (stat, Some(1)));
        // Without a replaced symlink there is nothing to allow.
        let mut o = replaced("", second);
        o.tree.retain(|d| d.field != Field::Type);
        o.through.clear();
        assert!(!symlink_replaced(&mut o));
        assert_eq!(o.ours.code, Some(1));
    }

    #[test]
    fn a_file_a_later_parents_source_replaces_gives_its_directory_a_new_mtime() {
        let mut o = outcome("", "");
        o.plan.opts = vec!["parents", "archive"];
        o.plan.dest = DestState::SymlinkToDir;
        o.plan.target = "d".into();
        o.plan.sources = vec!["s".into(), "s/x".into()];
        let new = "1795777447.094707578";
        o.tree = vec![
            diff("td/s", Field::Mtime, "28268838.823021733", new),
            diff("td/s/sub", Field::Mtime, "28268838.823021733", new),
        ];
        assert!(replaced_times(&mut o));
        assert_eq!(
            o.tree,
            vec![diff("td/s/sub", Field::Mtime, "28268838.823021733", new)]
        );

        // Without --parents the later source is copied into the target, not below.
        o.plan.opts = vec!["archive"];
        o.tree = vec![diff("td/s", Field::Mtime, "28268838.823021733", new)];
        assert!(!replaced_times(&mut o));
    }

    #[test]
    fn a_replaced_symlink_leaves_the_file_it_leads_to_as_it_was() {
        let mut o = outcome("", "");
        o.tree = vec![
            diff("s/l", Field::Type, "symlink", "file"),
            diff("s/x", Field::Size, "5000", "6786"),
            diff(
                "s/x",
                Field::Mtime,
                "1795772989.276459428",
                "1701490311.647083053",
            ),
            diff("s/y", Field::Size, "5000", "6786"),
        ];
        o.through = vec!["s/x".into()];
        assert!(symlink_replaced(&mut o));
        let left: Vec<_> = o.tree.iter().map(|d| d.path.clone()).collect();
        assert_eq!(left, [Path::new("s/y")]);
    }

    /// `cp -rn s/a/ s/a s/a/` (s/a a symlink to ".."): cp makes the copy of ".." in it (as
    /// "s/a/a") and meets it there, and then skips the symlink s/a onto it under -n; mimeo
    /// refuses the copy first and copies the symlink there.
    #[test]
    fn a_later_source_where_cp_made_its_copy_into_itself_is_not_judged() {
        let ours = "cp: cannot copy a directory, 's/a/', into itself, 's/a/a'\n";
        let cp = "cp: will not create hard link 's/a/a/a' to directory 's/a/a'\n";
        let mut o = outcome(cp, ours);
        o.plan.target = "s/a/".into();
        o.tree = vec![
            diff("a", Field::Type, "directory", "symlink"),
            diff("a/f", Field::Presence, "file", "absent"),
            diff("g", Field::Type, "directory", "symlink"),
        ];
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stderr, ours);
        assert_eq!(o.tree, vec![diff("g", Field::Type, "directory", "symlink")]);
        // Where mimeo has the directory and cp the symlink, it is not this difference.
        let mut o = outcome(cp, ours);
        o.tree = vec![diff("a", Field::Type, "symlink", "directory")];
        into_itself(&mut o);
        assert_eq!(o.tree.len(), 1);
    }

    /// `cp -a A/i A s A/i` (A = `s/a\a`): cp walks A and meets A/i, named first, below it,
    /// and s meets A so, each refused as a hard link to the directory copied first, before it
    /// reaches its copy; mimeo refuses each as a copy into itself. cp quotes the names below
    /// the copy in other pieces than the copy itself (fuzz seed 0xe1e271a55fc1c43a).
    #[test]
    fn a_directory_named_before_met_below_a_copy_into_itself_is_matched_unquoted() {
        let a = r"'s/a'$'\a'";
        let ai = r"'s/a'$'\a''/i'";
        let first = format!("cp: cannot copy a directory, {ai}, into itself, 's/a'$'\\a''/i/i'\n");
        let ours = format!(
            "cp: cannot copy a directory, 's', into itself, 's/a'$'\\a''/i/s'\n{first}\
             cp: cannot copy a directory, {a}, into itself, 's/a'$'\\a''/i/a'$'\\a'\n"
        );
        let cp = format!(
            "{first}cp: will not create hard link 's/a'$'\\a''/i/a'$'\\a''/i' to directory \
             's/a'$'\\a''/i/i'\ncp: will not create hard link 's/a'$'\\a''/i/s/a'$'\\a' to \
             directory 's/a'$'\\a''/i/a'$'\\a'\n"
        );
        let mut o = outcome(&cp, &ours);
        o.plan.target = "s/a\x07/i".into();
        o.tree = vec![
            diff("s/a\x07/i/i", Field::Presence, "directory", "absent"),
            diff("s/a\x07/i/s", Field::Presence, "directory", "absent"),
        ];
        assert!(into_itself(&mut o));
        let sorted = |t: &str| {
            let mut v: Vec<_> = t.lines().map(str::to_string).collect();
            v.sort();
            v
        };
        assert_eq!(sorted(&o.cp.stderr), sorted(&ours));
        assert!(o.tree.is_empty());
    }

    /// `cp -pR s/. s/. s/f s/d/6` as a user: cp fills s/d/6 with its copy into itself, so the
    /// later s/f finds its read-only copy there and cannot open it; mimeo refused the copy
    /// first and copies s/f (fuzz seed 0x4134fd71ec297845). A line about another place stays.
    #[test]
    fn a_later_source_into_a_copy_into_itself_named_with_a_dot_is_not_judged() {
        let refused = "cp: cannot copy a directory, 's/.', into itself, 's/d/6/.'\n";
        let twice = "cp: warning: source directory 's/.' specified more than once\n";
        let denied = "cp: cannot create regular file 's/d/6/f': Permission denied\n";
        let other = "cp: cannot create regular file 's/d/f': Permission denied\n";
        let ours = format!("{refused}{twice}");
        let mut o = outcome(&format!("{refused}{twice}{denied}"), &ours);
        o.plan.target = "s/d/6".into();
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stderr, ours);
        let mut o = outcome(&format!("{refused}{twice}{other}"), &ours);
        o.plan.target = "s/d/6".into();
        into_itself(&mut o);
        assert_eq!(o.cp.stderr, format!("{refused}{twice}{other}"));
    }

    /// `cp -RL s/. s d`, with `s/qui` and `s/z` symlinks to `..` and `d` one to a directory
    /// there: cp walks `s/.` in inode order, through `qui` into the copy, and stops the whole
    /// source where it meets it; mimeo's parallel walk stops there too, after going through
    /// `z`. What each says below the source on the way, named through its dot, is not judged
    /// (fuzz seeds 0x280fddb6e9f42b15, 0x294ab18b49cdb72b, 0xc3b59596a830a9c8); a line about
    /// another source is.
    #[test]
    fn what_each_walk_met_below_a_source_named_with_a_dot_is_not_judged() {
        let refused = "cp: cannot copy a directory, 's/.', into itself, 'd/.'\n";
        let later = "cp: cannot overwrite non-directory 'd/s' with directory 's'\n";
        let cyc = |n: &str| format!("cp: cannot copy cyclic symbolic link 's/./{n}/ls'\n");
        let cp = format!("{refused}{}{later}", cyc("qui"));
        let stat = "cp: cannot stat 's/./a': No such file or directory\n";
        let ours = format!("{refused}{}{}{stat}{later}", cyc("z"), cyc("qui"));
        let mut o = outcome(&cp, &ours);
        o.plan.target = "d".into();
        into_itself(&mut o);
        // A line both say stays on both sides.
        assert_eq!(o.cp.stderr, format!("{refused}{}{later}", cyc("qui")));
        assert_eq!(o.ours.stderr, o.cp.stderr);
        let mut o = outcome(&cp, &format!("{refused}{}{later}", cyc("z")));
        o.plan.target = "d".into();
        into_itself(&mut o);
        assert_eq!(o.cp.stderr, format!("{refused}{later}"));
        assert_eq!(o.ours.stderr, o.cp.stderr);
        // A line about another source is still judged.
        let other = "cp: cannot stat 'f': Permission denied\n";
        let mut o = outcome(&format!("{refused}{other}"), refused);
        o.plan.target = "d".into();
        into_itself(&mut o);
        assert_ne!(o.ours.stderr, o.cp.stderr);
    }

    /// `cp -as --parents s/p/ s/. d` (s/p a symlink to ".."): cp makes d/s/p, its copy into
    /// itself, so the later s/. finds a directory there for the symlink p and cannot overwrite
    /// it; mimeo refused the copy first, so nothing is there and -s refuses the relative
    /// symlink. Both name it through the dot (fuzz seed 0x583ee2d386b6b79). A line about
    /// another name through the dot stays.
    #[test]
    fn a_later_source_named_through_a_dot_onto_a_copy_into_itself_is_not_judged() {
        let refused = "cp: cannot copy a directory, 's/p/', into itself, 'd/s/p'\n";
        let other = "cp: d/s/./h: can make relative symbolic links only in current directory\n";
        let cp = format!(
            "{refused}cp: cannot overwrite directory 'd/s/./p' with non-directory\n{other}"
        );
        let ours = format!(
            "{refused}cp: 'd/s/./p': can make relative symbolic links only in current \
             directory\n{other}"
        );
        let mut o = outcome(&cp, &ours);
        o.plan.target = "d".into();
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stderr, format!("{refused}{other}"));
        assert_eq!(o.ours.stderr, o.cp.stderr);
        // Another name through the dot is still judged.
        let cp = format!("{refused}{other}");
        let ours = format!(
            "{refused}cp: d/s/./g: can make relative symbolic links only in current directory\n{other}"
        );
        let mut o = outcome(&cp, &ours);
        o.plan.target = "d".into();
        into_itself(&mut o);
        assert_ne!(o.ours.stderr, o.cp.stderr);
    }

    /// `cp -a f /c/s/. s/x f -R s/x` as a user: cp fills its copy of `/c/s/.` into itself in
    /// directory order and says on the way that it cannot open `/c/s/./x/w`; mimeo refused
    /// the copy first. The name keeps the source's dot (fuzz seed 0xf1ef782927a7cad1). A line
    /// about a file outside the source stays.
    #[test]
    fn a_line_below_a_source_named_with_a_dot_is_not_judged() {
        let refused = "cp: cannot copy a directory, '/c/s/.', into itself, 's/x/.'\n\
                       cp: cannot copy a directory, 's/x', into itself, 's/x/x'\n";
        let twice = "cp: warning: source file 'f' specified more than once\n";
        let denied =
            |name: &str| format!("cp: cannot open '{name}' for reading: Permission denied\n");
        let ours = format!("{refused}{twice}");
        let judged = |cp: String| {
            let mut o = outcome(&cp, &ours);
            o.plan.target = "s/x".into();
            o.plan.dest = DestState::InsideSource;
            o.plan.sources = vec!["f".into(), "/c/s/.".into(), "s/x".into(), "f".into()];
            let applied = into_itself(&mut o);
            (applied, o.cp.stderr)
        };
        let below = format!("{refused}{}{twice}", denied("/c/s/./x/w"));
        assert_eq!(judged(below), (true, ours.clone()));
        let outside = format!("{refused}{}{twice}", denied("/c/g"));
        assert_eq!(judged(outside.clone()).1, outside);
    }

    /// `cp -a --backup=simple --parents s s/x/v s`: cp makes s/s/x/v in its copy into itself,
    /// then backs it up for the later source, as ./s/x/v~ (9.1's simple backup named from the
    /// working directory); mimeo refused the copy, so nothing was there to back up (fuzz seed
    /// 0x1f08dc4dbe45b4db).
    #[test]
    fn a_backup_cp_made_of_its_copy_into_itself_is_not_judged() {
        let err = "cp: cannot copy a directory, 's', into itself, 's/s'\n";
        let tree = vec![diff("s/x/v~", Field::Presence, "file", "absent")];
        let mut o = outcome(err, err);
        o.plan.target = "s".into();
        o.plan.opts = vec!["archive", "parents", "backup"];
        o.tree = tree.clone();
        assert!(into_itself(&mut o));
        assert!(o.tree.is_empty(), "{:?}", o.tree);
        // Not without backups, nor where the backup would not be in the copy.
        let mut o = outcome(err, err);
        o.plan.target = "s".into();
        o.plan.opts = vec!["archive", "parents"];
        o.tree = tree;
        into_itself(&mut o);
        assert_eq!(o.tree.len(), 1);
        let mut o = outcome(err, err);
        o.plan.target = "s".into();
        o.plan.opts = vec!["archive", "parents", "backup"];
        o.tree = vec![diff("x/v~", Field::Presence, "file", "absent")];
        into_itself(&mut o);
        assert_eq!(o.tree.len(), 1);
    }

    /// `cp -rv s s/g/d` as a user who may not list `s/g`: cp makes `s/g/d` and copies the
    /// rest of `s` into it, but cannot enter `s/g`, so never meets the copy; mimeo refuses
    /// it first.
    #[test]
    fn a_copy_into_itself_below_a_directory_cp_cannot_list_is_refused_first() {
        let ours = "cp: cannot copy a directory, 's', into itself, 's/g/d'\n";
        let cp = "cp: cannot access 's/g': Permission denied\n";
        let mut o = outcome(cp, ours);
        o.cp.stdout = "'s' -> 's/g/d'\n's/f' -> 's/g/d/f'\n".into();
        o.tree = vec![
            diff("s/g", Field::Mtime, "2", "1"),
            diff("s/g/d", Field::Presence, "directory", "absent"),
        ];
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stderr, ours);
        assert_eq!(o.cp.stdout, "");
        assert!(o.tree.is_empty(), "{:?}", o.tree);
        // A directory cp cannot list elsewhere (not between the source and the copy), or
        // the copy itself, is not why cp did not meet it.
        for cp in [
            "cp: cannot access 't': Permission denied\n",
            "cp: cannot access 's/g/d': Permission denied\n",
            "cp: cannot access 's/h': Permission denied\n",
        ] {
            let mut o = outcome(cp, ours);
            into_itself(&mut o);
            assert_eq!(o.cp.stderr, cp);
        }
    }

    /// The same with the source named absolutely, `cp -rv /p/case/s s/g` (fuzz seed
    /// 0x2d8a5511a234c89d, as nobody, `s/g` mode 0300): cp names the directory it cannot
    /// list absolutely and the copy relatively; they are compared in one form.
    #[test]
    fn a_copy_into_itself_of_an_absolute_source_below_an_unlisted_directory_is_refused_first() {
        let ours = "cp: cannot copy a directory, '/p/case/s', into itself, 's/g/s'\n";
        let cp = "cp: cannot access '/p/case/s/g': Permission denied\n";
        let mut o = outcome(cp, ours);
        o.plan.target = "s/g".into();
        o.plan.sources = vec!["/p/case/s".into()];
        o.cp.stdout = "'/p/case/s' -> 's/g/s'\n'/p/case/s/f' -> 's/g/s/f'\n".into();
        o.tree = vec![diff("s/g/s", Field::Presence, "directory", "absent")];
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stderr, ours);
        assert_eq!(o.cp.stdout, "");
        assert!(o.tree.is_empty(), "{:?}", o.tree);
        // Outside the place, or elsewhere in it, it is not the directory above the copy.
        for cp in [
            "cp: cannot access '/q/case/s/g': Permission denied\n",
            "cp: cannot access '/p/case/s/h': Permission denied\n",
        ] {
            let mut o = outcome(cp, ours);
            into_itself(&mut o);
            assert_eq!(o.cp.stderr, cp);
        }
    }

    /// The same with the source named through a symlink to the place, `cp -R s/l/ s/g/d`
    /// (fuzz seed 0xdfc3e328f3aa4ec8, as nobody, `s/g` mode 0300): cp names the directory it
    /// cannot list through the source's name (`s/l/s/g`), which leads to `s/g`, above the copy.
    #[test]
    fn a_copy_into_itself_of_a_source_named_through_a_symlink_below_an_unlisted_directory_is_refused_first()
     {
        let ours = "cp: cannot copy a directory, 's/l/', into itself, 's/g/d'\n";
        let cp = "cp: cannot access 's/l/s/g': Permission denied\n";
        let through = |cp: &str, leads: &str| {
            let mut o = outcome(cp, ours);
            o.plan.target = "s/g/d".into();
            o.plan.sources = vec!["s/l/".into()];
            o.source_leads = vec![("s/l/".into(), leads.into())];
            o.tree = vec![
                diff("s/g", Field::Mtime, "2", "1"),
                diff("s/g/d", Field::Presence, "directory", "absent"),
            ];
            o
        };
        let mut o = through(cp, "");
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stderr, ours);
        assert!(o.tree.is_empty(), "{:?}", o.tree);
        // Where the source leads elsewhere, or cp could not list another directory, it is
        // not the directory above the copy.
        for (cp, leads) in [
            (cp, "t"),
            ("cp: cannot access 's/l/s/h': Permission denied\n", ""),
            ("cp: cannot access 's/l/t/g': Permission denied\n", ""),
        ] {
            let mut o = through(cp, leads);
            into_itself(&mut o);
            assert_eq!(o.cp.stderr, cp, "{leads:?}");
        }
    }

    /// `cp -R s/. s/f` as a user who may write into an existing `s/f` but not list it (fuzz
    /// seed 0xbd2f723cfc1db6ab): the copy is `s/f` itself, which cp fills; it makes `s/f/f`
    /// but cannot enter `s/./f` to fill that, so never meets the copy. cp names the directory
    /// with the source's dot, mimeo the copy with the target's.
    #[test]
    fn a_copy_into_itself_of_a_dot_into_a_directory_cp_cannot_list_is_refused_first() {
        let ours = "cp: cannot copy a directory, 's/.', into itself, 's/f/.'\n";
        let cp = "cp: cannot access 's/./f': Permission denied\n";
        let mut o = outcome(cp, ours);
        o.plan.target = "s/f".into();
        o.plan.sources = vec!["s/.".into()];
        o.tree = vec![
            diff("s/f", Field::Mtime, "2", "1"),
            diff("s/f/f", Field::Presence, "directory", "absent"),
        ];
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stderr, ours);
        assert!(o.tree.is_empty(), "{:?}", o.tree);
        // Not another directory, nor the copy named without the dot (one cp makes).
        for (cp, ours) in [
            ("cp: cannot access 's/./g': Permission denied\n", ours),
            ("cp: cannot access 't/./f': Permission denied\n", ours),
            (
                "cp: cannot access 's/./f': Permission denied\n",
                "cp: cannot copy a directory, 's/.', into itself, 's/f'\n",
            ),
        ] {
            let mut o = outcome(cp, ours);
            into_itself(&mut o);
            assert_eq!(o.cp.stderr, cp);
        }
    }

    /// `cp -r s s/x` as a user who may not write into an existing `s/x`: cp fails to make
    /// what it copies there before it meets the copy; mimeo refuses first.
    #[test]
    fn a_copy_into_itself_that_cp_cannot_fill_is_refused_first() {
        let ours = "cp: cannot copy a directory, 's', into itself, 's/x'\n";
        let cp = "cp: cannot create directory 's/x/x': Permission denied\n";
        let mut o = outcome(cp, ours);
        assert!(into_itself(&mut o));
        assert_eq!((o.cp.stderr.as_str(), o.ours.stderr.as_str()), (ours, ours));
        // Elsewhere it is not the same failure.
        let cp = "cp: cannot create directory 't/x': Permission denied\n";
        let mut o = outcome(cp, ours);
        assert!(!into_itself(&mut o));
        // A copy whose name ends in an escape: cp quotes what is below it in pieces (fuzz
        // seed 0x90a1652c1cf2f530).
        let ours = "cp: cannot copy a directory, 's/.', into itself, 's/k'$'\\r'\n";
        let cp = "cp: cannot create regular file 's/k'$'\\r''/f': Permission denied\n";
        let mut o = outcome(cp, ours);
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stderr, ours);
    }

    /// `cp -a s/h s/. s/h/ s/h --strip-trailing-slashes` as the owner of a 0111 `s/h`: cp fails
    /// to make `s/h/h` and forgets it, fills nothing of `s/.` into `s/h/.` but gives it the
    /// mode of `s/.`, then makes `s/h/h` for the third source and meets it there; mimeo
    /// refuses `s/h` twice (fuzz seed 0x4fc690aece071bc1).
    #[test]
    fn a_copy_into_itself_named_again_after_cp_failed_to_make_it_is_refused_again() {
        let ours = "cp: cannot copy a directory, 's/h', into itself, 's/h/h'\n\
                    cp: cannot copy a directory, 's/.', into itself, 's/h/.'\n\
                    cp: cannot copy a directory, 's/h', into itself, 's/h/h'\n";
        let cp = "cp: cannot create directory 's/h/h': Permission denied\n\
                  cp: cannot create directory 's/h/./h': Permission denied\n\
                  cp: cannot create hard link 's/h/./g' to 's/./g': Permission denied\n\
                  cp: cannot copy a directory, 's/h', into itself, 's/h/h'\n";
        let mut o = outcome(cp, ours);
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stderr, o.ours.stderr);
        // cp's one line does not stand for mimeo's two where cp said nothing else of it.
        let cp = "cp: cannot copy a directory, 's/h', into itself, 's/h/h'\n\
                  cp: cannot copy a directory, 's/.', into itself, 's/h/.'\n";
        let mut o = outcome(cp, ours);
        into_itself(&mut o);
        assert_ne!(o.cp.stderr, o.ours.stderr);
    }

    /// `cp -f -l -r -bi s/e s/g ls s/e` as a user (fuzz seed 0xf94b7e74ad1691e3): both ask
    /// about s/e/g; cp's question, without a newline, is followed on its line by its failure
    /// to make the copy of ls, which mimeo refused as a copy into itself. The failure stands
    /// for mimeo's refusal; the question stays, as both asked it.
    #[test]
    fn a_question_glued_before_cps_failure_to_make_the_copy_stays() {
        let refused = "cp: cannot copy a directory, 'ls', into itself, 's/e/ls'\n";
        let asked = "cp: overwrite 's/e/g'? ";
        let cp = format!("{asked}cp: cannot create directory 's/e/ls': Permission denied\n");
        let ours = format!("{refused}{asked}");
        let mut o = outcome(&cp, &ours);
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stderr, format!("{asked}{refused}"));
    }

    /// `cp -ri f s/a/ d` (s/a a symlink to "..", so the copy d/a is in the source; d/f in
    /// the way, no answer): both ask about d/f once. cp's question has no newline, so cp's
    /// next message, about a file it met in its copy into itself, follows on the same line;
    /// that message is not judged, the question is (fuzz seed 0xd2660c6cc608f70b).
    #[test]
    fn a_question_before_a_line_of_the_copy_into_itself_is_still_judged() {
        let refused = "cp: cannot copy a directory, 's/a/', into itself, 'd/a'\n";
        let asked = "cp: overwrite 'd/f'? ";
        let cp =
            format!("{asked}cp: cannot open 's/a/s/x' for reading: Permission denied\n{refused}");
        let ours = format!("{refused}{asked}");
        let mut o = outcome(&cp, &ours);
        o.plan.opts = vec!["recursive", "interactive"];
        o.plan.target = "d".into();
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stderr, format!("{asked}{refused}"));
        assert!(message_order(&mut o));
        assert_eq!(o.cp.stderr, o.ours.stderr);
        // A question mimeo did not ask is still a difference.
        let mut o = outcome(&cp, refused);
        o.plan.opts = vec!["recursive", "interactive"];
        o.plan.target = "d".into();
        into_itself(&mut o);
        message_order(&mut o);
        assert_ne!(o.cp.stderr, o.ours.stderr);
        // Nor is one mimeo asked and cp did not hidden.
        let mut o = outcome(
            &format!("cp: cannot open 's/a/s/x' for reading: Permission denied\n{refused}"),
            &ours,
        );
        o.plan.opts = vec!["recursive", "interactive"];
        o.plan.target = "d".into();
        into_itself(&mut o);
        message_order(&mut o);
        assert_ne!(o.cp.stderr, o.ours.stderr);
    }

    /// `cp -a --parents ls s ls ls` (ls the case's symlink to s): the copy 'ls/s' that both
    /// refuse is s/s, where cp made what it copied before it met the copy.
    #[test]
    fn a_copy_into_itself_through_the_source_symlink_is_where_it_leads() {
        let refused = "cp: cannot copy a directory, 's', into itself, 'ls/s'\n";
        let mut o = outcome(refused, refused);
        o.plan.opts = vec!["archive", "parents"];
        o.plan.sources = vec!["ls".into(), "s".into(), "ls".into()];
        o.tree = vec![
            diff("s/s/f", Field::Presence, "file", "absent"),
            diff("s/g", Field::Presence, "file", "absent"),
        ];
        assert!(into_itself(&mut o));
        assert_eq!(o.tree, vec![diff("s/g", Field::Presence, "file", "absent")]);
    }

    /// `cp -r s/a s/. s/a` (a directory in s): cp refuses s/a into itself, and meets s/a
    /// again below s/., where it went, so calls s/. named twice; mimeo refuses both first.
    /// `cp -r --parents s/a s s/a`: cp fails to make s/a/s, which mimeo refuses first.
    #[test]
    fn a_copy_into_itself_that_cp_meets_as_named_twice_is_refused_first() {
        let a = "cp: cannot copy a directory, 's/a', into itself, 's/a/a'\n";
        let dot = "cp: cannot copy a directory, 's/.', into itself, 's/a/.'\n";
        let cp = format!("{a}cp: warning: source directory 's/.' specified more than once\n");
        let mut o = outcome(&cp, &format!("{dot}{a}"));
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stderr, format!("{a}{dot}"));
        let s = "cp: cannot copy a directory, 's', into itself, 's/a/s'\n";
        let cp = format!("{a}cp: cannot create directory 's/a/s': File exists\n");
        let mut o = outcome(&cp, &format!("{s}{a}"));
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stderr, format!("{a}{s}"));
        let cp = format!("{a}cp: will not create hard link 's/a/s/a' to directory 's/a/a'\n");
        let mut o = outcome(&cp, &format!("{s}{a}"));
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stderr, format!("{a}{s}"));
        // Another source named twice is not that.
        let cp = format!("{a}cp: warning: source directory 't' specified more than once\n");
        let mut o = outcome(&cp, &format!("{dot}{a}"));
        into_itself(&mut o);
        assert_ne!(o.cp.stderr, o.ours.stderr);
    }

    /// `cp -a --attributes-only s s` as a user who may not read a directory's xattrs: cp
    /// names them (by the attribute alone) where it copies them into the copy, which mimeo
    /// refuses first; a line mimeo says too stays.
    #[test]
    fn xattrs_cp_names_in_a_copy_into_itself_are_taken_out() {
        let line = "cp: cannot copy a directory, 's', into itself, 's/s'\n";
        let get = "cp: getting attribute 'user.k' of 'user.k': Permission denied\n";
        let set = "cp: setting attribute 'user.j' for 'user.j': Permission denied\n";
        let mut o = outcome(&format!("{line}{get}{set}"), line);
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stderr, line);
        let mut o = outcome(&format!("{line}{get}"), &format!("{line}{get}"));
        into_itself(&mut o);
        assert_eq!(o.cp.stderr, o.ours.stderr);
        assert_eq!(o.cp.stderr, format!("{line}{get}"));
        // Without a copy into itself it stays.
        let mut o = outcome(get, "");
        assert!(!into_itself(&mut o));
        assert_eq!(o.cp.stderr, get);
    }

    #[test]
    fn a_quote_cp_cuts_may_leave_what_followed_its_buffer_in_its_place() {
        let ours = "cp: cannot overwrite non-directory 'd' with directory 'a'\\''b'$'\\r'\n";
        let cut = "cp: cannot overwrite non-directory 'd' with directory 'a'\\''b'$'\\r\n";
        let filled =
            "cp: cannot overwrite non-directory 'd' with directory 'a'\\''b'$'\\rQ\u{fffd}\u{1}\n";
        assert!(quote_cut(ours, cut));
        assert!(quote_cut(ours, filled));
        // Other bytes for a quote that does not close an escape are a real difference.
        let plain = "cp: cannot stat 'a'\\''b': No such file\n";
        assert!(!quote_cut(
            plain,
            "cp: cannot stat 'a'\\''bX: No such file\n"
        ));
        assert!(!quote_cut(
            ours,
            "cp: cannot overwrite non-directory 'd' with directory 'x'\n"
        ));

        let mut o = outcome(filled, ours);
        assert!(quote_overrun(&mut o));
        assert_eq!(o.cp.stderr, ours);
    }

    #[test]
    fn names_are_unquoted_as_cp_quotes_them() {
        let un = |q: &str| unquote(q).map(|p| p.into_os_string().into_encoded_bytes());
        assert_eq!(un("'d/s'"), Some(b"d/s".to_vec()));
        assert_eq!(un("d/s"), Some(b"d/s".to_vec()));
        assert_eq!(un("'d'$'\\n''x/.'"), Some(b"d\nx/.".to_vec()));
        assert_eq!(un("'it'\\''s'"), Some(b"it's".to_vec()));
        assert_eq!(un("'d'$'\\377\\033'']0'"), Some(b"d\xff\x1b]0".to_vec()));
        assert_eq!(un("'open"), None);
    }

    /// Both stop a source under -L once they meet the copy in it: what each said of it
    /// before then (in its own order) is taken out, on both sides.
    #[test]
    fn a_copy_met_under_dereference_takes_out_what_either_said_of_it() {
        let line = "cp: cannot copy a directory, 's', into itself, 'd'$'\\n''x/s'\n";
        let cp = format!("{line}cp: cannot copy cyclic symbolic link 's/a/ls'\n");
        let ours = format!("{line}cp: cannot copy cyclic symbolic link 's/b/ls'\nelse\n");
        let mut o = outcome(&cp, &ours);
        o.tree = vec![
            diff("d\nx/s/b", Field::Presence, "absent", "directory"),
            diff("other", Field::Presence, "absent", "file"),
        ];
        assert!(into_itself(&mut o));
        assert_eq!(
            (o.cp.stderr.as_str(), o.ours.stderr.as_str()),
            (line, &*format!("{line}else\n"))
        );
        let left: Vec<_> = o.tree.iter().map(|d| d.path.clone()).collect();
        assert_eq!(left, [Path::new("other")]);
    }

    /// `cp -l -u --backup=simple s/x s/x d`: cp 9.1 puts the backup in the working directory,
    /// mimeo in d; -u must not take mimeo's half of the pair first.
    #[test]
    fn a_simple_backup_in_place_is_allowed_also_with_update() {
        let mut o = outcome("", "");
        o.plan.opts = vec!["link", "update", "backup"];
        o.plan.dest = DestState::Dir;
        o.tree = vec![
            diff("x~", Field::Presence, "symlink", "absent"),
            diff("d/x~", Field::Presence, "absent", "symlink"),
        ];
        for a in ALLOWLIST {
            (a.apply)(&mut o);
        }
        assert!(o.tree.is_empty(), "{:?}", o.tree);
    }

    /// `cp -r --backup=simple --parents s/x s/ s/. d`: the third source's walk backs up the
    /// d/s/x the first made, which cp 9.1 moves to ./s/x~, into the source directory s
    /// (whose time changes); mimeo keeps it as d/s/x~ (fuzz seed 0x7a01675d5e557156).
    #[test]
    fn a_simple_backup_cp_moves_into_a_source_directory_under_parents_is_allowed() {
        let err = "cp: cannot create directory 'd/s': File exists\n";
        let tree = |beside: &str| {
            vec![
                diff(
                    "s",
                    Field::Mtime,
                    "1795793822.578843305",
                    "4131549655.139126696",
                ),
                diff("s/x~", Field::Presence, "symlink", "absent"),
                diff(beside, Field::Presence, "absent", "symlink"),
                diff(
                    "t",
                    Field::Mtime,
                    "1795793822.578843305",
                    "4131549655.139126696",
                ),
            ]
        };
        let case = |opts: Vec<&'static str>, beside: &str| {
            let mut o = outcome(err, err);
            o.plan.opts = opts;
            o.plan.dest = DestState::SymlinkToDir;
            o.tree = tree(beside);
            simple_backup_in_place(&mut o);
            o.tree
        };
        let parents = vec!["recursive", "parents", "backup"];
        let kept = case(parents.clone(), "td/s/x~");
        assert_eq!(kept, vec![tree("td/s/x~")[3].clone()]);
        // Not without --parents, nor for a backup elsewhere below the target.
        assert_eq!(case(vec!["recursive", "backup"], "td/s/x~").len(), 4);
        assert_eq!(case(parents, "td/u/x~").len(), 4);
    }

    /// `cp -a -b --parents -L s/ s/x ls d` (ls to s, d to td): the second name is linked over
    /// its group's copy d/s/x, which cp 9.1 first moved to ./s/x~ (into the source), so the
    /// copy is lost and cannot be renamed back; the walk through ls then fails to link d/ls/x
    /// to it and copies the backup as td/ls/x~. mimeo, as cp with numbered backups, puts the
    /// copy back (fuzz seed 0x710afaa9c70bef9c).
    #[test]
    fn a_copy_cp_moves_away_before_linking_a_name_over_it_is_allowed_under_parents() {
        let own = "cp: cannot create hard link 'd/s/x' to 'd/s/x': No such file or directory\n";
        let unbackup = "cp: cannot un-backup 'd/s/x': No such file or directory\n";
        let later = "cp: cannot create hard link 'd/ls/x' to 'd/s/x': No such file or directory\n";
        let (now, then) = ("1795796323.667242718", "1676380905.143574884");
        let tree = || {
            vec![
                diff("s", Field::Mtime, now, then),
                diff("s/x~", Field::Presence, "file", "absent"),
                diff("td/ls", Field::Mtime, now, then),
                diff("td/ls/x", Field::Presence, "absent", "file"),
                diff("td/ls/x~", Field::Presence, "file", "absent"),
                diff("td/s/x", Field::Presence, "absent", "file"),
            ]
        };
        let case = |opts: Vec<&'static str>, cp: String, tree: Vec<Difference>| {
            let mut o = outcome(&cp, own);
            o.plan.opts = opts;
            o.plan.dest = DestState::SymlinkToDir;
            o.plan.target = "d".into();
            o.tree = tree;
            for a in ALLOWLIST {
                (a.apply)(&mut o);
            }
            o
        };
        let parents = vec!["archive", "backup", "parents", "dereference", "recursive"];
        let o = case(parents.clone(), format!("{later}{own}{unbackup}"), tree());
        assert!(o.tree.is_empty(), "{:?}", o.tree);
        assert_eq!(o.cp.stderr, o.ours.stderr);
        // Not without --parents, nor without the un-backup line.
        let o = case(
            vec!["archive", "backup"],
            format!("{own}{unbackup}"),
            tree(),
        );
        assert_eq!(o.tree.len(), 6);
        let o = case(parents.clone(), format!("{later}{own}"), tree());
        assert_eq!(o.tree.len(), 6);
        // Nor where the lost copy is there on both sides.
        let mut kept = tree();
        kept.pop();
        let o = case(parents, format!("{later}{own}{unbackup}"), kept);
        assert_eq!(o.tree.len(), 5);
        assert!(o.cp.stderr.contains(unbackup));
    }

    /// `cp --backup=simple -s f d`: cp 9.1 moves d/f to ./f~, fails to make the relative link,
    /// and cannot rename d/f~ back; mimeo leaves d/f where it was.
    #[test]
    fn a_simple_backup_cp_cannot_rename_back_is_allowed_with_its_line() {
        let refused = "cp: 'd/f': can make relative symbolic links only in current directory\n";
        let unbackup = "cp: cannot un-backup 'd/f': No such file or directory\n";
        let mut o = outcome(&format!("{refused}{unbackup}"), refused);
        o.plan.opts = vec!["symbolic-link", "backup"];
        o.plan.dest = DestState::Dir;
        o.tree = vec![
            diff("d/f", Field::Presence, "absent", "file"),
            diff("f~", Field::Presence, "file", "absent"),
        ];
        for a in ALLOWLIST {
            (a.apply)(&mut o);
        }
        assert!(o.tree.is_empty(), "{:?}", o.tree);
        assert_eq!(o.cp.stderr, o.ours.stderr);
        // Not where the entry left in place is of another type than the one cp moved.
        let mut o = outcome(&format!("{refused}{unbackup}"), refused);
        o.plan.opts = vec!["symbolic-link", "backup"];
        o.tree = vec![
            diff("d/f", Field::Presence, "absent", "fifo"),
            diff("f~", Field::Presence, "file", "absent"),
        ];
        assert!(!simple_backup_in_place(&mut o));
        assert_eq!(o.tree.len(), 2);
        assert!(o.cp.stderr.contains(unbackup));
    }

    /// `cp --backup=never -S- --reflink p d` (d/p a symlink, p a FIFO): cp 9.1 moves d/p to
    /// ./p-, makes d/p, fails to clone into it, and cannot rename d/p- back; mimeo leaves d/p
    /// where it was (fuzz seed 0xc24084783bbf307b).
    #[test]
    fn a_simple_backup_cp_cannot_rename_back_after_a_failed_clone_is_allowed() {
        let clone = "cp: failed to clone 'd/p' from 'p': Invalid argument\n";
        let unbackup = "cp: cannot un-backup 'd/p': No such file or directory\n";
        let tree = |kept: &str| {
            vec![
                diff(
                    "",
                    Field::Mtime,
                    "1795784271.969870494",
                    "1500000000.000000000",
                ),
                diff("p-", Field::Presence, "symlink", "absent"),
                diff("td/p", Field::Type, "file", kept),
            ]
        };
        let mut o = outcome(&format!("{unbackup}{clone}"), clone);
        o.plan.opts = vec!["backup", "suffix", "reflink"];
        o.plan.dest = DestState::SymlinkToDir;
        o.tree = tree("symlink");
        for a in ALLOWLIST {
            (a.apply)(&mut o);
        }
        assert!(o.tree.is_empty(), "{:?}", o.tree);
        assert_eq!(o.cp.stderr, o.ours.stderr);
        // Not where the entry mimeo left in place is of another type than the one cp moved.
        let mut o = outcome(&format!("{unbackup}{clone}"), clone);
        o.plan.opts = vec!["backup", "suffix", "reflink"];
        o.tree = tree("fifo");
        assert!(!simple_backup_in_place(&mut o));
        assert!(o.cp.stderr.contains(unbackup));
    }

    /// `cp -a --backup=simple --reflink f d` (d/f a file, no clones on ext4): cp 9.1 moves d/f
    /// to ./f~, makes an empty d/f, fails to clone into it, and cannot rename the backup back;
    /// mimeo keeps d/f's data (fuzz seed 0x202a9ef2332db47).
    #[test]
    fn a_simple_backup_of_a_file_cp_cannot_rename_back_after_a_failed_clone_is_allowed() {
        let clone = "cp: failed to clone 'd/f' from 'f': Operation not supported\n";
        let unbackup = "cp: cannot un-backup 'd/f': No such file or directory\n";
        let fixed = "1500000000.000000000";
        let now = "1795787192.608714072";
        let tree = |size: &str| {
            vec![
                diff("", Field::Mtime, now, fixed),
                diff("d/f", Field::Mode, "0600", "0644"),
                diff("d/f", Field::Mtime, now, fixed),
                diff("d/f", Field::Atime, now, fixed),
                diff("d/f", Field::Size, size, "11"),
                diff("f~", Field::Presence, "file", "absent"),
            ]
        };
        let mut o = outcome(&format!("{unbackup}{clone}"), clone);
        o.plan.opts = vec!["p", "R", "archive", "backup", "reflink"];
        o.plan.dest = DestState::Dir;
        o.tree = tree("0");
        for a in ALLOWLIST {
            (a.apply)(&mut o);
        }
        assert!(o.tree.is_empty(), "{:?}", o.tree);
        assert_eq!(o.cp.stderr, o.ours.stderr);
        // Not where cp's file there is not the empty one it made.
        let mut o = outcome(&format!("{unbackup}{clone}"), clone);
        o.plan.opts = vec!["backup", "reflink"];
        o.tree = tree("5");
        assert!(!simple_backup_in_place(&mut o));
        assert!(o.cp.stderr.contains(unbackup));
        // Nor where the copy did not fail on a clone.
        let mut o = outcome(unbackup, "");
        o.plan.opts = vec!["backup", "reflink"];
        o.tree = tree("0");
        assert!(!simple_backup_in_place(&mut o));
    }

    /// `cp -L -b --parents --reflink lf lf d` (lf a symlink to a file, no clones on ext4): cp
    /// 9.1 leaves an empty d/lf where the first clone failed, moves it to ./lf~ to back it up
    /// for the second source, leaves another empty d/lf where that clone fails, and cannot
    /// rename the backup back; mimeo removes each file it failed to clone into, so the second
    /// source has nothing to back up (fuzz seed 0x929792030561d331).
    #[test]
    fn a_failed_clone_cp_backed_up_and_cannot_rename_back_is_allowed() {
        let clone = "cp: failed to clone 'd/lf' from 'lf': Operation not supported\n";
        let unbackup = "cp: cannot un-backup 'd/lf': No such file or directory\n";
        let tree = || {
            vec![
                diff(
                    "",
                    Field::Mtime,
                    "1795804532.174966581",
                    "1500000000.000000000",
                ),
                diff("d/lf", Field::Presence, "file", "absent"),
                diff("lf~", Field::Presence, "file", "absent"),
            ]
        };
        let twice = format!("{clone}{clone}");
        let mut o = outcome(&format!("{unbackup}{twice}"), &twice);
        o.plan.opts = vec!["dereference", "backup", "parents", "recursive", "reflink"];
        o.plan.dest = DestState::Dir;
        o.tree = tree();
        for a in ALLOWLIST {
            (a.apply)(&mut o);
        }
        assert!(o.tree.is_empty(), "{:?}", o.tree);
        assert_eq!(o.cp.stderr, o.ours.stderr);
        // Not where only one clone onto it failed: the file cp backed up was there before.
        let mut o = outcome(&format!("{unbackup}{clone}"), clone);
        o.plan.opts = vec!["dereference", "backup", "parents", "recursive", "reflink"];
        o.tree = tree();
        assert!(!simple_backup_in_place(&mut o));
        assert!(o.cp.stderr.contains(unbackup));
    }

    /// `cp -f -S- --reflink=always f f f d` under simple backups (no clones on ext4): cp 9.1
    /// leaves an empty d/f where the first clone fails, and for each later source moves the
    /// empty file there to ./f- (over the one before), fails to clone again, and cannot rename
    /// the backup back; mimeo removes each file it failed to clone into (fuzz seed
    /// 0x76f3f1674c5f9a13).
    #[test]
    fn a_failed_clone_cp_backed_up_twice_and_cannot_rename_back_is_allowed() {
        let clone = "cp: failed to clone 'd/f' from 'f': Operation not supported\n";
        let unbackup = "cp: cannot un-backup 'd/f': No such file or directory\n";
        let tree = || {
            vec![
                diff(
                    "",
                    Field::Mtime,
                    "1795813224.621746858",
                    "1500000000.000000000",
                ),
                diff("d/f", Field::Presence, "file", "absent"),
                diff("f-", Field::Presence, "file", "absent"),
            ]
        };
        let thrice = clone.repeat(3);
        let mut o = outcome(&format!("{unbackup}{unbackup}{thrice}"), &thrice);
        o.plan.opts = vec!["force", "recursive", "one-file-system", "suffix", "reflink"];
        o.plan.dest = DestState::Dir;
        o.tree = tree();
        for a in ALLOWLIST {
            (a.apply)(&mut o);
        }
        assert!(o.tree.is_empty(), "{:?}", o.tree);
        assert_eq!(o.cp.stderr, o.ours.stderr);
        // Not where fewer clones onto it failed than cp has lines for it.
        let twice = clone.repeat(2);
        let mut o = outcome(&format!("{}{twice}", unbackup.repeat(3)), &twice);
        o.plan.opts = vec!["force", "recursive", "one-file-system", "suffix", "reflink"];
        o.tree = tree();
        assert!(!simple_backup_in_place(&mut o));
        assert!(o.cp.stderr.contains(unbackup));
        // Nor where the lines name two destinations and only one pairs.
        let other = "cp: cannot un-backup 'd/g': No such file or directory\n";
        let mut o = outcome(&format!("{unbackup}{other}{thrice}"), &thrice);
        o.plan.opts = vec!["force", "recursive", "one-file-system", "suffix", "reflink"];
        o.tree = tree();
        assert!(!simple_backup_in_place(&mut o));
        assert!(o.cp.stderr.contains(unbackup));
    }

    /// `cp -uvb f f d`, where d/f is as new as f but of another size: mimeo replaces it, and
    /// leaves the second alone; cp skips the first and links d/f onto itself for the second.
    #[test]
    fn update_sizes_allows_a_question_about_an_unwritable_entry_cp_skipped() {
        let asked = "cp: unwritable 'd' (mode 0644, rw-r--r--); try anyway? ";
        let mut o = outcome("", asked);
        o.plan.opts = vec!["update", "interactive"];
        update_sizes(&mut o);
        assert_eq!(o.ours.stderr, "");
        // Not without -u.
        let mut o = outcome("", asked);
        o.plan.opts = vec!["interactive"];
        update_sizes(&mut o);
        assert_eq!(o.ours.stderr, asked);
    }

    /// `cp -uiR ls s s d`: the question mimeo asks where cp skipped follows another message.
    #[test]
    fn update_sizes_allows_a_question_after_a_message() {
        let denied = "cp: cannot open 's/q' for reading: Permission denied\n";
        let warned = "cp: warning: source directory 's' specified more than once\n";
        let cp = format!("{denied}{warned}");
        let ours = format!("{denied}cp: overwrite 'd/ls'? {warned}");
        let mut o = outcome(&cp, &ours);
        o.plan.opts = vec!["update", "interactive"];
        update_sizes(&mut o);
        assert_eq!(o.ours.stderr, cp);
    }

    #[test]
    fn update_sizes_allows_a_clone_that_cannot_be_made_where_cp_skipped() {
        let failed = "cp: failed to clone 'd' from 'f': Operation not supported\n";
        let mut o = outcome("", failed);
        o.cp.code = Some(0);
        o.ours.code = Some(1);
        o.plan.opts = vec!["update", "reflink"];
        assert!(update_sizes(&mut o));
        assert_eq!((o.ours.code, o.ours.stderr.as_str()), (Some(0), ""));
        // Not without --reflink, nor where cp failed to clone too.
        let mut o = outcome("", failed);
        o.plan.opts = vec!["update"];
        update_sizes(&mut o);
        assert_eq!(o.ours.stderr, failed);
        let mut o = outcome(failed, failed);
        o.plan.opts = vec!["update", "reflink"];
        update_sizes(&mut o);
        assert_eq!(o.ours.stderr, failed);
    }

    /// `cp -u -b f d/NAME` (NAME of 255 bytes, as new as f but of another size): mimeo
    /// replaces it where cp skips, and its backup's name is too long.
    #[test]
    fn update_sizes_allows_a_backup_name_too_long_where_cp_skipped() {
        let failed = "cp: cannot backup 'd/NNN': File name too long\n";
        for id in ["b", "backup", "suffix"] {
            let mut o = outcome("", failed);
            o.cp.code = Some(0);
            o.plan.opts = vec!["update", id];
            assert!(update_sizes(&mut o), "{id}");
            assert_eq!((o.ours.code, o.ours.stderr.as_str()), (Some(0), ""));
        }
        // Not without a backup, nor another failure to back up, nor where cp failed too.
        let mut o = outcome("", failed);
        o.plan.opts = vec!["update"];
        update_sizes(&mut o);
        assert_eq!(o.ours.stderr, failed);
        let denied = "cp: cannot backup 'd/f': Permission denied\n";
        let mut o = outcome("", denied);
        o.plan.opts = vec!["update", "backup"];
        update_sizes(&mut o);
        assert_eq!(o.ours.stderr, denied);
        let mut o = outcome(failed, failed);
        o.plan.opts = vec!["update", "backup"];
        update_sizes(&mut o);
        assert_eq!(o.ours.stderr, failed);
    }

    /// `cp -s -u --remove-destination s/f d` (d/f as new as s/f, of another size): mimeo
    /// removes d/f to replace it and cannot make the relative link, where cp skipped it.
    /// cp removes it first too where it replaces it (d/f older).
    #[test]
    fn update_sizes_allows_a_destination_removed_for_a_link_that_cannot_be_made() {
        let refused = "cp: 'd/f': can make relative symbolic links only in current directory\n";
        let gone = || vec![diff("td/f", Field::Presence, "file", "absent")];
        let mut o = outcome("", refused);
        o.plan.opts = vec!["update", "symbolic-link", "remove-destination"];
        o.tree = gone();
        assert!(update_sizes(&mut o));
        assert!(o.tree.is_empty(), "{:?}", o.tree);
        // `cp -a -u -s ls d` (ls a symlink, d/ls a FIFO): -P removes it first too.
        let mut o = outcome("", refused);
        o.plan.opts = vec!["update", "symbolic-link", "archive"];
        o.tree = vec![diff("d/ls", Field::Presence, "fifo", "absent")];
        assert!(update_sizes(&mut o));
        assert!(o.tree.is_empty(), "{:?}", o.tree);
        // Not without --remove-destination or -P, nor without a refusal taken out.
        let mut o = outcome("", refused);
        o.plan.opts = vec!["update", "symbolic-link"];
        o.tree = gone();
        update_sizes(&mut o);
        assert_eq!(o.tree.len(), 1);
        let mut o = outcome("", "");
        o.plan.opts = vec!["update", "symbolic-link", "remove-destination"];
        o.tree = gone();
        update_sizes(&mut o);
        assert_eq!(o.tree.len(), 1);
    }

    #[test]
    fn update_sizes_allows_cps_relink_of_a_source_named_again() {
        let mut o = outcome("", "");
        o.cp.code = Some(0);
        o.ours.code = Some(0);
        o.plan.opts = vec!["update", "backup", "verbose"];
        o.cp.stdout = "removed 'd/f'\n".into();
        o.ours.stdout = "'f' -> 'd/f'\n".into();
        assert!(update_sizes(&mut o));
        assert_eq!(o.cp.stdout, o.ours.stdout);
        // A line about another destination stays.
        let mut o = outcome("", "");
        o.plan.opts = vec!["update", "backup"];
        o.cp.stdout = "removed 'd/g'\n".into();
        o.ours.stdout = "'f' -> 'd/f'\n".into();
        update_sizes(&mut o);
        assert_ne!(o.cp.stdout, o.ours.stdout);
    }

    /// `cp -b -i -u -v /abs/f g /abs/f d`, d/f as new as f but of another size: mimeo asks
    /// about replacing it and, told no, leaves the second alone; cp skips the first and links
    /// d/f onto itself for the second ("removed 'd/f'", fuzz seed 0x704eb3a1cd1d4de9). Not a
    /// line about a destination mimeo did not ask about.
    #[test]
    fn update_sizes_allows_cps_relink_of_a_source_named_again_that_mimeo_asked_about() {
        let case = |asked: &str| {
            let mut o = outcome("", asked);
            o.plan.opts = vec!["update", "backup", "interactive", "verbose"];
            o.cp.stdout = "'g' -> 'd/g'\nremoved 'd/f'\n".into();
            o.ours.stdout = "'g' -> 'd/g'\n".into();
            update_sizes(&mut o);
            o
        };
        let o = case("cp: overwrite 'd/f'? ");
        assert_eq!(o.cp.stdout, o.ours.stdout);
        assert_eq!(o.ours.stderr, "");
        let o = case("cp: overwrite 'd/e'? ");
        assert_ne!(o.cp.stdout, o.ours.stdout);
        // As a user who may not link the file: cp's link onto itself fails (exit 1).
        let failed = "cp: cannot create hard link 'd/f' to 'd/f': Operation not permitted\n";
        let relink = |asked: &str| {
            let mut o = outcome(failed, asked);
            o.cp.code = Some(1);
            o.ours.code = Some(0);
            o.plan.opts = vec!["update", "backup", "interactive"];
            update_sizes(&mut o);
            o
        };
        let o = relink("cp: overwrite 'd/f'? cp: overwrite 'd/f'? ");
        assert_eq!((o.cp.code, &o.cp.stderr), (o.ours.code, &o.ours.stderr));
        let o = relink("cp: overwrite 'd/e'? ");
        assert_ne!(o.cp.stderr, o.ours.stderr);
    }

    /// `cp -rH ls ls` (ls a symlink to s): cp makes s/ls, copies s into it and meets the copy
    /// under its other name; mimeo refuses the copy into itself first.
    #[test]
    fn a_copy_into_itself_through_a_followed_symlink_is_refused_first() {
        let cp = "cp: will not create hard link 'ls/ls/ls' to directory 'ls/ls'\n";
        let ours = "cp: cannot copy a directory, 'ls', into itself, 'ls/ls'\n";
        let mut o = outcome(cp, ours);
        o.tree = vec![
            diff("s/ls", Field::Presence, "directory", "absent"),
            diff("s", Field::Mtime, "2", "1"),
        ];
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stderr, o.ours.stderr);
        assert!(o.tree.is_empty(), "{:?}", o.tree);
        // Another directory's hard link refusal is not that.
        let other = "cp: will not create hard link 'd/s' to directory 'd/t'\n";
        let mut o = outcome(other, ours);
        into_itself(&mut o);
        assert_ne!(o.cp.stderr, o.ours.stderr);
    }

    /// `cp --attributes-only s/X/ -pZ s/X/ -a`, X holding a quote and ending in an escaped
    /// byte: cp meets the copy below itself as a hard link to a directory, in a line whose
    /// last name lost its closing quote; mimeo refuses the copy into itself first (fuzz seed
    /// 0x17aeb4cd7c8e83ca).
    #[test]
    fn a_copy_into_itself_met_as_a_hard_link_with_its_quote_cut_is_refused_first() {
        let x = r#"'''s/w\'\''"$/3s94'$'\352\272''"#;
        let copy = format!(r#"{x}/3s94'$'\352\272"#);
        let cp = format!(
            "cp: will not create hard link {copy}''/3s94'$'\\352\\272' to directory {copy}\n"
        );
        let src = r#"'s/w\'\''"$/3s94'$'\352\272''/'"#;
        let ours = format!("cp: cannot copy a directory, {src}, into itself, {copy}'\n");
        let mut o = outcome(&cp, &ours);
        o.tree = vec![diff("s/3s94\u{ea}", Field::Presence, "directory", "absent")];
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stderr, o.ours.stderr);
        // Cut anywhere but at its end, the name is not the copy's.
        let early = cp.replacen("\\272' to", "\\272 to", 1);
        let mut o = outcome(&early, &ours);
        into_itself(&mut o);
        assert_ne!(o.cp.stderr, o.ours.stderr);
    }

    /// `cp -l -r -p s/. s/. --suffix=X d` (d leads to td, s/x to `..`): both tell the copy
    /// of the destination met through s/x as a copy into itself, after copying what their
    /// order reached first (fuzz seed 0x5d7dad58b2200bfc); not without that line, nor under
    /// -a, which follows no symlink.
    #[test]
    fn what_each_copied_before_a_told_copy_into_itself_is_not_judged() {
        let told = "cp: cannot copy a directory, 's/.', into itself, 'd/.'\n";
        let cyclic = "cp: cannot copy cyclic symbolic link 's/./x/s'\n";
        let tree = || {
            vec![
                diff("td/x/f", Field::Presence, "absent", "file"),
                diff("td/x", Field::Mtime, "2", "1"),
                diff("s/f", Field::Mtime, "2", "1"),
            ]
        };
        let case = |opts: Vec<&'static str>, cp: &str| {
            let mut o = outcome(cp, &format!("{cyclic}{told}"));
            o.plan.opts = opts;
            o.plan.dest = DestState::SymlinkToDir;
            o.plan.target = "d".into();
            o.tree = tree();
            o
        };
        let mut o = case(vec!["link", "recursive", "preserve"], told);
        assert!(told_copy_order(&mut o));
        assert_eq!(o.cp.stderr, o.ours.stderr);
        assert_eq!(o.tree, vec![diff("s/f", Field::Mtime, "2", "1")]);
        let mut o = case(vec!["link", "recursive", "archive"], told);
        assert!(!told_copy_order(&mut o));
        let mut o = case(vec!["dereference", "recursive"], "");
        assert!(!told_copy_order(&mut o));
        assert_eq!(o.tree.len(), 3);
    }

    /// `cp -RvL S S` where S holds a quote and non-ASCII (fuzz seed 0x976c966834be13b8): both
    /// refuse it quoting S from an empty `''`; cp's -v line of what it copied before it met
    /// the copy quotes S without it, and is taken out. A line of another source stays.
    #[test]
    fn a_verbose_line_of_a_copy_into_itself_quoted_without_the_empty_quote_is_not_judged() {
        let s = r#"'s/53\'\''"$/_/rph92-'$'\303\251\344\270\255'"#;
        let n = r#"'/rph92-'$'\303\251\344\270\255'"#;
        let err = format!("cp: cannot copy a directory, ''{s}, into itself, ''{s}{n}\n");
        let mut o = outcome(&err, &err);
        let other = r#"'s/53\'\''"$/_/t'$'\303\251''/-w-' -> 'd/-w-'"#;
        let own = format!("{s}'/-w-' -> {s}{n}'/-w-'");
        o.cp.stdout = format!("{own}\n{other}\n");
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stdout, format!("{other}\n"));
    }

    /// `cp -rli s/_ ls s/l` (ls a symlink to s, s/l one to .): both ask about s/l/_, which is
    /// s/_; cp's question comes before the cyclic link it meets in the copy of ls into
    /// itself, on the same line, and stays where that goes.
    #[test]
    fn a_copy_reached_again_keeps_the_questions_before_what_goes() {
        let asked = "cp: overwrite 's/l/_'? ";
        let cp = format!(
            "{asked}cp: cannot copy cyclic symbolic link 'ls/l'\n\
             cp: cannot stat 'ls/ls/ls': File name too long\n"
        );
        let ours = format!("cp: cannot copy a directory, 'ls', into itself, 's/l/ls'\n{asked}");
        let mut o = outcome(&cp, &ours);
        assert!(copy_reached_again(&mut o));
        assert_eq!(
            (o.cp.stderr.as_str(), o.ours.stderr.as_str()),
            (asked, asked)
        );
    }

    /// `cp $'--x\e'`: cp's getopt names the option raw, mimeo escapes it.
    #[test]
    fn option_escaped_takes_cps_raw_option_for_mimeos_escaped_one() {
        let cp =
            "cp: unrecognized option '--x\u{1b}]0;p\u{7}'\nTry 'cp --help' for more information.\n";
        let ours =
            "cp: unrecognized option '--x\\033]0;p\\a'\nTry 'cp --help' for more information.\n";
        let mut o = outcome(cp, ours);
        assert!(option_escaped(&mut o));
        assert_eq!(o.cp.stderr, o.ours.stderr);
        let mut o = outcome(
            "cp: invalid option -- '\u{1b}'\n",
            "cp: invalid option -- '\\033'\n",
        );
        assert!(option_escaped(&mut o));
        assert_eq!(o.cp.stderr, o.ours.stderr);
        // Not another message, nor one cp printed without a control character.
        for (cp, ours) in [
            (
                "cp: unrecognized option '--x\u{1b}'\n",
                "cp: invalid option -- '\\033'\n",
            ),
            (
                "cp: unrecognized option '--x'\n",
                "cp: unrecognized option '--y'\n",
            ),
            ("cp: cannot stat 'a\u{1b}'\n", "cp: cannot stat 'a\\033'\n"),
        ] {
            let mut o = outcome(cp, ours);
            assert!(!option_escaped(&mut o), "{cp:?}");
            assert_eq!(o.ours.stderr, ours);
        }
    }

    /// `cp -RLs ls ls ls` (ls a symlink to s): cp names the entries it cannot link in the
    /// copy of ls into itself unquoted where they need no quotes.
    #[test]
    fn a_copy_reached_again_takes_out_unquoted_names_on_the_way() {
        let warned = "cp: warning: source directory 'ls' specified more than once\n";
        let cp = format!(
            "cp: ls/ls/.t: can make relative symbolic links only in current directory\n\
             cp: 'ls/ls/a b': can make relative symbolic links only in current directory\n\
             cp: cannot stat 'ls/ls/ls/ls': File name too long\n{warned}"
        );
        let ours = format!("cp: cannot copy a directory, 'ls', into itself, 'ls/ls'\n{warned}");
        let mut o = outcome(&cp, &ours);
        assert!(copy_reached_again(&mut o));
        assert_eq!(
            (o.cp.stderr.as_str(), o.ours.stderr.as_str()),
            (warned, warned)
        );
        // Another tree's entry stays.
        let other = "cp: lt/f: can make relative symbolic links only in current directory\n";
        let mut o = outcome(&format!("{other}{cp}"), &ours);
        copy_reached_again(&mut o);
        assert_eq!(o.cp.stderr, format!("{other}{warned}"));
    }

    /// `cp -aLu ls s/d/` as a user (ls a symlink to s, which holds a device node): cp fails
    /// to make the node in the copy, named below the copy; mimeo refused the copy.
    #[test]
    fn a_copy_reached_again_takes_out_what_cp_could_not_make_in_the_copy() {
        let node = "cp: cannot create special file 's/d/-rv0': Operation not permitted\n";
        let long = "cp: cannot stat 'ls/d/d/d/d': File name too long\n";
        let ours = "cp: cannot copy a directory, 'ls', into itself, 's/d/'\n";
        let mut o = outcome(&format!("{node}{long}"), ours);
        assert!(copy_reached_again(&mut o));
        assert_eq!((o.cp.stderr.as_str(), o.ours.stderr.as_str()), ("", ""));
        // Beside the copy, or where mimeo says it too, the line stays.
        let beside = "cp: cannot create special file 's/dx': Operation not permitted\n";
        let ours = "cp: cannot copy a directory, 'ls', into itself, 's/d'\n";
        let mut o = outcome(&format!("{beside}{long}"), ours);
        assert!(copy_reached_again(&mut o));
        assert_eq!(o.cp.stderr, beside);
        let mut o = outcome(&format!("{node}{long}"), &format!("{ours}{node}"));
        assert!(copy_reached_again(&mut o));
        assert_eq!(o.cp.stderr, node);
    }

    /// `cp -aL ls s ls` (ls a symlink to s): cp copies ls into itself until the names are too
    /// long, mimeo refuses it; both refuse s. Only mimeo's own refusal is taken out.
    #[test]
    fn a_copy_reached_again_keeps_the_refusals_cp_makes_too() {
        let s_refused = "cp: cannot copy a directory, 's', into itself, 'ls/s'\n";
        let cp = format!("cp: cannot stat 'ls/ls/ls': File name too long\n{s_refused}");
        let ours = format!("cp: cannot copy a directory, 'ls', into itself, 'ls/ls'\n{s_refused}");
        let mut o = outcome(&cp, &ours);
        assert!(copy_reached_again(&mut o));
        assert_eq!(
            (o.cp.stderr.as_str(), o.ours.stderr.as_str()),
            (s_refused, s_refused)
        );
        // A refusal cp makes alone still fails the case.
        let mut o = outcome(&cp, "");
        assert!(!copy_reached_again(&mut o));
    }
    /// `cp -p --no-preserve=ownership` of a user's set-gid file as root: the set-id bits cp
    /// keeps go; a mode that differs otherwise, or set-id bits mimeo keeps, still fail.
    #[test]
    fn dropped_set_id_bits_are_allowed_only_without_the_owner() {
        let mut o = outcome("", "");
        o.plan.opts = vec!["p", "no-preserve"];
        o.tree = vec![
            diff("d/m4", Field::Mode, "2711", "0711"),
            diff("d/x", Field::Mode, "4755", "0711"),
            diff("d/y", Field::Mode, "0755", "4755"),
        ];
        assert!(foreign_set_id_dropped(&mut o));
        let left: Vec<_> = o.tree.iter().map(|d| d.path.clone()).collect();
        assert_eq!(left, [Path::new("d/x"), Path::new("d/y")]);
        // With the owner kept (-p alone) the same difference is a bug.
        let mut o = outcome("", "");
        o.plan.opts = vec!["p"];
        o.tree = vec![diff("d/m4", Field::Mode, "2711", "0711")];
        assert!(!foreign_set_id_dropped(&mut o));
    }
    /// A file written in place whose clone failed: empty on both sides, mimeo's marked
    /// incomplete by the sticky bit. Another mode difference still fails.
    #[test]
    fn a_failed_clone_in_place_may_keep_its_mark() {
        let said = "cp: failed to clone 'd/f' from 'f': Operation not supported\n";
        let mut o = outcome(said, said);
        o.tree = vec![
            diff("td/f", Field::Mode, "0644", "1644"),
            diff("td/g", Field::Mode, "0644", "0600"),
        ];
        assert!(failed_clone_leaves_nothing(&mut o));
        let left: Vec<_> = o.tree.iter().map(|d| d.path.clone()).collect();
        assert_eq!(left, [Path::new("td/g")]);
    }
    /// `cp --reflink s/a -p s/b` on ext4 where s/b, empty and set-gid, is another user's:
    /// cp's truncation before its clone failed gave s/b a new mtime and cleared its set-gid
    /// bit; mimeo left it as it was. Another file, or another bit, still fails.
    #[test]
    fn a_failed_clone_onto_an_empty_file_leaves_it_as_it_was() {
        let said = "cp: failed to clone 's/b'$'\\033' from 's/a': Operation not supported\n";
        let mut o = outcome(said, said);
        o.tree = vec![
            diff("s/b\u{1b}", Field::Mode, "0755", "2755"),
            diff(
                "s/b\u{1b}",
                Field::Mtime,
                "1795784739.275378056",
                "34191004.000000000",
            ),
            diff(
                "s/c",
                Field::Mtime,
                "1795784739.275378056",
                "34191004.000000000",
            ),
            diff("s/b\u{1b}", Field::Mode, "0755", "0700"),
        ];
        assert!(failed_clone_leaves_nothing(&mut o));
        let left: Vec<_> = o.tree.iter().map(|d| (d.path.clone(), d.field)).collect();
        assert_eq!(
            left,
            [
                (Path::new("s/c").into(), Field::Mtime),
                (Path::new("s/b\u{1b}").into(), Field::Mode)
            ]
        );
    }
    /// `cp --remove-destination --reflink -r s/j s/h/c` on ext4 where s/h/c, empty, is
    /// another user's: cp removed it and made a new empty file, root's, before its clone
    /// failed; mimeo kept the old one as it was. Not without the removal asked for, nor an
    /// owner other than the running user's, nor another file.
    #[test]
    fn a_failed_clone_onto_a_removed_empty_file_keeps_the_old_one() {
        let said = "cp: failed to clone 's/h/c' from 's/j': Operation not supported\n";
        let mut o = outcome(said, said);
        o.plan.opts = vec!["recursive", "remove-destination", "reflink"];
        o.regular = vec!["s/h/c".into(), "s/g".into()];
        let (now, old) = ("1795792772.945027038", "1708998616.412862418");
        o.tree = vec![
            diff("s/h/c", Field::Uid, "0", "1234"),
            diff("s/h/c", Field::Gid, "0", "5678"),
            diff("s/h/c", Field::Mode, "0644", "0600"),
            diff("s/h/c", Field::Mtime, now, old),
            diff("s/g", Field::Uid, "0", "1234"),
        ];
        let (mut forced, mut foreign) = (o.clone(), o.clone());
        assert!(failed_clone_leaves_nothing(&mut o));
        assert_eq!(o.tree, vec![diff("s/g", Field::Uid, "0", "1234")]);
        // Without --remove-destination or -f cp wrote into the file: it keeps its owner.
        forced.plan.opts = vec!["recursive", "reflink"];
        failed_clone_leaves_nothing(&mut forced);
        let fields: Vec<_> = forced.tree.iter().map(|d| d.field).collect();
        assert_eq!(fields, [Field::Uid, Field::Gid, Field::Mode, Field::Uid]);
        // A new file of another owner than the user running cp is not cp's.
        foreign.tree[0] = diff("s/h/c", Field::Uid, "4321", "1234");
        failed_clone_leaves_nothing(&mut foreign);
        let fields: Vec<_> = foreign.tree.iter().map(|d| d.field).collect();
        assert_eq!(fields, [Field::Uid, Field::Gid, Field::Mode, Field::Uid]);
    }
    /// `cp --reflink --remove-destination s/3ue d` on ext4 where d, empty, is a hard link of
    /// s/3ue with xattrs: cp removed d and made a new empty file, alone and without xattrs,
    /// before its clone failed; mimeo kept d, still a link of s/3ue (fuzz seed
    /// 0x45431b750d26430c). The group is reported under either name. Not without the removal
    /// asked for, nor a group that lost another name, nor an xattr cp's file has.
    #[test]
    fn a_failed_clone_onto_a_removed_link_of_the_source_keeps_the_old_one() {
        let said = "cp: failed to clone 'd' from 's/3ue': Operation not supported\n";
        let mut o = outcome(said, said);
        o.plan.opts = vec!["verbose", "reflink", "remove-destination"];
        o.regular = vec!["d".into(), "s/3ue".into()];
        let (now, old) = ("1795792772.945027038", "1708998616.412862418");
        let group = "[\"d\", \"s/3ue\"]";
        o.tree = vec![
            diff("d", Field::Mtime, now, old),
            diff("d", Field::Xattr, "user.mimeo.k0=absent", "[]"),
            diff("d", Field::HardLinks, "[\"d\"]", group),
        ];
        let (mut other_order, mut kept) = (o.clone(), o.clone());
        let mut written = o.clone();
        assert!(failed_clone_leaves_nothing(&mut o));
        assert_eq!(o.tree, vec![]);
        other_order.tree[2] = diff("s/3ue", Field::HardLinks, "[\"s/3ue\"]", group);
        assert!(failed_clone_leaves_nothing(&mut other_order));
        assert_eq!(other_order.tree, vec![]);
        // Without --remove-destination or -f cp wrote into the file (its truncation's mtime
        // is cp's): its links and xattrs stay.
        written.plan.opts = vec!["verbose", "reflink"];
        failed_clone_leaves_nothing(&mut written);
        let fields: Vec<_> = written.tree.iter().map(|d| d.field).collect();
        assert_eq!(fields, [Field::Xattr, Field::HardLinks]);
        // A group that lost another name than the renewed one, an xattr cp's file has.
        kept.tree[1] = diff("d", Field::Xattr, "user.mimeo.k0=[]", "absent");
        let three = "[\"d\", \"s/a\", \"s/b\"]";
        kept.tree[2] = diff("d", Field::HardLinks, "[\"d\", \"s/a\"]", three);
        failed_clone_leaves_nothing(&mut kept);
        let fields: Vec<_> = kept.tree.iter().map(|d| d.field).collect();
        assert_eq!(fields, [Field::Xattr, Field::HardLinks]);
    }
    /// `cp -r s/. s/x s/u/l` where s/u/l is a symlink to `.`: cp fills s/u, where the
    /// destination leads, before it meets the copy; mimeo refuses first. What a later source
    /// made there too, or a file elsewhere, still differs.
    #[test]
    fn a_copy_into_itself_through_a_symlink_in_the_source_is_where_it_leads() {
        let said = "cp: cannot copy a directory, 's/.', into itself, 's/u/l/.'\n";
        let mut o = outcome(said, said);
        o.plan.opts = vec!["recursive"];
        o.plan.dest = DestState::InsideSource;
        o.plan.target = "s/u/l".into();
        o.plan.sources = vec!["s/.".into(), "s/x".into()];
        o.tree = vec![
            diff("s/u/f", Field::Presence, "file", "absent"),
            diff("s/g", Field::Presence, "file", "absent"),
        ];
        let mut without = o.clone();
        o.target_leads = Some("s/u".into());
        assert!(into_itself(&mut o));
        let left: Vec<_> = o.tree.iter().map(|d| d.path.clone()).collect();
        assert_eq!(left, [Path::new("s/g")]);
        into_itself(&mut without);
        assert_eq!(without.tree.len(), 2);
    }
    /// `cp --reflink=always s/m d` where d/m leads to the empty file f: cp empties f through
    /// the symlink before its clone fails, which gives f a new mtime; mimeo leaves f alone.
    /// Another file's time still fails.
    /// `cp -r -b --reflink -i s/k s/k d` on ext4: cp's failed clone left an empty d/k, so
    /// for the second s/k cp asks and, unanswered, keeps it; mimeo fails to clone again (fuzz
    /// seed 0xa59a51c3002d42d4). Not without -i, nor where the question is about a file
    /// whose clone did not fail before.
    #[test]
    fn a_failed_clone_met_again_is_asked_about_by_cp() {
        let failed = "cp: failed to clone 'd/k' from 's/k': Operation not supported\n";
        let cp = format!("{failed}cp: overwrite 'd/k'? ");
        let case = |opts: Vec<&'static str>, cp: &str| {
            let mut o = outcome(cp, &failed.repeat(2));
            o.plan.opts = opts;
            o.tree = vec![diff("td/k", Field::Presence, "file", "absent")];
            (failed_clone_leaves_nothing(&mut o), o)
        };
        let (allowed, o) = case(vec!["recursive", "b", "interactive"], &cp);
        assert!(allowed);
        assert!(o.tree.is_empty());
        assert_eq!(o.ours.stderr, cp);
        assert!(!case(vec!["recursive", "b"], &cp).0);
        let other = format!("{failed}cp: overwrite 'd/j'? ");
        assert!(!case(vec!["recursive", "interactive"], &other).0);
    }

    /// `cp -n --reflink=always -RH s/. s s d` on ext4: cp's failed clones of s/. left empty
    /// files, which -n skips for the two later copies of s; mimeo fails to clone again (fuzz
    /// seed 0xc398e3bd106ba81e). Not without -n or -u, nor where the name's clone did not
    /// fail before.
    #[test]
    fn a_failed_clone_met_again_is_skipped_by_cp_under_no_clobber() {
        let failed = "cp: failed to clone 'd/s/k' from 's/k': Operation not supported\n";
        let case = |opts: Vec<&'static str>, ours: &str| {
            let mut o = outcome(failed, ours);
            o.plan.opts = opts;
            o.tree = vec![diff("td/s/k", Field::Presence, "file", "absent")];
            (failed_clone_leaves_nothing(&mut o), o)
        };
        let (allowed, o) = case(vec!["recursive", "no-clobber"], &failed.repeat(3));
        assert!(allowed);
        assert!(o.tree.is_empty());
        assert_eq!(o.ours.stderr, failed);
        assert!(case(vec!["recursive", "update"], &failed.repeat(2)).0);
        assert!(!case(vec!["recursive"], &failed.repeat(2)).0);
        let other = failed.replace("/k'", "/j'");
        assert!(!case(vec!["recursive", "no-clobber"], &format!("{failed}{other}")).0);
    }

    /// `cp -a --backup=simple -S .orig --reflink -t d s/. s/LONG` on ext4: cp's failed clone
    /// of d/./LONG left an empty file, whose backup name the second copy finds too long;
    /// mimeo fails to clone again (fuzz seed 0x3c9c689ceae5ca62). Not without --backup, nor
    /// where the name's clone did not fail before.
    #[test]
    fn a_failed_clone_met_again_cannot_be_backed_up_by_cp() {
        let failed = "cp: failed to clone 'd/./n' from 's/./n': Operation not supported\n";
        let again = "cp: failed to clone 'd/n' from 's/n': Operation not supported\n";
        let cp = format!("{failed}cp: cannot backup 'd/n': File name too long\n");
        let case = |opts: Vec<&'static str>, cp: &str, first: &str| {
            let mut o = outcome(cp, &format!("{first}{again}"));
            o.plan.opts = opts;
            o.tree = vec![
                diff("td/n", Field::Presence, "file", "absent"),
                diff(
                    "td",
                    Field::Mtime,
                    "1795772898.950743605",
                    "52046244.754269045",
                ),
            ];
            (failed_clone_leaves_nothing(&mut o), o)
        };
        let (allowed, o) = case(vec!["archive", "backup"], &cp, failed);
        assert!(allowed);
        assert!(o.tree.is_empty());
        // Workers walking s/. may say its lines later, where the lines of a tree come in
        // any order.
        let mut o = outcome(&cp, &format!("{again}{failed}"));
        o.plan.opts = vec!["archive", "backup"];
        assert!(met_again(&mut o));
        assert_eq!(o.ours.stderr, cp);
        o = outcome(&cp, &format!("{again}{failed}"));
        o.plan.opts = vec!["backup"];
        assert!(!met_again(&mut o));
        assert!(!case(vec!["archive"], &cp, failed).0);
        let other = failed.replace("/n'", "/m'");
        let cp_other = format!("{other}cp: cannot backup 'd/n': File name too long\n");
        assert!(!case(vec!["archive", "backup"], &cp_other, &other).0);
    }

    #[test]
    fn a_failed_clone_leaves_a_destination_symlinks_target_alone() {
        let said = "cp: failed to clone 'd/m' from 's/m': Operation not supported\n";
        let mut o = outcome(said, said);
        let fixed = format!("{FIXED_TIME}.000000000");
        o.tree = vec![
            diff("f", Field::Mtime, "1795772898.950743605", &fixed),
            diff("s/g", Field::Mtime, "1795772898.950743605", &fixed),
        ];
        assert!(failed_clone_leaves_nothing(&mut o));
        let left: Vec<_> = o.tree.iter().map(|d| d.path.clone()).collect();
        assert_eq!(left, [Path::new("s/g")]);
        // Not without the failed clone.
        let mut o = outcome("", "");
        o.tree = vec![diff("f", Field::Mtime, "1795772898.950743605", &fixed)];
        assert!(!failed_clone_leaves_nothing(&mut o));
    }
    /// `cp -a s/h s/x` where s/x, empty, has the sticky bit: cp keeps it, mimeo drops its
    /// own mark. Not on a directory, nor another bit.
    #[test]
    fn an_old_files_sticky_bit_may_be_dropped() {
        let mut o = outcome("", "");
        o.tree = vec![
            diff("s/x", Field::Mode, "1640", "0640"),
            diff("s/y", Field::Mode, "2640", "0640"),
            diff("s/d", Field::Mode, "1755", "0755"),
        ];
        o.regular = vec!["s/x".into(), "s/y".into()];
        assert!(sticky_mark_not_kept(&mut o));
        let left: Vec<_> = o.tree.iter().map(|d| d.path.clone()).collect();
        assert_eq!(left, [Path::new("s/y"), Path::new("s/d")]);
    }
    /// `cp -a s/. s/x d` where d leads to td: the same as below, at td.
    #[test]
    fn a_file_replaced_in_a_symlinked_directory_that_took_a_sources_times_may_change_them() {
        let mut o = outcome("", "");
        o.plan.dest = DestState::SymlinkToDir;
        o.plan.target = "d".into();
        o.plan.sources = vec!["s/.".into(), "s/x".into()];
        let (old, new) = ("4117636603.844509584", "1795774066.909767349");
        o.tree = vec![diff("td", Field::Mtime, old, new)];
        assert!(replaced_times(&mut o));
        assert_eq!(o.tree, []);
        // Not where td is not where the destination leads.
        o.plan.dest = DestState::Dir;
        o.tree = vec![diff("td", Field::Mtime, old, new)];
        assert!(!replaced_times(&mut o));
    }
    /// `cp -a lf s/. s/x d`: s/. gives d the source's times, then s/x replaces d/x, which
    /// gives d the current time on mimeo's side only.
    #[test]
    fn a_file_replaced_in_a_directory_that_took_a_sources_times_may_change_them() {
        let mut o = outcome("", "");
        o.plan.target = "d".into();
        o.plan.sources = vec!["lf".into(), "s/.".into(), "s/x".into()];
        o.tree = vec![
            diff(
                "d",
                Field::Mtime,
                "1628040692.000000000",
                "1795763114.358038702",
            ),
            diff(
                "d/y",
                Field::Mtime,
                "1628040692.000000000",
                "1795763114.358038702",
            ),
        ];
        assert!(replaced_times(&mut o));
        let left: Vec<_> = o.tree.iter().map(|d| d.path.clone()).collect();
        assert_eq!(left, [Path::new("d/y")]);
        // With one source, d's own time is still judged.
        o.plan.sources = vec!["s/.".into()];
        o.tree = vec![diff(
            "d",
            Field::Mtime,
            "1628040692.000000000",
            "1795763114.358038702",
        )];
        assert!(!replaced_times(&mut o));
    }

    /// `cp -v --parents s/f 'd\nx'`: cp prints the directory it makes raw, its newline
    /// splitting the line; mimeo's quoted line is that line.
    #[test]
    fn a_parent_printed_raw_across_lines_is_mimeos_quoted_line() {
        let mut o = outcome("", "");
        o.plan.opts = vec!["parents", "verbose"];
        let file = "'s/f' -> 'd'$'\\n''x/s/f'\n";
        o.cp.stdout = format!("{file}s -> d\nx/s\n");
        o.ours.stdout = format!("'s' -> 'd'$'\\n''x/s'\n{file}");
        assert!(parents_quoted(&mut o));
        assert_eq!((o.cp.stdout.as_str(), o.ours.stdout.as_str()), (file, file));
        // A quoted line that cp did not print raw stays.
        let mut o = outcome("", "");
        o.plan.opts = vec!["parents", "verbose"];
        o.ours.stdout = "'s' -> 'd'$'\\t''x/s'\n".into();
        assert!(!parents_quoted(&mut o));
        assert_eq!(
            raw_verbose_line("'a'\\''b'$'\\001\\303' -> d/x\n").as_deref(),
            Some("a'b\u{1}\u{fffd} -> d/x\n")
        );
    }

    /// `cp -v --backup s d` where s cannot be opened: cp names renaming its backup of d back,
    /// which mimeo never made; the rest of stdout is still compared.
    #[test]
    fn a_backup_renamed_back_is_not_looked_for() {
        let err = "cp: cannot open 's' for reading: Permission denied\n";
        let mut o = outcome(err, err);
        o.plan.opts = vec!["backup", "verbose"];
        o.cp.stdout = "'d~' -> 'd' (unbackup)\n's' -> 'd'\n".into();
        o.ours.stdout = "'s' -> 'd'\n".into();
        assert!(failed_copy_keeps_backups(&mut o));
        assert_eq!(o.cp.stdout, o.ours.stdout);
        // Without a backup asked for, the line stays.
        let mut o = outcome(err, err);
        o.cp.stdout = "'d~' -> 'd' (unbackup)\n".into();
        assert!(!failed_copy_keeps_backups(&mut o));
        assert_eq!(o.cp.stdout, "'d~' -> 'd' (unbackup)\n");
    }

    /// `cp -a s/f s/. d` where another link of f joined d/f first: cp removes d/f and fails
    /// to link d/./f to it. Only a link onto the entry's own copy is taken out.
    #[test]
    fn an_own_copy_cp_removed_is_allowed_only_for_its_own_name() {
        let line = "cp: cannot create hard link 'd/./f' to 'd/f': No such file or directory\n";
        let mut o = outcome(line, "");
        o.cp.code = Some(1);
        o.ours.code = Some(0);
        o.tree = vec![
            diff("d/f", Field::Presence, "absent", "file"),
            diff("d/g", Field::Size, "1", "2"),
        ];
        assert!(own_copy_kept(&mut o));
        assert_eq!((o.cp.stderr.as_str(), o.cp.code), ("", Some(0)));
        let left: Vec<_> = o.tree.iter().map(|d| d.path.clone()).collect();
        assert_eq!(left, [Path::new("d/g")]);
        // A link to another name that cp could not make is not that.
        let other = "cp: cannot create hard link 'd/./g' to 'd/f': No such file or directory\n";
        let mut o = outcome(other, "");
        assert!(!own_copy_kept(&mut o));
        assert_eq!(o.cp.stderr, other);
    }

    /// `cp -a s/f /abs/s/. d`, f linked as g and h, read in the order g f h: cp removes d/f
    /// (g joined it), then fails to link d/./f and d/./h to it, losing h too (fuzz seed
    /// 0x5c0e21678ecee016, which fails in the runs whose filesystem hashes the names so).
    /// A name that failed to link to d/f before cp removed it is not that.
    #[test]
    fn an_own_copy_cp_removed_takes_the_later_names_of_its_group_with_it() {
        let f = "cp: cannot create hard link 'd/./f' to 'd/f': No such file or directory\n";
        let h = "cp: cannot create hard link 'd/./h' to 'd/f': No such file or directory\n";
        let mut o = outcome(&format!("{f}{h}"), "");
        o.ours.code = Some(0);
        o.tree = vec![
            diff("d/f", Field::Presence, "absent", "file"),
            diff("d/h", Field::Presence, "absent", "file"),
            diff(
                "d/g",
                Field::HardLinks,
                "[\"d/g\"]",
                "[\"d/f\", \"d/g\", \"d/h\"]",
            ),
            diff("d/g", Field::Size, "1", "2"),
        ];
        assert!(own_copy_kept(&mut o));
        assert_eq!((o.cp.stderr.as_str(), o.cp.code), ("", Some(0)));
        let left: Vec<_> = o.tree.iter().map(|d| (d.path.clone(), d.field)).collect();
        assert_eq!(left, [(Path::new("d/g").into(), Field::Size)]);
        // Only the lines after the own one's: h failing first is another matter.
        let mut o = outcome(&format!("{h}{f}"), "");
        o.ours.code = Some(0);
        assert!(own_copy_kept(&mut o));
        assert_eq!((o.cp.stderr.as_str(), o.cp.code), (h, Some(1)));
        // Nor a name that failed to link to another copy.
        let e = "cp: cannot create hard link 'd/./h' to 'd/e': No such file or directory\n";
        let mut o = outcome(&format!("{f}{e}"), "");
        assert!(own_copy_kept(&mut o));
        assert_eq!(o.cp.stderr, e);
    }

    /// `cp -a --backup=t --parents s s/y/f d`, f linked as s/w: where cp's walk met f first,
    /// its group's copy is d/s/y/f itself, which it backs up, fails to link to and puts back;
    /// mimeo's walk met w first and links f to its copy, keeping the backup (fuzz seed
    /// 0x37a6302840e97436 on XFS). A backup only under backups, and no other difference.
    #[test]
    fn an_own_copy_linked_to_itself_is_allowed_and_its_backup_only_under_backups() {
        let line =
            "cp: cannot create hard link 'd/s/y/f' to 'd/s/y/f': No such file or directory\n";
        let backed = || {
            let mut o = outcome(line, "");
            o.plan.opts = vec!["parents", "backup"];
            o.cp.code = Some(1);
            o.ours.code = Some(0);
            o.tree = vec![diff("d/s/y/f.~1~", Field::Presence, "absent", "file")];
            o
        };
        let mut o = backed();
        assert!(own_copy_kept(&mut o));
        assert_eq!((o.cp.stderr.as_str(), o.cp.code), ("", Some(0)));
        assert!(o.tree.is_empty());
        // Without backups the backup is not that; cp's removed copy is (fuzz seed
        // 0x8326b69008e65584 on XFS: `cp --parents -a s s/y/f d`).
        let mut o = backed();
        o.plan.opts = vec!["parents"];
        o.tree
            .push(diff("d/s/y/f", Field::Presence, "absent", "file"));
        assert!(own_copy_kept(&mut o));
        assert_eq!((o.cp.stderr.as_str(), o.cp.code), ("", Some(0)));
        let left: Vec<_> = o.tree.iter().map(|d| d.path.clone()).collect();
        assert_eq!(left, [Path::new("d/s/y/f.~1~")]);
        let mut o = backed();
        o.tree
            .push(diff("d/s/g.~1~", Field::Presence, "absent", "file"));
        assert!(own_copy_kept(&mut o));
        assert_eq!(o.tree.len(), 1);
    }

    /// `cp --parents -a s/f s/f s/. d` as a user (f linked): cp warns of s/f named twice, as
    /// mimeo does, and fails only to link the copy it removed (fuzz seed 0xfed971bd907f9fb1).
    #[test]
    fn an_own_copy_cp_removed_beside_warnings_both_give_is_its_only_failure() {
        let twice = "cp: warning: source file 's/f' specified more than once\n";
        let line = "cp: cannot create hard link 'd/s/./f' to 'd/s/f': No such file or directory\n";
        let mut o = outcome(&format!("{twice}{line}"), twice);
        o.ours.code = Some(0);
        assert!(own_copy_kept(&mut o));
        assert_eq!((o.cp.stderr.as_str(), o.cp.code), (twice, Some(0)));
    }

    /// `cp -R -d s/f s/. d`, d a symlink to td: the copy cp removed is td/f in the tree.
    #[test]
    fn an_own_copy_cp_removed_is_found_through_a_destination_symlink() {
        let line = "cp: cannot create hard link 'd/./f' to 'd/f': No such file or directory\n";
        let mut o = outcome(line, "");
        o.plan.dest = DestState::SymlinkToDir;
        o.plan.target = "d".into();
        o.tree = vec![
            diff("td/f", Field::Presence, "absent", "file"),
            diff("td/g", Field::Presence, "absent", "file"),
        ];
        assert!(own_copy_kept(&mut o));
        let left: Vec<_> = o.tree.iter().map(|d| d.path.clone()).collect();
        assert_eq!(left, [Path::new("td/g")]);
    }

    /// `cp -u -s s/f s/. s/f d`: cp links the second d/f to the first, which fails; under
    /// --preserve=links the same line is still judged.
    #[test]
    fn a_skipped_update_relinked_by_cp_is_allowed_only_without_preserved_links() {
        let omit = "cp: -r not specified; omitting directory 's/.'\n";
        let link = "cp: cannot create hard link 'd/f' to 'd/f': Operation not permitted\n";
        let mut o = outcome(&format!("{omit}{link}"), omit);
        o.plan.opts = vec!["update", "symbolic-link"];
        assert!(update_skip_not_relinked(&mut o));
        assert_eq!(o.cp.stderr, omit);
        // cp -ul a b d: d/b becomes a link of d/a, with its data; without -l mimeo links
        // them too.
        let relinked = || {
            let mut o = outcome("", "");
            o.tree = vec![
                diff("d/a", Field::HardLinks, "[\"d/a\", \"d/b\"]", "[]"),
                diff("d/b", Field::Content, "keepA", "keepB"),
                diff("d/c", Field::Content, "x", "y"),
            ];
            o
        };
        let mut o = relinked();
        o.plan.opts = vec!["update", "link"];
        assert!(update_skip_not_relinked(&mut o));
        let left: Vec<_> = o.tree.iter().map(|d| d.path.clone()).collect();
        assert_eq!(left, [Path::new("d/c")]);
        let mut o = relinked();
        o.plan.opts = vec!["update"];
        assert!(!update_skip_not_relinked(&mut o));
        assert_eq!(o.tree.len(), 3);
        let mut o = outcome(&format!("{omit}{link}"), omit);
        o.plan.opts = vec!["update", "archive"];
        assert!(!update_skip_not_relinked(&mut o));
        // A bare --preserve keeps no links (fuzz seed 0xfa0d643db331ef43); --pres=links does.
        for (arg, allowed) in [("--preserve", true), ("--pres=mode,links", false)] {
            let mut o = outcome(&format!("{omit}{link}"), omit);
            o.plan.opts = vec!["update", "preserve"];
            o.plan.args = vec![arg.into(), "f".into(), "f".into(), "d".into()];
            assert_eq!(update_skip_not_relinked(&mut o), allowed, "{arg}");
        }
    }

    /// `cp -u -l -r -L s/x s/. d` with an up-to-date directory d/x (fuzz seed
    /// 0xe7e8ce8becb2e482): cp's skip of d/./x links it to d/x, which fails; a failed link
    /// to a source under -l is not one of those.
    #[test]
    fn a_skipped_update_relinked_by_cp_is_allowed_also_under_hard_links() {
        let link = "cp: cannot create hard link 'd/./x' to 'd/x': Operation not permitted\n";
        let source = "cp: cannot create hard link 'd/./y' to 's/./y': Operation not permitted\n";
        let mut o = outcome(&format!("{link}{source}"), source);
        o.plan.opts = vec!["update", "link", "recursive", "dereference"];
        o.plan.target = "d".into();
        assert!(update_skip_not_relinked(&mut o));
        assert_eq!(o.cp.stderr, source);
        assert_eq!(o.cp.code, o.ours.code);
        // -v: cp's "removed" for the link of a name onto itself, and for one in a group it
        // made under -l; not for another entry.
        let mut o = outcome("", "");
        o.plan.opts = vec!["update", "verbose", "recursive", "link"];
        o.cp.stdout = "removed 'd/./x'\nremoved 'd/b'\nremoved 'd/c'\n".into();
        o.tree = vec![diff("d/a", Field::HardLinks, "[\"d/a\", \"d/b\"]", "[]")];
        assert!(update_skip_not_relinked(&mut o));
        assert_eq!(o.cp.stdout, "removed 'd/c'\n");
        // A failed link to a source stays a difference.
        let mut o = outcome(source, "");
        o.plan.opts = vec!["update", "link"];
        o.plan.target = "d".into();
        assert!(!update_skip_not_relinked(&mut o));
        assert_eq!(o.cp.stderr, source);
        // `cp -l -u -a -S - lf lf d` onto an up-to-date directory d/lf (fuzz seed
        // 0xee0b6b43dd6218b7): under -l links kept or not, mimeo leaves it.
        let onto = "cp: cannot create hard link 'd/lf' to 'd/lf': Operation not permitted\n";
        let mut o = outcome(onto, "");
        o.plan.opts = vec!["update", "link", "archive", "suffix"];
        o.plan.target = "d".into();
        assert!(update_skip_not_relinked(&mut o));
        assert_eq!((o.cp.code, o.cp.stderr.as_str()), (o.ours.code, ""));
    }

    /// `cp -n -a --parents -l s/X/m s/X s/X` as a user who may not link m: cp fails to link
    /// s/X/s/X/m once for the first source and again on its way through the copy of s/X into
    /// itself, which mimeo refused; the repetition goes, the first line stays.
    #[test]
    fn a_line_cp_repeats_in_the_copy_into_itself_is_taken_once() {
        let refused = "cp: cannot copy a directory, 's/X', into itself, 's/X/s/X'\n";
        let link = "cp: cannot create hard link 's/X/s/X/m' to 's/X/m': Operation not permitted\n";
        let mut o = outcome(
            &format!("{refused}{link}{link}"),
            &format!("{refused}{link}"),
        );
        assert!(into_itself(&mut o));
        assert_eq!(o.cp.stderr, o.ours.stderr);
        // Said once by each, it stays.
        let mut o = outcome(&format!("{refused}{link}"), &format!("{refused}{link}"));
        into_itself(&mut o);
        assert_eq!(o.cp.stderr, format!("{refused}{link}"));
    }

    /// `cp --parents -b ABS/f ABS/f g d`: cp stops at the second ABS/f, mimeo copies g too.
    #[test]
    fn later_sources_after_a_stop_go_only_after_cps_stop() {
        let stop = "cp: tmp/x/t: No such file or directory\n";
        let later = || {
            let mut o = outcome(stop, stop);
            o.plan.opts = vec!["parents", "b"];
            o.cp.code = Some(1);
            o.ours.code = Some(1);
            o.tree = vec![
                diff("d/g", Field::Presence, "absent", "file"),
                diff("d", Field::Mtime, "1", "2"),
            ];
            o
        };
        let mut o = later();
        assert!(later_sources_after_a_stop(&mut o));
        assert!(o.tree.is_empty());
        // Not where cp's side has something mimeo's lacks.
        let mut o = later();
        o.tree.push(diff("d/h", Field::Presence, "file", "absent"));
        assert!(!later_sources_after_a_stop(&mut o));
        // Nor where cp's last line names a file as cp quotes it.
        let quoted = "cp: cannot stat 'd/x': No such file or directory\n";
        let mut o = later();
        o.cp.stderr = quoted.into();
        o.ours.stderr = quoted.into();
        assert!(!later_sources_after_a_stop(&mut o));
    }
}
