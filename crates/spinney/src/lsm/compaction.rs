//! Which files to merge next: the leveled and tiered strategies, the
//! manual compactions, and the figures that drive them (level targets,
//! scores, pending compaction bytes).
//!
//! A strategy looks at one immutable `Version` and returns a `Compaction`
//! naming its input files and its output level. It never picks a file that
//! is already being compacted, nor an output range that a running compaction
//! writes into at the same level, so several compactions of one table can run
//! at once. Marking the chosen files is the caller's business (under the
//! database's `bg` lock, so a pick and its marks are one step).
//!
//! Leveled (after LevelDB and RocksDB): L0 holds overlapping runs, newest
//! first; deeper levels are one sorted run each. L0 is compacted into the
//! level below when it holds `l0_trigger` runs; a deeper level when its
//! bytes pass its target. With dynamic level sizing the last level's size
//! sets the targets of the levels above it, divided by the fanout level by
//! level, and L0 compacts into the highest level whose target is still at
//! least `level_base_bytes / fanout` (the "base level"); the levels above the
//! base stay empty.
//!
//! Tiered (after RocksDB's universal compaction and Cassandra's STCS): every
//! L0 file is a sorted run, and so is each non-empty deeper level; runs are
//! ordered newest first. When there are `l0_trigger` runs or more, the
//! picker merges, in order of preference: every run, when the newer runs
//! together pass `max_size_amplification_percent` of the oldest; a window of
//! adjacent runs of similar size (each at most `size_ratio_percent` larger
//! than the runs before it together); or the newest runs, enough to bring
//! the count back to the trigger. A merge that reaches the oldest run writes
//! the last level; any other writes one new L0 run in the window's place.

use std::collections::HashSet;
use std::sync::Arc;

use super::version::{FileMeta, Version, READ_COST_BYTES};
use crate::limits::LSM_LEVELS;
use crate::options::{CompactionOptions, CompactionStyle};

/// The last level of every table.
pub(crate) const LAST_LEVEL: usize = LSM_LEVELS - 1;

/// Why a compaction runs (shown in stats and logs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    /// Leveled: L0 reached its trigger.
    L0Runs,
    /// Leveled: a level passed its target size.
    LevelSize,
    /// Leveled: a level above the base level holds data.
    AboveBase,
    /// Tiered: the newer runs passed the space amplification limit.
    SpaceAmplification,
    /// Leveled: reads that looked into a file and went on to another have
    /// cost more than compacting it down would (LevelDB's seek compaction).
    Reads,
    /// Tiered: adjacent runs of similar size.
    SizeRatio,
    /// Tiered: too many runs.
    RunCount,
    /// `compact_level` or `compact_all`.
    Manual,
}

/// A chosen compaction: input files by level and where the output goes.
pub(crate) struct Compaction {
    pub reason: Reason,
    pub score: f64,
    /// (level, files) with the shallowest level first; L0 files newest first.
    pub inputs: Vec<(usize, Vec<Arc<FileMeta>>)>,
    pub output_level: usize,
    /// Output files are cut past this size; an L0 output is one file.
    pub target_file_bytes: u64,
}

impl Compaction {
    pub(crate) fn files(&self) -> impl Iterator<Item = &Arc<FileMeta>> {
        self.inputs.iter().flat_map(|(_, f)| f.iter())
    }

    /// A single file with nothing to merge with moves down without a rewrite.
    pub(crate) fn is_trivial_move(&self) -> bool {
        match self.inputs.as_slice() {
            [(level, files)] => {
                files.len() == 1 && *level != self.output_level && self.output_level != 0
            }
            _ => false,
        }
    }

    /// The user-key range the inputs (and so the outputs) cover.
    pub(crate) fn key_range(&self) -> (Vec<u8>, Vec<u8>) {
        key_hull(self.files())
    }

    /// Bytes read from the output level, and from the levels above it.
    pub(crate) fn input_bytes(&self) -> (u64, u64) {
        let mut from_output = 0;
        let mut from_above = 0;
        for (level, files) in &self.inputs {
            let bytes: u64 = files.iter().map(|f| f.record.size).sum();
            if *level == self.output_level {
                from_output += bytes;
            } else {
                from_above += bytes;
            }
        }
        (from_output, from_above)
    }

