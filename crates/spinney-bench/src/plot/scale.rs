//! The numbers of a chart: which values can be drawn, the ranges of its
//! axes (never empty, the value axis always including 0), and how numbers
//! are written (SI prefixes, as many decimals as neighbouring ticks need).
//! Pure functions, drawn by neither backend.

use super::VALUE_ABS_MAX;

/// Whether a coordinate or value can be drawn.
pub(super) fn plottable(v: f64) -> bool {
    v.is_finite() && v.abs() <= VALUE_ABS_MAX
}

/// The range shown on a value axis: it includes 0 and every value, with
/// `headroom` (a share of the range) beyond the extremes, and is never empty.
pub(super) fn value_range(values: impl IntoIterator<Item = f64>, headroom: f64) -> (f64, f64) {
    let (mut lo, mut hi) = (0.0_f64, 0.0_f64);
    for v in values {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if lo == hi {
        return (0.0, 1.0);
    }
    let pad = (hi - lo) * headroom;
    (
        if lo < 0.0 { lo - pad } else { 0.0 },
        if hi > 0.0 { hi + pad } else { 0.0 },
    )
}

/// The range shown on the x axis of a line chart: from the least to the
/// greatest x, widened around a single x so that the range is never empty.
pub(super) fn key_range(keys: impl IntoIterator<Item = f64>) -> (f64, f64) {
    let mut range: Option<(f64, f64)> = None;
    for k in keys {
        range = Some(match range {
            None => (k, k),
            Some((lo, hi)) => (lo.min(k), hi.max(k)),
        });
    }
    match range {
        None => (0.0, 1.0),
        Some((lo, hi)) if lo == hi => {
            let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.05 };
            (lo - pad, hi + pad)
        }
        Some(range) => range,
    }
}

/// SI prefixes for large magnitudes, largest first.
const PREFIXES_LARGE: [(f64, &str); 6] = [
    (1e18, "E"),
    (1e15, "P"),
    (1e12, "T"),
    (1e9, "G"),
    (1e6, "M"),
    (1e3, "k"),
];
/// SI prefixes for magnitudes below 1e-3, which plain decimals write poorly.
const PREFIXES_SMALL: [(f64, &str); 2] = [(1e-6, "µ"), (1e-9, "n")];

/// The scale and SI prefix a number of magnitude `abs` is written with, or
/// None for magnitudes that only scientific notation writes well.
fn si_prefix(abs: f64) -> Option<(f64, &'static str)> {
    if abs == 0.0 || (1e-3..1e3).contains(&abs) {
        return Some((1.0, ""));
    }
    if !(1e-9..1e21).contains(&abs) {
        return None;
    }
    PREFIXES_LARGE
        .iter()
        .chain(PREFIXES_SMALL.iter())
        .find(|(scale, _)| abs >= *scale)
        .copied()
}

/// Writes `v` with an SI prefix and `decimals(scale)` decimals, trailing
/// zeros dropped: 1.25M, 200k, 0.5, 350µ.
fn format_si(v: f64, decimals: impl Fn(f64) -> usize) -> String {
    let Some((scale, prefix)) = si_prefix(v.abs()) else {
        return format!("{v:.1e}");
    };
    let mut text = format!("{:.*}", decimals(scale), v / scale);
    if text.contains('.') {
        let kept = text.trim_end_matches('0').trim_end_matches('.').len();
        text.truncate(kept);
    }
    if text == "-0" {
        text = "0".to_string();
    }
    text.push_str(prefix);
    text
}

/// Tick labels of an axis: SI prefixes, with as many decimals as the spacing
/// of ticks needs, so that neighbouring labels differ.
pub(super) struct TickFormat {
    /// A bound below plotters' tick spacing: the range over twice the most
    /// ticks. Decimals it asks for beyond the real spacing are zeros, and
    /// trimmed.
    step: f64,
}

impl TickFormat {
    pub(super) fn new((lo, hi): (f64, f64), ticks_max: usize) -> Self {
        let ticks = ticks_max.max(1) as f64;
        Self {
            step: (hi - lo) / (2.0 * ticks),
        }
    }

    pub(super) fn format(&self, v: f64) -> String {
        // A tick meant to be 0 can come out as 1e-17 after rounding.
        if v.abs() < self.step * 1e-6 {
            return "0".to_string();
        }
        format_si(v, |scale| decimals_for(self.step / scale))
    }
}

/// The decimals that tell apart numbers `step` apart, at most 6.
fn decimals_for(step: f64) -> usize {
    if !(step > 0.0 && step.is_finite()) {
        return 0;
    }
    let decimals = (-step.log10()).ceil();
    if decimals <= 0.0 {
        0
    } else {
        decimals.min(6.0) as usize
    }
}

/// A value written in three significant digits: 1.23M, 45.7k, 0.5.
pub(super) fn format_value(v: f64) -> String {
    format_si(v, |scale| {
        let digits_before_point = (v.abs() / scale).log10().floor();
        if digits_before_point.is_finite() && digits_before_point < 2.0 {
            (2.0 - digits_before_point.max(0.0)) as usize
        } else {
            0
        }
    })
}
