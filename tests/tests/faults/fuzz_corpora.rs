//! The committed corpora of the `cargo fuzz` targets (`fuzz/corpus/TARGET/`: the golden and
//! hostile files they were seeded with, and what the fuzz runs kept, minimized), run through the
//! targets' own bodies (`caf_core::fuzz_targets`) as ordinary tests: stable CI replays every
//! input the fuzzer found interesting, including each crash it found (fixed since). It does not
//! run the fuzzer (docs/reliability.md says how).

use caf_core::fuzz_targets::TARGETS;
use std::path::Path;

#[test]
fn every_corpus_input_runs_through_its_target() {
    let corpora = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    for (target, body) in TARGETS {
        let dir = corpora.join(target);
        let mut inputs: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        inputs.sort();
        assert!(inputs.len() >= 5, "{}: too few inputs", dir.display());
        for input in &inputs {
            let data = std::fs::read(input).unwrap();
            let run = std::panic::catch_unwind(|| body(&data));
            assert!(run.is_ok(), "{target}: {} panicked", input.display());
        }
        eprintln!("{target}: {} inputs", inputs.len());
    }
}