    /// A test, fixed at pick time against `base`, of whether a run older
    /// than every input may hold `user_key` (then a tombstone for it must be
    /// kept). Conservative: it may answer yes for data a concurrent
    /// compaction has since dropped, never no for data that is there.
    pub(crate) fn older_runs(&self, base: &Version) -> OlderRuns {
        let inputs: HashSet<u64> = self.files().map(|f| f.record.number).collect();
        // The L0 runs after the oldest L0 input (none when no input is in L0).
        let mut l0 = Vec::new();
        if let Some(i) = base
            .level(0)
            .iter()
            .rposition(|f| inputs.contains(&f.record.number))
        {
            l0 = base.level(0).get(i + 1..).unwrap_or(&[]).to_vec();
        }
        let shallowest = self
            .inputs
            .iter()
            .map(|(l, _)| *l)
            .min()
            .unwrap_or(LAST_LEVEL)
            .max(1);
        let mut levels = Version::empty();
        for (n, files) in base.levels.iter().enumerate().skip(shallowest) {
            let kept: Vec<Arc<FileMeta>> = files
                .iter()
                .filter(|f| !inputs.contains(&f.record.number))
                .cloned()
                .collect();
            if let Some(l) = levels.levels.get_mut(n) {
                *l = kept;
            }
        }
        OlderRuns { l0, levels }
    }
}

/// The files older than a compaction's inputs (see `Compaction::older_runs`).
pub(crate) struct OlderRuns {
    l0: Vec<Arc<FileMeta>>,
    levels: Version,
}

impl OlderRuns {
    pub(crate) fn may_hold(&self, user_key: &[u8]) -> bool {
        self.l0.iter().any(|f| f.overlaps(user_key, user_key))
            || (1..LSM_LEVELS).any(|n| self.levels.level_may_hold(n, user_key))
    }
}

fn key_hull<'a>(files: impl Iterator<Item = &'a Arc<FileMeta>>) -> (Vec<u8>, Vec<u8>) {
    let mut lo: Option<&[u8]> = None;
    let mut hi: Option<&[u8]> = None;
    for f in files {
        let s = f.smallest_user_key();
        let l = f.largest_user_key();
        if lo.is_none_or(|x| s < x) {
            lo = Some(s);
        }
        if hi.is_none_or(|x| l > x) {
            hi = Some(l);
        }
    }
    (
        lo.unwrap_or_default().to_vec(),
        hi.unwrap_or_default().to_vec(),
    )
}

/// A key range a running compaction writes into at one level.
#[derive(Debug, Clone)]
pub(crate) struct OutputRange {
    pub level: usize,
    pub lo: Vec<u8>,
    pub hi: Vec<u8>,
}

/// What a picker must stay clear of: the output ranges of running compactions.
pub(crate) struct Busy<'a> {
    pub outputs: &'a [OutputRange],
}

impl Busy<'_> {
    /// True when `c` could run now: no input is being compacted and its
    /// output range is clear at its output level (L0 outputs may overlap).
    fn allows(&self, c: &Compaction) -> bool {
        if c.files().any(|f| f.is_being_compacted()) {
            return false;
        }
        if c.output_level == 0 {
            return true;
        }
        let (lo, hi) = c.key_range();
        !self
            .outputs
            .iter()
            .any(|r| r.level == c.output_level && r.lo.as_slice() <= hi.as_slice() && lo <= r.hi)
    }
}

/// Per-level target sizes of a leveled table, and its base level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LevelTargets {
    pub base_level: usize,
    /// `targets[n]` for n >= 1; `targets[0]` is unused (L0 is judged by runs).
    pub targets: [u64; LSM_LEVELS],
}

