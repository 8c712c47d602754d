//! The shipped binary's layout: link options of release builds for x86-64 Linux, whose default
//! linker (rust-lld, since Rust 1.90) understands them. Debug and test builds link as before.
//!
//! - `--symbol-ordering-file=symbol-order.txt`: the functions a manager runs to start, then those
//!   its requests run, laid out first and together (the list is written by
//!   `cargo xtask link-order`). The kernel maps 64 KiB of the executable around every page a
//!   process faults in, so code scattered over 54 MiB of text made a silo that had run 2.6 MiB
//!   of functions hold 17 MiB of it; grouped, it holds about what it ran. A function the list
//!   names that the binary no longer has (renamed, or generic over a changed type) is skipped
//!   silently, and an unlisted one keeps its place after the listed ones: a stale list costs
//!   memory, never correctness (`cargo xtask bench` prints how much of it still matches).
//! - `-z pack-relative-relocs`: the position-independent executable's relative relocations in
//!   the compact RELR form (glibc 2.36 or newer at run time, which the image's Debian 12 has)
//!   instead of 1.6 MB of `.rela.dyn` that the loader reads at every start.

use std::env;

fn main() {
    println!("cargo::rerun-if-changed=symbol-order.txt");
    println!("cargo::rerun-if-changed=build.rs");
    let release = env::var("PROFILE").is_ok_and(|p| p == "release");
    let lld_default = env::var("TARGET").is_ok_and(|t| t == "x86_64-unknown-linux-gnu");
    if let (true, true, Ok(dir)) = (release, lld_default, env::var("CARGO_MANIFEST_DIR")) {
        for arg in [
            format!("-Wl,--symbol-ordering-file={dir}/symbol-order.txt"),
            "-Wl,--no-warn-symbol-ordering".to_owned(),
            "-Wl,-z,pack-relative-relocs".to_owned(),
        ] {
            println!("cargo::rustc-link-arg-bin=opencrane={arg}");
        }
    }
}
