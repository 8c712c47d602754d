//! Rebuilds this crate when a migration is added or changed: `sqlx::migrate!` embeds the files at
//! compile time, and cargo does not know it read them (sqlx's documented build-script recipe).

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
