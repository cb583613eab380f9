//! Every crate's integration tests are one binary, `tests/it/main.rs` with a module per
//! area. With `autotests = false` a file dropped straight into `tests/`, or one in
//! `tests/it/` that `main.rs` does not name, would never be compiled: its tests would
//! silently not run. This fails instead.

use std::path::Path;
use std::process::Command;

use serde::Deserialize;

#[derive(Deserialize)]
struct Metadata {
    packages: Vec<Package>,
}

#[derive(Deserialize)]
struct Package {
    name: String,
    manifest_path: std::path::PathBuf,
}

/// The `.rs` files directly in `dir`, by stem.
fn rust_stems(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut stems: Vec<String> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    stems.sort();
    stems
}

#[test]
fn every_integration_test_file_is_a_module_of_its_crates_one_test_binary() {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("running cargo metadata");
    assert!(out.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    let meta: Metadata = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    for package in meta.packages {
        let tests = package.manifest_path.parent().unwrap().join("tests");
        let stray = rust_stems(&tests);
        assert!(
            stray.is_empty(),
            "{}: {stray:?} in tests/ never run (autotests = false): make each a module of tests/it/main.rs",
            package.name
        );
        let it = tests.join("it");
        let Ok(main) = std::fs::read_to_string(it.join("main.rs")) else { continue };
        for stem in rust_stems(&it).into_iter().filter(|s| s != "main") {
            assert!(
                main.lines().any(|l| l.trim() == format!("mod {stem};")),
                "{}: tests/it/{stem}.rs is not a module of tests/it/main.rs, so it never runs",
                package.name
            );
        }
    }
}
