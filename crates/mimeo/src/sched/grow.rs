//! How many workers a run uses when the count is left to mimeo: one per CPU to start with,
//! more while they wait on the disk and more of them read faster.
//!
//! A warm copy is bound by the CPUs (mostly kernel time creating and cloning files): more
//! workers than CPUs only add contention (bench W4). A cold copy is bound by how many reads
//! are in flight: its workers sleep in the kernel waiting for the disk, the CPUs idle, and
//! more workers mean more reads at once (bench W14). So every window the pool looks at what
//! the process read from storage (not from the page cache), how busy the CPUs were and how
//! much work is queued: while the copy reads from storage, the CPUs have room and tasks
//! wait, it grows fourfold. The first step comes at the first window that reads; each later
//! one is judged by the storage read rate it brings, which is the pace of a cold copy: a rate
//! that does not rise ends the growth, and one that falls (XFS clones queueing on its inode
//! allocation with 64 workers, bench W14) ends that step's workers again. Once the CPUs are
//! the limit the pool stops growing for good. A warm copy reads nothing from storage and
//! never grows, however loaded the machine is by others. A fixed `-j N` never grows.

use std::time::Duration;

/// How often the pool looks at itself.
pub(crate) const WINDOW: Duration = Duration::from_millis(100);

/// How much the pool grows in one step: a cold copy was fastest with 8 to 64 workers on 2
/// CPUs (bench W14), and reaching them sooner matters more than each step's size.
const FACTOR: usize = 4;

/// At or above this share of the CPUs busy, the CPUs are the limit.
const BUSY_SHARE: f64 = 0.9;

/// Storage reads per second from which a copy is taken to wait on the disk. A warm copy
/// still reads a little (btrfs: tree blocks, a few hundred KiB over a whole run of 50k
/// entries); a cold one reads tens of MiB a second, metadata alone.
const READING: f64 = 4.0 * 1024.0 * 1024.0;

/// Windows each count of workers is given before its read rate is measured: the first, while
/// new workers start and find work (or, at the start, while the first directories are read),
/// does not count.
const SETTLING: u32 = 1;

/// Windows a count of workers is measured over: two, since one window of a cold tree copy can
/// be a single large file or a burst of small ones.
const MEASURED: u32 = 2;

/// A step that reads less than this many times the rate before it ends the growth.
const GAIN: f64 = 1.1;

/// A step that reads less than this many times the rate before it ends its workers again:
/// lower than 1, so that noise alone does not take back a step that cost nothing.
const LOSS: f64 = 0.8;

/// One look at the pool.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    /// Time since the pool started.
    pub wall: Duration,
    /// CPU time the process used since it started.
    pub cpu: Duration,
    /// Bytes the process has read from storage since it started (not from the page cache).
    pub storage_reads: u64,
    /// Workers taking tasks.
    pub workers: usize,
    /// Tasks queued or running.
    pub pending: usize,
}

/// What the pool does after a look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// Nothing.
    Hold,
    /// Starts this many more workers.
    Start(usize),
    /// Only this many workers take tasks from now on; the others end.
    Rest(usize),
}

/// The last growth step, until its read rate is known.
#[derive(Debug, Clone, Copy)]
struct Step {
    /// Workers before the step.
    from: usize,
    /// The storage read rate before the step, bytes per second.
    before: f64,
}

/// The growth policy: given samples, how the pool changes.
#[derive(Debug)]
pub(crate) struct Growth {
    cpus: usize,
    max: usize,
    last: Option<Sample>,
    /// Windows seen since the workers last changed.
    windows: u32,
    /// The look that ended the settling windows of the current count.
    since: Option<Sample>,
    /// The step being measured.
    step: Option<Step>,
    /// The first step was taken.
    grown: bool,
    /// The CPUs were the limit once, or a step did not pay: no more growth.
    frozen: bool,
}

