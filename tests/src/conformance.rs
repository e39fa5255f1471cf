//! The conformance suite every [`CheckpointStore`] backend must pass.
//!
//! Each check is a public function taking `make`, a function that returns a **fresh, empty**
//! store; a check may call it more than once. Run them all with [`run_all`], or get one
//! `#[test]` per check with [`conformance_tests!`](crate::conformance_tests):
//!
//! ```ignore
//! mod memory {
//!     caf_tests::conformance_tests!(caf_core::MemoryStore::new);
//! }
//! ```
//!
//! The suite never puts more than 10 checkpoints in one execution, so that a backend's
//! per-execution retention limit (the memory store keeps 10 by default) does not change what it
//! sees. Backend-specific behaviour (eviction, files on disk, …) is tested elsewhere.

use crate::gen::{at_ms, ckpt_id, exec_id, full_checkpoint, sample_checkpoints, CheckpointBuilder};
use caf_core::store::lineage;
use caf_core::{
    Checkpoint, CheckpointReason, CheckpointStore, CheckpointSummary, Error, ExecutionId,
    ListFilter, Timestamp,
};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;

/// A conformance check: it calls `make` for a fresh store and panics on a violation.
pub type Check<S> = fn(&dyn Fn() -> S);

/// Calls `$callback!` with the name of every check: the one list of the suite.
#[macro_export]
macro_rules! for_each_conformance_check {
    ($callback:ident ! ( $($args:tt)* )) => {
        $crate::$callback! {$($args)*;
            round_trip_empty_snapshot, round_trip_full, round_trip_arbitrary,
            load_unknown_is_not_found, list_newest_first, filter_by_execution, filter_by_agent,
            filter_by_reason, filter_by_label, filter_by_time_range, filter_limit,
            filters_combine, pagination_with_before, executions_are_isolated, delete_semantics,
            delete_execution_semantics, overwrite_in_place, overwrite_moves_execution,
            concurrent_saves, summaries_match, lineage_follows_parents,
            refuses_what_the_format_cannot_hold,
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_list {
    ($s:ty; $($check:ident),* $(,)?) => {
        vec![$((stringify!($check), $crate::conformance::$check::<$s> as $crate::conformance::Check<$s>)),*]
    };
}

/// Every check, by name.
pub fn checks<S: CheckpointStore>() -> Vec<(&'static str, Check<S>)> {
    for_each_conformance_check!(__conformance_list!(S))
}

/// Runs every check against stores made by `make`.
pub fn run_all<S: CheckpointStore>(make: &dyn Fn() -> S) {
    for (name, check) in checks::<S>() {
        eprintln!("conformance: {name}");
        check(make);
    }
}

/// Defines one `#[test]` per conformance check, each calling the check with `$make` (an
/// expression usable as `&dyn Fn() -> S`, e.g. `MemoryStore::new` or a closure).
///
/// `conformance_tests!(optional $setup => $make)` is for stores that need a service: `$setup`
/// is called with the test's name and returns an `Option`; `None` skips the test (the setup
/// says so loudly), `Some(x)` runs the check with `$make(&x)`.
#[macro_export]
macro_rules! conformance_tests {
    (optional $setup:path => $make:path) => {
        $crate::for_each_conformance_check!(__conformance_optional_tests!($setup, $make));
    };
    ($make:expr) => {
        $crate::for_each_conformance_check!(__conformance_tests!($make));
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_tests {
    ($make:expr; $($check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                $crate::conformance::$check(&$make);
            }
        )*
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_optional_tests {
    ($setup:path, $make:path; $($check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                let Some(base) = $setup(stringify!($check)) else { return };
                $crate::conformance::$check(&|| $make(&base));
            }
        )*
    };
}

// ---- helpers ---------------------------------------------------------------------------------

fn ok<T>(r: caf_core::Result<T>, what: impl std::fmt::Display) -> T {
    r.unwrap_or_else(|e| panic!("{what}: unexpected error: {e}"))
}

fn save_all<S: CheckpointStore>(store: &S, checkpoints: &[Checkpoint]) {
    for c in checkpoints {
        ok(store.save(c), format!("saving {}", c.id));
    }
}

fn list<S: CheckpointStore>(store: &S, filter: &ListFilter) -> Vec<CheckpointSummary> {
    ok(store.list(filter), format!("listing {filter:?}"))
}

fn list_ids<S: CheckpointStore>(store: &S, filter: &ListFilter) -> Vec<String> {
    list(store, filter)
        .into_iter()
        .map(|s| s.id.to_string())
        .collect()
}

fn load<S: CheckpointStore>(store: &S, id: &str) -> Checkpoint {
    ok(store.load(&ckpt_id(id)), format!("loading {id}"))
}

fn assert_not_found<S: CheckpointStore>(store: &S, id: &str) {
    match store.load(&ckpt_id(id)) {
        Err(Error::NotFound { .. }) => {}
        Err(e) => panic!("loading {id}: expected NotFound, got error {e}"),
        Ok(c) => panic!("loading {id}: expected NotFound, got checkpoint {}", c.id),
    }
}

/// The ids of `checkpoints` passing `keep`, newest first (timestamp, then id, descending):
/// the reference the stores are compared with.
fn expected(checkpoints: &[Checkpoint], keep: impl Fn(&Checkpoint) -> bool) -> Vec<String> {
    let mut v: Vec<(Timestamp, String)> = checkpoints
        .iter()
        .filter(|c| keep(c))
        .map(|c| (c.timestamp, c.id.to_string()))
        .collect();
    v.sort();
    v.reverse();
    v.into_iter().map(|(_, id)| id).collect()
}

const EXECS: [&str; 3] = ["exec_a", "exec_b", "exec_c"];

fn reason_of(i: usize) -> CheckpointReason {
    match i % 4 {
        0 => CheckpointReason::StepCompleted,
        1 => CheckpointReason::ToolExecuted,
        2 => CheckpointReason::Manual,
        _ => CheckpointReason::Other("custom_word".into()),
    }
}

/// 24 checkpoints over 3 executions (8 each; `exec_c` by `agent_2`, the others by
/// `agent_1`), four reasons, labels `even` / `five` / `ünï`, and timestamps that come in
/// equal pairs so that the id tie-break matters. Saved in a shuffled order.
fn corpus() -> Vec<Checkpoint> {
    let mut v: Vec<Checkpoint> = (0..24usize)
        .map(|i| {
            let exec = EXECS[i % 3];
            let agent = if exec == "exec_c" {
                "agent_2"
            } else {
                "agent_1"
            };
            let mut b = CheckpointBuilder::new(&format!("ckpt_{i:02}"))
                .execution(exec)
                .agent(agent)
                .reason(reason_of(i))
                .at_ms((i as i64 / 2) * 1000)
                .step(i as u64)
                .tokens(i as u64 * 10)
                .thought("reasoning", &format!("thought {i}"));
            if i % 2 == 0 {
                b = b.label("even");
            }
            if i % 5 == 0 {
                b = b.label("five");
            }
            if i == 7 {
                b = b.label("ünï").name("seven");
            }
            b.build()
        })
        .collect();
    // A fixed permutation, so that insertion order differs from every listing order.
    let mut shuffled = Vec::with_capacity(v.len());
    let mut i = 0usize;
    while !v.is_empty() {
        i = (i + 7) % v.len();
        shuffled.push(v.remove(i));
    }
    shuffled
}

fn seeded<S: CheckpointStore>(make: &dyn Fn() -> S) -> (S, Vec<Checkpoint>) {
    let store = make();
    let corpus = corpus();
    save_all(&store, &corpus);
    (store, corpus)
}

fn filter() -> ListFilter {
    ListFilter::default()
}

// ---- round trips -----------------------------------------------------------------------------

/// A checkpoint with an empty snapshot and no optional field loads back equal.
pub fn round_trip_empty_snapshot<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let store = make();
    let c = CheckpointBuilder::new("ckpt_empty").build();
    assert_eq!(c.snapshot, Default::default());
    ok(store.save(&c), "saving");
    assert_eq!(load(&store, "ckpt_empty"), c);
}

/// A checkpoint with every optional field set, Unicode and control characters in every free
/// string and big nested JSON values loads back equal; so does a plain one next to it.
pub fn round_trip_full<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let store = make();
    let full = full_checkpoint("ckpt_full", "exec_full");
    let plain = crate::gen::checkpoint("ckpt_plain", "exec_full", 5);
    save_all(&store, &[full.clone(), plain.clone()]);
    assert_eq!(load(&store, "ckpt_full"), full);
    assert_eq!(load(&store, "ckpt_plain"), plain);
    let latest = ok(store.latest(&exec_id("exec_full")), "latest");
    assert_eq!(
        latest.as_ref(),
        Some(&full),
        "the full checkpoint is the newer one"
    );
}

/// 24 arbitrary valid checkpoints (see [`crate::gen::arb_checkpoint`]) load back equal.
pub fn round_trip_arbitrary<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let store = make();
    let mut saved = Vec::new();
    for (i, mut c) in sample_checkpoints(24).into_iter().enumerate() {
        c.id = ckpt_id(&format!("ckpt_arb_{i:02}"));
        c.execution_id = exec_id(&format!("exec_arb_{}", i % 3));
        ok(
            store.save(&c),
            format!("saving arbitrary checkpoint {i}: {c:?}"),
        );
        saved.push(c);
    }
    for c in &saved {
        let back = load(&store, c.id.as_str());
        assert_eq!(
            &back, c,
            "arbitrary checkpoint {} changed in the store",
            c.id
        );
    }
    assert_eq!(list(&store, &filter()).len(), saved.len());
}

/// Loading an id that was never saved is `NotFound`.
pub fn load_unknown_is_not_found<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let store = make();
    assert_not_found(&store, "ckpt_never_saved");
    save_all(&store, &[crate::gen::checkpoint("ckpt_1", "exec_a", 0)]);
    assert_not_found(&store, "ckpt_never_saved");
    assert_eq!(
        ok(store.latest(&exec_id("exec_unknown")), "latest"),
        None,
        "latest of an unknown execution"
    );
}

// ---- listing ---------------------------------------------------------------------------------

/// Listing is newest first, by timestamp then id (both descending), whatever the insertion
/// order; `latest` returns the newest.
pub fn list_newest_first<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let store = make();
    assert!(list(&store, &filter()).is_empty(), "a fresh store is empty");
    let c = |id: &str, ms: i64| crate::gen::checkpoint(id, "exec_order", ms);
    let checkpoints = vec![
        c("ckpt_b", 3000),
        c("ckpt_a", 1000),
        c("ckpt_e", -5000),
        c("ckpt_d", 3000),
        c("ckpt_c", 2000),
        c("ckpt_z", 2000),
        c("ckpt_y", 2000),
    ];
    save_all(&store, &checkpoints);
    let want = vec![
        "ckpt_d", "ckpt_b", "ckpt_z", "ckpt_y", "ckpt_c", "ckpt_a", "ckpt_e",
    ];
    assert_eq!(list_ids(&store, &filter()), want);
    assert_eq!(
        list_ids(&store, &ListFilter::execution(&exec_id("exec_order"))),
        want
    );
    let latest = ok(store.latest(&exec_id("exec_order")), "latest");
    assert_eq!(latest.map(|c| c.id.to_string()).as_deref(), Some("ckpt_d"));

    // Across executions too.
    let (store, corpus) = seeded(make);
    assert_eq!(list_ids(&store, &filter()), expected(&corpus, |_| true));
    for e in EXECS {
        let latest = ok(store.latest(&exec_id(e)), "latest").map(|c| c.id.to_string());
        let want = expected(&corpus, |c| c.execution_id.as_str() == e);
        assert_eq!(latest.as_ref(), want.first(), "latest of {e}");
    }
}

