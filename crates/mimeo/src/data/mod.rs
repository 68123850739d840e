//! Data and metadata of one entry: the clone → offload → stream path, byte ranges (range
//! clones with copied heads and tails, concatenation), writing into nodes and waiting on files
//! that are not ready, `--verify`, metadata applied in the guarantees' order, and shared reads
//! through a canonical file (with origin records, and the map of device addresses they use).
//! Uses `sys`, `report` and `options` only; knows nothing of destinations' existing entries or
//! of trees.

pub(crate) mod concat;
pub(crate) mod copy;
pub(crate) mod error;
pub(crate) mod fallback;
pub(crate) mod meta;
pub(crate) mod node;
pub(crate) mod origin;
pub(crate) mod physmap;
pub(crate) mod range;
pub(crate) mod shared_reads;
pub(crate) mod span;
pub(crate) mod verify;
pub(crate) mod wait;
