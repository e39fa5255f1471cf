//! Metrics (issue 9, part 4): the library emits them through the `metrics` facade as it saves,
//! resumes and prunes (checked with metrics-util's debugging recorder); a store's own view
//! (`StoreMetrics`) agrees with what was emitted; `caf stats --metrics` prints it as Prometheus
//! text that parses, with the values of a known workload.

#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use caf_core::metrics::{self, prometheus, StoreMetrics};
use caf_core::{
    CheckpointManager, CheckpointOptions, CheckpointReason, CheckpointStore, ExecutionId, Executor,
    FileStore, ListFilter, RetentionPolicy, RuntimeState, Step, SystemClock,
};
use caf_tests::cli::Sandbox;
use caf_tests::gen::CheckpointBuilder;
use caf_tests::FourStores;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use serde_json::json;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What was emitted: by metric name, the value and the `store` label of each series.
#[derive(Debug, Default)]
struct Emitted {
    counters: HashMap<String, (u64, String)>,
    histograms: HashMap<String, (Vec<f64>, String)>,
}

/// Runs `f` with a debugging recorder as this thread's recorder; what it emitted.
fn emitted(f: impl FnOnce()) -> Emitted {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    ::metrics::with_local_recorder(&recorder, f);
    let mut out = Emitted::default();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let key = key.key();
        let labels: Vec<_> = key.labels().collect();
        assert_eq!(labels.len(), 1, "{key:?}");
        assert_eq!(labels[0].key(), metrics::STORE_LABEL);
        let store = labels[0].value().to_string();
        let name = key.name().to_string();
        match value {
            DebugValue::Counter(n) => {
                assert!(out.counters.insert(name, (n, store)).is_none());
            }
            DebugValue::Histogram(v) => {
                let v = v.into_iter().map(|x| x.0).collect();
                assert!(out.histograms.insert(name, (v, store)).is_none());
            }
            DebugValue::Gauge(_) => panic!("the library emits no gauge: {key:?}"),
        }
    }
    out
}

/// A plan of three steps whose last fails while `fail` is set.
fn executor<'a, S: CheckpointStore>(
    m: &'a CheckpointManager<S>,
    fail: Arc<AtomicBool>,
) -> Executor<'a, S> {
    let ok = |id: &str| Step::new(id, |_| Ok(json!("done")));
    Executor::new(m, "agent", ExecutionId::new("exec_run").unwrap())
        .step(ok("a"))
        .step(ok("b"))
        .step(Step::new("c", move |_| {
            if fail.load(Ordering::SeqCst) {
                Err("down".to_string())
            } else {
                Ok(json!("c"))
            }
        }))
}