/// `execution_id` keeps only that execution.
pub fn filter_by_execution<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let (store, corpus) = seeded(make);
    for e in EXECS {
        let got = list_ids(&store, &ListFilter::execution(&exec_id(e)));
        assert_eq!(got.len(), 8);
        assert_eq!(got, expected(&corpus, |c| c.execution_id.as_str() == e));
    }
    assert!(list_ids(&store, &ListFilter::execution(&exec_id("exec_none"))).is_empty());
}

/// `agent_id` keeps only that agent.
pub fn filter_by_agent<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let (store, corpus) = seeded(make);
    for agent in ["agent_1", "agent_2"] {
        let f = ListFilter {
            agent_id: Some(agent.into()),
            ..filter()
        };
        assert_eq!(
            list_ids(&store, &f),
            expected(&corpus, |c| c.agent_id == agent),
            "agent {agent}"
        );
    }
    let f = ListFilter {
        agent_id: Some("agent".into()),
        ..filter()
    };
    assert!(list_ids(&store, &f).is_empty(), "agent ids match exactly");
}

/// `reason` keeps only that reason, named or not.
pub fn filter_by_reason<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let (store, corpus) = seeded(make);
    for i in 0..4 {
        let reason = reason_of(i);
        let f = ListFilter {
            reason: Some(reason.clone()),
            ..filter()
        };
        let want = expected(&corpus, |c| c.metadata.checkpoint_reason == reason);
        assert_eq!(want.len(), 6);
        assert_eq!(list_ids(&store, &f), want, "reason {reason}");
    }
    let f = ListFilter {
        reason: Some(CheckpointReason::Paused),
        ..filter()
    };
    assert!(list_ids(&store, &f).is_empty());
}

