//! The bodies of the `cargo fuzz` targets (`fuzz/fuzz_targets/*.rs`), shared with the ordinary
//! test that runs every file of the committed corpora through them (`fuzz/corpus/TARGET/`,
//! `tests/tests/faults/fuzz_corpora.rs`), so that stable CI replays what the fuzzer found.
//!
//! Each takes arbitrary bytes and must return for every input. Besides not panicking, each
//! checks a property and panics (a finding) when it does not hold:
//!
//! - [`decode_bytes`]: a document that decodes (any format version) encodes, and its encoding
//!   decodes to the same checkpoint; the fast path for bytes a trusted index knows
//!   ([`decode_known`]) agrees with the full decode, accepting exactly what it accepts; with the
//!   digest of the very bytes recorded too ([`decode_known_file`], which a store records only
//!   for bytes that decode), it gives what decode gives for every document decode accepts.
//! - [`migrate_json`]: arbitrary JSON, stamped with every known version, goes through the
//!   migration steps and decode without panicking; what decodes round-trips as above.
//! - [`diff_pair`]: two valid checkpoints diff without panicking; each diffed with itself is
//!   empty; the diff's JSON reads back equal.
//! - [`parse_config`]: arbitrary text as `caf.toml` parses or fails with an error.
//!
//! Only with the `test-support` feature; not part of the stable API.

use crate::config::Config;
use crate::diff::{diff, CheckpointDiff};
use crate::format::{
    check, decode, decode_known, decode_known_file, decode_value, encode, file_digest, migrate,
    Checkpoint, Decoded, Limits,
};
use crate::store::stated_integrity;
use serde_json::Value;

/// Limits small enough that a fuzzer does not spend its time on huge inputs.
fn limits() -> Limits {
    Limits {
        max_bytes: 1 << 20,
        ..Limits::default()
    }
}

/// A decoded checkpoint encodes, and its encoding decodes to the same checkpoint.
fn round_trips(c: &Checkpoint) {
    let bytes = encode(c).unwrap_or_else(|e| panic!("a decoded checkpoint does not encode: {e}"));
    let again = decode(&bytes, &limits())
        .unwrap_or_else(|e| panic!("an encoded checkpoint does not decode: {e}"));
    assert_eq!(&again.checkpoint, c, "decode(encode(c)) != c");
}

/// Decodes `data` as a checkpoint file of any format version (see the [module docs](self)).
pub fn decode_bytes(data: &[u8]) {
    let limits = limits();
    let full = decode(data, &limits);
    if let Ok(d) = &full {
        round_trips(&d.checkpoint);
    }
    // The fast path, given the checksum the bytes state (as an index that recorded them would
    // know it), gives what the full decode gives.
    if let Some(stated) = stated_integrity(data) {
        let fast = decode_known(data, &limits, &stated);
        match (&full, &fast) {
            (Ok(a), Ok(b)) => assert_eq!(a.checkpoint, b.checkpoint, "fast path differs"),
            (Err(_), Err(_)) => {}
            (Ok(_), Err(e)) => panic!("the fast path refuses what decode accepts: {e}"),
            (Err(e), Ok(_)) => panic!("the fast path accepts what decode refuses: {e}"),
        }
        let shared = std::sync::Arc::new(data.to_vec());
        let digest = file_digest(data);
        let with_digest = decode_known_file(&shared, &limits, &stated, Some(&digest));
        match (&full, &with_digest) {
            (Ok(a), Ok(b)) => assert_eq!(a.checkpoint, b.checkpoint, "the digest path differs"),
            (Ok(_), Err(e)) => panic!("the digest path refuses what decode accepts: {e}"),
            // What a forged record can make load is in tests/tests/restore_fast_forged.rs.
            (Err(_), _) => {}
        }
    }
}

/// Migrates `data`, read as JSON, from every known version (see the [module docs](self)).
pub fn migrate_json(data: &[u8]) {
    let Ok(doc) = crate::format::parse(data, &limits()) else {
        return;
    };
    let mut docs = vec![doc.clone()];
    if doc.is_object() {
        for version in migrate::known_versions() {
            let mut d = doc.clone();
            d["version"] = Value::String(version.to_string());
            docs.push(d);
        }
    }
    for d in docs {
        if let Ok(version) = crate::format::version_of(&d) {
            if let Ok(migrated) = migrate::to_current(&version, d.clone()) {
                let _ = decode_value(migrated);
            }
        }
        if let Ok(Decoded { checkpoint, .. }) = decode_value(d) {
            round_trips(&checkpoint);
        }
    }
}

/// A valid checkpoint from bytes: a file that decodes, or a typed document that passes
/// [`check`] (its checksum aside, which a mutated file seldom keeps).
fn valid_checkpoint(bytes: &[u8]) -> Option<Checkpoint> {
    if let Ok(d) = decode(bytes, &limits()) {
        return Some(d.checkpoint);
    }
    let c: Checkpoint = serde_json::from_slice(bytes).ok()?;
    check(&c).ok()?;
    Some(c)
}

/// Splits `data` into two checkpoints — its first two bytes (little-endian) give the length of
/// the first — and diffs them (see the [module docs](self)).
pub fn diff_pair(data: &[u8]) {
    let Some((head, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let n = usize::from(u16::from_le_bytes(*head)).min(rest.len());
    let (a, b) = rest.split_at(n);
    let (Some(a), Some(b)) = (valid_checkpoint(a), valid_checkpoint(b)) else {
        return;
    };
    assert!(diff(&a, &a).is_empty(), "diff(a, a) is not empty");
    assert!(diff(&b, &b).is_empty(), "diff(b, b) is not empty");
    let d = diff(&a, &b);
    let json =
        serde_json::to_value(&d).unwrap_or_else(|e| panic!("a diff does not serialize: {e}"));
    let back: CheckpointDiff =
        serde_json::from_value(json).unwrap_or_else(|e| panic!("a diff does not read back: {e}"));
    assert_eq!(back, d, "a diff's JSON reads back otherwise");
    let _ = diff(&b, &a);
}

/// Parses `data` as the text of a `caf.toml` (see the [module docs](self)).
pub fn parse_config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(config) = Config::parse(text, std::path::Path::new("caf.toml")) {
        let _ = config.retention.policy();
    }
}

/// The body of a fuzz target.
pub type Target = fn(&[u8]);

/// The targets by name, as `fuzz/fuzz_targets/` names them.
pub const TARGETS: [(&str, Target); 4] = [
    ("decode", decode_bytes),
    ("migrate", migrate_json),
    ("diff", diff_pair),
    ("config", parse_config),
];