pub(crate) fn level_targets(version: &Version, opts: &CompactionOptions) -> LevelTargets {
    let fanout = u64::from(opts.fanout);
    let mut targets = [0u64; LSM_LEVELS];
    let base_level;
    if opts.dynamic_level_bytes {
        let biggest = (1..LSM_LEVELS)
            .map(|n| version.level_bytes(n))
            .max()
            .unwrap_or(0);
        let mut level = LAST_LEVEL;
        let mut size = biggest.max(1);
        while level > 1 && size > opts.level_base_bytes {
            size /= fanout;
            level -= 1;
        }
        base_level = level;
        // The base level gets at least base / fanout, so that L0 does not
        // compact into a tiny level again and again.
        size = size.max(opts.level_base_bytes / fanout).max(1);
        for t in targets.iter_mut().skip(base_level) {
            *t = size;
            size = size.saturating_mul(fanout);
        }
    } else {
        base_level = 1;
        let mut size = opts.level_base_bytes;
        for t in targets.iter_mut().skip(1) {
            *t = size;
            size = size.saturating_mul(fanout);
        }
    }
    LevelTargets {
        base_level,
        targets,
    }
}

/// The level L0 compacts into: the base level, unless a level above it
/// still holds data (then the first such level, so that newer data never
/// lands below older data).
pub(crate) fn l0_output_level(version: &Version, opts: &CompactionOptions) -> usize {
    if opts.style == CompactionStyle::Tiered {
        return 1;
    }
    l0_output_below(version, level_targets(version, opts).base_level)
}

/// `l0_output_level` of a leveled table whose base level is `base`.
fn l0_output_below(version: &Version, base: usize) -> usize {
    (1..base)
        .find(|&n| !version.level(n).is_empty())
        .unwrap_or(base)
}

/// Compaction score of each level: >= 1 means the level needs compacting.
/// L0 by runs against the trigger; deeper levels by bytes (of files not
/// already being compacted) against their target. The last level has none.
pub(crate) fn level_scores(version: &Version, opts: &CompactionOptions) -> [f64; LSM_LEVELS] {
    let mut scores = [0.0; LSM_LEVELS];
    let l0_free = version
        .level(0)
        .iter()
        .filter(|f| !f.is_being_compacted())
        .count();
    scores[0] = l0_free as f64 / f64::from(opts.l0_trigger);
    if opts.style == CompactionStyle::Tiered {
        return scores;
    }
    let t = level_targets(version, opts);
    let base_target = t.targets.get(t.base_level).copied().unwrap_or(1).max(1);
    for (n, score) in scores.iter_mut().enumerate().take(LAST_LEVEL).skip(1) {
        let bytes: u64 = version
            .level(n)
            .iter()
            .filter(|f| !f.is_being_compacted())
            .map(|f| f.record.size)
            .sum();
        let target = t.targets.get(n).copied().unwrap_or(1).max(1);
        *score = if n < t.base_level {
            if bytes > 0 {
                1.0 + bytes as f64 / base_target as f64
            } else {
                0.0
            }
        } else {
            bytes as f64 / target as f64
        };
    }
    scores
}

/// An estimate of the bytes compaction must rewrite to bring every level
/// within its target (after RocksDB's estimate): backpressure uses it.
pub(crate) fn pending_compaction_bytes(version: &Version, opts: &CompactionOptions) -> u64 {
    match opts.style {
        CompactionStyle::Tiered => {
            // The merge the picker would run next, if any (a tiered table
            // owes nothing until a merge is due).
            let idle = Busy { outputs: &[] };
            pick_tiered(version, opts, &idle)
                .map(|c| c.files().map(|f| f.record.size).sum())
                .unwrap_or(0)
        }
        CompactionStyle::Leveled => {
            let t = level_targets(version, opts);
            let mut pending = 0u64;
            if version.level(0).len() >= opts.l0_trigger as usize {
                pending += version.level_bytes(0) + version.level_bytes(t.base_level);
            }
            let mut carried = 0u64;
            for n in 1..LAST_LEVEL {
                let bytes = version.level_bytes(n) + carried;
                let target = if n < t.base_level { 0 } else { t.targets[n] };
                carried = 0;
                if bytes > target {
                    let excess = bytes - target;
                    let ratio = version.level_bytes(n + 1) / bytes.max(1);
                    pending = pending.saturating_add(excess.saturating_mul(ratio + 1));
                    carried = excess;
                }
            }
            pending
        }
    }
}

