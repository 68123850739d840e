//! The MPI scheduler: the rank's share of the run on the engine's thread pool, work stealing
//! between ranks, directory completion across ranks, and termination detection.
//!
//! - **Stealing** (as libcircle): a rank whose workers run out of queued items asks a random
//!   other rank for work. The asked rank gives half of its queued items, oldest first (the
//!   biggest subtrees of a depth-first walk), or says it has none. A rank waiting for an
//!   answer never gives work away itself, so a large message is only ever sent to a rank that
//!   is not sending one, and two ranks can never wait for each other.
//! - **Completion**: each directory's pass has a gate that counts the items spawned under it
//!   and not finished. An item given to another rank keeps counting on its gate; on the rank
//!   that runs it, it gets a local stand-in gate whose end is sent back as a release. So a
//!   directory's `DirDone` is applied, on the rank that ran its pass, after every item below
//!   it has run on every rank.
//! - **Termination** (Safra's algorithm): work and releases are the only messages that can
//!   give an idle rank something to do. Each rank counts those it sent minus those it
//!   received, and turns black when it receives one. A token goes round the ring from rank 0
//!   whenever rank 0 is idle, summing the counts of the idle ranks it passes; it comes back
//!   white with a sum of zero only if no such message is in flight and no rank received one
//!   during the round: then every rank is idle for good.
//! - **Failures**: rank 0 sends a heartbeat every half second and the others their counters
//!   every quarter second. A rank that hears nothing from its peer for the timeout stops its
//!   copy (which removes the entries in progress) and aborts the job. A stopped run (a
//!   signal) is told to every rank, whose items then end at once. MPI's default error
//!   handler stays: an error (a send to a dead rank) aborts the job instead of hanging. No
//!   rank ever blocks in a collective while copying (the only ones come before the first
//!   item); small messages leave without waiting for their receiver, and large ones (work)
//!   only go to a rank that is polling (see stealing), so a rank that dies cannot leave the
//!   others waiting.

use crate::links::DistLinks;
use crate::msg::{self, Counters, Tag, Token, Work};
use crate::ranges::DistRanges;
use mimeo::work::{DirDone, Executor, Feed, Pool, Spawner, WorkItem, WorkKind, Worker};
use mimeo::{Control, Method, Scheduler};
use mpi::point_to_point::MatchedReceiveVec;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often rank 0 says it is alive, and how often the others send their counters.
const HEARTBEAT: Duration = Duration::from_millis(500);
const PROGRESS: Duration = Duration::from_millis(250);
/// The most items given away at once.
const MAX_GIVE: usize = 256;

/// Sends and receives on the job's communicator, and notices silent ranks.
pub struct Net<'w> {
    pub world: &'w SimpleCommunicator,
    pub rank: i32,
    pub size: i32,
    /// When each rank was last heard from.
    heard: Vec<Instant>,
    /// How long a rank may stay silent.
    pub timeout: Duration,
    /// What this rank sent: messages, their bytes, and work items given away.
    pub sent: Sent,
}

/// What a rank sent, for `MIMEO_MPI_RANK_STATS` (the cost model of the benchmarks).
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct Sent {
    pub messages: u64,
    pub bytes: u64,
    pub items_given: u64,
}

impl std::fmt::Debug for Net<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Net")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl<'w> Net<'w> {
    pub fn new(world: &'w SimpleCommunicator, timeout: Duration) -> Self {
        Net {
            world,
            rank: world.rank(),
            size: world.size(),
            heard: vec![Instant::now(); world.size() as usize],
            timeout,
            sent: Sent::default(),
        }
    }

    pub fn send(&mut self, to: i32, tag: Tag, body: &[u8]) {
        self.sent.messages += 1;
        self.sent.bytes += body.len() as u64;
        self.world
            .process_at_rank(to)
            .send_with_tag(body, tag as i32);
    }

    /// The next message, if one is there: (source, tag, payload). Unknown tags are dropped.
    pub fn poll(&mut self) -> Option<(i32, Tag, Vec<u8>)> {
        loop {
            let probed = self.world.any_process().immediate_matched_probe()?;
            let (body, status) = probed.matched_receive_vec::<u8>();
            let from = status.source_rank();
            self.heard[from as usize] = Instant::now();
            if let Some(tag) = Tag::from_raw(status.tag()) {
                return Some((from, tag, body));
            }
        }
    }

    /// A rank this one must hear from regularly and has not heard from for the timeout: rank
    /// 0 watches every rank, the others watch rank 0.
    pub fn silent(&self) -> Option<i32> {
        let watched: Vec<i32> = if self.rank == 0 {
            (1..self.size).collect()
        } else {
            vec![0]
        };
        watched
            .into_iter()
            .find(|&r| self.heard[r as usize].elapsed() > self.timeout)
    }

    /// Tells every other rank.
    pub fn broadcast(&mut self, tag: Tag, body: &[u8]) {
        let me = self.rank;
        for r in (0..self.size).filter(|&r| r != me) {
            self.send(r, tag, body);
        }
    }
}