/// `label` keeps the checkpoints carrying that label (among others).
pub fn filter_by_label<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let (store, corpus) = seeded(make);
    for label in ["even", "five", "ünï"] {
        let f = ListFilter {
            label: Some(label.into()),
            ..filter()
        };
        let want = expected(&corpus, |c| c.metadata.labels.iter().any(|l| l == label));
        assert!(!want.is_empty());
        assert_eq!(list_ids(&store, &f), want, "label {label}");
    }
    for label in ["missing", "eve", "EVEN"] {
        let f = ListFilter {
            label: Some(label.into()),
            ..filter()
        };
        assert!(
            list_ids(&store, &f).is_empty(),
            "label {label} matches nothing"
        );
    }
}

/// `since` is inclusive, `until` exclusive; each works alone and together.
pub fn filter_by_time_range<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let (store, corpus) = seeded(make);
    let (since, until) = (at_ms(3000), at_ms(8000));
    let f = ListFilter {
        since: Some(since),
        ..filter()
    };
    let want = expected(&corpus, |c| c.timestamp >= since);
    assert!(want.contains(&"ckpt_06".to_string()), "since is inclusive");
    assert_eq!(list_ids(&store, &f), want, "since");
    let f = ListFilter {
        until: Some(until),
        ..filter()
    };
    let want = expected(&corpus, |c| c.timestamp < until);
    assert!(!want.contains(&"ckpt_16".to_string()), "until is exclusive");
    assert_eq!(list_ids(&store, &f), want, "until");
    let f = ListFilter {
        since: Some(since),
        until: Some(until),
        ..filter()
    };
    let want = expected(&corpus, |c| c.timestamp >= since && c.timestamp < until);
    assert_eq!(want.len(), 10);
    assert_eq!(list_ids(&store, &f), want, "since and until");
    let f = ListFilter {
        since: Some(until),
        until: Some(since),
        ..filter()
    };
    assert!(list_ids(&store, &f).is_empty(), "an empty range");
    let f = ListFilter {
        since: Some(at_ms(100_000)),
        ..filter()
    };
    assert!(list_ids(&store, &f).is_empty(), "since after everything");
}

