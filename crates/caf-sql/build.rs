//! Rebuilds the crate when a migration changes: `embed_migrations!` reads `migrations/` at
//! compile time, and cargo cannot see that by itself.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
    println!("cargo:rerun-if-changed=build.rs");
}
