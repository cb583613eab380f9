//! `grep` and `glob` through the registry pipeline, next to the `rg` binary on the same tree.
//!
//! The tree is `shared/bench/gen_tree.py`'s (20,000 files, ~200 MB), generated into
//! `$HX_BENCH_TREE` (default `/tmp/hx-bench-tree`) when missing. The `rg` rows run only
//! when `rg` is on `PATH`. See docs/performance.md, "Filesystem search".
#![allow(missing_docs, reason = "criterion's macros generate undocumented items")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use criterion::{Criterion, criterion_group, criterion_main};
use harnessx_builtin::fs::{FilesystemOptions, register_filesystem_tools};
use harnessx_core::{ToolCall, ToolRegistry};

fn tree() -> PathBuf {
    let dir = PathBuf::from(std::env::var("HX_BENCH_TREE").unwrap_or_else(|_| "/tmp/hx-bench-tree".into()));
    if !dir.join("pkg00").is_dir() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/bench/gen_tree.py");
        let status =
            Command::new("python3").arg(&script).arg(&dir).status().expect("python3 runs gen_tree.py");
        assert!(status.success(), "gen_tree.py failed");
    }
    dir
}

fn rg_available() -> bool {
    Command::new("rg").arg("--version").stdout(Stdio::null()).status().is_ok_and(|s| s.success())
}

fn rg(dir: &Path, args: &[&str]) -> usize {
    let out = Command::new("rg").args(args).current_dir(dir).output().expect("rg runs");
    out.stdout.len()
}

fn search(c: &mut Criterion) {
    let dir = tree();
    let registry = ToolRegistry::new();
    // Limits high enough that the tools print everything rg prints.
    register_filesystem_tools(
        &registry,
        FilesystemOptions {
            include: Some(vec!["grep".into(), "glob".into()]),
            base_path: Some(dir.clone()),
            max_read_bytes: 256 << 20,
            max_directory_entries: 1 << 20,
            ..Default::default()
        },
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let grep_call = ToolCall::new("b", "grep", r#"{"pattern": "TODO\\(perf\\)", "output_mode": "count"}"#);
    let glob_call = ToolCall::new("b", "glob", r#"{"pattern": "*.rs"}"#);
    let run = |call: &ToolCall| {
        let r = rt.block_on(registry.execute(call, None));
        assert!(!r.is_error, "{}", r.content);
        r.content.len()
    };

    if rg_available() {
        // Same work as rg: the same files and counts, the same paths.
        let ours = rt.block_on(registry.execute(&grep_call, None)).content;
        let mut ours: Vec<&str> = ours.lines().filter(|l| !l.starts_with('[')).collect();
        let theirs =
            Command::new("rg").args(["-c", "TODO\\(perf\\)"]).current_dir(&dir).output().unwrap().stdout;
        let theirs = String::from_utf8(theirs).unwrap();
        let mut theirs: Vec<&str> = theirs.lines().collect();
        ours.sort_unstable();
        theirs.sort_unstable();
        assert_eq!(ours, theirs, "grep count differs from rg -c");
        let ours = rt.block_on(registry.execute(&glob_call, None)).content;
        let theirs =
            Command::new("rg").args(["--files", "-g", "*.rs"]).current_dir(&dir).output().unwrap().stdout;
        let theirs = String::from_utf8(theirs).unwrap();
        let mut theirs: Vec<&str> = theirs.lines().collect();
        theirs.sort_unstable();
        assert_eq!(ours.lines().collect::<Vec<_>>(), theirs, "glob differs from rg --files -g '*.rs'");
        eprintln!("outputs match rg ({} .rs files)", ours.lines().count());
    }
    let mut group = c.benchmark_group("search");
    group.sample_size(20);
    group.bench_function("grep_count_tool", |b| b.iter(|| run(&grep_call)));
    group.bench_function("glob_rs_tool", |b| b.iter(|| run(&glob_call)));
    if rg_available() {
        group.bench_function("grep_count_rg", |b| b.iter(|| rg(&dir, &["-c", "TODO\\(perf\\)"])));
        group.bench_function("glob_rs_rg", |b| b.iter(|| rg(&dir, &["--files", "-g", "*.rs"])));
    } else {
        eprintln!("rg is not on PATH: only the tools are measured");
    }
    group.finish();
}

criterion_group!(benches, search);
criterion_main!(benches);