/// `limit` keeps the newest `limit` of what matches.
pub fn filter_limit<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let (store, corpus) = seeded(make);
    let all = expected(&corpus, |_| true);
    for limit in [0, 1, 5, 23, 24, 100] {
        let f = ListFilter {
            limit: Some(limit),
            ..filter()
        };
        let want: Vec<String> = all.iter().take(limit).cloned().collect();
        assert_eq!(list_ids(&store, &f), want, "limit {limit}");
    }
    let f = ListFilter {
        limit: Some(3),
        ..ListFilter::execution(&exec_id("exec_b"))
    };
    let want: Vec<String> = expected(&corpus, |c| c.execution_id.as_str() == "exec_b")
        .into_iter()
        .take(3)
        .collect();
    assert_eq!(list_ids(&store, &f), want);
}

/// Filters combine with AND.
pub fn filters_combine<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let (store, corpus) = seeded(make);
    let f = ListFilter {
        execution_id: Some(exec_id("exec_a")),
        agent_id: Some("agent_1".into()),
        label: Some("even".into()),
        since: Some(at_ms(2000)),
        ..filter()
    };
    let want = expected(&corpus, |c| {
        c.execution_id.as_str() == "exec_a"
            && c.metadata.labels.contains(&"even".to_string())
            && c.timestamp >= at_ms(2000)
    });
    assert!(!want.is_empty());
    assert_eq!(list_ids(&store, &f), want);
    let f = ListFilter {
        agent_id: Some("agent_1".into()),
        reason: Some(CheckpointReason::StepCompleted),
        until: Some(at_ms(9000)),
        limit: Some(2),
        ..filter()
    };
    let want: Vec<String> = expected(&corpus, |c| {
        c.agent_id == "agent_1"
            && c.metadata.checkpoint_reason == CheckpointReason::StepCompleted
            && c.timestamp < at_ms(9000)
    })
    .into_iter()
    .take(2)
    .collect();
    assert_eq!(want.len(), 2);
    assert_eq!(list_ids(&store, &f), want);
    let f = ListFilter {
        execution_id: Some(exec_id("exec_c")),
        agent_id: Some("agent_1".into()),
        ..filter()
    };
    assert!(list_ids(&store, &f).is_empty(), "exec_c is agent_2's");
}

