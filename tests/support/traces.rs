//! The committed traces, for the tests: under `$ARCHIPELAGO_ROOT/traces` when set (the GPU
//! machine runs the test executables away from this checkout), else under this crate.

#![allow(dead_code)]

use std::path::PathBuf;

/// The `traces/` folder.
pub fn dir() -> PathBuf {
    std::env::var_os("ARCHIPELAGO_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
        .join("traces")
}

/// Every committed trace (`*.npz`), sorted by path.
pub fn paths() -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("traces/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "npz"))
        .collect();
    all.sort();
    all
}
