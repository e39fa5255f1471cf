//! [`parse_interval`]: how often to capture, written like a [`crate::duration::Duration`]
//! (`15m`, `1h`, `30s`) or in milliseconds (`200ms`, for tests and tight loops).

use crate::duration::{parse_duration, DurationError};
use std::time::Duration;

/// Why a string is not an interval.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IntervalError {
    /// Not a duration.
    #[error("{0} (or milliseconds, as in 500ms)")]
    Duration(#[from] DurationError),
    /// Zero: a capture would never wait.
    #[error("the interval must be longer than zero")]
    Zero,
}

/// Parses an interval: a whole number and a unit among `ms`, `s`, `m`, `h`, `d`, `w`
/// (`"15m"`, `"200ms"`). Zero is refused.
///
/// ```
/// use caf_core::capture::parse_interval;
/// use std::time::Duration;
///
/// assert_eq!(parse_interval("15m").unwrap(), Duration::from_secs(900));
/// assert_eq!(parse_interval("200ms").unwrap(), Duration::from_millis(200));
/// assert!(parse_interval("0s").is_err());
/// ```
pub fn parse_interval(s: &str) -> Result<Duration, IntervalError> {
    let interval = match s.strip_suffix("ms") {
        Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            let ms: u64 = n.parse().map_err(|_| DurationError::Overflow {
                input: s.chars().take(40).collect(),
            })?;
            Duration::from_millis(ms)
        }
        _ => parse_duration(s)?.into(),
    };
    if interval.is_zero() {
        return Err(IntervalError::Zero);
    }
    Ok(interval)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses() {
        assert_eq!(parse_interval("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_interval("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_interval("1ms"), Ok(Duration::from_millis(1)));
        for bad in [
            "",
            "ms",
            "-5ms",
            "1.5s",
            "0ms",
            "0m",
            "5",
            "5 ms",
            "99999999999999999999ms",
        ] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
        assert!(parse_interval("5x")
            .unwrap_err()
            .to_string()
            .contains("500ms"));
    }
}
