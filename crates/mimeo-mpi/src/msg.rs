//! What ranks tell each other: one tag per kind of message, payloads as JSON.
//!
//! Messages that can give a passive rank work ([`Tag::Work`], [`Tag::Release`]) are the
//! "basic" messages of the termination detection (see `sched`); the others are control.

use mimeo::work::{LinkClaim, LinkLoc, Sighting, WorkItem};
use serde::{Deserialize, Serialize};

/// The kinds of messages, as MPI tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Tag {
    /// An idle rank asks for work (empty).
    Request = 1,
    /// The asked rank has none to give (empty).
    NoWork = 2,
    /// Work given to an idle rank: [`Work`].
    Work = 3,
    /// Items given away earlier are complete, with all they spawned: their gate ids.
    Release = 4,
    /// The termination token: [`Token`].
    Token = 5,
    /// Every rank is idle and no work is in flight: stop.
    Done = 6,
    /// A sighting of a multiply-linked inode, to its owner: [`LinkAsk`].
    LinkClaim = 7,
    /// A group's first copy is made (or failed), to its owner: [`LinkSettle`].
    LinkSettle = 8,
    /// The owner's answer to a claim: [`LinkAnswer`].
    LinkAnswer = 9,
    /// A rank's live counters, to rank 0 (also its heartbeat): [`Counters`].
    Progress = 10,
    /// Rank 0 is alive (empty).
    Heartbeat = 11,
    /// The run was stopped (a signal, a lost rank): every rank stops (empty).
    Stop = 12,
    /// A rank's summary at the end, to rank 0 (JSON of `mimeo::Summary`).
    Summary = 13,
    /// Rank 0 has every summary: the run's exit status (one byte).
    Bye = 14,
    /// A worker is about to copy a range of a file the receiver split: [`RangeAsk`].
    RangeAsk = 15,
    /// The splitter's answer: [`RangeAnswer`].
    RangeAnswer = 16,
    /// A lent range is done, to the rank that split its file: `mimeo::work::RangeDone`.
    RangeDone = 17,
}

impl Tag {
    pub fn from_raw(raw: i32) -> Option<Tag> {
        use Tag::*;
        [
            Request,
            NoWork,
            Work,
            Release,
            Token,
            Done,
            LinkClaim,
            LinkSettle,
            LinkAnswer,
            Progress,
            Heartbeat,
            Stop,
            Summary,
            Bye,
            RangeAsk,
            RangeAnswer,
            RangeDone,
        ]
        .into_iter()
        .find(|t| *t as i32 == raw)
    }
}

/// Items given away, each with the id of the gate (directory) it counts against on the
/// giving rank, if any, and for a range item the rank that split its file.
#[derive(Debug, Serialize, Deserialize)]
pub struct Work(pub Vec<(WorkItem, Option<u64>, Option<i32>)>);

/// A worker asks for the range at `offset` of split file `file`; `req` names its request.
#[derive(Debug, Serialize, Deserialize)]
pub struct RangeAsk {
    pub file: u64,
    pub offset: u64,
    pub req: u64,
}

/// Whether the range of request `req` is the asking worker's to copy.
#[derive(Debug, Serialize, Deserialize)]
pub struct RangeAnswer {
    pub req: u64,
    pub lent: bool,
}

/// The termination token (Safra's algorithm): the sum of the counts of basic messages sent
/// minus received of the ranks it passed, and whether any of them received one since it last
/// passed.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Token {
    pub sum: i64,
    pub black: bool,
}

/// A sighting of inode `id`, met as `how` says; `req` names the waiting worker's request on
/// the asking rank.
#[derive(Debug, Serialize, Deserialize)]
pub struct LinkAsk {
    pub id: (u64, u64),
    pub how: Sighting,
    pub req: u64,
}

/// Where inode `id`'s first copy is, or None if it failed.
#[derive(Debug, Serialize, Deserialize)]
pub struct LinkSettle {
    pub id: (u64, u64),
    pub loc: Option<LinkLoc>,
}

/// The owner's answer to request `req`: None for a lookup of an inode with no group.
#[derive(Debug, Serialize, Deserialize)]
pub struct LinkAnswer {
    pub req: u64,
    pub claim: Option<LinkClaim>,
}

/// Live counters of a rank: bytes by clone, offload and stream, and entries done.
pub type Counters = [u64; 4];

pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("messages serialize")
}

pub fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Option<T> {
    serde_json::from_slice(bytes).ok()
}