#[test]
fn saves_resumes_and_prunes_emit_metrics_and_the_store_view_agrees() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path()).unwrap();
    let label = tmp.path().display().to_string();
    assert_eq!(store.describe(), label);
    let m = CheckpointManager::new(&store);
    let mut deleted = 0;
    let mut state_execution = None;
    let e = emitted(|| {
        // Four checkpoints of a state that holds a secret: each save redacts one value.
        let mut state = RuntimeState::new("agent");
        state.set_variable("api_key", json!("k3y-0f-the-k1ngd0m"));
        for i in 0..4 {
            state.set_variable("i", json!(i));
            m.checkpoint(
                &mut state,
                CheckpointOptions::new(CheckpointReason::StepCompleted),
            )
            .unwrap();
        }
        // A run that fails at its third step, then resumes past the first two.
        let fail = Arc::new(AtomicBool::new(true));
        executor(&m, fail.clone()).run().unwrap_err();
        fail.store(false, Ordering::SeqCst);
        let report = executor(&m, fail).run().unwrap();
        assert_eq!(report.steps_recovered, 2);
        // A fork is a save too.
        let first = m.store().list(&ListFilter::default()).unwrap();
        m.fork(&first.last().unwrap().id, Default::default())
            .unwrap();
        // Keep the last two of the first execution.
        let policy = RetentionPolicy {
            keep_last: Some(2),
            ..RetentionPolicy::default()
        };
        let outcome = caf_core::prune::prune(
            &store,
            &policy,
            Some(state.execution_id()),
            caf_core::Clock::now(&SystemClock),
            false,
        )
        .unwrap();
        deleted = outcome.deleted.len();
        state_execution = Some(state.execution_id().clone());
    });
    // 4 saves, the run's started + 2 steps + error, the resumed run's resumed + c + completed,
    // and the fork: 12.
    let held = store.list(&ListFilter::default()).unwrap();
    assert!(deleted > 0);
    assert_eq!(held.len() + deleted, 12);
    assert_eq!(e.counters[metrics::SAVE_COUNT], (12, label.clone()));
    assert_eq!(e.counters[metrics::RESUME_COUNT], (1, label.clone()));
    assert_eq!(e.counters[metrics::STEPS_RECOVERED], (2, label.clone()));
    assert_eq!(
        e.counters[metrics::PRUNE_COUNT],
        (deleted as u64, label.clone())
    );
    // The four saves with the secret; the fork's copy of a redacted state has nothing new.
    assert_eq!(e.counters[metrics::REDACTION_COUNT], (4, label.clone()));
    let (sizes, l) = &e.histograms[metrics::SAVE_SIZE_BYTES];
    assert_eq!(l, &label);
    assert_eq!(sizes.len(), 12);
    // Every checkpoint still held was emitted with its stored size.
    for s in &held {
        assert!(
            sizes.contains(&(s.bytes as f64)),
            "{} bytes not emitted",
            s.bytes
        );
    }
    let (latencies, _) = &e.histograms[metrics::SAVE_LATENCY_MS];
    assert_eq!(latencies.len(), 12);
    assert!(latencies.iter().all(|ms| *ms >= 0.0 && ms.is_finite()));
    // The resume is recorded in the store, so its own view counts the same.
    let resumed: Vec<_> = held
        .iter()
        .filter(|s| s.checkpoint_reason.as_str() == metrics::RESUMED_REASON)
        .collect();
    assert_eq!(resumed.len(), 1);
    let view = StoreMetrics::of(&store).unwrap();
    assert_eq!(view.saves, 12);
    assert_eq!(view.resumes, 1);
    assert_eq!(view.steps_recovered, 2);
    assert_eq!(view.pruned, deleted as u64);
    assert_eq!(view.checkpoints, held.len() as u64);
    assert_eq!(view.executions, 2);
    // Redactions: the counts the checkpoints still held record (the pruned ones are gone).
    let recorded: u64 = held
        .iter()
        .map(|s| store.load(&s.id).unwrap().metadata.redactions())
        .sum();
    // One in each save of the state still held (a branch's copy of a redacted state adds none).
    let saves_of_state = held
        .iter()
        .filter(|s| &s.execution_id == state_execution.as_ref().unwrap())
        .filter(|s| s.checkpoint_reason == CheckpointReason::StepCompleted)
        .count() as u64;
    assert!(saves_of_state > 0);
    assert_eq!(recorded, saves_of_state);
    assert_eq!(view.redactions, recorded);
    assert_eq!(
        view.sizes.iter().sum::<u64>(),
        held.iter().map(|s| s.bytes).sum::<u64>()
    );
    assert_eq!(view.store, label);
}

#[test]
fn save_parts_emits_and_a_refused_save_emits_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FileStore::open(tmp.path()).unwrap();
    let request = || caf_core::save::SaveRequest::new(ExecutionId::new("exec_parts").unwrap());
    let e = emitted(|| {
        caf_core::save::save_parts(
            &store,
            br#"{"agent_id": "a", "progress": {"step_number": 2, "completed_steps": [], "pending_steps": []}}"#,
            caf_core::save::SaveRequest {
                reason: "resumed".parse().unwrap(),
                ..request()
            },
            caf_core::CheckpointId::generate(),
            caf_core::Clock::now(&SystemClock),
        )
        .unwrap();
        caf_core::save::save_parts(
            &store,
            br#"{"progress": {"step_number": "x"}}"#,
            request(),
            caf_core::CheckpointId::generate(),
            caf_core::Clock::now(&SystemClock),
        )
        .unwrap_err();
    });
    assert_eq!(e.counters[metrics::SAVE_COUNT].0, 1);
    // A resume of a run with no completed steps recovered none.
    assert_eq!(e.counters[metrics::RESUME_COUNT].0, 1);
    assert_eq!(e.counters[metrics::STEPS_RECOVERED].0, 0);
}

