//! Time: the [`Timestamp`] type used in every checkpoint, and the [`Clock`] that makes them.
//!
//! Timestamps are UTC with microsecond precision and are written as RFC 3339 with exactly six
//! fractional digits (`2026-11-22T01:40:31.123456Z`), so a timestamp survives a save/load round
//! trip unchanged and two equal states always serialize to the same bytes.

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};

/// A UTC instant with microsecond precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Timestamp(DateTime<Utc>);

/// A timestamp that is not RFC 3339.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an RFC 3339 timestamp")]
pub struct TimestampError(pub String);

impl Timestamp {
    /// The current time, truncated to microseconds.
    pub fn now() -> Self {
        Self::from_micros(Utc::now().timestamp_micros())
    }

    /// The instant `micros` microseconds after the Unix epoch (clamped to chrono's range).
    pub fn from_micros(micros: i64) -> Self {
        Self(
            DateTime::from_timestamp_micros(micros).unwrap_or(if micros < 0 {
                DateTime::<Utc>::MIN_UTC
            } else {
                DateTime::<Utc>::MAX_UTC
            }),
        )
    }

    /// The instant `ms` milliseconds after the Unix epoch (the 0.0.1 format's representation).
    pub fn from_millis(ms: i64) -> Self {
        Self::from_micros(ms.saturating_mul(1000))
    }

    /// Microseconds since the Unix epoch.
    pub fn as_micros(&self) -> i64 {
        self.0.timestamp_micros()
    }

    /// Milliseconds since the Unix epoch.
    pub fn as_millis(&self) -> i64 {
        self.0.timestamp_millis()
    }

    /// The chrono value.
    pub fn as_datetime(&self) -> DateTime<Utc> {
        self.0
    }

    /// Parses RFC 3339 (any offset; converted to UTC and truncated to microseconds).
    pub fn parse(s: &str) -> Result<Self, TimestampError> {
        DateTime::parse_from_rfc3339(s)
            .map(|d| Self::from_micros(d.with_timezone(&Utc).timestamp_micros()))
            .map_err(|_| TimestampError(s.chars().take(64).collect()))
    }
}

impl From<DateTime<Utc>> for Timestamp {
    fn from(d: DateTime<Utc>) -> Self {
        Self::from_micros(d.timestamp_micros())
    }
}

impl TryFrom<String> for Timestamp {
    type Error = TimestampError;
    fn try_from(s: String) -> Result<Self, TimestampError> {
        Self::parse(&s)
    }
}

impl From<Timestamp> for String {
    fn from(t: Timestamp) -> String {
        t.to_string()
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::Micros, true))
    }
}

/// A source of time. The default is [`SystemClock`]; tests and `caf demo` use [`SimulatedClock`]
/// so that what they write is reproducible.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A deterministic clock: it starts at a fixed instant and moves only when told to, plus one
/// microsecond per reading so that successive readings are strictly increasing.
#[derive(Debug)]
pub struct SimulatedClock {
    micros: AtomicI64,
}

impl SimulatedClock {
    /// A clock that starts at `start`.
    pub fn starting_at(start: Timestamp) -> Self {
        Self {
            micros: AtomicI64::new(start.as_micros()),
        }
    }

    /// Moves the clock forward by `ms` milliseconds.
    pub fn advance_ms(&self, ms: u64) {
        let ms = i64::try_from(ms).unwrap_or(i64::MAX / 1000);
        self.micros
            .fetch_add(ms.saturating_mul(1000), Ordering::SeqCst);
    }
}

impl Clock for SimulatedClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_micros(self.micros.fetch_add(1, Ordering::SeqCst))
    }
}

/// A Unix-epoch instant from a calendar date, for fixtures and the demo.
pub fn utc(year: i32, month: u32, day: u32, hour: u32, min: u32, sec: u32) -> Option<Timestamp> {
    Utc.with_ymd_and_hms(year, month, day, hour, min, sec)
        .single()
        .map(Timestamp::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_six_digits() {
        let t = Timestamp::from_micros(1_738_790_400_123_456);
        let s = t.to_string();
        assert_eq!(s, "2025-02-05T21:20:00.123456Z");
        assert_eq!(Timestamp::parse(&s), Ok(t));
    }

    #[test]
    fn parses_offsets_and_truncates_nanos() {
        let t = Timestamp::parse("2025-02-05T22:20:00.123456789+01:00").unwrap();
        assert_eq!(t.to_string(), "2025-02-05T21:20:00.123456Z");
        assert!(Timestamp::parse("yesterday").is_err());
    }

    #[test]
    fn simulated_clock_is_strictly_increasing() {
        let c = SimulatedClock::starting_at(Timestamp::from_millis(1000));
        let a = c.now();
        let b = c.now();
        c.advance_ms(5);
        let d = c.now();
        assert!(a < b && b < d);
        assert_eq!(d.as_micros() - b.as_micros(), 5001);
    }
}
