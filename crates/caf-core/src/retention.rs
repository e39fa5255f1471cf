//! Retention: which checkpoints to keep and which to prune.
//!
//! [`plan`] is a pure function of a [`RetentionPolicy`], the [`CheckpointSummary`]s of a store
//! and the current time. It deletes nothing itself; it returns a [`PrunePlan`] that says, for
//! every checkpoint, whether it is kept or deleted and why.
//!
//! # Rules
//!
//! A policy has up to three rules. Each can *condemn* a checkpoint:
//!
//! - `keep_last = N`: per execution, every checkpoint after the `N` newest (protected ones count
//!   among the `N`) — [`Condemned::BeyondKeepLast`].
//! - `max_age = D`: every checkpoint strictly older than `D` — [`Condemned::OlderThanMaxAge`].
//! - `tiers`: a checkpoint falls in the first [`Tier`] whose `within` covers its age (an age of
//!   exactly `within` is covered; timestamps in the future have a negative age and fall in the
//!   first tier). In a tier with `every = E`, time is cut into buckets of length `E` aligned on
//!   the Unix epoch (UTC days, hours…), and per execution only the newest checkpoint of each
//!   bucket stays; the others are [`Condemned::Thinned`]. A tier with `max_per_execution = M`
//!   then keeps only the `M` newest of those per execution ([`Condemned::OverTierLimit`]).
//!   A checkpoint older than the last tier is [`Condemned::BeyondLastTier`].
//!
//! "Newest" is always the listing order, [`CheckpointSummary::newest_first`] (timestamp, then
//! id), so ties are broken the same way everywhere.
//!
//! # Combination
//!
//! A checkpoint is deleted if **any** rule condemns it and **no** protection applies. A policy
//! with no rule deletes nothing. When several rules condemn a checkpoint the plan names the
//! first in the order keep-last, max-age, tiers; when several protections apply it names the
//! first in the order of [`Kept`].
//!
//! # Protections
//!
//! Whatever the policy, these checkpoints are kept:
//!
//! - each execution's latest checkpoint ([`Kept::Latest`]);
//! - checkpoints with a name ([`Kept::Named`]);
//! - checkpoints carrying one of the policy's `protect_labels` ([`Kept::Label`]);
//! - branch points: the parent of two or more checkpoints, of a checkpoint in another
//!   execution, or of a checkpoint whose reason is `branch` ([`Kept::BranchPoint`]);
//! - the children of a branch point, the first checkpoint of each branch
//!   ([`Kept::BranchStart`]): without them a branch point would stop being one once its
//!   branches were pruned, and the next prune would delete it;
//! - heads: checkpoints that no checkpoint in the set names as parent, such as the tips of
//!   abandoned branches ([`Kept::Head`]).
//!
//! A `parent_id` naming the checkpoint itself is ignored; one naming a checkpoint outside the
//! set links to nothing.
//!
//! # Idempotence
//!
//! Planning again on the checkpoints a plan keeps deletes nothing more, at the same `now`:
//!
//! - every rule is monotone: removing checkpoints never condemns another one (a rule condemns
//!   because some *newer* checkpoints exist, or because of the checkpoint's own age);
//! - no protection is lost by a deletion: latest checkpoints, names and labels are kept, a
//!   checkpoint that was a head stays one, and a branch point keeps every child that made it
//!   one, because those children are protected too.
//!
//! Heads can still appear (a checkpoint whose only children were deleted becomes one), which
//! only protects more. The same argument covers a prune interrupted halfway: planning again
//! deletes only checkpoints the first plan condemned, though not necessarily all of the rest
//! (a checkpoint whose children are all gone is now a head). As time passes, a later `now`
//! condemns more, as it should.
//!
//! ```
//! use caf_core::duration::Duration;
//! use caf_core::retention::{plan, RetentionPolicy, Tier};
//!
//! // All of the last hour, one per hour for a day, one per day for a month.
//! let policy = RetentionPolicy {
//!     tiers: vec![
//!         Tier::all(Duration::from_hours(1)),
//!         Tier::every(Duration::from_days(1), Duration::from_hours(1)),
//!         Tier::every(Duration::from_days(30), Duration::from_days(1)),
//!     ],
//!     ..RetentionPolicy::default()
//! };
//! let summaries = Vec::new(); // store.list(&ListFilter::default())?
//! let plan = plan(&policy, &summaries, caf_core::Timestamp::now());
//! assert!(plan.delete.is_empty());
//! ```

mod tier;

pub use tier::{check_tiers, format_tiers, parse_tiers, Tier, TierError};

use crate::clock::Timestamp;
use crate::duration::Duration;
use crate::format::CheckpointReason;
use crate::id::{CheckpointId, ExecutionId};
use crate::store::CheckpointSummary;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// The label that protects a checkpoint unless a policy says otherwise.
pub const DEFAULT_PROTECT_LABEL: &str = "keep";

/// What to keep: rules that condemn checkpoints, and labels that protect them.
///
/// The default has no rule (it deletes nothing) and protects the label `keep`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetentionPolicy {
    /// Per execution, keep this many of the newest checkpoints.
    pub keep_last: Option<usize>,
    /// Delete checkpoints strictly older than this.
    pub max_age: Option<Duration>,
    /// Thinning by age, finest first; see the module documentation.
    pub tiers: Vec<Tier>,
    /// Checkpoints carrying any of these labels are always kept.
    pub protect_labels: Vec<String>,
}

