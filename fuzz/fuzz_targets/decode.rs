//! Decoding arbitrary bytes as a checkpoint file of any format version. The body is shared with the
//! corpus replay test: `caf_core::fuzz_targets::decode_bytes`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| caf_core::fuzz_targets::decode_bytes(data));