/// Paging with `before` (the last id of the previous page) and `limit` visits everything
/// exactly once, in order, with and without other filters.
pub fn pagination_with_before<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let (store, corpus) = seeded(make);
    let cases: Vec<(ListFilter, Vec<String>)> = vec![
        (filter(), expected(&corpus, |_| true)),
        (
            ListFilter {
                agent_id: Some("agent_1".into()),
                ..filter()
            },
            expected(&corpus, |c| c.agent_id == "agent_1"),
        ),
        (
            ListFilter::execution(&exec_id("exec_c")),
            expected(&corpus, |c| c.execution_id.as_str() == "exec_c"),
        ),
        (
            ListFilter {
                since: Some(at_ms(2000)),
                label: Some("even".into()),
                ..filter()
            },
            expected(&corpus, |c| {
                c.timestamp >= at_ms(2000) && c.metadata.labels.contains(&"even".to_string())
            }),
        ),
    ];
    for (base, want) in cases {
        for page_size in [1, 2, 3, 5, 7, 100] {
            let mut got: Vec<String> = Vec::new();
            let mut before = None;
            let mut pages = 0;
            loop {
                let f = ListFilter {
                    before: before.clone(),
                    limit: Some(page_size),
                    ..base.clone()
                };
                let page = list_ids(&store, &f);
                assert!(page.len() <= page_size, "page larger than its limit");
                let Some(last) = page.last() else { break };
                before = Some(ckpt_id(last));
                got.extend(page);
                pages += 1;
                assert!(pages <= want.len() + 1, "pagination does not end");
            }
            assert_eq!(got, want, "pages of {page_size} with {base:?}");
            let unique: BTreeSet<&String> = got.iter().collect();
            assert_eq!(unique.len(), got.len(), "duplicates across pages");
        }
        // Without a limit, `before` alone gives everything older than the cursor.
        if let Some(cursor) = want.get(2) {
            let f = ListFilter {
                before: Some(ckpt_id(cursor)),
                ..base.clone()
            };
            assert_eq!(list_ids(&store, &f), want[3..].to_vec(), "before {cursor}");
        }
        if let Some(last) = want.last() {
            let f = ListFilter {
                before: Some(ckpt_id(last)),
                ..base.clone()
            };
            assert!(list_ids(&store, &f).is_empty(), "nothing before the oldest");
        }
    }
}

// ---- executions, deletion, overwriting -------------------------------------------------------

/// Executions do not see each other's checkpoints, even with identical content.
pub fn executions_are_isolated<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let store = make();
    let make_exec = |e: &str, offset: i64| -> Vec<Checkpoint> {
        (0..5)
            .map(|i| {
                CheckpointBuilder::new(&format!("ckpt_{e}_{i}"))
                    .execution(e)
                    .at_ms(i * 10 + offset)
                    .step(i as u64)
                    .thought("reasoning", "same thought")
                    .variable("x", json!(1))
                    .build()
            })
            .collect()
    };
    let a = make_exec("exec_one", 0);
    let b = make_exec("exec_two", 1);
    save_all(&store, &a);
    save_all(&store, &b);
    let (ea, eb) = (exec_id("exec_one"), exec_id("exec_two"));
    assert_eq!(
        list_ids(&store, &ListFilter::execution(&ea)),
        expected(&a, |_| true)
    );
    assert_eq!(
        list_ids(&store, &ListFilter::execution(&eb)),
        expected(&b, |_| true)
    );
    assert_eq!(ok(store.latest(&ea), "latest").as_ref(), a.last());
    assert_eq!(ok(store.latest(&eb), "latest").as_ref(), b.last());
    ok(store.delete_execution(&ea), "delete_execution");
    assert_eq!(
        list_ids(&store, &ListFilter::execution(&eb)),
        expected(&b, |_| true)
    );
    assert_eq!(ok(store.latest(&eb), "latest").as_ref(), b.last());
    for c in &b {
        assert_eq!(&load(&store, c.id.as_str()), c);
    }
}

