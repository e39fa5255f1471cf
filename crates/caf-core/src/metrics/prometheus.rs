//! caf's metrics in the Prometheus text exposition format, through
//! [`metrics_exporter_prometheus`] (feature `prometheus`).
//!
//! [`recorder`] is a Prometheus recorder with caf's histogram buckets, for a live process
//! (install it, or use it locally); [`render`] writes what a store holds ([`StoreMetrics`]) in
//! the same format, with the same names and buckets.

use super::{StoreMetrics, SAVE_LATENCY_MS, SAVE_SIZE_BYTES};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusRecorder};

/// The upper bounds of the `checkpoint_save_size_bytes` buckets: 1 KiB to 64 MiB (the format's
/// largest document), by fours.
pub const SIZE_BUCKETS: [f64; 9] = [
    1024.0,
    4096.0,
    16384.0,
    65536.0,
    262_144.0,
    1_048_576.0,
    4_194_304.0,
    16_777_216.0,
    67_108_864.0,
];

/// The upper bounds of the `checkpoint_save_latency_ms` buckets, in milliseconds.
pub const LATENCY_BUCKETS_MS: [f64; 12] = [
    0.5, 1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0,
];

/// A Prometheus recorder (not installed) that renders caf's two histograms with
/// [`SIZE_BUCKETS`] and [`LATENCY_BUCKETS_MS`] (Prometheus histograms, not summaries).
pub fn recorder() -> PrometheusRecorder {
    let builder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Full(SAVE_SIZE_BYTES.into()), &SIZE_BUCKETS)
        .and_then(|b| {
            b.set_buckets_for_metric(Matcher::Full(SAVE_LATENCY_MS.into()), &LATENCY_BUCKETS_MS)
        });
    match builder {
        Ok(b) => b.build_recorder(),
        // Only empty bucket lists are refused, and these are constants that are not empty.
        Err(_) => PrometheusBuilder::new().build_recorder(),
    }
}

/// The metrics of a store in the Prometheus text format: `# HELP` and `# TYPE` lines, then the
/// samples, each labelled with the store. Save latency is not known from a store (only a live
/// process measures it), so it has no samples; a comment line says so.
pub fn render(m: &StoreMetrics) -> String {
    let recorder = recorder();
    let handle = recorder.handle();
    ::metrics::with_local_recorder(&recorder, || {
        super::describe();
        m.emit();
    });
    let mut text = format!(
        "# {SAVE_LATENCY_MS}: not known from a store; a live process (caf mcp, an embedding program) measures it\n"
    );
    text.push_str(&handle.render());
    text
}