/// Live counters of every rank, summed on rank 0 for the progress line.
#[derive(Debug)]
pub struct AllLive {
    own: Arc<Control>,
    others: Mutex<HashMap<i32, Counters>>,
}

impl AllLive {
    pub fn new(own: Arc<Control>) -> Self {
        AllLive {
            own,
            others: Mutex::new(HashMap::new()),
        }
    }

    fn set(&self, rank: i32, counters: Counters) {
        self.others
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(rank, counters);
    }

    fn others(&self, index: usize) -> u64 {
        let others = self.others.lock().unwrap_or_else(|e| e.into_inner());
        others.values().map(|c| c[index]).sum()
    }
}

const METHODS: [Method; 3] = [Method::Clone, Method::Offload, Method::Stream];

/// A control's counters as sent to rank 0.
fn counters(control: &Control) -> Counters {
    let b = METHODS.map(|m| control.bytes_by(m));
    [b[0], b[1], b[2], control.entries_done()]
}

impl mimeo_cli::progress::Live for AllLive {
    fn bytes_by(&self, method: Method) -> u64 {
        let i = METHODS.iter().position(|&m| m == method).unwrap_or(0);
        self.own.bytes_by(method) + self.others(i)
    }

    fn entries_done(&self) -> u64 {
        self.own.entries_done() + self.others(3)
    }
}

/// What waits for a directory to be complete.
#[derive(Debug)]
enum Parent {
    None,
    Local(Arc<Gate>),
    /// A gate on another rank: (rank, the id it gave the item).
    Remote(i32, u64),
}

/// A directory waiting for its pass and everything spawned under it; or the stand-in for a
/// gate on another rank, for an item received from it.
#[derive(Debug)]
struct Gate {
    pending: AtomicUsize,
    done: Mutex<Option<DirDone>>,
    parent: Parent,
}

impl Gate {
    fn new(parent: Parent) -> Arc<Gate> {
        Arc::new(Gate {
            pending: AtomicUsize::new(1),
            done: Mutex::new(None),
            parent,
        })
    }
}

// Items are nearly every task: boxing them would cost an allocation each.
#[allow(clippy::large_enum_variant)]
enum Task {
    /// An item, the gate it counts against, and for a range item that came from another
    /// rank the rank that split its file.
    Item(WorkItem, Option<Arc<Gate>>, Option<i32>),
    /// Something a gate waited for (on another rank) is done.
    Release(Arc<Gate>),
}

/// Releases owed to gates on other ranks, by rank.
type Owed = Mutex<HashMap<i32, Vec<u64>>>;

/// The MPI scheduler of one rank. Every rank runs it on its own executor of the same run;
/// rank 0 gives it the run's initial items.
#[derive(Debug)]
pub struct MpiScheduler<'n, 'w> {
    pub net: Mutex<&'n mut Net<'w>>,
    pub links: &'n DistLinks,
    pub ranges: &'n DistRanges,
    /// Rank 0's sum of the ranks' counters.
    pub live: Option<Arc<AllLive>>,
    /// Workers to start with, and the most the pool may grow to while they wait on storage.
    pub jobs: usize,
    pub max_jobs: usize,
}

/// Why the messaging loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Every rank is done.
    Done,
    /// A rank stopped answering.
    Lost(i32),
}

impl Scheduler for MpiScheduler<'_, '_> {
    fn run(&self, exec: &Executor<'_>, initial: Vec<WorkItem>) {
        let owed: Owed = Mutex::new(HashMap::new());
        let mut net = self.net.lock().unwrap_or_else(|e| e.into_inner());
        let net: &mut Net<'_> = &mut net;
        let mut end = End::Done;
        Pool::growing(self.jobs, self.max_jobs).run(
            || exec.worker(),
            |worker, task, spawner| handle(exec, self.ranges, &owed, worker, task, spawner),
            |feed| {
                for item in initial {
                    feed.push(Task::Item(item, None, None));
                }
                end = Loop::new(net, self, exec, &owed).run(feed);
            },
        );
        if let End::Lost(rank) = end {
            lost(net, rank);
        }
    }
}

