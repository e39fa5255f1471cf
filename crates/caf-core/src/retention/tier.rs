//! [`Tier`]: one step of age-based thinning, and the flag form of a list of tiers
//! (`1h:all,1d:1h,30d:1d`).

use crate::duration::{parse_duration, Duration, DurationError};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One tier of age-based thinning: for checkpoints at most `within` old (and not covered by an
/// earlier tier), keep all of them or the newest of each `every`-long bucket, and at most
/// `max_per_execution` per execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tier {
    /// The age this tier reaches up to (inclusive).
    pub within: Duration,
    /// Keep the newest checkpoint of each bucket this long; `None` (or zero) keeps all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<Duration>,
    /// Keep at most this many per execution in this tier (the newest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_per_execution: Option<usize>,
}

impl Tier {
    /// A tier that keeps every checkpoint up to `within` old.
    pub fn all(within: Duration) -> Self {
        Self {
            within,
            every: None,
            max_per_execution: None,
        }
    }

    /// A tier that keeps one checkpoint per `every` up to `within` old.
    pub fn every(within: Duration, every: Duration) -> Self {
        Self {
            every: Some(every),
            ..Self::all(within)
        }
    }

    /// This tier keeping at most `max` checkpoints per execution.
    pub fn at_most(self, max: usize) -> Self {
        Self {
            max_per_execution: Some(max),
            ..self
        }
    }
}

impl fmt::Display for Tier {
    /// The flag form `within:every[:max]`, with `all` for no `every`: `1h:all`, `1d:1h:24`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.within)?;
        match self.every {
            Some(every) => write!(f, "{every}")?,
            None => f.write_str("all")?,
        }
        match self.max_per_execution {
            Some(max) => write!(f, ":{max}"),
            None => Ok(()),
        }
    }
}

impl FromStr for Tier {
    type Err = TierError;
    /// Parses `within:every[:max]`, `every` being a duration or `all`.
    fn from_str(item: &str) -> Result<Self, TierError> {
        let syntax = || TierError::Syntax {
            item: item.to_string(),
        };
        let duration = |s: &str| {
            parse_duration(s).map_err(|source| TierError::Duration {
                item: item.to_string(),
                source,
            })
        };
        let mut parts = item.split(':');
        let (Some(within), Some(every), max, None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(syntax());
        };
        Ok(Self {
            within: duration(within)?,
            every: match every {
                "all" => None,
                every => Some(duration(every)?),
            },
            max_per_execution: match max {
                Some(max) => Some(max.parse().map_err(|_| TierError::Max {
                    item: item.to_string(),
                })?),
                None => None,
            },
        })
    }
}

/// Why tiers are not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TierError {
    /// An item is not `within:every[:max]`.
    #[error("tier {item:?} is not within:every[:max] (as in 1d:1h, 1h:all or 7d:1d:5)")]
    Syntax {
        /// The item.
        item: String,
    },
    /// A duration in an item is not one.
    #[error("tier {item:?}: {source}")]
    Duration {
        /// The item.
        item: String,
        /// Why.
        #[source]
        source: DurationError,
    },
    /// The maximum in an item is not a whole number.
    #[error("tier {item:?}: the maximum per execution must be a whole number")]
    Max {
        /// The item.
        item: String,
    },
    /// A tier has a zero `within` or `every`.
    #[error("tier {tier} ({text}): durations must be longer than 0s")]
    Zero {
        /// The tier's position, from 1.
        tier: usize,
        /// The tier in flag form.
        text: String,
    },
    /// Tiers are not in increasing order of `within`.
    #[error("tier {tier} ({text}) must reach further than the one before it ({previous})")]
    NotIncreasing {
        /// The tier's position, from 1.
        tier: usize,
        /// The tier in flag form.
        text: String,
        /// The previous tier's `within`.
        previous: Duration,
    },
}