/// `delete` returns true once and then false; the checkpoint no longer loads or lists; an
/// unknown id gives false; the others stay.
pub fn delete_semantics<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let store = make();
    let cs: Vec<Checkpoint> = (0..4)
        .map(|i| crate::gen::checkpoint(&format!("ckpt_{i}"), "exec_del", i * 1000))
        .collect();
    save_all(&store, &cs);
    let id = ckpt_id("ckpt_3");
    assert!(ok(store.delete(&id), "delete"), "first delete finds it");
    assert!(
        !ok(store.delete(&id), "delete again"),
        "second delete finds nothing"
    );
    assert_not_found(&store, "ckpt_3");
    assert_eq!(
        list_ids(&store, &filter()),
        vec!["ckpt_2", "ckpt_1", "ckpt_0"]
    );
    let latest = ok(store.latest(&exec_id("exec_del")), "latest");
    assert_eq!(latest.as_ref(), Some(&cs[2]), "latest falls back");
    assert!(!ok(
        store.delete(&ckpt_id("ckpt_unknown")),
        "delete unknown"
    ));
    for c in &cs[..3] {
        assert_eq!(&load(&store, c.id.as_str()), c);
    }
    // Deleted ids can be saved again.
    ok(store.save(&cs[3]), "saving again");
    assert_eq!(load(&store, "ckpt_3"), cs[3]);
    assert_eq!(list_ids(&store, &filter()).len(), 4);
}

/// `delete_execution` returns how many checkpoints went, removes exactly those, and returns 0
/// for an unknown (or already deleted) execution.
pub fn delete_execution_semantics<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let (store, corpus) = seeded(make);
    let e = exec_id("exec_b");
    assert_eq!(ok(store.delete_execution(&e), "delete_execution"), 8);
    assert!(list_ids(&store, &ListFilter::execution(&e)).is_empty());
    assert_eq!(ok(store.latest(&e), "latest"), None);
    assert_eq!(
        list_ids(&store, &filter()),
        expected(&corpus, |c| c.execution_id != e)
    );
    for c in &corpus {
        if c.execution_id == e {
            assert_not_found(&store, c.id.as_str());
        } else {
            assert_eq!(&load(&store, c.id.as_str()), c);
        }
    }
    assert_eq!(ok(store.delete_execution(&e), "again"), 0);
    let unknown = ExecutionId::new("exec_unknown").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ok(store.delete_execution(&unknown), "unknown"), 0);
}

/// Saving an existing id replaces it: one listing entry, the new content and summary.
pub fn overwrite_in_place<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let store = make();
    let others: Vec<Checkpoint> = (0..3)
        .map(|i| crate::gen::checkpoint(&format!("ckpt_other_{i}"), "exec_ow", i * 1000))
        .collect();
    save_all(&store, &others);
    let v1 = crate::gen::checkpoint("ckpt_ow", "exec_ow", 500);
    ok(store.save(&v1), "saving v1");
    let v2 = CheckpointBuilder::new("ckpt_ow")
        .execution("exec_ow")
        .at_ms(9000)
        .step(42)
        .label("second")
        .reason(CheckpointReason::Completed)
        .thought("observation", &"much longer content ".repeat(50))
        .build();
    let summary = ok(store.save(&v2), "saving v2");
    assert_eq!(load(&store, "ckpt_ow"), v2);
    let listed = list(&store, &filter());
    assert_eq!(listed.len(), 4, "no duplicate entry");
    assert_eq!(
        listed[0], summary,
        "the listing shows the new version, first"
    );
    let latest = ok(store.latest(&exec_id("exec_ow")), "latest");
    assert_eq!(latest.as_ref(), Some(&v2));
    let f = ListFilter {
        label: Some("second".into()),
        ..filter()
    };
    assert_eq!(list_ids(&store, &f), vec!["ckpt_ow"]);
    // Saving the very same checkpoint again changes nothing.
    ok(store.save(&v2), "saving v2 again");
    assert_eq!(list(&store, &filter()), listed);
    assert!(ok(store.delete(&ckpt_id("ckpt_ow")), "delete"));
    assert_not_found(&store, "ckpt_ow");
    assert_eq!(list(&store, &filter()).len(), 3);
}

