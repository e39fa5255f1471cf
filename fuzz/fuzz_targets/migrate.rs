//! Migrating arbitrary JSON from every known format version. The body is shared with the corpus
//! replay test: `caf_core::fuzz_targets::migrate_json`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| caf_core::fuzz_targets::migrate_json(data));
