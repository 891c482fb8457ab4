//! Running one benchmark's threads and watching them: each worker thread
//! times its operations into a histogram of its own, and hands what it has
//! to a shared slot every few milliseconds; a sampler in the calling thread
//! takes the slots' contents to cut intervals (the time series and the
//! progress lines) and to move the progress bar.
//!
//! The hot loop stays cheap: one clock reading and one histogram record per
//! operation, no atomic and no lock; the lock of the worker's slot is taken
//! once per handover (every `HANDOVER_EVERY`). An operation's latency is the
//! time since the previous operation ended (as LevelDB's db_bench measures
//! it), so key and value generation, a few dozen nanoseconds, count too.
//!
//! Thread-safety: a `Slot` is shared by its worker and the sampler under a
//! mutex; everything else belongs to one thread.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use parking_lot::Mutex;
use spinney::ReadContext;

use crate::engine::{EngineResult, Store};
use crate::latency::{merge, new_histogram, Latency};
use crate::progress::Progress;
use crate::Interval;

/// How often a worker hands its latencies and counts to its slot: often
/// enough that intervals of a second are cut within 1% of their edge.
const HANDOVER_EVERY: Duration = Duration::from_millis(10);

/// How often the sampler looks at the slots (progress bar, interval edges).
const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// What a worker has done since its last handover.
struct Pending {
    hist: Histogram<u64>,
    ops: u64,
}

/// A worker's handover point.
pub(crate) struct Slot(Mutex<Pending>);

impl Slot {
    fn new() -> Slot {
        Slot(Mutex::new(Pending {
            hist: new_histogram(),
            ops: 0,
        }))
    }

    /// Moves what the slot holds into `hist`, and returns its operations.
    fn drain_into(&self, hist: &mut Histogram<u64>) -> u64 {
        let mut p = self.0.lock();
        merge(hist, &p.hist);
        p.hist.reset();
        std::mem::take(&mut p.ops)
    }
}

/// The timing side of one worker thread: its clock, its histogram, its end.
pub(crate) struct Worker<'a> {
    slot: &'a Slot,
    abort: &'a AtomicBool,
    local: Histogram<u64>,
    local_ops: u64,
    last: Instant,
    next_handover: Instant,
    deadline: Option<Instant>,
    /// Operations of this worker so far.
    pub ops: u64,
    /// Bytes of keys and values this worker wrote or read so far.
    pub bytes: u64,
}

impl<'a> Worker<'a> {
    fn new(slot: &'a Slot, abort: &'a AtomicBool, duration: Option<Duration>) -> Worker<'a> {
        let now = Instant::now();
        Worker {
            slot,
            abort,
            local: new_histogram(),
            local_ops: 0,
            last: now,
            next_handover: now + HANDOVER_EVERY,
            deadline: duration.map(|d| now + d),
            ops: 0,
            bytes: 0,
        }
    }

    /// True while the worker should go on: fewer than `limit` operations
    /// done (or, when the benchmark is timed, its time not over), and no
    /// other thread failed.
    pub fn more(&self, limit: u64) -> bool {
        if self.abort.load(Ordering::Relaxed) {
            return false;
        }
        match self.deadline {
            Some(end) => self.last < end,
            None => self.ops < limit,
        }
    }

    /// Records the operation that just ended: `ops` entries (a batch counts
    /// its entries; its latency is one sample) and `bytes` of keys and values.
    pub fn finish_op(&mut self, ops: u64, bytes: u64) {
        let now = Instant::now();
        let nanos = u64::try_from(now.duration_since(self.last).as_nanos()).unwrap_or(u64::MAX);
        self.local.saturating_record(nanos);
        self.last = now;
        self.local_ops += ops;
        self.ops += ops;
        self.bytes += bytes;
        if now >= self.next_handover {
            self.handover();
            self.next_handover = now + HANDOVER_EVERY;
        }
    }

    /// Starts the next operation's clock now: for a worker that paused (a
    /// rate limit's sleep) and must not count the pause as latency.
    pub fn restart_clock(&mut self) {
        self.last = Instant::now();
    }

    fn handover(&mut self) {
        let mut p = self.slot.0.lock();
        merge(&mut p.hist, &self.local);
        p.ops += std::mem::take(&mut self.local_ops);
        drop(p);
        self.local.reset();
    }
}

/// What one thread of a benchmark reports at its end.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ThreadOutcome {
    /// Reads that found their key (read benchmarks).
    pub found: u64,
    /// Reads made (read benchmarks).
    pub attempted: u64,
}

/// What a background writer (readwhilewriting's) reports at its end.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WriterOutcome {
    pub writes: u64,
    pub elapsed: Duration,
}

