//! Medians, quantiles and means of microsecond samples.

use std::time::Instant;

pub(super) fn median(v: &mut [f64]) -> f64 {
    quantile(v, 0.5)
}

/// The median of `v`, rounded to the nanosecond ([`rounded`]); `None` for no samples.
pub(super) fn median_of(v: &mut [f64]) -> Option<f64> {
    (!v.is_empty()).then(|| rounded(median(v)))
}

pub(super) fn quantile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    v[i]
}

pub(super) fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

pub(super) fn micros(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

/// A figure in microseconds, to the nanosecond: `3547.608`, not `3547.6079999999997`.
pub(super) fn rounded(us: f64) -> f64 {
    (us * 1000.0).round() / 1000.0
}