/// The compaction a table needs most, among those that can run now.
pub(crate) fn pick(
    version: &Version,
    opts: &CompactionOptions,
    busy: &Busy<'_>,
) -> Option<Compaction> {
    match opts.style {
        CompactionStyle::Leveled => pick_leveled(version, opts, busy),
        CompactionStyle::Tiered => pick_tiered(version, opts, busy),
    }
}

fn pick_leveled(
    version: &Version,
    opts: &CompactionOptions,
    busy: &Busy<'_>,
) -> Option<Compaction> {
    let scores = level_scores(version, opts);
    let base_level = level_targets(version, opts).base_level;
    let mut order: Vec<usize> = (0..LAST_LEVEL).filter(|&n| scores[n] >= 1.0).collect();
    order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]));
    for level in order {
        let score = scores[level];
        if level == 0 {
            // One L0 compaction at a time: it takes every run.
            if version.level(0).iter().any(|f| f.is_being_compacted()) {
                continue;
            }
            let output = l0_output_below(version, base_level);
            let mut c = level_into_next(version, 0, output, opts);
            c.reason = Reason::L0Runs;
            c.score = score;
            if busy.allows(&c) {
                return Some(c);
            }
            continue;
        }
        let reason = if level < base_level {
            Reason::AboveBase
        } else {
            Reason::LevelSize
        };
        // The file whose overlap with the next level is smallest for its
        // size: the least rewriting per byte moved down.
        let mut candidates: Vec<(f64, Compaction)> = version
            .level(level)
            .iter()
            .filter(|f| !f.is_being_compacted())
            .map(|f| {
                let c = file_into_next(version, level, f, opts, reason, score);
                let (overlap, _) = c.input_bytes();
                (overlap as f64 / f.record.size.max(1) as f64, c)
            })
            .collect();
        candidates.sort_by(|a, b| a.0.total_cmp(&b.0));
        if let Some((_, c)) = candidates.into_iter().find(|(_, c)| busy.allows(c)) {
            return Some(c);
        }
    }
    pick_for_reads(version, opts, busy, base_level)
}

/// Reads every file may cost before it is compacted, however small the
/// compaction (a handful of reads does not pay for one).
const READS_ALLOWED_MIN: u64 = 100;

/// With no level past its size, a file whose reads have cost more than
/// compacting it down would: more reads charged to it
/// (`FileMeta::charge_read`) than the bytes that compaction reads, over
/// `READ_COST_BYTES`. An L0 file takes every L0 run down as the L0 trigger
/// does; a deeper file goes into the next level with the files it overlaps
/// there. So a table that is read more than written ends with fewer runs
/// for each read to look into, and a file is not rewritten, with the part
/// of the next level it overlaps, for fewer reads than that costs.
fn pick_for_reads(
    version: &Version,
    opts: &CompactionOptions,
    busy: &Busy<'_>,
    base_level: usize,
) -> Option<Compaction> {
    for level in 0..LAST_LEVEL {
        let charged = version
            .level(level)
            .iter()
            .filter(|f| f.reads_charged() >= READS_ALLOWED_MIN && !f.is_being_compacted());
        for f in charged {
            let c = if level == 0 {
                if version.level(0).iter().any(|f| f.is_being_compacted()) {
                    break;
                }
                let mut c = level_into_next(version, 0, l0_output_below(version, base_level), opts);
                c.reason = Reason::Reads;
                c
            } else {
                file_into_next(version, level, f, opts, Reason::Reads, 0.0)
            };
            let (below, above) = c.input_bytes();
            let allowed = ((below + above) / READ_COST_BYTES).max(READS_ALLOWED_MIN);
            if f.reads_charged() >= allowed && busy.allows(&c) {
                return Some(c);
            }
        }
    }
    None
}

/// File `f` of `level` (1 or deeper) and the files of the next level it
/// overlaps.
fn file_into_next(
    version: &Version,
    level: usize,
    f: &Arc<FileMeta>,
    opts: &CompactionOptions,
    reason: Reason,
    score: f64,
) -> Compaction {
    let next = version.overlapping(level + 1, f.smallest_user_key(), f.largest_user_key());
    let mut inputs = vec![(level, vec![Arc::clone(f)])];
    if !next.is_empty() {
        inputs.push((level + 1, next));
    }
    Compaction {
        reason,
        score,
        inputs,
        output_level: level + 1,
        target_file_bytes: opts.target_file_size,
    }
}