/// A rank stopped answering: the copy here has stopped and cleaned up; end the job.
fn lost(net: &Net<'_>, rank: i32) -> ! {
    mimeo_cli::output::error(&format!(
        "rank {rank} stopped answering for {} s: ending the run",
        net.timeout.as_secs()
    ));
    net.world.abort(i32::from(mimeo_cli::EXIT_FAILED))
}

/// Runs one task on a worker of this rank.
fn handle(
    exec: &Executor<'_>,
    ranges: &DistRanges,
    owed: &Owed,
    worker: &mut Worker,
    task: Task,
    spawner: &Spawner<'_, Task>,
) {
    let (item, gate) = match task {
        Task::Release(gate) => return release(exec, owed, worker, gate),
        Task::Item(item, gate, Some(owner)) if owner != ranges.rank => {
            run_lent(exec, ranges, worker, item, owner);
            if let Some(g) = gate {
                release(exec, owed, worker, g);
            }
            return;
        }
        Task::Item(item, gate, _) => (item, gate),
    };
    // Items spawned by a directory's pass gate that directory; items spawned by anything
    // else gate what that item gates.
    let gate = if matches!(item.kind, WorkKind::Dir(_)) {
        Some(Gate::new(gate.map_or(Parent::None, Parent::Local)))
    } else {
        gate
    };
    let done = exec.run(worker, item, &mut |child| {
        if let Some(g) = &gate {
            g.pending.fetch_add(1, Ordering::SeqCst);
        }
        spawner.push(Task::Item(child, gate.clone(), None));
    });
    if let Some(done) = done {
        let g = gate.as_ref().expect("a directory's pass has a gate");
        *g.done.lock().unwrap_or_else(|e| e.into_inner()) = Some(done);
    }
    if let Some(g) = gate {
        release(exec, owed, worker, g);
    }
}

/// A range of a file that rank `owner` split: copied here if the owner lends it (a range
/// it spawns nothing, so it needs no gate of its own).
fn run_lent(
    exec: &Executor<'_>,
    ranges: &DistRanges,
    worker: &mut Worker,
    item: WorkItem,
    owner: i32,
) {
    let WorkKind::Range(range) = &item.kind else {
        return;
    };
    // A stopped run starts no range: the owner gives up the ranges nobody took.
    if exec.control().is_stopped() || !ranges.ask(owner, range) {
        return;
    }
    if let Some(done) = exec.run_lent(worker, item) {
        ranges.done(owner, &done);
    }
}

/// One thing a gate waited for is done; the last one completes its directory, and so on
/// upwards, across ranks by message.
fn release(exec: &Executor<'_>, owed: &Owed, worker: &mut Worker, gate: Arc<Gate>) {
    let mut gate = gate;
    loop {
        if gate.pending.fetch_sub(1, Ordering::SeqCst) != 1 {
            return;
        }
        if let Some(done) = gate.done.lock().unwrap_or_else(|e| e.into_inner()).take() {
            exec.complete(worker, done);
        }
        match &gate.parent {
            Parent::None => return,
            Parent::Local(p) => gate = p.clone(),
            Parent::Remote(rank, id) => {
                let mut owed = owed.lock().unwrap_or_else(|e| e.into_inner());
                owed.entry(*rank).or_default().push(*id);
                return;
            }
        }
    }
}

/// The messaging loop of one rank.
struct Loop<'a, 'n, 'w> {
    net: &'a mut Net<'w>,
    sched: &'a MpiScheduler<'n, 'w>,
    exec: &'a Executor<'a>,
    control: &'a Control,
    owed: &'a Owed,
    /// Gates of items given away, by the id sent with them.
    given: HashMap<u64, Arc<Gate>>,
    next_id: u64,
    /// Safra: basic messages sent minus received, and whether one was received since the
    /// token last passed.
    count: i64,
    black: bool,
    token: Option<Token>,
    /// Rank 0: a token is on its way round.
    wave: bool,
    asking: bool,
    ask_after: Instant,
    backoff: Duration,
    rng: u64,
    last_progress: Instant,
    last_heartbeat: Instant,
    /// When this rank's copy was found stopped, and whether the others were told.
    stopped_at: Option<Instant>,
    told_stop: bool,
}