impl Default for RetentionPolicy {
    fn default() -> Self {
        Self {
            keep_last: None,
            max_age: None,
            tiers: Vec::new(),
            protect_labels: vec![DEFAULT_PROTECT_LABEL.to_string()],
        }
    }
}

impl RetentionPolicy {
    /// Whether any rule is set (a policy without one deletes nothing).
    pub fn has_rules(&self) -> bool {
        self.keep_last.is_some() || self.max_age.is_some() || !self.tiers.is_empty()
    }

    /// This policy with the fields given (command-line flags, say) replacing its own; `None`
    /// leaves a field as it is, and `Some(vec![])` removes the tiers.
    pub fn with_overrides(
        mut self,
        keep_last: Option<usize>,
        max_age: Option<Duration>,
        tiers: Option<Vec<Tier>>,
    ) -> Self {
        if keep_last.is_some() {
            self.keep_last = keep_last;
        }
        if max_age.is_some() {
            self.max_age = max_age;
        }
        if let Some(tiers) = tiers {
            self.tiers = tiers;
        }
        self
    }
}

/// Why a checkpoint is kept.
///
/// A plan names a protection whenever one applies, whether or not a rule condemns the
/// checkpoint, so `--json` shows what no policy can delete; [`Kept::WithinPolicy`] is for
/// unprotected checkpoints that no rule condemns. The order of the variants is the order in
/// which a plan chooses among several protections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Kept {
    /// The latest checkpoint of its execution.
    Latest,
    /// It has a name.
    Named,
    /// It carries this protecting label.
    Label(String),
    /// It is the parent of two or more checkpoints, of one in another execution or of one
    /// whose reason is `branch`.
    BranchPoint,
    /// Its parent is a branch point: it starts a branch (and keeps its parent a branch point).
    BranchStart,
    /// No checkpoint names it as parent.
    Head,
    /// No rule condemns it.
    WithinPolicy,
}

impl Kept {
    /// Whether this is a protection (anything but [`Kept::WithinPolicy`]).
    pub fn is_protection(&self) -> bool {
        !matches!(self, Kept::WithinPolicy)
    }
}

/// Why a checkpoint is deleted: the first rule that condemns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Condemned {
    /// Its execution has at least `keep_last` newer checkpoints.
    BeyondKeepLast,
    /// It is older than `max_age`.
    OlderThanMaxAge,
    /// A newer checkpoint of its execution is in the same tier and bucket.
    Thinned {
        /// The tier, from 0.
        tier: usize,
    },
    /// Its tier already keeps `max_per_execution` newer checkpoints of its execution (after
    /// thinning).
    OverTierLimit {
        /// The tier, from 0.
        tier: usize,
    },
    /// It is older than the last tier reaches.
    BeyondLastTier,
}

/// The outcome of [`plan`]: every checkpoint is in exactly one list, each newest first.
///
/// In JSON each entry is `{"id": …, "reason": …}`, the reason being a string (`"latest"`) or,
/// for a reason with data, an object (`{"label": "keep"}`, `{"thinned": {"tier": 1}}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrunePlan {
    /// Checkpoints to keep, and why.
    #[serde(with = "entries")]
    pub keep: Vec<(CheckpointId, Kept)>,
    /// Checkpoints to delete, and why.
    #[serde(with = "entries")]
    pub delete: Vec<(CheckpointId, Condemned)>,
}

/// `(id, reason)` pairs as `{"id": …, "reason": …}` objects.
mod entries {
    use crate::id::CheckpointId;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize)]
    struct EntryRef<'a, R> {
        id: &'a CheckpointId,
        reason: &'a R,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Entry<R> {
        id: CheckpointId,
        reason: R,
    }

    pub fn serialize<S: Serializer, R: Serialize>(
        entries: &[(CheckpointId, R)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(entries.iter().map(|(id, reason)| EntryRef { id, reason }))
    }

    pub fn deserialize<'de, D: Deserializer<'de>, R: Deserialize<'de>>(
        d: D,
    ) -> Result<Vec<(CheckpointId, R)>, D::Error> {
        Ok(Vec::<Entry<R>>::deserialize(d)?
            .into_iter()
            .map(|e| (e.id, e.reason))
            .collect())
    }
}

/// Plans what `policy` keeps and deletes among `summaries` at time `now` (see the module
/// documentation for the rules, protections and the idempotence guarantee).
///
/// Summaries may come in any order; an id listed twice is planned once (its first summary).
pub fn plan(
    policy: &RetentionPolicy,
    summaries: &[CheckpointSummary],
    now: Timestamp,
) -> PrunePlan {
    let mut seen = HashSet::new();
    let mut items: Vec<&CheckpointSummary> =
        summaries.iter().filter(|s| seen.insert(&s.id)).collect();
    items.sort_by(|a, b| CheckpointSummary::newest_first(a, b));
    let protected = protections(policy, &items);
    let condemned = condemnations(policy, &items, now);
    let mut out = PrunePlan::default();
    for ((s, kept), condemned) in items.iter().zip(protected).zip(condemned) {
        match (kept, condemned) {
            (Some(kept), _) => out.keep.push((s.id.clone(), kept)),
            (None, Some(why)) => out.delete.push((s.id.clone(), why)),
            (None, None) => out.keep.push((s.id.clone(), Kept::WithinPolicy)),
        }
    }
    out
}

