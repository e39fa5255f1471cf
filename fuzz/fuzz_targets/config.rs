//! Parsing arbitrary text as caf.toml. The body is shared with the corpus replay test:
//! `caf_core::fuzz_targets::parse_config`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| caf_core::fuzz_targets::parse_config(data));