impl<'a, 'n, 'w> Loop<'a, 'n, 'w> {
    fn new(
        net: &'a mut Net<'w>,
        sched: &'a MpiScheduler<'n, 'w>,
        exec: &'a Executor<'a>,
        owed: &'a Owed,
    ) -> Self {
        let now = Instant::now();
        let rng = 0x2545_f491_4f6c_dd1d ^ (net.rank as u64 + 1).wrapping_mul(0x9e37_79b9);
        Loop {
            net,
            sched,
            exec,
            control: exec.control(),
            owed,
            given: HashMap::new(),
            next_id: 0,
            count: 0,
            black: false,
            token: None,
            wave: false,
            asking: false,
            ask_after: now,
            backoff: Duration::ZERO,
            rng,
            last_progress: now,
            last_heartbeat: now,
            stopped_at: None,
            told_stop: false,
        }
    }

    fn run(&mut self, feed: &Feed<'_, Task>) -> End {
        let mut quiet = 0u32;
        loop {
            let mut busy = false;
            for _ in 0..64 {
                let Some((from, tag, body)) = self.net.poll() else {
                    break;
                };
                busy = true;
                if self.receive(feed, from, tag, &body) {
                    return End::Done;
                }
            }
            self.watch_stop(feed);
            // Idle is read before the outboxes are flushed: whatever a worker queued before
            // going idle is then sent (and counted) before the token can pass.
            let idle = feed.busy() == 0;
            busy |= self.flush();
            if self.ask(feed) {
                busy = true;
            }
            if idle && self.terminate() {
                return End::Done;
            }
            self.beat();
            if let Some(rank) = self.net.silent() {
                self.control.stop();
                self.sched.links.stop();
                self.sched.ranges.stop();
                let since = Instant::now();
                while feed.busy() > 0 && since.elapsed() < Duration::from_secs(5) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                return End::Lost(rank);
            }
            // Poll fast while messages flow, more slowly when nothing happens.
            quiet = if busy { 0 } else { quiet.saturating_add(1) };
            let nap = match quiet {
                0..=20 => Duration::from_micros(50),
                21..=200 => Duration::from_micros(500),
                _ => Duration::from_millis(2),
            };
            std::thread::sleep(nap);
        }
    }

    /// Handles one message; true when the run is over.
    fn receive(&mut self, feed: &Feed<'_, Task>, from: i32, tag: Tag, body: &[u8]) -> bool {
        match tag {
            Tag::Request => self.give(feed, from),
            Tag::NoWork => {
                self.asking = false;
                self.backoff = (self.backoff * 2)
                    .max(Duration::from_micros(500))
                    .min(Duration::from_millis(20));
                self.ask_after = Instant::now() + self.backoff;
            }
            Tag::Work => {
                self.count -= 1;
                self.black = true;
                self.asking = false;
                self.backoff = Duration::ZERO;
                let Some(Work(items)) = msg::decode(body) else {
                    return false;
                };
                for (item, id, owner) in items {
                    let gate = id.map(|id| Gate::new(Parent::Remote(from, id)));
                    feed.push(Task::Item(item, gate, owner));
                }
            }
            Tag::Release => {
                self.count -= 1;
                self.black = true;
                for id in msg::decode::<Vec<u64>>(body).unwrap_or_default() {
                    if let Some(gate) = self.given.remove(&id) {
                        feed.push(Task::Release(gate));
                    }
                }
            }
            Tag::Token => self.token = msg::decode(body),
            Tag::Done => return true,
            Tag::LinkClaim => {
                if let Some(ask) = msg::decode(body) {
                    self.sched.links.on_claim(from, ask);
                }
            }
            Tag::LinkSettle => {
                if let Some(settle) = msg::decode(body) {
                    self.sched.links.on_settle(settle);
                }
            }
            Tag::LinkAnswer => {
                if let Some(answer) = msg::decode(body) {
                    self.sched.links.on_answer(answer);
                }
            }
            Tag::Progress => {
                if let (Some(live), Some(c)) = (&self.sched.live, msg::decode(body)) {
                    live.set(from, c);
                }
            }
            Tag::Stop => {
                self.control.stop();
                self.sched.links.stop();
                self.told_stop = true;
            }
            Tag::RangeAsk => {
                if let Some(ask) = msg::decode::<msg::RangeAsk>(body) {
                    let lent = self.exec.lend_range(ask.file, ask.offset);
                    self.sched.ranges.answer(from, ask.req, lent);
                }
            }
            Tag::RangeAnswer => {
                if let Some(answer) = msg::decode(body) {
                    self.sched.ranges.on_answer(answer);
                }
            }
            Tag::RangeDone => {
                if let Some(done) = msg::decode(body) {
                    self.exec.range_done(&done);
                }
            }
            Tag::Heartbeat | Tag::Summary | Tag::Bye => {}
        }
        false
    }

