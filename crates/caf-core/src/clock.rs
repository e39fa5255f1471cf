//! Time: the [`Timestamp`] type used in every checkpoint, and the [`Clock`] that makes them.
//!
//! Timestamps are UTC with microsecond precision and are written as RFC 3339 with exactly six
//! fractional digits (`2026-11-22T01:40:31.123456Z`), so a timestamp survives a save/load round
//! trip unchanged and two equal states always serialize to the same bytes.

use chrono::{DateTime, Datelike, NaiveDate, SecondsFormat, TimeZone, Timelike, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};

/// A UTC instant with microsecond precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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

    /// The year (proleptic Gregorian, UTC).
    pub(crate) fn year(&self) -> i32 {
        self.0.naive_utc().year()
    }

    /// The chrono value.
    pub fn as_datetime(&self) -> DateTime<Utc> {
        self.0
    }

    /// Parses RFC 3339 (any offset; converted to UTC and truncated to microseconds).
    pub fn parse(s: &str) -> Result<Self, TimestampError> {
        if let Some(t) = Self::parse_canonical(s.as_bytes()) {
            return Ok(t);
        }
        DateTime::parse_from_rfc3339(s)
            .map(|d| Self::from_micros(d.with_timezone(&Utc).timestamp_micros()))
            .map_err(|_| TimestampError(s.chars().take(64).collect()))
    }

    /// The canonical form, `YYYY-MM-DDTHH:MM:SS.ffffffZ`, written without allocating.
    /// `None` for years outside 0..=9999.
    fn canonical(&self) -> Option<[u8; 27]> {
        let d = self.0;
        let year = u32::try_from(d.year()).ok().filter(|y| *y <= 9999)?;
        let mut b = *b"0000-00-00T00:00:00.000000Z";
        let mut put = |at: usize, width: usize, mut v: u32| {
            for i in (at..at + width).rev() {
                b[i] = b'0' + (v % 10) as u8;
                v /= 10;
            }
        };
        put(0, 4, year);
        put(5, 2, d.month());
        put(8, 2, d.day());
        put(11, 2, d.hour());
        put(14, 2, d.minute());
        put(17, 2, d.second());
        put(20, 6, d.timestamp_subsec_micros().min(999_999));
        Some(b)
    }

    /// Parses exactly the canonical form (the fast path for files caf wrote).
    fn parse_canonical(s: &[u8]) -> Option<Self> {
        if s.len() != 27
            || s[4] != b'-'
            || s[7] != b'-'
            || s[10] != b'T'
            || s[13] != b':'
            || s[16] != b':'
            || s[19] != b'.'
            || s[26] != b'Z'
        {
            return None;
        }
        let num = |from: usize, to: usize| -> Option<u32> {
            s[from..to].iter().try_fold(0u32, |acc, c| {
                c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
            })
        };
        let date =
            NaiveDate::from_ymd_opt(i32::try_from(num(0, 4)?).ok()?, num(5, 7)?, num(8, 10)?)?;
        let dt = date.and_hms_micro_opt(num(11, 13)?, num(14, 16)?, num(17, 19)?, num(20, 26)?)?;
        Some(Self(dt.and_utc()))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.canonical() {
            // The buffer holds only ASCII digits and separators.
            Some(b) => s.serialize_str(std::str::from_utf8(&b).unwrap_or_default()),
            None => s.serialize_str(&self.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Timestamp;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an RFC 3339 timestamp")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Timestamp, E> {
                Timestamp::parse(v).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
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
        match self.canonical() {
            Some(b) => f.write_str(std::str::from_utf8(&b).unwrap_or_default()),
            None => f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::Micros, true)),
        }
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
    fn fast_paths_agree_with_chrono() {
        for micros in [
            0,
            1,
            999_999,
            1_738_790_400_123_456,
            253_402_300_799_999_999,
            -1,
            -62_135_596_800_000_000,
        ] {
            let t = Timestamp::from_micros(micros);
            let chrono = t.0.to_rfc3339_opts(SecondsFormat::Micros, true);
            assert_eq!(t.to_string(), chrono, "{micros}");
            assert_eq!(Timestamp::parse(&chrono), Ok(t));
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{chrono}\""));
            assert_eq!(serde_json::from_str::<Timestamp>(&json).unwrap(), t);
        }
        assert!(Timestamp::parse("2025-02-30T00:00:00.000000Z").is_err());
        assert!(Timestamp::parse("2025-02-03T24:00:00.000000Z").is_err());
        assert!(serde_json::from_str::<Timestamp>("17").is_err());
    }

    /// What chrono alone makes of `s`.
    fn by_chrono(s: &str) -> Option<Timestamp> {
        DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|d| Timestamp::from_micros(d.with_timezone(&Utc).timestamp_micros()))
    }

    /// `Timestamp::parse` gives what chrono gives; when the canonical reader answers, it answers
    /// that too; and it does answer for every canonical form of a real time (no leap second).
    fn agrees(s: &str) {
        let chrono = by_chrono(s);
        assert_eq!(Timestamp::parse(s).ok(), chrono, "{s}");
        let fast = Timestamp::parse_canonical(s.as_bytes());
        if fast.is_some() {
            assert_eq!(fast, chrono, "{s}");
        }
        let canonical_shape = s.len() == 27 && s.get(17..19).is_some_and(|sec| sec != "60");
        if chrono.is_some_and(|t| t.to_string() == s) && canonical_shape {
            assert!(fast.is_some(), "the canonical reader refused {s}");
        }
    }

    #[test]
    fn canonical_reader_agrees_with_chrono_on_dates() {
        // Leap and common years, centuries, the ends of the range.
        for year in [
            0, 1, 4, 99, 100, 200, 400, 1600, 1900, 1970, 2000, 2023, 2024, 2100, 9999,
        ] {
            for month in 0..=13 {
                for day in 0..=32 {
                    for time in ["00:00:00.000000", "23:59:59.999999", "12:34:56.000001"] {
                        agrees(&format!("{year:04}-{month:02}-{day:02}T{time}Z"));
                    }
                }
            }
        }
        assert!(Timestamp::parse_canonical(b"2024-02-29T00:00:00.000000Z").is_some());
        assert!(Timestamp::parse_canonical(b"2023-02-29T00:00:00.000000Z").is_none());
        assert!(Timestamp::parse_canonical(b"2000-02-29T00:00:00.000000Z").is_some());
        assert!(Timestamp::parse_canonical(b"1900-02-29T00:00:00.000000Z").is_none());
    }

    #[test]
    fn canonical_reader_agrees_with_chrono_on_times() {
        for hour in 0..=25 {
            for minute in [0, 1, 58, 59, 60, 61, 99] {
                for second in [0, 1, 58, 59, 60, 61, 99] {
                    for micro in [0, 1, 999_999] {
                        agrees(&format!(
                            "2026-12-31T{hour:02}:{minute:02}:{second:02}.{micro:06}Z"
                        ));
                    }
                }
            }
        }
        // A leap second is chrono's to read.
        assert!(Timestamp::parse_canonical(b"2016-12-31T23:59:60.000000Z").is_none());
        assert!(Timestamp::parse("2016-12-31T23:59:60.000000Z").is_ok());
    }

    #[test]
    fn canonical_reader_agrees_with_chrono_on_other_forms() {
        let base = "2025-02-05T21:20:00.123456Z";
        agrees(base);
        // Every byte replaced by something else, one at a time.
        for i in 0..base.len() {
            for c in [
                '0', '1', '5', '9', '/', ':', '-', '+', '.', 'T', 't', 'Z', 'z', ' ', 'a',
            ] {
                let mut s = base.to_string();
                s.replace_range(i..=i, c.encode_utf8(&mut [0; 4]));
                agrees(&s);
            }
            agrees(&format!("{}{}", &base[..i], &base[i + 1..]));
        }
        for s in [
            "2025-02-05T21:20:00Z",
            "2025-02-05T21:20:00.1Z",
            "2025-02-05T21:20:00.1234567Z",
            "2025-02-05T21:20:00.123456+00:00",
            "2025-02-05T21:20:00.123456-00:30",
            "2025-02-05T23:20:00.123456+02:00",
            "2025-02-05t21:20:00.123456z",
            "2025-02-05 21:20:00.123456Z",
            "2025-02-05T21:20:00.123456Z ",
            " 2025-02-05T21:20:00.123456Z",
            "+2025-02-05T21:20:00.12345Z",
            "-025-02-05T21:20:00.123456Z",
            "2025-02-05T21:20:00.123456\u{0}",
            "２025-02-05T21:20:00.12345Z",
            "",
        ] {
            agrees(s);
        }
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