/// Every file of `level` and the files of `output` they overlap.
fn level_into_next(
    version: &Version,
    level: usize,
    output: usize,
    opts: &CompactionOptions,
) -> Compaction {
    let files = version.level(level).to_vec();
    let (lo, hi) = key_hull(files.iter());
    let next = if files.is_empty() {
        Vec::new()
    } else {
        version.overlapping(output, &lo, &hi)
    };
    let mut inputs = vec![(level, files)];
    if !next.is_empty() {
        inputs.push((output, next));
    }
    Compaction {
        reason: Reason::Manual,
        score: 0.0,
        inputs,
        output_level: output,
        target_file_bytes: opts.target_file_size,
    }
}

/// A sorted run of a tiered table: one L0 file, or one whole deeper level.
struct Run {
    level: usize,
    files: Vec<Arc<FileMeta>>,
    bytes: u64,
}

impl Run {
    fn busy(&self) -> bool {
        self.files.iter().any(|f| f.is_being_compacted())
    }
}

/// The table's sorted runs, newest first.
fn sorted_runs(version: &Version) -> Vec<Run> {
    let mut runs: Vec<Run> = version
        .level(0)
        .iter()
        .map(|f| Run {
            level: 0,
            files: vec![Arc::clone(f)],
            bytes: f.record.size,
        })
        .collect();
    for n in 1..LSM_LEVELS {
        let files = version.level(n);
        if !files.is_empty() {
            runs.push(Run {
                level: n,
                files: files.to_vec(),
                bytes: version.level_bytes(n),
            });
        }
    }
    runs
}

fn pick_tiered(version: &Version, opts: &CompactionOptions, busy: &Busy<'_>) -> Option<Compaction> {
    let runs = sorted_runs(version);
    let n = runs.len();
    let trigger = opts.l0_trigger as usize;
    if n < trigger.max(2) {
        return None;
    }
    let score = n as f64 / trigger as f64;
    let window = |start: usize, end: usize, reason: Reason| -> Option<Compaction> {
        let chosen = runs.get(start..end)?;
        let reaches_oldest = end == n;
        let output_level = if reaches_oldest {
            LAST_LEVEL
        } else {
            chosen.iter().map(|r| r.level).max().unwrap_or(0)
        };
        let mut inputs: Vec<(usize, Vec<Arc<FileMeta>>)> = Vec::new();
        for r in chosen {
            match inputs.last_mut() {
                Some((level, files)) if *level == r.level => files.extend(r.files.iter().cloned()),
                _ => inputs.push((r.level, r.files.clone())),
            }
        }
        let c = Compaction {
            reason,
            score,
            inputs,
            output_level,
            target_file_bytes: if output_level == 0 {
                u64::MAX
            } else {
                opts.target_file_size
            },
        };
        busy.allows(&c).then_some(c)
    };

    // 1. Space amplification: everything into one run.
    if let Some((oldest, newer)) = runs.split_last() {
        let newer_bytes: u64 = newer.iter().map(|r| r.bytes).sum();
        if newer_bytes.saturating_mul(100)
            >= oldest
                .bytes
                .saturating_mul(u64::from(opts.max_size_amplification_percent))
            && !runs.iter().any(Run::busy)
        {
            if let Some(c) = window(0, n, Reason::SpaceAmplification) {
                return Some(c);
            }
        }
    }
    // 2. Adjacent runs of similar size.
    let ratio = u64::from(opts.size_ratio_percent);
    let (min_w, max_w) = (opts.min_merge_width as usize, opts.max_merge_width as usize);
    for start in 0..n {
        let Some(first) = runs.get(start) else { break };
        if first.busy() {
            continue;
        }
        let mut sum = first.bytes;
        let mut end = start + 1;
        while end < n && end - start < max_w {
            let Some(r) = runs.get(end) else { break };
            if r.busy() || r.bytes.saturating_mul(100) > sum.saturating_mul(100 + ratio) {
                break;
            }
            sum += r.bytes;
            end += 1;
        }
        if end - start >= min_w {
            if let Some(c) = window(start, end, Reason::SizeRatio) {
                return Some(c);
            }
        }
    }
    // 3. Too many runs: merge the newest free ones down to the trigger.
    if n > trigger {
        let start = runs.iter().position(|r| !r.busy())?;
        let want = (n - trigger + 1).max(2);
        let mut end = start;
        while end < n && end - start < want {
            if runs.get(end).is_some_and(Run::busy) {
                break;
            }
            end += 1;
        }
        if end - start >= 2 {
            return window(start, end, Reason::RunCount);
        }
    }
    None
}