/// Saving an existing id under another execution moves it there.
pub fn overwrite_moves_execution<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let store = make();
    let a = crate::gen::checkpoint("ckpt_mv", "exec_from", 0);
    let b = crate::gen::checkpoint("ckpt_mv", "exec_to", 10);
    ok(store.save(&a), "saving");
    ok(store.save(&b), "saving moved");
    assert!(list_ids(&store, &ListFilter::execution(&exec_id("exec_from"))).is_empty());
    assert_eq!(ok(store.latest(&exec_id("exec_from")), "latest"), None);
    assert_eq!(
        list_ids(&store, &ListFilter::execution(&exec_id("exec_to"))),
        vec!["ckpt_mv"]
    );
    assert_eq!(load(&store, "ckpt_mv"), b);
    assert_eq!(
        ok(store.delete_execution(&exec_id("exec_from")), "delete"),
        0
    );
    assert_eq!(load(&store, "ckpt_mv"), b);
}

// ---- concurrency and summaries ---------------------------------------------------------------

/// 8 threads saving into one shared store (10 checkpoints each, one execution per thread,
/// listing as they go) lose nothing.
pub fn concurrent_saves<S: CheckpointStore>(make: &dyn Fn() -> S) {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 10;
    let store = Arc::new(make());
    let all: Vec<Vec<Checkpoint>> = (0..THREADS)
        .map(|t| {
            (0..PER_THREAD)
                .map(|k| {
                    CheckpointBuilder::new(&format!("ckpt_t{t}_{k:02}"))
                        .execution(&format!("exec_t{t}"))
                        .at_ms((k * THREADS + t) as i64)
                        .step(k as u64)
                        .thought("reasoning", &format!("thread {t} step {k}"))
                        .tool_call("search", json!({"t": t, "k": k}), json!("ok"))
                        .build()
                })
                .collect()
        })
        .collect();
    std::thread::scope(|scope| {
        for (t, mine) in all.iter().enumerate() {
            let store = Arc::clone(&store);
            scope.spawn(move || {
                let e = exec_id(&format!("exec_t{t}"));
                for (k, c) in mine.iter().enumerate() {
                    ok(store.save(c), format!("thread {t} saving {}", c.id));
                    let seen = list(&*store, &ListFilter::execution(&e));
                    assert_eq!(seen.len(), k + 1, "thread {t} reads its own writes");
                    assert_eq!(seen[0].id, c.id, "thread {t}: newest first");
                }
            });
        }
    });
    let flat: Vec<Checkpoint> = all.into_iter().flatten().collect();
    assert_eq!(
        list_ids(&*store, &filter()),
        expected(&flat, |_| true),
        "every save is listed"
    );
    for t in 0..THREADS {
        let e = exec_id(&format!("exec_t{t}"));
        assert_eq!(
            list_ids(&*store, &ListFilter::execution(&e)).len(),
            PER_THREAD
        );
    }
    for c in &flat {
        assert_eq!(&load(&*store, c.id.as_str()), c);
    }
}

fn assert_summary_of(s: &CheckpointSummary, c: &Checkpoint) {
    assert_eq!(s.id, c.id);
    assert_eq!(s.parent_id, c.parent_id);
    assert_eq!(s.execution_id, c.execution_id);
    assert_eq!(s.agent_id, c.agent_id);
    assert_eq!(s.step_number, c.metadata.step_number);
    assert_eq!(s.checkpoint_reason, c.metadata.checkpoint_reason);
    assert_eq!(s.timestamp, c.timestamp);
    assert_eq!(s.tokens_used, c.metadata.tokens_used);
    assert_eq!(s.name, c.metadata.name);
    assert_eq!(s.labels, c.metadata.labels);
    assert!(s.bytes > 0, "a stored checkpoint has a size");
}

/// The summary `save` returns and the one `list` shows describe the checkpoint (id, parent,
/// execution, agent, step, reason, time, tokens, name, labels, bytes > 0) and agree.
pub fn summaries_match<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let store = make();
    let full = full_checkpoint("ckpt_full", "exec_sum");
    let small = CheckpointBuilder::new("ckpt_small")
        .execution("exec_sum")
        .parent("ckpt_full")
        .agent("agent_sum")
        .at_ms(99_000)
        .step(12)
        .tokens(345)
        .reason(CheckpointReason::LowConfidence)
        .label("a")
        .label("b")
        .name("small one")
        .build();
    for c in [&full, &small] {
        let saved = ok(store.save(c), "saving");
        assert_summary_of(&saved, c);
        let listed = list(&store, &ListFilter::execution(&c.execution_id));
        let entry = listed
            .iter()
            .find(|s| s.id == c.id)
            .unwrap_or_else(|| panic!("{} is not listed", c.id));
        assert_eq!(entry, &saved, "list and save agree on {}", c.id);
    }
    let sizes: Vec<u64> = list(&store, &filter()).iter().map(|s| s.bytes).collect();
    assert!(
        sizes[1] > sizes[0],
        "the full checkpoint is bigger than the small one: {sizes:?}"
    );
}