    /// Gives half of the queued items to rank `to`, or tells it there are none.
    fn give(&mut self, feed: &Feed<'_, Task>, to: i32) {
        let queued = feed.queued();
        let mut items = Vec::new();
        let mut keep = Vec::new();
        if !self.asking && queued > 0 {
            for _ in 0..queued.div_ceil(2).min(MAX_GIVE) {
                match feed.take() {
                    Some(Task::Item(item, gate, owner)) => {
                        let id = gate.map(|g| {
                            self.next_id += 1;
                            self.given.insert(self.next_id, g);
                            self.next_id
                        });
                        // A range of a file split here is asked for here when it starts.
                        let owner = match item.kind {
                            WorkKind::Range(_) => owner.or(Some(self.net.rank)),
                            _ => owner,
                        };
                        items.push((item, id, owner));
                    }
                    // Releases are this rank's own business.
                    Some(release) => keep.push(release),
                    None => break,
                }
            }
        }
        for task in keep {
            feed.push(task);
        }
        if items.is_empty() {
            self.net.send(to, Tag::NoWork, &[]);
        } else {
            self.count += 1;
            self.net.sent.items_given += items.len() as u64;
            self.net.send(to, Tag::Work, &msg::encode(&Work(items)));
        }
    }

    /// Sends what the workers queued for other ranks; true if anything was sent.
    fn flush(&mut self) -> bool {
        let mut sent = false;
        let links = self.sched.links.outgoing();
        for (to, tag, body) in links.into_iter().chain(self.sched.ranges.outgoing()) {
            self.net.send(to, tag, &body);
            sent = true;
        }
        let owed = std::mem::take(&mut *self.owed.lock().unwrap_or_else(|e| e.into_inner()));
        for (to, ids) in owed {
            self.count += 1;
            self.net.send(to, Tag::Release, &msg::encode(&ids));
            sent = true;
        }
        sent
    }

    /// Asks a random other rank for work when no item is queued here and a worker is free.
    fn ask(&mut self, feed: &Feed<'_, Task>) -> bool {
        let size = self.net.size;
        if size < 2
            || self.asking
            || self.control.is_stopped()
            || feed.queued() > 0
            || feed.busy() >= self.sched.jobs
            || Instant::now() < self.ask_after
        {
            return false;
        }
        // xorshift64
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let mut victim = (self.rng % (size as u64 - 1)) as i32;
        if victim >= self.net.rank {
            victim += 1;
        }
        self.asking = true;
        self.net.send(victim, Tag::Request, &[]);
        true
    }

    /// This rank is idle: passes the token on, or (rank 0) starts a round or decides that
    /// the run is over. True when it is.
    fn terminate(&mut self) -> bool {
        let (rank, size) = (self.net.rank, self.net.size);
        if size == 1 {
            return true;
        }
        if rank != 0 {
            if let Some(t) = self.token.take() {
                let t = Token {
                    sum: t.sum + self.count,
                    black: t.black || self.black,
                };
                self.black = false;
                self.net
                    .send((rank + 1) % size, Tag::Token, &msg::encode(&t));
            }
            return false;
        }
        if let Some(t) = self.token.take() {
            self.wave = false;
            if !t.black && !self.black && t.sum + self.count == 0 {
                self.net.broadcast(Tag::Done, &[]);
                return true;
            }
        }
        if !self.wave {
            self.wave = true;
            self.black = false;
            let t = Token {
                sum: 0,
                black: false,
            };
            self.net.send(1, Tag::Token, &msg::encode(&t));
        }
        false
    }

    /// Heartbeats and counters.
    fn beat(&mut self) {
        let now = Instant::now();
        if self.net.rank == 0 {
            if now - self.last_heartbeat >= HEARTBEAT {
                self.last_heartbeat = now;
                self.net.broadcast(Tag::Heartbeat, &[]);
            }
        } else if now - self.last_progress >= PROGRESS {
            self.last_progress = now;
            self.net
                .send(0, Tag::Progress, &msg::encode(&counters(self.control)));
        }
    }

    /// Once this rank's copy is stopped (a signal), tells the others, after its own workers
    /// have cleaned up (or a moment has passed), so that every rank stops.
    fn watch_stop(&mut self, feed: &Feed<'_, Task>) {
        if !self.control.is_stopped() || self.told_stop {
            return;
        }
        let at = *self.stopped_at.get_or_insert_with(|| {
            self.sched.links.stop();
            Instant::now()
        });
        if feed.busy() == 0 || at.elapsed() > Duration::from_millis(300) {
            self.told_stop = true;
            self.net.broadcast(Tag::Stop, &[]);
        }
    }
}