/// `compact_level(level)`: every file of `level` into the level below it
/// (for L0 of a leveled table, the level L0 compacts into). None when the
/// level is empty; Err(()) when some of the files are being compacted now.
pub(crate) fn manual_level(
    version: &Version,
    opts: &CompactionOptions,
    level: usize,
    busy: &Busy<'_>,
) -> Result<Option<Compaction>, ()> {
    if version.level(level).is_empty() {
        return Ok(None);
    }
    let output = if level == 0 {
        l0_output_level(version, opts)
    } else {
        level + 1
    };
    let c = level_into_next(version, level, output, opts);
    if busy.allows(&c) {
        Ok(Some(c))
    } else {
        Err(())
    }
}

/// `compact_all`: every file into one sorted run in the last level.
pub(crate) fn manual_all(
    version: &Version,
    opts: &CompactionOptions,
    busy: &Busy<'_>,
) -> Result<Option<Compaction>, ()> {
    let inputs: Vec<(usize, Vec<Arc<FileMeta>>)> = version
        .levels
        .iter()
        .enumerate()
        .filter(|(_, f)| !f.is_empty())
        .map(|(n, f)| (n, f.clone()))
        .collect();
    if inputs.is_empty() {
        return Ok(None);
    }
    let c = Compaction {
        reason: Reason::Manual,
        score: 0.0,
        inputs,
        output_level: LAST_LEVEL,
        target_file_bytes: opts.target_file_size,
    };
    if busy.allows(&c) {
        Ok(Some(c))
    } else {
        Err(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::Cache;
    use crate::fs::OsFs;
    use crate::manifest::FileRecord;
    use crate::mvcc::key::{internal_key, Kind};

    const MIB: u64 = 1 << 20;

    fn file(number: u64, lo: &str, hi: &str, size: u64) -> Arc<FileMeta> {
        let record = FileRecord {
            number,
            size,
            entries: 1,
            smallest: internal_key(lo.as_bytes(), number, Kind::Put),
            largest: internal_key(hi.as_bytes(), number, Kind::Put),
            seqno_min: number,
            seqno_max: number,
            range_dels_applied: 0,
        };
        Arc::new(FileMeta::new(
            record,
            format!("/nonexistent/{number}.sst").into(),
            Arc::new(OsFs::new()),
            Arc::new(Cache::new(0)),
            crate::lsm::version::SstReads::Pread,
        ))
    }

    fn version(levels: Vec<(usize, Vec<Arc<FileMeta>>)>) -> Version {
        let mut v = Version::empty();
        for (n, files) in levels {
            v.levels[n] = files;
        }
        v
    }

    const IDLE: Busy<'static> = Busy { outputs: &[] };

    #[test]
    fn dynamic_targets_size_the_levels_from_the_last_one_up() {
        let opts = CompactionOptions::leveled();
        let empty = Version::empty();
        assert_eq!(level_targets(&empty, &opts).base_level, LAST_LEVEL);
        // 1 GiB in the last level: 1024 -> 102.4 (L5, above 64) -> 10.24
        // MiB (L4, at most 64): L4 is the base level.
        let v = version(vec![(6, vec![file(1, "a", "z", 1024 * MIB)])]);
        let t = level_targets(&v, &opts);
        assert_eq!(t.base_level, 4);
        assert_eq!(t.targets[4], 1024 * MIB / 100);
        assert_eq!(t.targets[5], t.targets[4] * 10);
        assert_eq!(t.targets[6], t.targets[4] * 100);
        assert_eq!(l0_output_level(&v, &opts), 4);
        // Data above the base level: L0 goes there, not below it.
        let v = version(vec![
            (2, vec![file(2, "a", "b", MIB)]),
            (6, vec![file(1, "a", "z", 1024 * MIB)]),
        ]);
        assert_eq!(l0_output_level(&v, &opts), 2);
        let scores = level_scores(&v, &opts);
        assert!(
            scores[2] > 1.0,
            "a level above the base must drain: {scores:?}"
        );
    }

    #[test]
    fn static_targets_start_at_l1() {
        let opts = CompactionOptions {
            dynamic_level_bytes: false,
            ..CompactionOptions::leveled()
        };
        let t = level_targets(&Version::empty(), &opts);
        assert_eq!(t.base_level, 1);
        assert_eq!(t.targets[1], 64 * MIB);
        assert_eq!(t.targets[2], 640 * MIB);
    }

    #[test]
    fn leveled_compacts_l0_at_the_trigger_and_skips_busy_files() {
        let opts = CompactionOptions::leveled();
        let l0: Vec<_> = (1..=3).map(|n| file(10 + n, "a", "m", MIB)).collect();
        let v = version(vec![(0, l0.clone())]);
        assert!(
            pick(&v, &opts, &IDLE).is_none(),
            "3 runs are below the trigger"
        );
        let mut l0 = l0;
        l0.insert(0, file(20, "c", "d", MIB));
        let v = version(vec![(0, l0.clone()), (6, vec![file(1, "a", "z", MIB)])]);
        let c = pick(&v, &opts, &IDLE).expect("L0 at the trigger");
        assert_eq!(c.reason, Reason::L0Runs);
        assert_eq!(c.output_level, LAST_LEVEL);
        assert_eq!(
            c.files().count(),
            5,
            "every run and the overlapping L6 file"
        );
        // While an L0 run is being compacted, no second L0 compaction.
        l0[1]
            .being_compacted
            .store(true, std::sync::atomic::Ordering::Release);
        assert!(pick(&v, &opts, &IDLE).is_none());
        // An output range in use at the output level blocks it too.
        l0[1]
            .being_compacted
            .store(false, std::sync::atomic::Ordering::Release);
        let running = [OutputRange {
            level: LAST_LEVEL,
            lo: b"x".to_vec(),
            hi: b"y".to_vec(),
        }];
        let busy = Busy { outputs: &running };
        assert!(pick(&v, &opts, &busy).is_none());
    }

    #[test]
    fn leveled_compacts_a_file_down_once_reads_have_cost_its_compaction() {
        // Goal: a file that reads keep looking into on their way to another
        // is moved down when nothing bigger is due, and only then.
        let opts = CompactionOptions::leveled();
        let upper = file(1, "c", "f", 32 * MIB);
        let v = version(vec![
            (5, vec![Arc::clone(&upper)]),
            (
                6,
                vec![
                    file(2, "a", "b", 200 * MIB),
                    file(3, "c", "d", 200 * MIB),
                    file(4, "e", "z", 200 * MIB),
                ],
            ),
        ]);
        assert!(pick(&v, &opts, &IDLE).is_none(), "below its target");
        // The compaction would read the 32 MiB file and the 400 MiB it
        // overlaps below: it pays after that many bytes' worth of reads.
        let allowed = (32 + 400) * MIB / READ_COST_BYTES;
        for _ in 1..allowed {
            upper.charge_read();
        }
        assert!(pick(&v, &opts, &IDLE).is_none(), "one read short");
        upper.charge_read();
        let c = pick(&v, &opts, &IDLE).expect("due by its reads");
        assert_eq!(c.reason, Reason::Reads);
        assert_eq!(c.output_level, 6);
        let numbers: Vec<u64> = c.files().map(|f| f.record.number).collect();
        assert_eq!(numbers, [1, 3, 4], "the file and what it overlaps below");
        // Not while it is being compacted already.
        upper
            .being_compacted
            .store(true, std::sync::atomic::Ordering::Release);
        assert!(pick(&v, &opts, &IDLE).is_none());
        // A level past its size goes first.
        upper
            .being_compacted
            .store(false, std::sync::atomic::Ordering::Release);
        let l0: Vec<_> = (10..14).map(|n| file(n, "a", "z", MIB)).collect();
        let mut with_l0 = v.clone();
        with_l0.levels[0] = l0;
        let c = pick(&with_l0, &opts, &IDLE).expect("L0 at its trigger");
        assert_eq!(c.reason, Reason::L0Runs);
    }

    #[test]
    fn leveled_picks_the_file_with_the_least_overlap() {
        let opts = CompactionOptions {
            dynamic_level_bytes: false,
            level_base_bytes: MIB,
            ..CompactionOptions::leveled()
        };
        let v = version(vec![
            (1, vec![file(1, "a", "c", MIB), file(2, "d", "f", MIB)]),
            (2, vec![file(3, "a", "b", 5 * MIB), file(4, "e", "e", MIB)]),
        ]);
        let c = pick(&v, &opts, &IDLE).expect("L1 is over its target");
        assert_eq!(c.reason, Reason::LevelSize);
        let numbers: Vec<u64> = c.files().map(|f| f.record.number).collect();
        assert_eq!(numbers, vec![2, 4]);
        assert_eq!(c.output_level, 2);
    }

    #[test]
    fn tiered_prefers_space_amplification_then_similar_sizes_then_count() {
        let opts = CompactionOptions::tiered();
        // Newer runs reach 200% of the oldest: merge everything.
        let v = version(vec![(
            0,
            (1..=4).map(|n| file(10 - n, "a", "z", MIB)).collect(),
        )]);
        let c = pick(&v, &opts, &IDLE).expect("due");
        assert_eq!(c.reason, Reason::SpaceAmplification);
        assert_eq!(c.output_level, LAST_LEVEL);
        assert_eq!(c.files().count(), 4);
        // Three small runs over a big one: merge the three into one L0 run.
        let v = version(vec![
            (0, (1..=3).map(|n| file(10 - n, "a", "z", MIB)).collect()),
            (6, vec![file(1, "a", "z", 100 * MIB)]),
        ]);
        let c = pick(&v, &opts, &IDLE).expect("due");
        assert_eq!(c.reason, Reason::SizeRatio);
        assert_eq!(c.output_level, 0);
        assert_eq!(c.files().count(), 3);
        assert_eq!(c.target_file_bytes, u64::MAX, "an L0 run is one file");
        // Growing sizes (no similar neighbours) past the trigger: merge the
        // newest runs down to the trigger.
        let sizes = [1, 4, 16, 64];
        let v = version(vec![
            (
                0,
                sizes
                    .iter()
                    .enumerate()
                    .map(|(i, s)| file(20 - i as u64, "a", "z", s * MIB))
                    .collect(),
            ),
            (6, vec![file(1, "a", "z", 1000 * MIB)]),
        ]);
        let c = pick(&v, &opts, &IDLE).expect("5 runs > trigger 4");
        assert_eq!(c.reason, Reason::RunCount);
        assert_eq!(c.files().count(), 2);
        assert_eq!(c.output_level, 0);
    }

    #[test]
    fn older_runs_see_only_what_is_older_than_the_inputs() {
        let l0 = vec![
            file(5, "a", "c", 1),
            file(4, "a", "c", 1),
            file(3, "x", "z", 1),
        ];
        let v = version(vec![(0, l0.clone()), (6, vec![file(1, "m", "n", 1)])]);
        let c = Compaction {
            reason: Reason::Manual,
            score: 0.0,
            inputs: vec![(0, vec![Arc::clone(&l0[0]), Arc::clone(&l0[1])])],
            output_level: 0,
            target_file_bytes: u64::MAX,
        };
        let older = c.older_runs(&v);
        assert!(older.may_hold(b"y"), "the older L0 run");
        assert!(older.may_hold(b"m"), "the last level");
        assert!(!older.may_hold(b"b"), "only in the inputs");
    }
}
