//! Known bugs that make fuzz cases fail until their fixes land: each is named by its issue
//! item (issue 23), or marked "new" for one the fuzzer found that no issue lists yet. Each
//! takes its difference out of an outcome, so that CI stays green while the fix is under
//! way, and every run prints how often each one did. Remove an entry with its fix.

use super::Outcome;

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
        item: "issue 23 item 1",
        what: "mimeo-cat refuses an output that is also a part even where cat goes on: a \
               part that is empty when cat comes to it (the shell's > emptied it)",
        apply: cat_empty_part,
    },
    Known {
        item: "new: sources looked at before any is copied",
        what: "a missing source is reported before an earlier source's -i question, where cp \
               asks first (the same lines in another order)",
        apply: sources_first,
    },
    Known {
        item: "new: socket in the destination's place as non-root",
        what: "as a user other than root, a file copied onto a socket fails with \"cannot \
               create regular file ... Permission denied\", where cp replaces the socket",
        apply: socket_as_non_root,
    },
];

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

fn socket_as_non_root(o: &mut Outcome) -> bool {
    let socket = o
        .tree
        .iter()
        .any(|d| d.left == "socket" || d.right == "socket");
    let denied = ours_says(o, "cannot create regular file") && ours_says(o, "Permission denied");
    socket && denied && !cp_says(o, "cannot create regular file") && whole_case(o)
}

fn cat_empty_part(o: &mut Outcome) -> bool {
    let same = "input file is output file";
    let more = o.ours.stderr.matches(same).count() > o.cp.stderr.matches(same).count();
    o.plan.tool == "cat" && more && whole_case(o)
}

fn sources_first(o: &mut Outcome) -> bool {
    let sorted = |t: &str| {
        let mut b = t.as_bytes().to_vec();
        b.sort_unstable();
        b
    };
    let reordered = o.cp.stderr != o.ours.stderr && sorted(&o.cp.stderr) == sorted(&o.ours.stderr);
    let asked = o.plan.has("interactive") && cp_says(o, "? ");
    if reordered && asked {
        o.ours.stderr = o.cp.stderr.clone();
    }
    reordered && asked
}