/// Checks that `text` is Prometheus text exposition format, line by line: every line is empty,
/// a comment, `# HELP name …` or `# TYPE name counter|gauge|histogram` (once per family, before
/// its samples), or a sample `name{label="value",…} number` of a declared family. Histogram
/// buckets are cumulative, end with `+Inf`, and equal `_count`.
fn check_exposition(text: &str) {
    let mut types: HashMap<String, String> = HashMap::new();
    let mut buckets: HashMap<String, Vec<(String, f64)>> = HashMap::new();
    let mut counts: HashMap<String, f64> = HashMap::new();
    let name_ok = |n: &str| {
        !n.is_empty()
            && n.chars().enumerate().all(|(i, c)| {
                c.is_ascii_alphabetic() || c == '_' || c == ':' || (i > 0 && c.is_ascii_digit())
            })
    };
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            if let Some(help) = rest.strip_prefix("HELP ") {
                let name = help.split(' ').next().unwrap();
                assert!(name_ok(name), "{line}");
            } else if let Some(ty) = rest.strip_prefix("TYPE ") {
                let (name, kind) = ty.split_once(' ').unwrap();
                assert!(name_ok(name), "{line}");
                assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
                assert!(
                    types.insert(name.into(), kind.into()).is_none(),
                    "twice: {line}"
                );
            }
            continue;
        }
        assert!(!line.starts_with('#'), "{line}");
        let (series, value) = line.rsplit_once(' ').unwrap();
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("value: {line}"));
        let (name, labels) = match series.split_once('{') {
            Some((n, rest)) => (
                n,
                rest.strip_suffix('}').unwrap_or_else(|| panic!("{line}")),
            ),
            None => (series, ""),
        };
        assert!(name_ok(name), "{line}");
        let mut le = None;
        for pair in labels.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or_else(|| panic!("{line}"));
            assert!(name_ok(k), "{line}");
            assert!(
                v.len() >= 2 && v.starts_with('"') && v.ends_with('"'),
                "{line}"
            );
            if k == "le" {
                le = Some(v.trim_matches('"').to_string());
            }
        }
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s)
                    .filter(|f| types.get(*f).is_some_and(|t| t == "histogram"))
            })
            .unwrap_or(name);
        assert!(
            types.contains_key(family),
            "a sample before its TYPE: {line}"
        );
        if name.ends_with("_bucket") && family != name {
            buckets
                .entry(family.into())
                .or_default()
                .push((le.unwrap(), value));
        } else if name.ends_with("_count") && family != name {
            counts.insert(family.into(), value);
        }
    }
    for (family, b) in &buckets {
        assert_eq!(b.last().unwrap().0, "+Inf", "{family}");
        assert!(b.windows(2).all(|w| w[0].1 <= w[1].1), "{family}: {b:?}");
        assert_eq!(b.last().unwrap().1, counts[family], "{family}");
    }
}

/// The value of each sample of a Prometheus text, by (series name, `le` label when present):
/// parsed with prometheus-parse, every sample line accounted for.
fn samples(text: &str) -> HashMap<(String, String), f64> {
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let lines = text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count();
    let mut out = HashMap::new();
    for s in scrape.samples {
        match s.value {
            prometheus_parse::Value::Histogram(hs) => {
                for h in hs {
                    let le = if h.less_than.is_infinite() {
                        "+Inf".to_string()
                    } else {
                        h.less_than.to_string()
                    };
                    out.insert((format!("{}_bucket", s.metric), le), h.count);
                }
            }
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => {
                out.insert((s.metric, String::new()), v);
            }
            prometheus_parse::Value::Summary(_) => panic!("no summaries expected"),
        }
    }
    assert_eq!(out.len(), lines, "a sample line was not parsed: {text}");
    out
}