/// The protection of each item (sorted newest first), if any.
fn protections(policy: &RetentionPolicy, items: &[&CheckpointSummary]) -> Vec<Option<Kept>> {
    let index: HashMap<&CheckpointId, usize> =
        items.iter().enumerate().map(|(i, s)| (&s.id, i)).collect();
    let parent: Vec<Option<usize>> = items
        .iter()
        .map(|s| {
            s.parent_id
                .as_ref()
                .filter(|p| **p != s.id)
                .and_then(|p| index.get(p).copied())
        })
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); items.len()];
    for (child, p) in parent.iter().enumerate() {
        if let Some(p) = p {
            children[*p].push(child);
        }
    }
    let branch_point: Vec<bool> = items
        .iter()
        .zip(&children)
        .map(|(s, children)| {
            children.len() >= 2
                || children.iter().any(|c| {
                    items[*c].execution_id != s.execution_id
                        || items[*c].checkpoint_reason == CheckpointReason::Branch
                })
        })
        .collect();
    let mut latest_seen: HashSet<&ExecutionId> = HashSet::new();
    items
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if latest_seen.insert(&s.execution_id) {
                Some(Kept::Latest)
            } else if s.name.is_some() {
                Some(Kept::Named)
            } else if let Some(label) = policy.protect_labels.iter().find(|l| s.labels.contains(l))
            {
                Some(Kept::Label(label.clone()))
            } else if branch_point[i] {
                Some(Kept::BranchPoint)
            } else if parent[i].is_some_and(|p| branch_point[p]) {
                Some(Kept::BranchStart)
            } else if children[i].is_empty() {
                Some(Kept::Head)
            } else {
                None
            }
        })
        .collect()
}

/// What one tier has seen of one execution so far, newest first.
#[derive(Default)]
struct TierSeen {
    /// The buckets seen (for a thinning tier).
    buckets: HashSet<i128>,
    /// How many checkpoints stayed after thinning.
    kept: usize,
}

