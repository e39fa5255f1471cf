//! Decodes one checkpoint file many times, for profiling restore-latest:
//! `cargo run --release -p caf-core --example restore_profile -- FILE [N]`.

#![allow(clippy::unwrap_used)]

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: restore_profile FILE [N]");
    let n: usize = args.next().map_or(2000, |s| s.parse().unwrap());
    let bytes = std::fs::read(&path).unwrap();
    let limits = caf_core::format::Limits::default();
    let start = std::time::Instant::now();
    for _ in 0..n {
        std::hint::black_box(caf_core::format::decode(&bytes, &limits).unwrap());
    }
    let per = start.elapsed().as_secs_f64() * 1e6 / n as f64;
    println!("{} bytes: {per:.0} µs per decode", bytes.len());
}
