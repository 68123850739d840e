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
pub const KNOWN: &[Known] = &[];