/// The first rule that condemns each item (sorted newest first), if any.
fn condemnations(
    policy: &RetentionPolicy,
    items: &[&CheckpointSummary],
    now: Timestamp,
) -> Vec<Option<Condemned>> {
    let now = i128::from(now.as_micros());
    let mut rank: HashMap<&ExecutionId, usize> = HashMap::new();
    let mut tiers_seen: HashMap<(&ExecutionId, usize), TierSeen> = HashMap::new();
    items
        .iter()
        .map(|s| {
            let time = i128::from(s.timestamp.as_micros());
            let age = now - time;
            let newer = rank.entry(&s.execution_id).or_insert(0);
            let beyond_keep_last = policy.keep_last.is_some_and(|n| *newer >= n);
            *newer += 1;
            let by_tier = (!policy.tiers.is_empty()).then(|| {
                let Some(t) = policy
                    .tiers
                    .iter()
                    .position(|t| age <= t.within.as_micros())
                else {
                    return Some(Condemned::BeyondLastTier);
                };
                let tier = &policy.tiers[t];
                let seen = tiers_seen.entry((&s.execution_id, t)).or_default();
                let every = tier.every.filter(|e| !e.is_zero());
                if let Some(every) = every {
                    if !seen.buckets.insert(time.div_euclid(every.as_micros())) {
                        return Some(Condemned::Thinned { tier: t });
                    }
                }
                let over = tier.max_per_execution.is_some_and(|m| seen.kept >= m);
                seen.kept += 1;
                over.then_some(Condemned::OverTierLimit { tier: t })
            });
            if beyond_keep_last {
                Some(Condemned::BeyondKeepLast)
            } else if policy.max_age.is_some_and(|d| age > d.as_micros()) {
                Some(Condemned::OlderThanMaxAge)
            } else {
                by_tier.flatten()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// 2026-01-10T00:00:00Z, a day boundary.
    const NOW_MICROS: i64 = 1_768_003_200_000_000;

    fn now() -> Timestamp {
        Timestamp::from_micros(NOW_MICROS)
    }

    fn cid(s: &str) -> CheckpointId {
        CheckpointId::new(s).unwrap()
    }

    /// A checkpoint of `exec` taken `age_secs` seconds before [`now`].
    fn ckpt(id: &str, exec: &str, age_secs: i64, parent: Option<&str>) -> CheckpointSummary {
        CheckpointSummary {
            id: cid(id),
            parent_id: parent.map(cid),
            execution_id: ExecutionId::new(exec).unwrap(),
            agent_id: "agent".into(),
            step_number: 0,
            checkpoint_reason: CheckpointReason::StepCompleted,
            timestamp: Timestamp::from_micros(NOW_MICROS - age_secs * 1_000_000),
            tokens_used: 0,
            name: None,
            labels: Vec::new(),
            bytes: 0,
        }
    }

    /// A linear chain `{prefix}{i}` in one execution, the newest `age(0)` old.
    fn chain(prefix: &str, n: usize, age: impl Fn(usize) -> i64) -> Vec<CheckpointSummary> {
        (0..n)
            .map(|i| {
                let parent = (i > 0).then(|| format!("{prefix}{}", i - 1));
                ckpt(
                    &format!("{prefix}{i}"),
                    "exec",
                    age(n - 1 - i),
                    parent.as_deref(),
                )
            })
            .collect()
    }

    fn ids<R>(entries: &[(CheckpointId, R)]) -> Vec<&str> {
        entries.iter().map(|(id, _)| id.as_str()).collect()
    }

    fn reason<'a>(p: &'a PrunePlan, id: &str) -> Result<&'a Kept, &'a Condemned> {
        match p.keep.iter().find(|(k, _)| k.as_str() == id) {
            Some((_, kept)) => Ok(kept),
            None => Err(p
                .delete
                .iter()
                .find(|(k, _)| k.as_str() == id)
                .map(|(_, why)| why)
                .expect("every id is planned")),
        }
    }

    #[test]
    fn no_rule_deletes_nothing() {
        let summaries = chain("c", 10, |i| i as i64 * 86_400);
        let p = plan(&RetentionPolicy::default(), &summaries, now());
        assert!(p.delete.is_empty());
        assert_eq!(p.keep[0], (cid("c9"), Kept::Latest));
        assert!(p.keep[1..].iter().all(|(_, k)| *k == Kept::WithinPolicy));
    }

    #[test]
    fn keep_last_keeps_the_newest_and_the_protected() {
        let mut summaries = chain("c", 10, |i| i as i64 * 60);
        summaries[2].name = Some("before-refactor".into());
        summaries[1].labels = vec!["other".into(), "keep".into()];
        let policy = RetentionPolicy {
            keep_last: Some(3),
            ..RetentionPolicy::default()
        };
        let p = plan(&policy, &summaries, now());
        assert_eq!(ids(&p.keep), ["c9", "c8", "c7", "c2", "c1"]);
        assert_eq!(reason(&p, "c9"), Ok(&Kept::Latest));
        assert_eq!(reason(&p, "c8"), Ok(&Kept::WithinPolicy));
        assert_eq!(reason(&p, "c2"), Ok(&Kept::Named));
        assert_eq!(reason(&p, "c1"), Ok(&Kept::Label("keep".into())));
        assert_eq!(ids(&p.delete), ["c6", "c5", "c4", "c3", "c0"]);
        assert!(p
            .delete
            .iter()
            .all(|(_, w)| *w == Condemned::BeyondKeepLast));
        // Without the protecting label, c1 goes too.
        let policy = RetentionPolicy {
            protect_labels: Vec::new(),
            ..policy
        };
        assert_eq!(
            reason(&plan(&policy, &summaries, now()), "c1"),
            Err(&Condemned::BeyondKeepLast)
        );
    }

    #[test]
    fn keep_last_is_per_execution_and_max_age_is_strict() {
        let summaries = vec![
            ckpt("a2", "exec_a", 100, Some("a1")),
            ckpt("a1", "exec_a", 200, None),
            ckpt("b2", "exec_b", 3_600, Some("b1")),
            ckpt("b1", "exec_b", 3_601, None),
        ];
        let policy = RetentionPolicy {
            keep_last: Some(1),
            ..RetentionPolicy::default()
        };
        assert_eq!(ids(&plan(&policy, &summaries, now()).delete), ["a1", "b1"]);
        let policy = RetentionPolicy {
            max_age: Some(Duration::from_hours(1)),
            ..RetentionPolicy::default()
        };
        let p = plan(&policy, &summaries, now());
        assert_eq!(p.delete, [(cid("b1"), Condemned::OlderThanMaxAge)]);
    }

    #[test]
    fn tiers_keep_all_then_hourly_then_daily() {
        // One checkpoint every 10 minutes for 3 days, the newest 10 minutes old; now is midnight.
        let summaries = chain("c", 432, |i| (i as i64 + 1) * 600);
        let policy = RetentionPolicy {
            tiers: parse_tiers("1h:all,1d:1h,30d:1d").unwrap(),
            ..RetentionPolicy::default()
        };
        let p = plan(&policy, &summaries, now());
        let age_min = |id: &str| {
            let s = summaries.iter().find(|s| s.id.as_str() == id).unwrap();
            (NOW_MICROS - s.timestamp.as_micros()) / 60_000_000
        };
        let kept: Vec<i64> = p.keep.iter().map(|(id, _)| age_min(id.as_str())).collect();
        // All six of the last hour (the one 60 minutes old included) ...
        let mut expected: Vec<i64> = (1..=6).map(|k| k * 10).collect();
        // ... the newest of each clock hour from 1h to 24h old (hour buckets [−2h, −1h) …
        // [−24h, −23h), whose newest is 70, 130, … minutes old) ...
        expected.extend((1..=23).map(|h| h * 60 + 10));
        // ... and the newest of each UTC day beyond.
        expected.extend([24 * 60 + 10, 48 * 60 + 10]);
        assert_eq!(kept, expected);
        assert_eq!(p.delete.len(), 432 - expected.len());
        assert_eq!(reason(&p, "c431"), Ok(&Kept::Latest));
        let thinned = |tier| {
            p.delete
                .iter()
                .filter(|(_, w)| *w == Condemned::Thinned { tier })
                .count()
        };
        assert_eq!(thinned(1), 138 - 23);
        assert_eq!(thinned(2), 288 - 2);
        assert_eq!(thinned(0), 0);
        // Older than the last tier: condemned.
        let mut summaries = summaries;
        summaries.push(ckpt("old", "exec", 31 * 86_400, None));
        summaries[0].parent_id = Some(cid("old"));
        let p = plan(&policy, &summaries, now());
        assert_eq!(reason(&p, "old"), Err(&Condemned::BeyondLastTier));
    }

    #[test]
    fn tier_limit_keeps_the_newest_per_execution() {
        // Seed 004's hot storage: within 24h, one per workflow (the latest).
        let summaries = vec![
            ckpt("a3", "exec_a", 10, Some("a2")),
            ckpt("a2", "exec_a", 20, Some("a1")),
            ckpt("a1", "exec_a", 30, None),
            ckpt("b2", "exec_b", 40, Some("b1")),
            ckpt("b1", "exec_b", 50, None),
        ];
        let policy = RetentionPolicy {
            tiers: vec![Tier::all(Duration::from_days(1)).at_most(2)],
            ..RetentionPolicy::default()
        };
        let p = plan(&policy, &summaries, now());
        assert_eq!(
            p.delete,
            [(cid("a1"), Condemned::OverTierLimit { tier: 0 })]
        );
        let policy = RetentionPolicy {
            tiers: vec![Tier::every(Duration::from_days(1), Duration::from_secs(15)).at_most(1)],
            ..RetentionPolicy::default()
        };
        // Buckets of 15 s aligned on the epoch (and so on `now`): a3 (10 s old) is alone in
        // [−15 s, 0); a2 and a1 (20 and 30 s old) share [−30 s, −15 s), where a2 is the newest
        // but exceeds the limit of one; b2 and b1 are in buckets of their own.
        let p = plan(&policy, &summaries, now());
        assert_eq!(
            p.delete,
            [
                (cid("a2"), Condemned::OverTierLimit { tier: 0 }),
                (cid("a1"), Condemned::Thinned { tier: 0 }),
                (cid("b1"), Condemned::OverTierLimit { tier: 0 }),
            ]
        );
    }

    #[test]
    fn branch_points_their_branches_and_heads_are_protected() {
        // exec_a: a0 ← x1 (abandoned, then resumed from a0) and a0 ← a1 ← a2 ← a3 ← a4.
        // exec_b forks from a2: a2 ← b0 ← b1 ← b2.
        let summaries = vec![
            ckpt("a0", "exec_a", 100, None),
            ckpt("x1", "exec_a", 90, Some("a0")),
            ckpt("a1", "exec_a", 80, Some("a0")),
            ckpt("a2", "exec_a", 70, Some("a1")),
            ckpt("a3", "exec_a", 60, Some("a2")),
            ckpt("a4", "exec_a", 50, Some("a3")),
            ckpt("b0", "exec_b", 40, Some("a2")),
            ckpt("b1", "exec_b", 30, Some("b0")),
            ckpt("b2", "exec_b", 20, Some("b1")),
        ];
        let policy = RetentionPolicy {
            keep_last: Some(0),
            ..RetentionPolicy::default()
        };
        let p = plan(&policy, &summaries, now());
        assert_eq!(p.delete, [(cid("b1"), Condemned::BeyondKeepLast)]);
        for (id, kept) in [
            ("b2", Kept::Latest),
            ("b0", Kept::BranchStart),
            ("a4", Kept::Latest),
            ("a3", Kept::BranchStart),
            ("a2", Kept::BranchPoint),
            ("a1", Kept::BranchStart),
            ("x1", Kept::BranchStart),
            ("a0", Kept::BranchPoint),
        ] {
            assert_eq!(reason(&p, id), Ok(&kept), "{id}");
        }
        // Deleting b1 leaves b2 with a dangling parent and b0 a head: nothing more to delete.
        let kept: Vec<_> = summaries
            .iter()
            .filter(|s| s.id.as_str() != "b1")
            .cloned()
            .collect();
        assert!(plan(&policy, &kept, now()).delete.is_empty());
    }

    #[test]
    fn a_branch_reason_makes_a_branch_point_and_heads_are_kept() {
        let mut summaries = chain("c", 5, |i| i as i64);
        summaries[3].checkpoint_reason = CheckpointReason::Branch;
        // A self-parent links to nothing: c0 becomes a root, and stays condemnable.
        summaries[0].parent_id = Some(cid("c0"));
        summaries.push(ckpt("tip", "exec", 100, Some("c0")));
        let policy = RetentionPolicy {
            keep_last: Some(0),
            ..RetentionPolicy::default()
        };
        let p = plan(&policy, &summaries, now());
        assert_eq!(reason(&p, "c2"), Ok(&Kept::BranchPoint));
        assert_eq!(reason(&p, "c3"), Ok(&Kept::BranchStart));
        assert_eq!(reason(&p, "c0"), Ok(&Kept::BranchPoint));
        assert_eq!(reason(&p, "tip"), Ok(&Kept::BranchStart));
        assert_eq!(reason(&p, "c1"), Ok(&Kept::BranchStart));
        assert_eq!(reason(&p, "c4"), Ok(&Kept::Latest));
        let lone = vec![
            ckpt("n1", "exec", 1, Some("n0")),
            ckpt("n0", "exec", 2, Some("n0")),
            ckpt("h", "exec", 3, Some("ghost")),
        ];
        let p = plan(&policy, &lone, now());
        assert_eq!(reason(&p, "h"), Ok(&Kept::Head));
        assert_eq!(reason(&p, "n0"), Err(&Condemned::BeyondKeepLast));
    }

    #[test]
    fn duplicates_are_planned_once() {
        let a = ckpt("a", "exec", 1, None);
        let p = plan(&RetentionPolicy::default(), &[a.clone(), a], now());
        assert_eq!(p.keep, [(cid("a"), Kept::Latest)]);
    }

    #[test]
    fn json_names_ids_and_reasons() {
        let p = PrunePlan {
            keep: vec![
                (cid("k1"), Kept::Latest),
                (cid("k2"), Kept::Label("keep".into())),
            ],
            delete: vec![(cid("d1"), Condemned::Thinned { tier: 1 })],
        };
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "keep": [
                    {"id": "k1", "reason": "latest"},
                    {"id": "k2", "reason": {"label": "keep"}},
                ],
                "delete": [{"id": "d1", "reason": {"thinned": {"tier": 1}}}],
            })
        );
        assert_eq!(serde_json::from_value::<PrunePlan>(json).unwrap(), p);
    }

    #[test]
    fn overrides_replace_only_what_is_given() {
        let policy = RetentionPolicy {
            keep_last: Some(50),
            max_age: Some(Duration::from_days(30)),
            tiers: vec![Tier::all(Duration::from_hours(1))],
            protect_labels: vec!["pin".into()],
        };
        let same = policy.clone().with_overrides(None, None, None);
        assert_eq!(same, policy);
        let changed = policy
            .clone()
            .with_overrides(Some(5), None, Some(Vec::new()));
        assert_eq!(changed.keep_last, Some(5));
        assert_eq!(changed.max_age, policy.max_age);
        assert!(changed.tiers.is_empty());
        assert_eq!(changed.protect_labels, ["pin"]);
        assert!(changed.has_rules());
        assert!(!RetentionPolicy::default().has_rules());
    }

    // ---- properties ----------------------------------------------------------------------

    /// `a` comes before `b` in the listing order.
    fn newer(a: &CheckpointSummary, b: &CheckpointSummary) -> bool {
        CheckpointSummary::newest_first(a, b).is_lt()
    }

    fn children<'a>(
        set: &'a [CheckpointSummary],
        x: &CheckpointSummary,
    ) -> Vec<&'a CheckpointSummary> {
        set.iter()
            .filter(|c| c.id != x.id && c.parent_id.as_ref() == Some(&x.id))
            .collect()
    }

    fn is_branch_point(set: &[CheckpointSummary], x: &CheckpointSummary) -> bool {
        let ch = children(set, x);
        ch.len() >= 2
            || ch.iter().any(|c| {
                c.execution_id != x.execution_id || c.checkpoint_reason == CheckpointReason::Branch
            })
    }

    /// The protections, written out naively from the module documentation.
    fn model_protected(
        policy: &RetentionPolicy,
        set: &[CheckpointSummary],
        s: &CheckpointSummary,
    ) -> bool {
        let latest = !set
            .iter()
            .any(|o| o.execution_id == s.execution_id && newer(o, s));
        let parent = s
            .parent_id
            .as_ref()
            .filter(|p| **p != s.id)
            .and_then(|p| set.iter().find(|o| o.id == *p));
        latest
            || s.name.is_some()
            || s.labels.iter().any(|l| policy.protect_labels.contains(l))
            || is_branch_point(set, s)
            || parent.is_some_and(|p| is_branch_point(set, p))
            || children(set, s).is_empty()
    }

    /// The rules, written out naively from the module documentation.
    fn model_condemned(
        policy: &RetentionPolicy,
        set: &[CheckpointSummary],
        s: &CheckpointSummary,
    ) -> bool {
        let age = |x: &CheckpointSummary| i128::from(NOW_MICROS - x.timestamp.as_micros());
        let same_exec_newer = || {
            set.iter()
                .filter(move |o| o.execution_id == s.execution_id && newer(o, s))
        };
        if policy
            .keep_last
            .is_some_and(|n| same_exec_newer().count() >= n)
        {
            return true;
        }
        if policy.max_age.is_some_and(|d| age(s) > d.as_micros()) {
            return true;
        }
        if policy.tiers.is_empty() {
            return false;
        }
        let tier_of = |x: &CheckpointSummary| {
            policy
                .tiers
                .iter()
                .position(|t| age(x) <= t.within.as_micros())
        };
        let Some(t) = tier_of(s) else {
            return true;
        };
        let tier = &policy.tiers[t];
        let bucket = |x: &CheckpointSummary| {
            tier.every
                .filter(|e| !e.is_zero())
                .map(|e| i128::from(x.timestamp.as_micros()).div_euclid(e.as_micros()))
        };
        let newer_in_tier: Vec<&CheckpointSummary> = same_exec_newer()
            .filter(|o| tier_of(o) == Some(t))
            .collect();
        if bucket(s).is_some() && newer_in_tier.iter().any(|o| bucket(o) == bucket(s)) {
            return true;
        }
        let kept_newer = match bucket(s) {
            Some(_) => newer_in_tier
                .iter()
                .map(|o| bucket(o))
                .collect::<HashSet<_>>()
                .len(),
            None => newer_in_tier.len(),
        };
        tier.max_per_execution.is_some_and(|m| kept_newer >= m)
    }

    prop_compose! {
        fn arb_summary()(
            exec in 0..3usize,
            age in prop_oneof![
                (-2i64..10).prop_map(|k| k * 600),
                (0i64..200).prop_map(|k| k * 900),
                0i64..45 * 86_400,
            ],
            parent_kind in 0..7u8,
            parent_pick in any::<prop::sample::Index>(),
            branch in prop::bool::weighted(0.1),
            named in prop::bool::weighted(0.1),
            labels in prop::sample::subsequence(vec!["keep", "pin", "other"], 0..=3),
        ) -> (usize, i64, u8, prop::sample::Index, bool, bool, Vec<&'static str>) {
            (exec, age, parent_kind, parent_pick, branch, named, labels)
        }
    }

    /// Up to 40 checkpoints in three executions: chains, forks to earlier checkpoints of any
    /// execution, dangling and self parents, names, labels, equal and future timestamps.
    fn arb_summaries() -> impl Strategy<Value = Vec<CheckpointSummary>> {
        prop::collection::vec(arb_summary(), 0..40).prop_map(|raw| {
            let mut out: Vec<CheckpointSummary> = Vec::new();
            for (i, (exec, age, parent_kind, pick, branch, named, labels)) in
                raw.into_iter().enumerate()
            {
                let exec_name = format!("exec_{exec}");
                let id = format!("c{i}");
                let parent = match parent_kind {
                    1..=3 => out
                        .iter()
                        .rev()
                        .find(|s| s.execution_id.as_str() == exec_name)
                        .map(|s| s.id.to_string()),
                    4 if !out.is_empty() => Some(pick.get(&out).id.to_string()),
                    5 => Some("ghost".to_string()),
                    6 => Some(id.clone()),
                    _ => None,
                };
                let mut s = ckpt(&id, &exec_name, age, parent.as_deref());
                if branch {
                    s.checkpoint_reason = CheckpointReason::Branch;
                }
                if named {
                    s.name = Some(format!("name {i}"));
                }
                s.labels = labels.into_iter().map(String::from).collect();
                out.push(s);
            }
            out
        })
    }

    fn arb_duration(max_secs: u64) -> impl Strategy<Value = Duration> {
        prop_oneof![
            (0..=max_secs / 3_600).prop_map(Duration::from_hours),
            (0..=max_secs).prop_map(Duration::from_secs),
        ]
    }

    /// Any tiers, checked or not: `plan` accepts them all.
    fn arb_tier() -> impl Strategy<Value = Tier> {
        (
            arb_duration(10 * 86_400),
            prop::option::of(arb_duration(2 * 86_400)),
            prop::option::of(0..4usize),
        )
            .prop_map(|(within, every, max_per_execution)| Tier {
                within,
                every,
                max_per_execution,
            })
    }

    fn arb_policy() -> impl Strategy<Value = RetentionPolicy> {
        (
            prop::option::of(0..6usize),
            prop::option::of(arb_duration(45 * 86_400)),
            prop::collection::vec(arb_tier(), 0..4),
            prop::sample::subsequence(vec!["keep", "pin"], 0..=2),
        )
            .prop_map(|(keep_last, max_age, tiers, labels)| RetentionPolicy {
                keep_last,
                max_age,
                tiers,
                protect_labels: labels.into_iter().map(String::from).collect(),
            })
    }

    fn kept_summaries(summaries: &[CheckpointSummary], p: &PrunePlan) -> Vec<CheckpointSummary> {
        let deleted: HashSet<&CheckpointId> = p.delete.iter().map(|(id, _)| id).collect();
        summaries
            .iter()
            .filter(|s| !deleted.contains(&s.id))
            .cloned()
            .collect()
    }

    proptest! {
        #[test]
        fn keep_and_delete_partition_the_input_newest_first(
            policy in arb_policy(), summaries in arb_summaries(),
        ) {
            let p = plan(&policy, &summaries, now());
            let mut planned: Vec<&CheckpointId> =
                p.keep.iter().map(|(id, _)| id).chain(p.delete.iter().map(|(id, _)| id)).collect();
            planned.sort();
            let mut input: Vec<&CheckpointId> = summaries.iter().map(|s| &s.id).collect();
            input.sort();
            prop_assert_eq!(planned, input);
            let by_id: HashMap<&CheckpointId, &CheckpointSummary> =
                summaries.iter().map(|s| (&s.id, s)).collect();
            for list in [ids(&p.keep), ids(&p.delete)] {
                for pair in list.windows(2) {
                    prop_assert!(newer(by_id[&cid(pair[0])], by_id[&cid(pair[1])]));
                }
            }
        }

        #[test]
        fn plan_matches_the_documented_rules(policy in arb_policy(), summaries in arb_summaries()) {
            let p = plan(&policy, &summaries, now());
            for s in &summaries {
                let protected = model_protected(&policy, &summaries, s);
                let condemned = model_condemned(&policy, &summaries, s);
                match reason(&p, s.id.as_str()) {
                    Ok(kept) => {
                        prop_assert_eq!(kept.is_protection(), protected, "{}: {:?}", s.id, kept);
                        prop_assert!(protected || !condemned, "{}", s.id);
                    }
                    Err(why) => prop_assert!(!protected && condemned, "{}: {:?}", s.id, why),
                }
            }
        }

        #[test]
        fn planning_the_kept_set_again_deletes_nothing(
            policy in arb_policy(), summaries in arb_summaries(),
        ) {
            let p = plan(&policy, &summaries, now());
            let kept = kept_summaries(&summaries, &p);
            let again = plan(&policy, &kept, now());
            prop_assert!(again.delete.is_empty(), "{:?}", again.delete);
            prop_assert_eq!(again.keep.len(), p.keep.len());
        }

        #[test]
        fn every_protected_checkpoint_is_kept(
            policy in arb_policy(), summaries in arb_summaries(),
        ) {
            let p = plan(&policy, &summaries, now());
            for s in summaries.iter().filter(|s| model_protected(&policy, &summaries, s)) {
                prop_assert!(reason(&p, s.id.as_str()).is_ok(), "{}", s.id);
            }
        }

        #[test]
        fn keep_last_leaves_at_most_n_unprotected_per_execution(
            policy in arb_policy(), n in 0..6usize, summaries in arb_summaries(),
        ) {
            let policy = RetentionPolicy { keep_last: Some(n), ..policy };
            let p = plan(&policy, &summaries, now());
            let mut unprotected: HashMap<&ExecutionId, usize> = HashMap::new();
            for s in &summaries {
                if reason(&p, s.id.as_str()).is_ok() && !model_protected(&policy, &summaries, s) {
                    *unprotected.entry(&s.execution_id).or_default() += 1;
                }
            }
            prop_assert!(unprotected.values().all(|count| *count <= n), "{:?}", unprotected);
        }

        #[test]
        fn a_policy_without_rules_deletes_nothing(
            labels in prop::sample::subsequence(vec!["keep", "pin"], 0..=2),
            summaries in arb_summaries(),
        ) {
            let policy = RetentionPolicy {
                protect_labels: labels.into_iter().map(String::from).collect(),
                ..RetentionPolicy::default()
            };
            prop_assert!(plan(&policy, &summaries, now()).delete.is_empty());
        }

        #[test]
        fn max_age_never_deletes_anything_younger(
            max_age in arb_duration(45 * 86_400),
            policy in arb_policy(),
            summaries in arb_summaries(),
        ) {
            let age = |id: &CheckpointId| {
                let s = summaries.iter().find(|s| s.id == *id).unwrap();
                i128::from(NOW_MICROS - s.timestamp.as_micros())
            };
            // Alone, max_age deletes only what is older.
            let alone = RetentionPolicy { max_age: Some(max_age), ..RetentionPolicy::default() };
            for (id, why) in plan(&alone, &summaries, now()).delete {
                prop_assert_eq!(why, Condemned::OlderThanMaxAge);
                prop_assert!(age(&id) > max_age.as_micros());
            }
            // With other rules, whatever it is named for is older.
            let mixed = RetentionPolicy { max_age: Some(max_age), ..policy };
            for (id, why) in plan(&mixed, &summaries, now()).delete {
                if why == Condemned::OlderThanMaxAge {
                    prop_assert!(age(&id) > max_age.as_micros());
                }
            }
        }

        #[test]
        fn input_order_does_not_matter(
            policy in arb_policy(),
            (summaries, shuffled) in arb_summaries()
                .prop_flat_map(|v| (Just(v.clone()), Just(v).prop_shuffle())),
        ) {
            prop_assert_eq!(plan(&policy, &summaries, now()), plan(&policy, &shuffled, now()));
        }

        #[test]
        fn an_interrupted_prune_plans_only_what_remains_of_it(
            policy in arb_policy(),
            summaries in arb_summaries(),
            done in prop::collection::vec(any::<bool>(), 40),
        ) {
            // Some of the planned deletions happened, then the prune stopped.
            let p = plan(&policy, &summaries, now());
            let planned: HashSet<&CheckpointId> = p.delete.iter().map(|(id, _)| id).collect();
            let deleted: HashSet<&CheckpointId> =
                p.delete.iter().zip(&done).filter(|(_, d)| **d).map(|((id, _), _)| id).collect();
            let remaining: Vec<CheckpointSummary> =
                summaries.iter().filter(|s| !deleted.contains(&s.id)).cloned().collect();
            for (id, _) in plan(&policy, &remaining, now()).delete {
                prop_assert!(planned.contains(&id), "{} was not planned", id);
            }
        }
    }
}
