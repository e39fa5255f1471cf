//! [`Duration`]: a whole number of seconds written in a short form (`45s`, `90m`, `12h`, `30d`,
//! `2w`), as retention policies, `caf.toml` and command-line flags spell them.
//!
//! A duration is one number and one unit; there are no compound forms (`1h30m` is `90m`). It is
//! displayed with the largest unit that divides it exactly, so `parse(d.to_string()) == d`.
//!
//! ```
//! use caf_core::duration::{parse_duration, Duration};
//!
//! let d = parse_duration("90m").unwrap();
//! assert_eq!(d, Duration::from_secs(5400));
//! assert_eq!(d.to_string(), "90m");
//! assert_eq!(Duration::from_secs(86_400).to_string(), "1d");
//! ```

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A span of time in whole seconds, written as `<number><unit>` with unit `s`, `m`, `h`, `d`
/// (24 hours) or `w` (7 days).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration {
    secs: u64,
}

/// The units, largest first: suffix and length in seconds.
const UNITS: [(char, u64); 5] = [
    ('w', 7 * 86_400),
    ('d', 86_400),
    ('h', 3_600),
    ('m', 60),
    ('s', 1),
];

/// Why a string is not a [`Duration`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurationError {
    /// The string is empty.
    #[error("empty duration; write a number and a unit, such as 30d")]
    Empty,
    /// The string does not start with a decimal number.
    #[error("{input:?} is not a duration: it must start with a whole number (as in 30d)")]
    NoNumber {
        /// The string, shortened for display.
        input: String,
    },
    /// The number is not followed by exactly one known unit.
    #[error("{input:?} is not a duration: the unit must be one of s, m, h, d, w (as in 30d)")]
    BadUnit {
        /// The string, shortened for display.
        input: String,
    },
    /// The duration does not fit in 64 bits of seconds.
    #[error("{input:?} is too long a duration")]
    Overflow {
        /// The string, shortened for display.
        input: String,
    },
}

impl Duration {
    /// A duration of `secs` seconds.
    pub const fn from_secs(secs: u64) -> Self {
        Self { secs }
    }

    /// `n` minutes (saturating).
    pub const fn from_mins(n: u64) -> Self {
        Self::from_secs(n.saturating_mul(60))
    }

    /// `n` hours (saturating).
    pub const fn from_hours(n: u64) -> Self {
        Self::from_secs(n.saturating_mul(3_600))
    }

    /// `n` days of 24 hours (saturating).
    pub const fn from_days(n: u64) -> Self {
        Self::from_secs(n.saturating_mul(86_400))
    }

    /// The number of seconds.
    pub const fn as_secs(self) -> u64 {
        self.secs
    }

    /// The number of microseconds, the unit of [`crate::Timestamp`] (wide enough never to
    /// overflow).
    pub const fn as_micros(self) -> i128 {
        self.secs as i128 * 1_000_000
    }

    /// Whether the duration is zero.
    pub const fn is_zero(self) -> bool {
        self.secs == 0
    }
}

/// Parses the short form: one whole number and one unit among `s`, `m`, `h`, `d`, `w`
/// (`"30d"`, `"12h"`, `"90m"`, `"45s"`, `"2w"`).
pub fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    let shown = || s.chars().take(40).collect::<String>();
    if s.is_empty() {
        return Err(DurationError::Empty);
    }
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(DurationError::NoNumber { input: shown() });
    }
    let (number, unit) = s.split_at(digits);
    let mut chars = unit.chars();
    let unit_secs = match (chars.next(), chars.next()) {
        (Some(u), None) => UNITS.iter().find(|(c, _)| *c == u).map(|(_, secs)| *secs),
        _ => None,
    }
    .ok_or_else(|| DurationError::BadUnit { input: shown() })?;
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit_secs))
        .map(Duration::from_secs)
        .ok_or_else(|| DurationError::Overflow { input: shown() })
}

impl FromStr for Duration {
    type Err = DurationError;
    fn from_str(s: &str) -> Result<Self, DurationError> {
        parse_duration(s)
    }
}

impl fmt::Display for Duration {
    /// The short form with the largest unit that divides the duration exactly (`0s` for zero).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (unit, secs) = UNITS
            .iter()
            .find(|(_, secs)| self.secs != 0 && self.secs.is_multiple_of(*secs))
            .copied()
            .unwrap_or(('s', 1));
        write!(f, "{}{unit}", self.secs / secs)
    }
}

impl From<Duration> for std::time::Duration {
    fn from(d: Duration) -> Self {
        std::time::Duration::from_secs(d.secs)
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Duration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration such as \"30d\", \"12h\", \"90m\", \"45s\" or \"2w\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Duration, E> {
                parse_duration(v).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_every_unit() {
        for (s, secs) in [
            ("45s", 45),
            ("90m", 5_400),
            ("12h", 43_200),
            ("30d", 2_592_000),
            ("2w", 1_209_600),
            ("0s", 0),
            ("007m", 420),
        ] {
            assert_eq!(parse_duration(s), Ok(Duration::from_secs(secs)), "{s}");
        }
    }

    #[test]
    fn refuses_what_is_not_a_duration() {
        assert_eq!(parse_duration(""), Err(DurationError::Empty));
        for s in ["d", "-1d", " 1d", "+1d", "1.5h"] {
            assert!(
                matches!(
                    parse_duration(s),
                    Err(DurationError::NoNumber { .. } | DurationError::BadUnit { .. })
                ),
                "{s}"
            );
        }
        for s in ["30", "30x", "30dd", "1h30m", "1d ", "3D", "5µ"] {
            assert!(
                matches!(parse_duration(s), Err(DurationError::BadUnit { .. })),
                "{s}"
            );
        }
        assert!(matches!(
            parse_duration("99999999999999999999s"),
            Err(DurationError::Overflow { .. })
        ));
        assert!(matches!(
            parse_duration("9999999999999999w"),
            Err(DurationError::Overflow { .. })
        ));
        let message = parse_duration("30x").unwrap_err().to_string();
        assert!(message.contains("\"30x\"") && message.contains("s, m, h, d, w"));
    }

    #[test]
    fn displays_with_the_largest_exact_unit() {
        for (secs, s) in [
            (0, "0s"),
            (59, "59s"),
            (60, "1m"),
            (5_400, "90m"),
            (3_600, "1h"),
            (86_400, "1d"),
            (90_000, "25h"),
            (604_800, "1w"),
            (1_209_600, "2w"),
            (2_592_000, "30d"),
        ] {
            assert_eq!(Duration::from_secs(secs).to_string(), s);
        }
    }

    #[test]
    fn serde_uses_the_short_form() {
        let d = Duration::from_hours(12);
        assert_eq!(serde_json::to_string(&d).unwrap(), "\"12h\"");
        assert_eq!(serde_json::from_str::<Duration>("\"12h\"").unwrap(), d);
        let err = serde_json::from_str::<Duration>("\"12 hours\"").unwrap_err();
        assert!(err.to_string().contains("s, m, h, d, w"), "{err}");
        assert!(serde_json::from_str::<Duration>("12").is_err());
    }

    proptest! {
        #[test]
        fn display_then_parse_is_identity(secs in any::<u64>()) {
            let d = Duration::from_secs(secs);
            prop_assert_eq!(parse_duration(&d.to_string()), Ok(d));
        }
    }
}