impl Growth {
    pub fn new(cpus: usize, max: usize) -> Self {
        Growth {
            cpus: cpus.max(1),
            max,
            last: None,
            windows: 0,
            since: None,
            step: None,
            grown: false,
            frozen: false,
        }
    }

    /// Takes one sample; returns how the pool changes now.
    pub fn step(&mut self, now: Sample) -> Change {
        let last = self.last.replace(now);
        // The first window, with the start-up, settles like any other count of workers.
        self.windows += 1;
        if self.windows == SETTLING {
            self.since = Some(now);
        }
        let Some(last) = last else {
            return Change::Hold;
        };
        let dt = (now.wall - last.wall).as_secs_f64();
        if dt <= 0.0 {
            return Change::Hold;
        }
        let busy = (now.cpu.saturating_sub(last.cpu)).as_secs_f64() / dt;
        if busy >= BUSY_SHARE * self.cpus as f64 {
            self.frozen = true;
        }
        // The first step needs one window of reads: FACTOR workers per CPU never made a cold
        // copy slower than one per CPU (bench W14), and the sooner they start the better.
        // Each later step is taken, and judged, on the rate of the count before it.
        let rate = if self.grown {
            let (Some(since), true) = (self.since, self.windows >= SETTLING + MEASURED) else {
                return Change::Hold;
            };
            read_rate(&since, &now)
        } else {
            read_rate(&last, &now)
        };
        if let Some(step) = self.step.take() {
            if rate < GAIN * step.before {
                self.frozen = true;
                if rate < LOSS * step.before {
                    return self.changed(Change::Rest(step.from));
                }
            }
        }
        let waiting = now.pending > now.workers;
        if self.frozen || rate < READING || !waiting || now.workers >= self.max {
            return Change::Hold;
        }
        self.step = self.grown.then_some(Step {
            from: now.workers,
            before: rate,
        });
        self.grown = true;
        self.changed(Change::Start(
            (now.workers * (FACTOR - 1)).min(self.max - now.workers),
        ))
    }

    /// The workers change: the new count settles before it is measured.
    fn changed(&mut self, change: Change) -> Change {
        self.windows = 0;
        self.since = None;
        change
    }
}

