//! Known bugs that make fuzz cases fail until their fixes land: each is named by its issue
//! item (issue 23), or marked "new" for one the fuzzer found that no issue lists yet. Each
//! takes its difference out of an outcome, so that CI stays green while the fix is under
//! way, and every run prints how often each one did. Remove an entry with its fix.

use super::Outcome;
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
pub const KNOWN: &[Known] = &[Known {
    item: "new: --parents made-file lookup stops cp",
    what: "an absolute source named twice under --parents with simple backups: cp 9.1 stops \
           the run at the second (\"cp: DIR: No such file or directory\"), mimeo says the \
           same and goes on with the later sources",
    apply: later_sources_after_a_stop,
}];

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::allow::tests::{diff, outcome};

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
