//! What each benchmark's threads do, after db_bench: the fills and deletes
//! (sequential or random keys, in batches), the reads (random, missing,
//! sequential both ways, seeks with steps), and readwhilewriting's writer.
//!
//! Every body loops `while worker.more(limit)` and reports each operation
//! with `worker.finish_op`; `worker::run` does the threads and the timing.
//!
//! Thread-safety: the bodies run in several threads at once; each makes its
//! own random numbers, keys and values, and its own engine session, and
//! shares only the `Store`, which is made for that.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::Rng;

use super::worker::{self, Measured, Plan, ThreadOutcome, Worker, WriterOutcome};
use crate::engine::{Batch, EngineError, EngineResult, Store};
use crate::keys::{worker_rng, ValueGenerator};
use crate::progress::Progress;
use crate::{Benchmark, Config};

/// The part of a run a benchmark needs.
pub(crate) struct Context<'a> {
    pub store: &'a dyn Store,
    pub config: &'a Config,
    /// The benchmark's position in `--benchmarks` (for its random seeds).
    pub index: usize,
}

/// Runs one workload benchmark (not an operation or a printout).
pub(crate) fn run(ctx: &Context<'_>, benchmark: Benchmark) -> EngineResult<Measured> {
    let c = ctx.config;
    let sequential_fill = matches!(
        benchmark,
        Benchmark::FillSeq | Benchmark::FillSeqBatch | Benchmark::FillBatch
    );
    // Sequential fills and scans run their count: db_bench's --duration is
    // for the random benchmarks.
    let timed =
        !sequential_fill && !matches!(benchmark, Benchmark::ReadSeq | Benchmark::ReadReverse);
    let duration = if timed { c.duration } else { None };
    let threads = if sequential_fill { 1 } else { c.threads };
    let per_thread = match benchmark {
        _ if duration.is_some() => u64::MAX,
        Benchmark::ReadSeq | Benchmark::ReadReverse => c.reads(),
        _ if benchmark.is_read() => c.reads(),
        _ => c.num,
    };
    let expected_ops = (per_thread != u64::MAX).then(|| per_thread.saturating_mul(threads as u64));
    let progress = Progress::start(benchmark.name(), c.progress, expected_ops);
    let plan = Plan {
        store: ctx.store,
        name: benchmark.name(),
        threads,
        duration,
        count_reads: benchmark.is_read() && ctx.store.counts_reads(),
        report_interval: c.report_interval,
        line_interval: c.stats_interval,
        line_every_ops: c.stats_interval_ops,
        progress: &progress,
    };
    let batch = c.batch_size_for(benchmark) as u64;
    let measured = match benchmark {
        Benchmark::FillSeq | Benchmark::FillSeqBatch | Benchmark::FillBatch => worker::run(
            &plan,
            &|t, w| write(ctx, t, w, per_thread, batch, Keys::Sequential, Op::Put),
            None,
        ),
        Benchmark::FillRandom | Benchmark::Overwrite => worker::run(
            &plan,
            &|t, w| write(ctx, t, w, per_thread, batch, Keys::Random, Op::Put),
            None,
        ),
        Benchmark::DeleteRandom => worker::run(
            &plan,
            &|t, w| write(ctx, t, w, per_thread, batch, Keys::Random, Op::Delete),
            None,
        ),
        Benchmark::DeleteRange => {
            let width = c.range_tombstone_width.max(1);
            let ranges = (per_thread / width).max(1);
            worker::run(&plan, &|t, w| delete_ranges(ctx, t, w, ranges, width), None)
        }
        Benchmark::ReadRandom => worker::run(
            &plan,
            &|t, w| read_random(ctx, t, w, per_thread, false),
            None,
        ),
        Benchmark::ReadMissing => worker::run(
            &plan,
            &|t, w| read_random(ctx, t, w, per_thread, true),
            None,
        ),
        Benchmark::ReadWhileWriting => worker::run(
            &plan,
            &|t, w| read_random(ctx, t, w, per_thread, false),
            Some(&|done: &AtomicBool| rate_limited_writer(ctx, threads, done)),
        ),
        Benchmark::SeekRandom => {
            worker::run(&plan, &|t, w| seek_random(ctx, t, w, per_thread), None)
        }
        Benchmark::ReadSeq => worker::run(&plan, &|_, w| scan(ctx, w, per_thread, true), None),
        Benchmark::ReadReverse => worker::run(&plan, &|_, w| scan(ctx, w, per_thread, false), None),
        other => Err(EngineError::Spinney(spinney::Error::InvalidArgument(
            format!("{other} is not a workload"),
        ))),
    };
    progress.finish();
    measured
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Keys {
    Sequential,
    Random,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Put,
    Delete,
}

/// Writes `limit` entries (or until the time is up), `batch` per commit:
/// puts of db_bench values, or deletes.
fn write(
    ctx: &Context<'_>,
    thread: usize,
    w: &mut Worker<'_>,
    limit: u64,
    batch: u64,
    keys: Keys,
    op: Op,
) -> EngineResult<ThreadOutcome> {
    let c = ctx.config;
    let mut session = ctx.store.session()?;
    let format = c.keys();
    let mut rng = worker_rng(c.seed, ctx.index, thread);
    let mut values = ValueGenerator::new(rng.gen(), c.value_size);
    let mut key = Vec::with_capacity(c.key_size + 1);
    let range = c.num.max(1);
    let entry_bytes = match op {
        Op::Put => (c.key_size + c.value_size) as u64,
        Op::Delete => 0,
    };
    let mut b = Batch::new();
    w.restart_clock();
    while w.more(limit) {
        let n = batch.min(limit - w.ops);
        b.clear();
        for j in 0..n {
            let k = match keys {
                Keys::Sequential => w.ops + j,
                Keys::Random => rng.gen_range(0..range),
            };
            format.write(k, &mut key);
            match op {
                Op::Put => b.put(0, &key, values.next(c.value_size)),
                Op::Delete => b.delete(0, &key),
            }
        }
        session.write(&b)?;
        w.finish_op(n, n * entry_bytes);
    }
    Ok(ThreadOutcome::default())
}

/// Deletes `limit` ranges (or until the time is up), each the `width`
/// keys from a random key of `[0, num)`, one range a commit.
fn delete_ranges(
    ctx: &Context<'_>,
    thread: usize,
    w: &mut Worker<'_>,
    limit: u64,
    width: u64,
) -> EngineResult<ThreadOutcome> {
    let c = ctx.config;
    let mut session = ctx.store.session()?;
    let format = c.keys();
    let mut rng = worker_rng(c.seed, ctx.index, thread);
    let (mut start, mut end) = (Vec::new(), Vec::new());
    let range = c.num.max(1);
    let mut b = Batch::new();
    w.restart_clock();
    while w.more(limit) {
        let k = rng.gen_range(0..range);
        format.write(k, &mut start);
        format.write(k + width, &mut end);
        b.clear();
        b.delete_range(0, &start, &end);
        session.write(&b)?;
        w.finish_op(1, 0);
    }
    Ok(ThreadOutcome::default())
}

/// Gets `limit` random keys of `[0, num)` (or until the time is up);
/// `missing` reads keys that no fill writes.
fn read_random(
    ctx: &Context<'_>,
    thread: usize,
    w: &mut Worker<'_>,
    limit: u64,
    missing: bool,
) -> EngineResult<ThreadOutcome> {
    let c = ctx.config;
    let mut session = ctx.store.session()?;
    let format = c.keys();
    let mut rng = worker_rng(c.seed, ctx.index, thread);
    let mut key = Vec::with_capacity(c.key_size + 1);
    let range = c.num.max(1);
    let mut out = ThreadOutcome::default();
    w.restart_clock();
    while w.more(limit) {
        let k = rng.gen_range(0..range);
        if missing {
            format.write_missing(k, &mut key);
        } else {
            format.write(k, &mut key);
        }
        let bytes = match session.get(0, &key)? {
            Some(len) => {
                out.found += 1;
                (key.len() + len) as u64
            }
            None => 0,
        };
        out.attempted += 1;
        w.finish_op(1, bytes);
    }
    Ok(out)
}

/// Seeks to `limit` random keys (or until the time is up), each with a new
/// cursor (as LevelDB's db_bench makes a new iterator per seek), and steps
/// `--seek_nexts` times after each. A seek "finds" when it lands on its key.
fn seek_random(
    ctx: &Context<'_>,
    thread: usize,
    w: &mut Worker<'_>,
    limit: u64,
) -> EngineResult<ThreadOutcome> {
    let c = ctx.config;
    let mut session = ctx.store.session()?;
    let format = c.keys();
    let mut rng = worker_rng(c.seed, ctx.index, thread);
    let mut key = Vec::with_capacity(c.key_size + 1);
    let range = c.num.max(1);
    let mut out = ThreadOutcome::default();
    w.restart_clock();
    while w.more(limit) {
        format.write(rng.gen_range(0..range), &mut key);
        let seek = session.seek(0, &key, c.seek_nexts)?;
        out.found += u64::from(seek.found);
        out.attempted += 1;
        w.finish_op(1, seek.bytes);
    }
    Ok(out)
}

/// Reads up to `limit` entries in key order (`forward`) or reverse key
/// order with one cursor.
fn scan(
    ctx: &Context<'_>,
    w: &mut Worker<'_>,
    limit: u64,
    forward: bool,
) -> EngineResult<ThreadOutcome> {
    let mut session = ctx.store.session()?;
    w.restart_clock();
    session.scan(0, forward, &mut |bytes| {
        if !w.more(limit) {
            return false;
        }
        w.finish_op(1, bytes);
        true
    })?;
    Ok(ThreadOutcome::default())
}

/// readwhilewriting's writer: overwrites random keys one at a time until
/// `done`, at most `--writes_per_second` a second. Behind schedule by more
/// than a second (the engine stalled it), it starts a new schedule instead
/// of bursting to catch up.
fn rate_limited_writer(
    ctx: &Context<'_>,
    readers: usize,
    done: &AtomicBool,
) -> EngineResult<WriterOutcome> {
    const CATCH_UP_MAX: Duration = Duration::from_secs(1);
    // Short sleeps, so that the writer sees `done` soon after the readers end.
    const SLEEP_MAX: Duration = Duration::from_millis(20);
    let c = ctx.config;
    let mut session = ctx.store.session()?;
    let mut batch = Batch::new();
    let format = c.keys();
    // The thread number after the readers', so its keys differ from theirs.
    let mut rng = worker_rng(c.seed, ctx.index, readers);
    let mut values = ValueGenerator::new(rng.gen(), c.value_size);
    let mut key = Vec::with_capacity(c.key_size + 1);
    let range = c.num.max(1);
    let start = Instant::now();
    let mut schedule_start = start;
    let mut scheduled = 0u64;
    let mut writes = 0u64;
    while !done.load(Ordering::Acquire) {
        if c.writes_per_second > 0 {
            let due = schedule_start
                + Duration::from_secs_f64(scheduled as f64 / c.writes_per_second as f64);
            let now = Instant::now();
            if due > now {
                std::thread::sleep((due - now).min(SLEEP_MAX));
                continue;
            }
            if now - due > CATCH_UP_MAX {
                schedule_start = now;
                scheduled = 0;
            }
        }
        format.write(rng.gen_range(0..range), &mut key);
        batch.clear();
        batch.put(0, &key, values.next(c.value_size));
        session.write(&batch)?;
        writes += 1;
        scheduled += 1;
    }
    Ok(WriterOutcome {
        writes,
        elapsed: start.elapsed(),
    })
}
