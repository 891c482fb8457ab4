//! Latency histograms: recorded in nanoseconds (hdrhistogram, three
//! significant digits), summarised and printed in microseconds as db_bench
//! prints them.
//!
//! Thread-safety: a histogram belongs to one thread at a time; workers hand
//! theirs over through a mutex (see `bench::worker`).

use hdrhistogram::Histogram;

/// Longest latency a histogram tells apart, in nanoseconds (an hour; longer
/// operations are recorded as this).
const HIGHEST_NANOS: u64 = 3_600 * 1_000_000_000;

/// A new, empty latency histogram in nanoseconds.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIGHEST_NANOS, 3).expect("constant bounds are valid")
}

/// Adds `from` into `into`. Both come from `new_histogram`, so they share
/// bounds and the addition cannot fail.
pub fn merge(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    into.add(from)
        .expect("histograms made by new_histogram share their bounds");
}

/// A latency distribution in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Latency {
    /// Operations recorded.
    pub count: u64,
    /// Mean.
    pub mean_micros: f64,
    /// Standard deviation.
    pub stddev_micros: f64,
    /// Fastest.
    pub min_micros: f64,
    /// Median.
    pub p50_micros: f64,
    /// 75th percentile.
    pub p75_micros: f64,
    /// 99th percentile.
    pub p99_micros: f64,
    /// 99.9th percentile.
    pub p999_micros: f64,
    /// 99.99th percentile.
    pub p9999_micros: f64,
    /// Slowest.
    pub max_micros: f64,
}

impl Latency {
    /// The summary of a histogram in nanoseconds (all zeros when empty).
    pub fn of(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        let us = |nanos: u64| nanos as f64 / 1000.0;
        Latency {
            count: h.len(),
            mean_micros: h.mean() / 1000.0,
            stddev_micros: h.stdev() / 1000.0,
            min_micros: us(h.min()),
            p50_micros: us(h.value_at_quantile(0.50)),
            p75_micros: us(h.value_at_quantile(0.75)),
            p99_micros: us(h.value_at_quantile(0.99)),
            p999_micros: us(h.value_at_quantile(0.999)),
            p9999_micros: us(h.value_at_quantile(0.9999)),
            max_micros: us(h.max()),
        }
    }
}

/// The upper limits, in microseconds, of RocksDB's histogram buckets: 1, 2,
/// then each 1.5 times the one before, cut to two significant digits (1, 2,
/// 3, 4, 6, 10, 15, 22, 34, 51, 76, 110, 170, ...), up to `max_micros`'s
/// bucket.
pub fn bucket_limits(max_micros: u64) -> Vec<u64> {
    let mut limits = vec![1u64, 2];
    let mut exact = 2.0f64;
    while limits.last().is_some_and(|&l| l < max_micros) {
        exact *= 1.5;
        // Two significant digits: drop the digits past the second, then
        // put the magnitude back.
        let mut v = exact as u64;
        let mut magnitude = 1u64;
        while v / 10 > 10 {
            v /= 10;
            magnitude *= 10;
        }
        limits.push(v * magnitude);
    }
    limits
}

/// RocksDB's histogram text (`HistogramStat::ToString`): the summary lines,
/// then one line per non-empty bucket `( left, right ] count percent
/// cumulative-percent #marks`. Min and max are whole microseconds there, and
/// so they are here.
pub fn histogram_text(h: &Histogram<u64>) -> String {
    let l = Latency::of(h);
    let mut out = String::new();
    out.push_str(&format!(
        "Count: {} Average: {:.4}  StdDev: {:.2}\n",
        l.count, l.mean_micros, l.stddev_micros
    ));
    out.push_str(&format!(
        "Min: {}  Median: {:.4}  Max: {}\n",
        l.min_micros.round() as u64,
        l.p50_micros,
        l.max_micros.round() as u64
    ));
    out.push_str(&format!(
        "Percentiles: P50: {:.2} P75: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}\n",
        l.p50_micros, l.p75_micros, l.p99_micros, l.p999_micros, l.p9999_micros
    ));
    out.push_str("------------------------------------------------------\n");
    if l.count == 0 {
        return out;
    }
    let limits = bucket_limits(l.max_micros.ceil() as u64);
    let mut counts = vec![0u64; limits.len()];
    for v in h.iter_recorded() {
        // The bucket's lowest value: the recorded value, to the histogram's
        // resolution, so that a value on a limit stays in its bucket.
        let micros = h.lowest_equivalent(v.value_iterated_to()) as f64 / 1000.0;
        // The first bucket whose upper limit reaches the value.
        let i = limits
            .partition_point(|&limit| (limit as f64) < micros)
            .min(limits.len() - 1);
        if let Some(c) = counts.get_mut(i) {
            *c += v.count_at_value();
        }
    }
    let percent = 100.0 / l.count as f64;
    let mut cumulative = 0u64;
    for (i, (&count, &right)) in counts.iter().zip(&limits).enumerate() {
        if count == 0 {
            continue;
        }
        cumulative += count;
        let left = if i == 0 {
            0
        } else {
            limits.get(i - 1).copied().unwrap_or(0)
        };
        let marks = (percent * count as f64 / 5.0 + 0.5) as usize;
        out.push_str(&format!(
            "{} {:>7}, {:>7} ] {:>8} {:>7.3}% {:>7.3}% {}\n",
            if i == 0 { '[' } else { '(' },
            left,
            right,
            count,
            percent * count as f64,
            percent * cumulative as f64,
            "#".repeat(marks)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_limits_are_rocksdbs() {
        // Goal: the same bucket edges as RocksDB's HistogramBucketMapper, so
        // histograms from both tools line up.
        assert_eq!(
            bucket_limits(200),
            [1, 2, 3, 4, 6, 10, 15, 22, 34, 51, 76, 110, 170, 250]
        );
        let l = bucket_limits(1_000_000);
        assert_eq!(l.get(17..21), Some(&[1300, 1900, 2900, 4400][..]));
        assert!(l.last().is_some_and(|&x| x >= 1_000_000));
    }

    #[test]
    fn histogram_text_has_rocksdbs_lines() {
        // Goal: the summary lines parse as db_bench's, and the buckets sum
        // to 100%.
        let mut h = new_histogram();
        for micros in 1..=100u64 {
            h.record(micros * 1000).expect("in range");
        }
        let text = histogram_text(&h);
        let mut lines = text.lines();
        assert!(lines
            .next()
            .is_some_and(|l| l.starts_with("Count: 100 Average: 50.5")));
        assert!(lines
            .next()
            .is_some_and(|l| l.starts_with("Min: 1  Median: 50.")));
        assert!(lines
            .next()
            .is_some_and(|l| l.starts_with("Percentiles: P50: 50.")));
        let last = text.lines().last().expect("buckets");
        assert!(last.contains("100.000%"), "{text}");
        assert!(text.contains("[       0,       1 ]        1"), "{text}");
    }

    #[test]
    fn empty_histogram_prints_zeros() {
        // Goal: a benchmark that did nothing still prints a valid block.
        let text = histogram_text(&new_histogram());
        assert!(text.starts_with("Count: 0 Average: 0.0000  StdDev: 0.00\n"));
        assert_eq!(Latency::of(&new_histogram()), Latency::default());
    }
}
