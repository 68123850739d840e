//! Data and metadata of one entry: the clone → offload → stream path, writing into nodes,
//! `--verify`, and metadata applied in the guarantees' order. Uses `sys`, `report` and
//! `options` only; knows nothing of destinations' existing entries or of trees.

pub(crate) mod copy;
pub(crate) mod meta;
pub(crate) mod node;
pub(crate) mod verify;