/// Parses a tiers flag: comma-separated `within:every[:max]` items, finest first, such as
/// `"1h:all,1d:1h,30d:1d"`; `"none"` is no tiers. The result passes [`check_tiers`].
pub fn parse_tiers(s: &str) -> Result<Vec<Tier>, TierError> {
    if s.trim() == "none" {
        return Ok(Vec::new());
    }
    let tiers = s
        .split(',')
        .map(|item| item.trim().parse())
        .collect::<Result<Vec<Tier>, TierError>>()?;
    check_tiers(&tiers)?;
    Ok(tiers)
}

/// The flag form of `tiers`, which [`parse_tiers`] reads back (`none` for no tiers).
pub fn format_tiers(tiers: &[Tier]) -> String {
    if tiers.is_empty() {
        return "none".to_string();
    }
    tiers
        .iter()
        .map(Tier::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Checks that tiers make sense: durations longer than zero and `within` strictly increasing.
/// ([`plan`](super::plan) accepts any tiers: a tier after a wider one is never reached, and a
/// zero `every` keeps all.)
pub fn check_tiers(tiers: &[Tier]) -> Result<(), TierError> {
    let mut previous: Option<Duration> = None;
    for (i, tier) in tiers.iter().enumerate() {
        if tier.within.is_zero() || tier.every.is_some_and(Duration::is_zero) {
            return Err(TierError::Zero {
                tier: i + 1,
                text: tier.to_string(),
            });
        }
        if let Some(previous) = previous.filter(|p| *p >= tier.within) {
            return Err(TierError::NotIncreasing {
                tier: i + 1,
                text: tier.to_string(),
                previous,
            });
        }
        previous = Some(tier.within);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn tiers_flag_round_trips_and_is_checked() {
        let tiers = parse_tiers("1h:all, 1d:1h,30d:1d:20").unwrap();
        assert_eq!(
            tiers,
            [
                Tier::all(Duration::from_hours(1)),
                Tier::every(Duration::from_days(1), Duration::from_hours(1)),
                Tier::every(Duration::from_days(30), Duration::from_days(1)).at_most(20),
            ]
        );
        assert_eq!(format_tiers(&tiers), "1h:all,1d:1h,30d:1d:20");
        assert_eq!(parse_tiers("none"), Ok(Vec::new()));
        assert_eq!(format_tiers(&[]), "none");
        assert!(matches!(parse_tiers(""), Err(TierError::Syntax { .. })));
        assert!(matches!(parse_tiers("1h"), Err(TierError::Syntax { .. })));
        assert!(matches!(
            parse_tiers("1h:all:2:3"),
            Err(TierError::Syntax { .. })
        ));
        assert!(matches!(
            parse_tiers("1h:al"),
            Err(TierError::Duration { .. })
        ));
        assert!(matches!(
            parse_tiers("1h:all:-1"),
            Err(TierError::Max { .. })
        ));
        assert!(matches!(
            parse_tiers("1h:0s"),
            Err(TierError::Zero { tier: 1, .. })
        ));
        let err = parse_tiers("1d:1h,1h:all").unwrap_err();
        assert_eq!(
            err.to_string(),
            "tier 2 (1h:all) must reach further than the one before it (1d)"
        );
        let err = parse_tiers("1d:1x").unwrap_err();
        assert!(err.to_string().starts_with("tier \"1d:1x\": "), "{err}");
    }

    proptest! {
        #[test]
        fn checked_tiers_round_trip_through_the_flag(
            steps in prop::collection::vec(
                (1..100_000u64, prop::option::of(1..100_000u64), prop::option::of(0..100usize)),
                0..5,
            ),
        ) {
            let mut within = 0;
            let tiers: Vec<Tier> = steps
                .into_iter()
                .map(|(step, every, max_per_execution)| {
                    within += step;
                    Tier {
                        within: Duration::from_secs(within),
                        every: every.map(Duration::from_secs),
                        max_per_execution,
                    }
                })
                .collect();
            prop_assert_eq!(check_tiers(&tiers), Ok(()));
            prop_assert_eq!(parse_tiers(&format_tiers(&tiers)), Ok(tiers));
        }
    }
}