/// Everything measured of one benchmark's threads.
pub(crate) struct Measured {
    pub hist: Histogram<u64>,
    pub ops: u64,
    pub bytes: u64,
    pub found: u64,
    pub attempted: u64,
    /// From the start to the end of the slowest thread.
    pub wall: Duration,
    /// The threads' run times added up.
    pub thread_time: Duration,
    pub read_context: ReadContext,
    pub intervals: Vec<Interval>,
    pub writer: Option<WriterOutcome>,
}

/// How the threads of one benchmark are run and watched.
pub(crate) struct Plan<'a> {
    pub store: &'a dyn Store,
    pub name: &'a str,
    pub threads: usize,
    /// When set, every thread stops this long after the start.
    pub duration: Option<Duration>,
    /// Count the reads' `ReadContext` in the workers.
    pub count_reads: bool,
    pub report_interval: Duration,
    pub line_interval: Option<Duration>,
    pub line_every_ops: u64,
    pub progress: &'a Progress,
}

type Body<'b> = dyn Fn(usize, &mut Worker<'_>) -> EngineResult<ThreadOutcome> + Sync + 'b;
type Background<'b> = dyn Fn(&AtomicBool) -> EngineResult<WriterOutcome> + Sync + 'b;

/// Runs `body` in `plan.threads` threads (each given its index and its
/// `Worker`), and `background`, if any, in one more thread until the others
/// are done. The first error of any thread stops the others and is returned.
pub(crate) fn run(
    plan: &Plan<'_>,
    body: &Body<'_>,
    background: Option<&Background<'_>>,
) -> EngineResult<Measured> {
    let slots: Vec<Slot> = (0..plan.threads).map(|_| Slot::new()).collect();
    let abort = AtomicBool::new(false);
    let readers_done = AtomicBool::new(false);
    let remaining = AtomicUsize::new(plan.threads);
    let barrier = Barrier::new(plan.threads + 1 + usize::from(background.is_some()));
    let sampler_thread = std::thread::current();

    std::thread::scope(|scope| {
        let handles: Vec<_> = slots
            .iter()
            .enumerate()
            .map(|(i, slot)| {
                let (abort, barrier, remaining) = (&abort, &barrier, &remaining);
                let sampler_thread = sampler_thread.clone();
                scope.spawn(move || {
                    barrier.wait();
                    let started = Instant::now();
                    if plan.count_reads {
                        ReadContext::enable();
                        ReadContext::reset();
                    }
                    let mut worker = Worker::new(slot, abort, plan.duration);
                    let outcome = body(i, &mut worker);
                    worker.handover();
                    let finished = Instant::now();
                    let read_context = if plan.count_reads {
                        let rc = ReadContext::take();
                        ReadContext::disable();
                        rc
                    } else {
                        ReadContext::default()
                    };
                    if outcome.is_err() {
                        abort.store(true, Ordering::Relaxed);
                    }
                    if remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                        sampler_thread.unpark();
                    }
                    outcome.map(|o| (o, worker.ops, worker.bytes, started, finished, read_context))
                })
            })
            .collect();
        let writer = background.map(|bg| {
            let (barrier, readers_done, abort) = (&barrier, &readers_done, &abort);
            scope.spawn(move || {
                barrier.wait();
                let outcome = bg(readers_done);
                if outcome.is_err() {
                    abort.store(true, Ordering::Relaxed);
                }
                outcome
            })
        });

        barrier.wait();
        let start = Instant::now();
        let mut sampler = Sampler::new(plan, start);
        while remaining.load(Ordering::Acquire) > 0 {
            std::thread::park_timeout(sampler.wait(Instant::now()));
            sampler.sample(&slots, Instant::now(), false);
        }
        readers_done.store(true, Ordering::Release);

        let mut first_error = None;
        let mut ops = 0;
        let mut bytes = 0;
        let mut found = 0;
        let mut attempted = 0;
        let mut thread_time = Duration::ZERO;
        let mut first_start: Option<Instant> = None;
        let mut last_finish = start;
        let mut read_context = ReadContext::default();
        for h in handles {
            match h.join() {
                Ok(Ok((o, thread_ops, thread_bytes, started, finished, rc))) => {
                    ops += thread_ops;
                    bytes += thread_bytes;
                    found += o.found;
                    attempted += o.attempted;
                    thread_time += finished.duration_since(started);
                    first_start = Some(first_start.map_or(started, |f| f.min(started)));
                    last_finish = last_finish.max(finished);
                    read_context = add(read_context, rc);
                }
                Ok(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        let writer = match writer.map(|w| w.join()) {
            None => None,
            Some(Ok(Ok(w))) => Some(w),
            Some(Ok(Err(e))) => {
                first_error.get_or_insert(e);
                None
            }
            Some(Err(panic)) => std::panic::resume_unwind(panic),
        };
        if let Some(e) = first_error {
            return Err(e);
        }
        // The last interval ends with the last thread.
        sampler.sample(&slots, last_finish, true);
        Ok(Measured {
            hist: sampler.total,
            ops,
            bytes,
            found,
            attempted,
            // From the first thread's start, which may precede this
            // thread's wake-up from the barrier.
            wall: last_finish.duration_since(first_start.unwrap_or(start).min(start)),
            thread_time,
            read_context,
            intervals: sampler.intervals,
            writer,
        })
    })
}

/// A share of the operations and latencies, gathered since `since`.
struct Gathered {
    hist: Histogram<u64>,
    ops: u64,
    since: Instant,
}

impl Gathered {
    fn new(since: Instant) -> Gathered {
        Gathered {
            hist: new_histogram(),
            ops: 0,
            since,
        }
    }

    fn add(&mut self, hist: &Histogram<u64>, ops: u64) {
        merge(&mut self.hist, hist);
        self.ops += ops;
    }

    /// Empties it, starting again at `now`; returns (ops, seconds, p99 micros).
    fn cut(&mut self, now: Instant) -> (u64, f64, f64) {
        let seconds = now.duration_since(self.since).as_secs_f64();
        let p99 = Latency::of(&self.hist).p99_micros;
        let ops = std::mem::take(&mut self.ops);
        self.hist.reset();
        self.since = now;
        (ops, seconds, p99)
    }
}

/// The calling thread's side: takes the slots' contents, cuts intervals,
/// prints progress lines, moves the bar.
struct Sampler<'p> {
    plan: &'p Plan<'p>,
    start: Instant,
    total: Histogram<u64>,
    total_ops: u64,
    report: Gathered,
    line: Gathered,
    next_line_ops: u64,
    scratch: Histogram<u64>,
    intervals: Vec<Interval>,
}

impl<'p> Sampler<'p> {
    fn new(plan: &'p Plan<'p>, start: Instant) -> Sampler<'p> {
        Sampler {
            plan,
            start,
            total: new_histogram(),
            total_ops: 0,
            report: Gathered::new(start),
            line: Gathered::new(start),
            next_line_ops: plan.line_every_ops,
            scratch: new_histogram(),
            intervals: Vec::new(),
        }
    }

    /// How long to sleep: until the next look, or the next interval's edge
    /// if that comes first.
    fn wait(&self, now: Instant) -> Duration {
        let report_edge = self.report.since + self.plan.report_interval;
        let mut wait = SAMPLE_EVERY.min(report_edge.saturating_duration_since(now));
        if let Some(every) = self.plan.line_interval {
            wait = wait.min((self.line.since + every).saturating_duration_since(now));
        }
        wait
    }

    /// Takes what the workers handed over; at `last`, closes the run.
    fn sample(&mut self, slots: &[Slot], now: Instant, last: bool) {
        self.scratch.reset();
        let ops: u64 = slots.iter().map(|s| s.drain_into(&mut self.scratch)).sum();
        merge(&mut self.total, &self.scratch);
        self.total_ops += ops;
        self.report.add(&self.scratch, ops);
        self.line.add(&self.scratch, ops);
        self.plan.progress.set(self.total_ops);

        let report_due = now.duration_since(self.report.since) >= self.plan.report_interval;
        if report_due || (last && self.report.ops > 0) {
            let (ops, seconds, p99_micros) = self.report.cut(now);
            self.intervals.push(Interval {
                elapsed_seconds: now.duration_since(self.start).as_secs_f64(),
                seconds,
                ops,
                ops_per_sec: if seconds > 0.0 {
                    ops as f64 / seconds
                } else {
                    0.0
                },
                p99_micros,
                shape: self.plan.store.shape_counts(),
            });
        }

        let line_due = self
            .plan
            .line_interval
            .is_some_and(|every| now.duration_since(self.line.since) >= every)
            || (self.plan.line_every_ops > 0 && self.total_ops >= self.next_line_ops);
        if line_due && !last {
            while self.plan.line_every_ops > 0 && self.next_line_ops <= self.total_ops {
                self.next_line_ops += self.plan.line_every_ops;
            }
            let (ops, seconds, p99) = self.line.cut(now);
            let elapsed = now.duration_since(self.start).as_secs_f64();
            self.plan.progress.println(&crate::output::progress_line(
                self.plan.name,
                ops,
                self.total_ops,
                seconds,
                elapsed,
                p99,
            ));
        }
    }
}

/// Every counter of `a` plus the same counter of `b`.
fn add(a: ReadContext, b: ReadContext) -> ReadContext {
    ReadContext {
        gets: a.gets + b.gets,
        seeks: a.seeks + b.seeks,
        nexts: a.nexts + b.nexts,
        trees_searched: a.trees_searched + b.trees_searched,
        bloom_checks: a.bloom_checks + b.bloom_checks,
        bloom_negatives: a.bloom_negatives + b.bloom_negatives,
        keys_compared: a.keys_compared + b.keys_compared,
        blocks_from_cache: a.blocks_from_cache + b.blocks_from_cache,
        blocks_from_storage: a.blocks_from_storage + b.blocks_from_storage,
        bytes_read: a.bytes_read + b.bytes_read,
    }
}