#[test]
fn caf_stats_metrics_prints_the_store_in_prometheus_text() {
    let sb = Sandbox::new();
    // A fresh directory: nothing to report yet.
    let out = sb.caf(&["stats", "--metrics"]).fails(1);
    assert!(
        out.err().contains("no checkpoint directory"),
        "{}",
        out.describe()
    );
    // Five saves (one records a resume after two steps; the last two hold two secrets, one
    // pruned first), then a prune of two.
    for n in 1..=5 {
        let reason = if n == 4 { "resumed" } else { "step_completed" };
        let mut parts = json!({"agent_id": "a", "progress": {
            "step_number": n,
            "completed_steps": (1..=n).map(|i| json!({"name": format!("s{i}"), "completed_at": "2026-01-05T10:00:00Z"})).collect::<Vec<_>>(),
            "pending_steps": []
        }});
        if n >= 4 {
            parts["context"] = json!({"variables": {"password": "hunter22", "db_token": "t0k"},
                "state": {}, "history": []});
        }
        if n == 1 {
            parts["context"] =
                json!({"variables": {"secret": "s3cr3t"}, "state": {}, "history": []});
        }
        let file = sb.path().join(format!("parts{n}.json"));
        std::fs::write(&file, parts.to_string()).unwrap();
        sb.caf(&[
            "save",
            "-e",
            "exec_m",
            "--reason",
            reason,
            "-f",
            file.to_str().unwrap(),
        ])
        .ok();
    }
    sb.caf(&["prune", "--keep-last", "3"]).ok();
    let held: Vec<u64> = sb
        .list(&[])
        .iter()
        .map(|s| s["bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(held.len(), 3);

    let out = sb.caf(&["stats", "--metrics"]).ok();
    let text = out.out();
    check_exposition(&text);
    let v = samples(&text);
    let get = |name: &str| v[&(name.to_string(), String::new())];
    assert_eq!(get("checkpoint_save_count"), 5.0);
    assert_eq!(get("checkpoint_prune_count"), 2.0);
    assert_eq!(get("checkpoint_resume_count"), 1.0);
    assert_eq!(get("steps_recovered"), 4.0);
    // Two values in each of the two held checkpoints with secrets; the pruned one's is gone.
    assert_eq!(get("checkpoint_redaction_count"), 4.0);
    assert_eq!(get("checkpoints_stored"), 3.0);
    assert_eq!(get("executions_stored"), 1.0);
    assert_eq!(get("checkpoint_save_size_bytes_count"), 3.0);
    assert_eq!(
        get("checkpoint_save_size_bytes_sum"),
        held.iter().sum::<u64>() as f64
    );
    let under_4k = held.iter().filter(|b| **b <= 4096).count() as f64;
    assert_eq!(
        v[&(
            "checkpoint_save_size_bytes_bucket".to_string(),
            "4096".to_string()
        )],
        under_4k
    );
    assert!(
        text.contains(&format!("store=\"{}\"", sb.store_str())),
        "{text}"
    );
    for name in ["checkpoint_save_count", "checkpoint_save_size_bytes"] {
        assert!(text.contains(&format!("# HELP {name} ")), "{text}");
    }
    // Latency is not known from a store: said so, and no series.
    assert!(
        text.contains("# checkpoint_save_latency_ms: not known from a store"),
        "{text}"
    );
    assert!(!text.contains("checkpoint_save_latency_ms_"), "{text}");

    // --json: the same figures.
    let j = sb.caf(&["--json", "stats", "--metrics"]).ok().json();
    assert_eq!(j["saves"], 5);
    assert_eq!(j["pruned"], 2);
    assert_eq!(j["resumes"], 1);
    assert_eq!(j["steps_recovered"], 4);
    assert_eq!(j["checkpoints"], 3);
    assert_eq!(j["redactions"], 4);
    // --metrics is a view of the whole store.
    sb.caf(&["stats", "--metrics", "--execution", "exec_m"])
        .fails(2);
}

#[test]
fn rendered_store_metrics_parse_with_every_bucket() {
    let m = StoreMetrics {
        store: "a \"quoted\" dir".into(),
        saves: 7,
        sizes: vec![100, 5000, 70_000_000],
        resumes: 2,
        steps_recovered: 9,
        pruned: 4,
        redactions: 6,
        checkpoints: 3,
        executions: 2,
    };
    let text = prometheus::render(&m);
    check_exposition(&text);
    let v = samples(&text);
    let bucket = |le: &str| {
        v[&(
            "checkpoint_save_size_bytes_bucket".to_string(),
            le.to_string(),
        )]
    };
    assert_eq!(bucket("1024"), 1.0);
    assert_eq!(bucket("16384"), 2.0);
    assert_eq!(bucket("67108864"), 2.0);
    assert_eq!(bucket("+Inf"), 3.0);
    assert_eq!(
        v[&("checkpoint_redaction_count".to_string(), String::new())],
        6.0
    );
    assert!(text.contains(r#"store="a \"quoted\" dir""#), "{text}");
}

/// A checkpoint with one secret: a value under a sensitive key.
fn with_one_secret(id: &str) -> caf_core::Checkpoint {
    CheckpointBuilder::new(id)
        .execution("exec_secret")
        .variable("db_password", json!("correct-horse-battery"))
        .build()
}

#[test]
fn every_store_counts_each_redacted_value_once_live_and_in_its_view() {
    let dir = tempfile::tempdir().unwrap();
    let stores = FourStores::open(dir.path());
    for (name, store) in stores.each() {
        let e = emitted(|| {
            store.save(&with_one_secret("ckpt_a")).unwrap();
            // Through save_encoded too (what import and an async store's writer call).
            let c = with_one_secret("ckpt_b");
            let bytes = caf_core::format::encode(&c).unwrap();
            store.save_encoded(&c, &bytes).unwrap();
            // A checkpoint already redacted has nothing new to count.
            let back = store.load(&c.id).unwrap();
            store.save(&back).unwrap();
        });
        assert_eq!(
            e.counters.get(metrics::REDACTION_COUNT),
            Some(&(2, store.describe())),
            "{name}: one series, the store's, counting each value once"
        );
        let view = StoreMetrics::of(store).unwrap();
        assert_eq!(view.redactions, 2, "{name}");
    }
}