/// `lineage` follows `parent_id` from a checkpoint to its root, and stops at a parent that
/// is not in the store.
pub fn lineage_follows_parents<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let store = make();
    let b = |id: &str, ms: i64| CheckpointBuilder::new(id).execution("exec_lin").at_ms(ms);
    let root = b("ckpt_root", 0).build();
    let mid = b("ckpt_mid", 1).parent("ckpt_root").build();
    let leaf = b("ckpt_leaf", 2).parent("ckpt_mid").build();
    let fork = b("ckpt_fork", 3).parent("ckpt_mid").build();
    let orphan = b("ckpt_orphan", 4).parent("ckpt_gone").build();
    save_all(
        &store,
        &[
            root.clone(),
            mid.clone(),
            leaf.clone(),
            fork.clone(),
            orphan.clone(),
        ],
    );
    let ids = |id: &str| -> Vec<String> {
        ok(lineage(&store, &ckpt_id(id)), format!("lineage of {id}"))
            .into_iter()
            .map(|c| c.id.to_string())
            .collect()
    };
    assert_eq!(ids("ckpt_leaf"), vec!["ckpt_leaf", "ckpt_mid", "ckpt_root"]);
    assert_eq!(ids("ckpt_fork"), vec!["ckpt_fork", "ckpt_mid", "ckpt_root"]);
    assert_eq!(ids("ckpt_root"), vec!["ckpt_root"]);
    assert_eq!(ids("ckpt_orphan"), vec!["ckpt_orphan"]);
    assert!(matches!(
        lineage(&store, &ckpt_id("ckpt_gone")),
        Err(Error::NotFound { .. })
    ));
    let chain = ok(lineage(&store, &ckpt_id("ckpt_leaf")), "lineage");
    let listed = ok(store.list(&ListFilter::default()), "list");
    let summary_of = |c: &Checkpoint| listed.iter().find(|s| s.id == c.id).cloned();
    assert_eq!(
        chain.into_iter().map(Some).collect::<Vec<_>>(),
        vec![summary_of(&leaf), summary_of(&mid), summary_of(&root)],
        "lineage returns the listed summaries"
    );
    assert_eq!(
        ok(store.summary(&leaf.id), "summary"),
        summary_of(&leaf),
        "summary(id) is the listed summary"
    );
    assert_eq!(ok(store.summary(&ckpt_id("ckpt_gone")), "summary"), None);
}

/// A checkpoint the format cannot hold (here a confidence of 1.5, a duplicate label, an empty
/// agent id) is refused with [`Error::Encode`], and the store is left as it was.
pub fn refuses_what_the_format_cannot_hold<S: CheckpointStore>(make: &dyn Fn() -> S) {
    let store = make();
    let good = crate::gen::checkpoint("ckpt_bad", "exec_bad", 0);
    ok(store.save(&good), "saving");
    let bad: Vec<Checkpoint> = vec![
        CheckpointBuilder::new("ckpt_bad")
            .execution("exec_bad")
            .thought("reasoning", "x")
            .with(|c| {
                Arc::make_mut(&mut c.snapshot.thought_chain.thoughts[0]).confidence = Some(1.5)
            })
            .build(),
        CheckpointBuilder::new("ckpt_bad")
            .execution("exec_bad")
            .label("twice")
            .label("twice")
            .build(),
        CheckpointBuilder::new("ckpt_other_bad")
            .execution("exec_bad")
            .agent("")
            .build(),
    ];
    for c in &bad {
        match store.save(c) {
            Err(Error::Encode { .. }) => {}
            Err(e) => panic!("saving an invalid checkpoint: expected an Encode error, got {e}"),
            Ok(_) => panic!("an invalid checkpoint was saved: {c:?}"),
        }
    }
    assert_eq!(
        load(&store, "ckpt_bad"),
        good,
        "the stored checkpoint is unchanged"
    );
    assert_eq!(list_ids(&store, &filter()), vec!["ckpt_bad"]);
}
