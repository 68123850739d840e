//! How many workers a run uses when the count is left to mimeo: one per CPU to start with,
//! more while they wait on the disk.
//!
//! A warm copy is bound by the CPUs (mostly kernel time creating and cloning files): more
//! workers than CPUs only add contention (bench W4). A cold copy is bound by how many reads
//! are in flight: its workers sleep in the kernel waiting for the disk, the CPUs idle, and
//! more workers mean more reads at once (bench W14). So every window the pool looks at what
//! the process read from storage (not from the page cache), how busy the CPUs were and how
//! much work is queued: while the copy reads from storage, the CPUs have room and tasks
//! wait, it quadruples its workers. Once the CPUs are the limit it stops growing for good. A
//! warm copy reads nothing from storage and never grows, however loaded the machine is by
//! others. A fixed `-j N` never grows.

use std::time::Duration;

/// How often the pool looks at itself.
pub(crate) const WINDOW: Duration = Duration::from_millis(100);

/// How much the pool grows in one step: a cold copy was fastest with 32 to 64 workers on 2
/// CPUs (bench W14), and reaching them sooner matters more than each step's size.
const FACTOR: usize = 4;

/// At or above this share of the CPUs busy, the CPUs are the limit.
const BUSY_SHARE: f64 = 0.9;

/// Storage reads per second from which a copy is taken to wait on the disk. A warm copy
/// still reads a little (btrfs: tree blocks, a few hundred KiB over a whole run of 50k
/// entries); a cold one reads tens of MiB a second, metadata alone.
const READING: f64 = 4.0 * 1024.0 * 1024.0;

/// One look at the pool.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    /// Time since the pool started.
    pub wall: Duration,
    /// CPU time the process used since it started.
    pub cpu: Duration,
    /// Bytes the process has read from storage since it started (not from the page cache).
    pub storage_reads: u64,
    /// Workers started.
    pub workers: usize,
    /// Tasks queued or running.
    pub pending: usize,
    /// Bytes of file data the copy has read from its sources (copied by offload or stream: a
    /// clone reads none), where the pool is told ([`Grow::OnDataReads`]).
    pub data_read: Option<u64>,
}

/// Whether and by what a pool grows.
#[derive(Clone, Copy)]
pub(crate) enum Grow<'a> {
    /// A fixed count of workers.
    Never,
    /// By the storage reads, the CPUs and the queue.
    OnReads,
    /// As [`Grow::OnReads`], and only while the copy reads file data (the count it is given):
    /// a copy that clones every file reads only metadata, and more workers then queue on the
    /// filesystem's locks where they make entries (bench W14 within XFS, and within btrfs:
    /// a cold clone of /usr/share was fastest with `-j 2`, slowest with 64 workers).
    OnDataReads(&'a (dyn Fn() -> u64 + Sync)),
}

impl Grow<'_> {
    /// The data read so far, where this growth is judged by it.
    pub fn data_read(&self) -> Option<u64> {
        match self {
            Grow::OnDataReads(read) => Some(read()),
            _ => None,
        }
    }
}

/// The growth policy: given samples, how many workers to add.
#[derive(Debug)]
pub(crate) struct Growth {
    cpus: usize,
    max: usize,
    last: Option<Sample>,
    /// The CPUs were the limit once: no more growth.
    frozen: bool,
}

impl Growth {
    pub fn new(cpus: usize, max: usize) -> Self {
        Growth {
            cpus: cpus.max(1),
            max,
            last: None,
            frozen: false,
        }
    }

    /// Takes one sample; returns how many workers to start now.
    pub fn step(&mut self, now: Sample) -> usize {
        let Some(last) = self.last.replace(now) else {
            // The first window includes the start-up: nothing to judge by.
            return 0;
        };
        let dt = (now.wall - last.wall).as_secs_f64();
        if dt <= 0.0 {
            return 0;
        }
        let busy = (now.cpu.saturating_sub(last.cpu)).as_secs_f64() / dt;
        if busy >= BUSY_SHARE * self.cpus as f64 {
            self.frozen = true;
        }
        let reading = now.storage_reads.saturating_sub(last.storage_reads) as f64 / dt >= READING;
        let moves_data = match (now.data_read, last.data_read) {
            (Some(now), Some(last)) => now > last,
            _ => true,
        };
        let waiting = now.pending > now.workers;
        if self.frozen || !reading || !moves_data || !waiting || now.workers >= self.max {
            return 0;
        }
        (now.workers * (FACTOR - 1)).min(self.max - now.workers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64, cpu_ms: u64, read: u64, workers: usize, pending: usize) -> Sample {
        Sample {
            wall: Duration::from_millis(ms),
            cpu: Duration::from_millis(cpu_ms),
            storage_reads: read,
            workers,
            pending,
            data_read: None,
        }
    }

    #[test]
    fn a_cold_copy_that_reads_no_file_data_never_grows() {
        let with_data = |s: Sample, data: u64| Sample {
            data_read: Some(data),
            ..s
        };
        let mut g = Growth::new(2, 64);
        g.step(with_data(at(0, 0, 0, 2, 100), 0));
        // Reading metadata from storage, the CPUs idle, work queued, but every file cloned.
        for i in 1..10 {
            assert_eq!(
                g.step(with_data(at(100 * i, 20 * i, i << 20, 2, 100), 0)),
                0
            );
        }
        // Once it reads file data, it grows as any cold copy does.
        assert_eq!(g.step(with_data(at(1000, 200, 10 << 20, 2, 100), 4096)), 6);
    }

    #[test]
    fn a_warm_copy_never_grows_however_idle_the_cpus() {
        let mut g = Growth::new(2, 64);
        assert_eq!(g.step(at(0, 0, 0, 2, 100)), 0);
        // Next to nothing read from storage (btrfs tree blocks), the CPUs busy or taken by
        // other processes.
        for i in 1..20 {
            assert_eq!(g.step(at(150 * i, 30 * i, 16384 * i, 2, 100)), 0);
        }
    }

    #[test]
    fn a_cold_copy_grows_until_the_cpus_are_the_limit() {
        let mut g = Growth::new(2, 64);
        g.step(at(0, 0, 0, 2, 100));
        // Reading tens of MiB a second, the CPUs idle, work queued: four times the workers.
        assert_eq!(g.step(at(100, 20, 1 << 20, 2, 100)), 6);
        assert_eq!(g.step(at(200, 40, 2 << 20, 8, 100)), 24);
        // Never past the ceiling.
        assert_eq!(g.step(at(300, 80, 3 << 20, 32, 100)), 32);
        let mut g = Growth::new(2, 64);
        g.step(at(0, 0, 0, 2, 100));
        assert_eq!(g.step(at(100, 20, 1 << 20, 2, 100)), 6);
        // Both CPUs busy: frozen for good, even when they idle again later.
        assert_eq!(g.step(at(200, 210, 2 << 20, 8, 100)), 0);
        assert_eq!(g.step(at(300, 220, 3 << 20, 8, 100)), 0);
    }

    #[test]
    fn no_growth_without_queued_work_or_past_the_cap() {
        let mut g = Growth::new(2, 3);
        g.step(at(0, 0, 0, 2, 2));
        // Reading, but nothing waits for a worker.
        assert_eq!(g.step(at(150, 10, 1 << 20, 2, 2)), 0);
        // Work waits: grow, but only up to the cap.
        assert_eq!(g.step(at(200, 20, 2 << 20, 2, 50)), 1);
        let mut capped = Growth::new(2, 2);
        capped.step(at(0, 0, 0, 2, 50));
        assert_eq!(capped.step(at(150, 10, 1 << 20, 2, 50)), 0);
    }
}
