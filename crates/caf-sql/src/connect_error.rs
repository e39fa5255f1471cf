//! The error of a connection that failed, with no password in it.
//!
//! [`crate::redact`] hides the password of a URL caf prints itself. But libpq's own message for
//! a URL it cannot parse quotes part of the URL: the whole of it (`end of string reached when
//! looking for matching "]" in IPv6 host address in URI: "postgres://u:pw@[::1/db"`) or the
//! token it choked on, which may be the password or a piece of it (`invalid percent-encoded
//! token: "pa%zzword"`). So the driver's message is cleaned too before it is kept: the URL is
//! replaced by its redacted form, every password the URL holds (as written and percent-decoded)
//! by `***`, and any quoted fragment that is a piece of a password by `"***"`.

use crate::connection::{password_spans, redact, Backend};
use crate::SqlError;

/// The passwords `url` holds, as written and percent-decoded: the one of its user-info part and
/// the value of any `password=` parameter. Empty ones are left out.
fn passwords(url: &str) -> Vec<String> {
    let (user_info, params) = password_spans(url);
    let mut found: Vec<String> = user_info
        .into_iter()
        .chain(params)
        .map(|span| url[span].to_string())
        .collect();
    let decoded: Vec<String> = found.iter().map(|p| percent_decoded(p)).collect();
    found.extend(decoded);
    found.retain(|p| !p.is_empty());
    found.sort();
    found.dedup();
    // Longest first, so that a password containing another is replaced whole.
    found.sort_by_key(|p| std::cmp::Reverse(p.len()));
    found
}

/// `s` with its valid `%XX` escapes decoded (others kept), read as UTF-8 lossily.
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let (h, l) = (hex(h).unwrap_or(0), hex(l).unwrap_or(0));
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `message` (a driver's error about connecting to `url`) with no password of `url` left in
/// it, whole or in part (see the module docs).
pub(crate) fn hide_passwords(message: &str, url: &str) -> String {
    let secrets = passwords(url);
    if secrets.is_empty() {
        return message.to_string();
    }
    let mut out = message.replace(url, &redact(url));
    for secret in &secrets {
        out = out.replace(secret.as_str(), "***");
    }
    // A quoted fragment that is a piece of a password.
    let mut cleaned = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(open) = rest.find('"') {
        let Some(close) = rest[open + 1..].find('"') else {
            break;
        };
        let quoted = &rest[open + 1..open + 1 + close];
        cleaned.push_str(&rest[..=open]);
        let piece = !quoted.is_empty() && secrets.iter().any(|s| s.contains(quoted));
        cleaned.push_str(if piece { "***" } else { quoted });
        cleaned.push('"');
        rest = &rest[open + close + 2..];
    }
    cleaned.push_str(rest);
    cleaned
}

impl SqlError {
    /// A failed connection to `url` (a URL or a path, as given): the target shown without its
    /// password, and the driver's message cleaned of it ([`hide_passwords`]).
    pub(crate) fn connect(backend: Backend, url: &str, source: diesel::ConnectionError) -> Self {
        use diesel::ConnectionError as E;
        let source = match source {
            E::BadConnection(m) => E::BadConnection(hide_passwords(&m, url)),
            E::InvalidConnectionUrl(m) => E::InvalidConnectionUrl(hide_passwords(&m, url)),
            other => other,
        };
        SqlError::Connect {
            backend,
            target: redact(url),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_libpq_quotes_of_a_url_loses_its_password() {
        for (url, message, shown) in [
            (
                "postgres://u:p%zzword@127.0.0.1/db",
                r#"invalid percent-encoded token: "p%zzword""#,
                r#"invalid percent-encoded token: "***""#,
            ),
            (
                "postgres://u:s3cr3t@[::1/db",
                r#"end of string reached when looking for matching "]" in IPv6 host address in URI: "postgres://u:s3cr3t@[::1/db""#,
                r#"end of string reached when looking for matching "]" in IPv6 host address in URI: "postgres://u:***@[::1/db""#,
            ),
            (
                "postgres://u@h/db?password=hun%zzter2",
                r#"invalid percent-encoded token: "hun%zzter2""#,
                r#"invalid percent-encoded token: "***""#,
            ),
            (
                "postgres://u:hunter%2x22@/db",
                r#"invalid percent-encoded token: "hunter%2x""#,
                r#"invalid percent-encoded token: "***""#,
            ),
            (
                "postgres://u:pass%20word@h/db",
                "FATAL: password authentication failed; tried pass word",
                "FATAL: password authentication failed; tried ***",
            ),
            (
                "postgres://u:pw@127.0.0.1:54x/db",
                r#"invalid integer value "54x" for connection option "port""#,
                r#"invalid integer value "54x" for connection option "port""#,
            ),
        ] {
            assert_eq!(hide_passwords(message, url), shown, "{url}");
        }
        assert_eq!(
            hide_passwords("no password here", "postgres://u@h/db"),
            "no password here"
        );
    }
}
