//! Placing entries in the destination: the one decision about an existing entry
//! ([`decide`]), crash safety (temporaries, markers, run identity and the clean-up of dead
//! runs' leftovers: [`crash`]; resumable prefixes: [`resume`]), hard-link groups ([`links`]),
//! extent-sharing groups ([`sharing`], the same idea per extent), and the canonical source
//! files that shared extents are read through ([`shared_reads`]). Uses the data layer below it;
//! knows nothing of trees or schedulers.

pub(crate) mod backup;
pub(crate) mod crash;
pub(crate) mod decide;
pub(crate) mod links;
pub(crate) mod resume;
pub(crate) mod shared_reads;
pub(crate) mod sharing;