/// Storage reads per second between two looks.
fn read_rate(from: &Sample, to: &Sample) -> f64 {
    let dt = (to.wall.saturating_sub(from.wall)).as_secs_f64();
    if dt <= 0.0 {
        return 0.0;
    }
    to.storage_reads.saturating_sub(from.storage_reads) as f64 / dt
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    /// A run looked at every 100 ms, its CPUs a tenth busy unless told otherwise.
    struct Run {
        growth: Growth,
        ms: u64,
        cpu_ms: u64,
        read: u64,
    }

    impl Run {
        fn new(max: usize) -> Self {
            Run {
                growth: Growth::new(2, max),
                ms: 0,
                cpu_ms: 0,
                read: 0,
            }
        }

        /// One window: `workers` read `read` bytes, `pending` tasks are left, the CPUs were
        /// `busy` (of 2).
        fn look_at(&mut self, workers: usize, read: u64, pending: usize, busy: f64) -> Change {
            self.ms += 100;
            self.cpu_ms += (100.0 * busy) as u64;
            self.read += read;
            self.growth.step(Sample {
                wall: Duration::from_millis(self.ms),
                cpu: Duration::from_millis(self.cpu_ms),
                storage_reads: self.read,
                workers,
                pending,
            })
        }

        /// A count of workers settles and is measured: the changes of each window.
        fn measure(&mut self, workers: usize, read: u64) -> Vec<Change> {
            (0..SETTLING + MEASURED)
                .map(|_| self.look_at(workers, read, 1000, 0.2))
                .collect()
        }
    }

    use Change::{Hold, Rest, Start};

    /// Two workers reading `read` a window until the first step (at the second look).
    fn first_step(run: &mut Run, read: u64) {
        assert_eq!(run.look_at(2, read, 1000, 0.2), Hold, "the start-up window");
        assert_eq!(run.look_at(2, read, 1000, 0.2), Start(6));
    }

    #[test]
    fn a_warm_copy_never_grows_however_idle_the_cpus() {
        let mut run = Run::new(64);
        // Next to nothing read from storage (btrfs tree blocks), the CPUs idle or taken by
        // other processes.
        for busy in [0.0, 0.5, 1.0, 1.5] {
            for _ in 0..10 {
                assert_eq!(run.look_at(2, 16384, 100, busy), Hold);
            }
        }
    }

    #[test]
    fn a_cold_copy_grows_while_more_workers_read_faster() {
        let mut run = Run::new(64);
        // Reading 10 MiB/s, the CPUs idle, work queued: four times the workers at once.
        first_step(&mut run, MIB);
        // Eight workers settle and are measured: four times again.
        assert_eq!(run.measure(8, 3 * MIB), [Hold, Hold, Start(24)]);
        // 32 read twice as fast as 8: on, but never past the ceiling.
        assert_eq!(run.measure(32, 6 * MIB), [Hold, Hold, Start(32)]);
    }

    #[test]
    fn a_step_that_does_not_raise_the_read_rate_ends_the_growth() {
        let mut run = Run::new(64);
        first_step(&mut run, MIB);
        assert_eq!(run.measure(8, 4 * MIB), [Hold, Hold, Start(24)]);
        // The same rate with 32 workers (the device is the limit), or a little less: keep
        // them, and grow no more.
        assert_eq!(run.measure(32, 4 * MIB - MIB / 2), [Hold, Hold, Hold]);
        for _ in 0..10 {
            assert_eq!(run.look_at(32, 8 * MIB, 1000, 0.2), Hold);
        }
    }

    #[test]
    fn a_step_that_lowers_the_read_rate_ends_its_workers() {
        let mut run = Run::new(64);
        first_step(&mut run, MIB);
        assert_eq!(run.measure(8, 3 * MIB), [Hold, Hold, Start(24)]);
        // 32 workers queue on a lock of the filesystem and read a third less than 8 did: back
        // to 8, for good.
        assert_eq!(run.measure(32, 2 * MIB), [Hold, Hold, Rest(8)]);
        for _ in 0..10 {
            assert_eq!(run.look_at(8, 9 * MIB, 1000, 0.2), Hold);
        }
    }

    #[test]
    fn the_first_step_is_not_judged() {
        let mut run = Run::new(64);
        first_step(&mut run, 2 * MIB);
        // Eight workers read half as much as two did in their first window (the start-up
        // reads every top directory at once): they stay, and the next step is measured
        // against them.
        assert_eq!(run.measure(8, MIB), [Hold, Hold, Start(24)]);
        assert_eq!(run.measure(32, MIB / 2), [Hold, Hold, Rest(8)]);
    }

    #[test]
    fn busy_cpus_end_the_growth_for_good() {
        let mut run = Run::new(64);
        first_step(&mut run, MIB);
        // Both CPUs busy while the step settles: frozen, even though the CPUs idle again and
        // more workers would read faster.
        assert_eq!(run.look_at(8, 4 * MIB, 1000, 1.9), Hold);
        assert_eq!(run.measure(8, 4 * MIB), [Hold, Hold, Hold]);
        assert_eq!(run.measure(8, 8 * MIB), [Hold, Hold, Hold]);
    }

    #[test]
    fn no_growth_without_queued_work_or_past_the_cap() {
        let mut run = Run::new(3);
        // Reading, but nothing waits for a worker.
        for _ in 0..5 {
            assert_eq!(run.look_at(2, MIB, 2, 0.2), Hold);
        }
        // Work waits: grow, but only up to the cap.
        assert_eq!(run.look_at(2, MIB, 50, 0.2), Start(1));
        let mut capped = Run::new(2);
        assert_eq!(capped.measure(2, MIB), [Hold, Hold, Hold]);
    }
}
