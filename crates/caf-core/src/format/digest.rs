//! The digest of a checkpoint file's bytes that a file store's index records beside the
//! integrity checksum the file states: BLAKE3 of the whole file, as `blake3:` and 64 hex digits.
//!
//! The integrity checksum (SHA-256 of the canonical text) is what the format defines and what
//! any reader can verify without caf. The digest is caf's own record that the bytes on disk are
//! those it wrote or validated: a restore whose file hashes to it has that very file, integrity
//! line included, and so need not compute the SHA-256 (see [`super::known`]). BLAKE3 is a
//! cryptographic hash like SHA-256, about four times quicker on the machine of
//! docs/benchmarks.md (30 against 117 µs for a 169 KB file).

/// How a digest begins.
const PREFIX: &str = "blake3:";

/// The digest of `bytes`: `blake3:` and 64 lower-case hex digits.
pub fn file_digest(bytes: &[u8]) -> String {
    format!("{PREFIX}{}", blake3::hash(bytes).to_hex())
}

/// A recorded digest, parsed once for comparing (`None` if it is not one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Recorded(blake3::Hash);

impl Recorded {
    /// Parses `blake3:` and 64 hex digits.
    pub(super) fn parse(recorded: &str) -> Option<Self> {
        let hex = recorded.strip_prefix(PREFIX)?;
        blake3::Hash::from_hex(hex).ok().map(Self)
    }

    /// Whether `bytes` hash to it (compared in constant time).
    pub(super) fn matches(&self, bytes: &[u8]) -> bool {
        blake3::hash(bytes) == self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_matches_its_bytes_and_no_others() {
        let bytes = b"{\n  \"version\": \"1.1.0\"\n}\n";
        let digest = file_digest(bytes);
        assert!(digest.starts_with("blake3:"));
        assert_eq!(digest.len(), 7 + 64);
        let recorded = Recorded::parse(&digest).unwrap();
        assert!(recorded.matches(bytes));
        let mut other = bytes.to_vec();
        other[5] ^= 1;
        assert!(!recorded.matches(&other));
        assert!(!recorded.matches(&bytes[..bytes.len() - 1]));
    }

    #[test]
    fn only_a_well_formed_digest_parses() {
        let digest = file_digest(b"x");
        assert!(Recorded::parse(&digest).is_some());
        for bad in [
            "",
            "blake3:",
            &digest[7..],
            &digest.replace("blake3:", "sha256:"),
            &digest[..digest.len() - 1],
            &format!("{digest}0"),
            &format!("blake3:{}", "g".repeat(64)),
        ] {
            assert_eq!(Recorded::parse(bad), None, "{bad:?}");
        }
    }
}
