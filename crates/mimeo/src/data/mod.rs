//! Data and metadata of one entry: the clone → offload → stream path, byte ranges (range
//! clones with copied heads and tails, concatenation), writing into nodes, `--verify`, and
//! metadata applied in the guarantees' order. Uses `sys`, `report` and `options` only; knows
//! nothing of destinations' existing entries or of trees.

pub(crate) mod concat;
pub(crate) mod copy;
pub(crate) mod error;
pub(crate) mod meta;
pub(crate) mod node;
pub(crate) mod range;
pub(crate) mod verify;
