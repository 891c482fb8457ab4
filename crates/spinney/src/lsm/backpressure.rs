//! Backpressure: what a commit group does for an LSM table it writes to
//! before its entries go in. A full memtable is frozen, so that its flush
//! falls due; while the table is past a slowdown threshold each commit
//! group waits a moment, and while it is past a stop threshold writers
//! wait for background work, running the job they wait for themselves when
//! they can. The thresholds are `Options::backpressure`'s; the scheduler
//! that runs the jobs is the database's, reached through `Host`.
//!
//! Thread-safety: only the commit leader calls `has_room` and `make_room`,
//! so only it fills and freezes the active memtable. `make_room` runs with
//! the host's scheduler lock held, let go only while a job runs or a
//! slowdown sleeps.

use std::sync::Arc;
use std::time::Duration;

use super::table::{LsmTable, Pressure};
use crate::error::Result;
use crate::options::Backpressure;

/// How long a commit group waits when a table is past a slowdown threshold
/// (LevelDB's choice: long enough to give background work the CPU, short
/// enough to be invisible to a single write).
const SLOWDOWN_DELAY: Duration = Duration::from_millis(1);

/// The database's scheduler, as backpressure uses it. `make_room` calls it
/// with the scheduler's lock held.
pub(crate) trait Host {
    /// Refuses when the database takes no more writes (a failed job
    /// poisons it), or is shutting down.
    fn check(&self) -> Result<()>;

    /// Claims a job of `table` (a flush, or a compaction) and runs it in
    /// this thread, the scheduler's lock let go meanwhile; false when no
    /// job of the table can be claimed. A failed job poisons the database,
    /// which the next `check` reports.
    fn run_job(&mut self, table: &Arc<LsmTable>) -> bool;

    /// Wakes the workers and waits until a job ends.
    fn wait_for_job(&mut self);

    /// Wakes the workers and sleeps `delay`, the scheduler's lock let go,
    /// counted as a slowdown.
    fn slow_down(&mut self, delay: Duration);

    /// Wakes the workers: a frozen memtable waits for its flush.
    fn wake_workers(&self);
}

/// Whether a commit group can write to `t` with nothing to do first: its
/// memtable is not full, and it is under every slowdown and stop
/// threshold. Most groups find this, without the scheduler's lock, which
/// the jobs take to claim and finish work (and hold, at their lower
/// priority, for as long as the scheduler lets them). Only the commit
/// leader fills and freezes the active memtable, so `full` cannot change
/// under it; pressure seen a group late slows the next.
pub(crate) fn has_room(t: &LsmTable, bp: &Backpressure) -> bool {
    let sv = t.super_version();
    let full = t.memtable_full(&sv.mem);
    let p = sv.pressure;
    let pressed = p.l0_runs >= bp.l0_slowdown_runs.min(bp.l0_stop_runs)
        || p.pending_compaction_bytes
            >= bp
                .pending_compaction_slowdown_bytes
                .min(bp.pending_compaction_stop_bytes);
    !full && !pressed
}

/// Makes room in `t` for a commit group, with the host's scheduler lock
/// held: freezes a full memtable, and applies backpressure. Each commit
/// group waits `SLOWDOWN_DELAY` (once) while the table is past a slowdown
/// threshold, and waits for background work while it is past a stop
/// threshold. A writer that must wait first tries to run the job it waits
/// for itself, and does not wait when the table has no job to run or
/// running.
pub(crate) fn make_room(t: &Arc<LsmTable>, bp: &Backpressure, host: &mut impl Host) -> Result<()> {
    let mut slowed = false;
    loop {
        host.check()?;
        let sv = t.super_version();
        let full = t.memtable_full(&sv.mem);
        if stops(sv.pressure, full, sv.imms.len(), bp) {
            if host.run_job(t) {
                continue;
            }
            // No job of the table can be picked and none is running: the
            // L0 runs or pending bytes that stop the writer are below what
            // the table's strategy compacts (a stop threshold under its
            // trigger, or tiered runs no merge rule takes yet). Only more
            // writes can change that, so waiting would be forever; the
            // commit goes on as if not stopped. (A full memtable always has
            // its flush to claim or to wait for, so the memory bound holds.)
            let nothing_to_wait_for = {
                let work = t.work.lock();
                work.is_idle() && work.manual_waiting == 0
            };
            if !nothing_to_wait_for {
                host.wait_for_job();
                continue;
            }
        }
        if slows(sv.pressure, bp) && !slowed {
            slowed = true;
            host.slow_down(SLOWDOWN_DELAY);
            continue;
        }
        if full && t.freeze_memtable() {
            host.wake_workers();
        }
        return Ok(());
    }
}

/// Whether writers to a table must wait: its memtable is `full` with
/// `frozen` memtables waiting for their flush already, or it has too many
/// L0 runs or pending compaction bytes.
fn stops(pressure: Pressure, full: bool, frozen: usize, bp: &Backpressure) -> bool {
    (full && frozen >= bp.max_immutable_memtables)
        || pressure.l0_runs >= bp.l0_stop_runs
        || pressure.pending_compaction_bytes >= bp.pending_compaction_stop_bytes
}

/// Whether commit groups to a table are slowed down: it has many L0 runs
/// or pending compaction bytes.
fn slows(pressure: Pressure, bp: &Backpressure) -> bool {
    pressure.l0_runs >= bp.l0_slowdown_runs
        || pressure.pending_compaction_bytes >= bp.pending_compaction_slowdown_bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pressure(l0_runs: usize, pending_compaction_bytes: u64) -> Pressure {
        Pressure {
            l0_runs,
            pending_compaction_bytes,
        }
    }

    #[test]
    fn writers_slow_then_stop_at_the_thresholds() {
        // Goal: pin where each threshold begins, without files.
        let bp = Backpressure {
            max_immutable_memtables: 2,
            l0_slowdown_runs: 4,
            l0_stop_runs: 8,
            pending_compaction_slowdown_bytes: 100,
            pending_compaction_stop_bytes: 200,
        };
        assert!(!slows(pressure(3, 99), &bp));
        assert!(slows(pressure(4, 0), &bp) && slows(pressure(0, 100), &bp));
        assert!(!stops(pressure(7, 199), true, 1, &bp));
        assert!(stops(pressure(8, 0), false, 0, &bp));
        assert!(stops(pressure(0, 200), false, 0, &bp));
        // Frozen memtables stop writers only once the active one is full.
        assert!(!stops(pressure(0, 0), false, 2, &bp));
        assert!(stops(pressure(0, 0), true, 2, &bp));
    }
}
