//! What each filesystem tool does, through `registry.execute` (the real pipeline).

use crate::common;

use std::os::unix::fs::PermissionsExt;

use common::Env;
use harnessx_builtin::fs::Resolver;
use harnessx_core::ToolRegistry;
use serde_json::json;

fn env() -> Env {
    Env::new(Resolver::Auto)
}

fn write(env: &Env, rel: &str, content: impl AsRef<[u8]>) {
    let p = env.root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

#[tokio::test]
async fn read_file_numbers_lines_and_pages_with_offset_and_limit() {
    let env = env();
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    write(&env, "a.txt", &text);
    let out = env.ok("read_file", json!({"path": "a.txt"})).await;
    assert!(out.starts_with("     1\tline 1\n     2\tline 2\n"), "{out}");
    assert!(out.ends_with("    10\tline 10\n"), "{out}");
    let out = env.ok("read_file", json!({"path": "a.txt", "offset": 3, "limit": 2})).await;
    assert_eq!(
        out,
        "     4\tline 4\n     5\tline 5\n[more lines follow; call read_file again with offset=5 to continue]\n"
    );
    let out = env.ok("read_file", json!({"path": "a.txt", "offset": 50})).await;
    assert_eq!(out, "`a.txt` has 10 lines; offset 50 is past the end.");
    // The last window says nothing more follows.
    let out = env.ok("read_file", json!({"path": "a.txt", "offset": 8, "limit": 5})).await;
    assert_eq!(out, "     9\tline 9\n    10\tline 10\n");
}

#[tokio::test]
async fn read_file_handles_empty_binary_and_non_utf8_files() {
    let env = env();
    write(&env, "empty", "");
    write(&env, "bin", b"\x7fELF\x00\x01\x02");
    write(&env, "latin1.txt", b"caf\xe9\n");
    assert_eq!(env.ok("read_file", json!({"path": "empty"})).await, "`empty` is empty.");
    assert_eq!(
        env.ok("read_file", json!({"path": "bin"})).await,
        "`bin` is a binary file (7 B); its content is not shown."
    );
    let out = env.ok("read_file", json!({"path": "latin1.txt"})).await;
    assert!(out.starts_with("     1\tcaf\u{FFFD}\n"), "{out}");
    assert!(out.contains("not valid UTF-8"), "{out}");
}

#[tokio::test]
async fn read_file_errors_name_the_path_and_the_reason() {
    let env = env();
    std::fs::create_dir(env.root.join("dir")).unwrap();
    assert_eq!(
        env.refused("read_file", json!({"path": "missing.txt"})).await,
        "cannot read `missing.txt`: it does not exist"
    );
    let msg = env.refused("read_file", json!({"path": "dir"})).await;
    assert!(msg.contains("is a directory; use list_directory"), "{msg}");
    // Schema validation runs first: a missing path is the pipeline's one-line error.
    let msg = env.refused("read_file", json!({})).await;
    assert!(msg.contains("path"), "{msg}");
}

#[tokio::test]
async fn write_file_creates_parents_and_keeps_permissions_on_overwrite() {
    let env = env();
    let out = env.ok("write_file", json!({"path": "new/deep/file.txt", "content": "hello"})).await;
    assert_eq!(out, "Created `new/deep/file.txt` (5 B).");
    assert_eq!(std::fs::read_to_string(env.root.join("new/deep/file.txt")).unwrap(), "hello");
    let script = env.root.join("run.sh");
    std::fs::write(&script, "old").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
    let out =
        env.ok("write_file", json!({"path": "run.sh", "content": "#!/bin/sh\n", "overwrite": true})).await;
    assert_eq!(out, "Replaced `run.sh` (10 B).");
    assert_eq!(std::fs::metadata(&script).unwrap().permissions().mode() & 0o777, 0o750);
    let msg = env.refused("write_file", json!({"path": "new", "content": "x", "overwrite": true})).await;
    assert!(msg.contains("is a directory"), "{msg}");
}

#[tokio::test]
async fn edit_file_replaces_one_exact_match_or_all_when_asked() {
    let env = env();
    write(&env, "doc.md", "# Title\n\nintro\n\n## Part\nTODO\n## Other\nTODO\n");
    let out = env
        .ok(
            "edit_file",
            json!({"path": "doc.md", "old_string": "## Part\nTODO", "new_string": "## Part\ndone"}),
        )
        .await;
    assert_eq!(out, "Edited `doc.md`: replaced 1 occurrence at line 5.");
    let out = env
        .ok(
            "edit_file",
            json!({"path": "doc.md", "old_string": "TODO", "new_string": "x", "replace_all": true}),
        )
        .await;
    assert_eq!(out, "Edited `doc.md`: replaced 1 occurrence at line 8.");
    write(&env, "n.txt", "a a a");
    let out = env
        .ok("edit_file", json!({"path": "n.txt", "old_string": "a", "new_string": "b", "replace_all": true}))
        .await;
    assert_eq!(out, "Edited `n.txt`: replaced 3 occurrences (the first at line 1).");
    assert_eq!(std::fs::read_to_string(env.root.join("n.txt")).unwrap(), "b b b");
    let msg = env.refused("edit_file", json!({"path": "n.txt", "old_string": "", "new_string": "x"})).await;
    assert!(msg.contains("empty"), "{msg}");
    write(&env, "bad.txt", b"\xff\xfe");
    let msg =
        env.refused("edit_file", json!({"path": "bad.txt", "old_string": "a", "new_string": "b"})).await;
    assert!(msg.contains("not valid UTF-8"), "{msg}");
}

#[tokio::test]
async fn delete_removes_files_and_needs_recursive_for_a_non_empty_directory() {
    let env = env();
    write(&env, "f.txt", "x");
    write(&env, "tree/a/b.txt", "x");
    write(&env, "tree/c.txt", "x");
    std::fs::create_dir(env.root.join("empty")).unwrap();
    assert_eq!(env.ok("delete", json!({"path": "f.txt"})).await, "Deleted `f.txt`.");
    assert_eq!(env.ok("delete", json!({"path": "empty"})).await, "Deleted the directory `empty`.");
    let msg = env.refused("delete", json!({"path": "tree"})).await;
    assert!(msg.contains("pass recursive=true"), "{msg}");
    assert!(env.root.join("tree/a/b.txt").exists());
    let out = env.ok("delete", json!({"path": "tree", "recursive": true})).await;
    assert_eq!(out, "Deleted the directory `tree` with 2 files and 1 subdirectories.");
    assert!(!env.root.join("tree").exists());
    // A symlink inside a deleted tree is removed as a link; its target stays.
    write(&env, "t2/x", "x");
    std::os::unix::fs::symlink(&env.outside, env.root.join("t2/link")).unwrap();
    env.ok("delete", json!({"path": "t2", "recursive": true})).await;
    env.outside_intact();
    assert_eq!(
        env.refused("delete", json!({"path": "nope"})).await,
        "cannot delete `nope`: it does not exist"
    );
}

#[tokio::test]
async fn glob_matches_names_or_paths_respecting_ignore_files() {
    let env = env();
    for f in ["src/main.rs", "src/lib/mod.rs", "README.md", "target/debug/gen.rs", ".hidden/x.rs", "build.rs"]
    {
        write(&env, f, "fn main() {}\n");
    }
    write(&env, ".gitignore", "target/\n");
    let out = env.ok("glob", json!({"pattern": "*.rs"})).await;
    assert_eq!(out, "build.rs\nsrc/lib/mod.rs\nsrc/main.rs\n");
    let out = env.ok("glob", json!({"pattern": "src/*.rs"})).await;
    assert_eq!(out, "src/main.rs\n");
    let out = env.ok("glob", json!({"pattern": "**/*.rs", "path": "src"})).await;
    assert_eq!(out, "src/lib/mod.rs\nsrc/main.rs\n");
    let out = env.ok("glob", json!({"pattern": "*.py"})).await;
    assert_eq!(out, "No files match `*.py` under `.`.");
    // A whitelist in a deeper .ignore beats the shallower rule.
    write(&env, "target/.ignore", "!keep.rs\n");
    write(&env, "target/keep.rs", "");
    let out = env.ok("glob", json!({"pattern": "keep.rs"})).await;
    assert_eq!(
        out, "No files match `keep.rs` under `.`.",
        "target/ itself is ignored, so nothing under it is read"
    );
    // Searching a subdirectory honours the ignore files above it, up to the root.
    write(&env, "src/gen/out.rs", "");
    write(&env, ".gitignore", "target/\ngen/\n");
    let out = env.ok("glob", json!({"pattern": "*.rs", "path": "src"})).await;
    assert_eq!(out, "src/lib/mod.rs\nsrc/main.rs\n");
    let out =
        env.ok("grep", json!({"pattern": "fn", "path": "src", "output_mode": "files_with_matches"})).await;
    assert_eq!(out, "src/lib/mod.rs\nsrc/main.rs\n");
    let msg = env.refused("glob", json!({"pattern": "a[", "path": ""})).await;
    assert!(msg.contains("invalid glob pattern"), "{msg}");
}

#[tokio::test]
async fn grep_finds_regex_and_literal_matches_with_context_and_counts() {
    let env = env();
    write(&env, "a.rs", "fn one() {}\nlet x = a.b;\nfn two() {}\n");
    write(&env, "b.py", "def one():\n    return axb\n");
    write(&env, "c.txt", "nothing here\n");
    let out = env.ok("grep", json!({"pattern": "fn \\w+"})).await;
    assert_eq!(out, "a.rs:1:fn one() {}\na.rs:3:fn two() {}\n");
    let out = env.ok("grep", json!({"pattern": "a.b"})).await;
    assert_eq!(out, "a.rs:2:let x = a.b;\nb.py:2:    return axb\n");
    let out = env.ok("grep", json!({"pattern": "a.b", "literal": true})).await;
    assert_eq!(out, "a.rs:2:let x = a.b;\n");
    let out = env.ok("grep", json!({"pattern": "ONE", "ignore_case": true, "output_mode": "count"})).await;
    assert_eq!(out, "a.rs:1\nb.py:1\n[2 matching lines in 2 files]\n");
    let out = env.ok("grep", json!({"pattern": "one", "output_mode": "files_with_matches"})).await;
    assert_eq!(out, "a.rs\nb.py\n");
    let out = env.ok("grep", json!({"pattern": "x =", "context": 1})).await;
    assert_eq!(out, "a.rs-1-fn one() {}\na.rs:2:let x = a.b;\na.rs-3-fn two() {}\n");
    let out = env.ok("grep", json!({"pattern": "one", "glob": "*.py"})).await;
    assert_eq!(out, "b.py:1:def one():\n");
    let out = env.ok("grep", json!({"pattern": "two", "path": "a.rs"})).await;
    assert_eq!(out, "a.rs:3:fn two() {}\n");
    assert_eq!(env.ok("grep", json!({"pattern": "zzz"})).await, "No matches for `zzz` in `.`.");
    let msg = env.refused("grep", json!({"pattern": "("})).await;
    assert!(msg.starts_with("invalid pattern"), "{msg}");
    let msg = env.refused("grep", json!({"pattern": "x", "output_mode": "lines"})).await;
    assert!(msg.contains("output_mode"), "{msg}");
}

#[tokio::test]
async fn grep_separates_context_groups_and_skips_binary_files() {
    let env = env();
    let text: String =
        (1..=9).map(|i| if i == 2 || i == 8 { "hit\n".to_owned() } else { format!("l{i}\n") }).collect();
    write(&env, "f.txt", &text);
    write(&env, "g.bin", b"hit\x00\x01");
    let out = env.ok("grep", json!({"pattern": "hit", "context": 1})).await;
    assert_eq!(out, "f.txt-1-l1\nf.txt:2:hit\nf.txt-3-l3\n--\nf.txt-7-l7\nf.txt:8:hit\nf.txt-9-l9\n");
}

#[tokio::test]
async fn names_with_control_characters_cannot_pose_as_other_lines() {
    let env = env();
    let evil = "x.rs\nfake.rs:1:secret";
    write(&env, evil, "needle\n");
    write(&env, "ok.rs", "needle\n");
    let listing = env.ok("list_directory", json!({})).await;
    assert_eq!(listing, "ok.rs  (7 B)\n\"x.rs\\nfake.rs:1:secret\"  (7 B)\n");
    let out = env.ok("glob", json!({"pattern": "*"})).await;
    assert_eq!(out, "ok.rs\n\"x.rs\\nfake.rs:1:secret\"\n");
    let out = env.ok("grep", json!({"pattern": "needle"})).await;
    assert_eq!(out, "ok.rs:1:needle\n\"x.rs\\nfake.rs:1:secret\":1:needle\n");
    assert!(!out.lines().any(|l| l.starts_with("fake.rs")));
}

#[tokio::test]
async fn list_directory_sorts_marks_kinds_and_shows_hidden_entries() {
    let env = env();
    write(&env, "b.txt", "12345");
    write(&env, ".env", "");
    write(&env, "sub/x", "");
    std::os::unix::fs::symlink("b.txt", env.root.join("link")).unwrap();
    let out = env.ok("list_directory", json!({})).await;
    assert_eq!(out, ".env  (0 B)\nb.txt  (5 B)\nlink  [symlink]\nsub/\n");
    assert_eq!(env.ok("list_directory", json!({"path": "sub"})).await, "x  (0 B)\n");
    std::fs::create_dir(env.root.join("void")).unwrap();
    assert_eq!(env.ok("list_directory", json!({"path": "void"})).await, "`void` is empty.");
    let msg = env.refused("list_directory", json!({"path": "b.txt"})).await;
    assert!(msg.contains("is a file, not a directory"), "{msg}");
}

#[tokio::test]
async fn generate_file_writes_into_the_output_directory() {
    let env = env();
    let out = env.ok("generate_file", json!({"path": "exports/data.csv", "content": "a,b\n1,2\n"})).await;
    assert_eq!(out, "Generated `exports/data.csv` (8 B) in the download area.");
    let written = env.base().join("output/exports/data.csv");
    assert_eq!(std::fs::read_to_string(written).unwrap(), "a,b\n1,2\n");
    // Not a workspace path: nothing appears under the root.
    assert_eq!(std::fs::read_dir(&env.root).unwrap().count(), 0);
    let r = env
        .call("generate_file", json!({"path": "exports/data.csv", "content": "x", "overwrite": true}))
        .await;
    assert!(!r.is_error);
    assert_eq!(r.structured_content, Some(json!({"file": "exports/data.csv", "bytes": 1})));
}

/// The child half of `generate_file_falls_back_to_agent_output_dir`, which runs it in a
/// process of its own with `AGENT_OUTPUT_DIR` set (ignored in an ordinary run).
#[tokio::test]
#[ignore = "run by generate_file_falls_back_to_agent_output_dir in a child process"]
async fn generate_file_env_child() {
    let expected = std::env::var_os("HX_TEST_CHILD").expect("started by the parent test");
    let registry = ToolRegistry::new();
    harnessx_builtin::register_filesystem_tools(&registry, Default::default()).unwrap();
    let r = common::call(&registry, "generate_file", json!({"path": "env.txt", "content": "from env"})).await;
    assert!(!r.is_error, "{}", r.content);
    assert_eq!(std::fs::read_to_string(std::path::Path::new(&expected).join("env.txt")).unwrap(), "from env");
}

#[test]
fn generate_file_falls_back_to_agent_output_dir() {
    // The environment cannot be changed safely inside a multi-threaded test binary, so the
    // check runs in a child process of this same binary.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("agent-output");
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "fs_tools::generate_file_env_child", "--ignored", "--quiet"])
        .env("AGENT_OUTPUT_DIR", &dir)
        .env("HX_TEST_CHILD", &dir)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(std::fs::read_to_string(dir.join("env.txt")).unwrap(), "from env");
}

#[tokio::test]
async fn without_base_path_tools_use_host_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("host.txt");
    std::fs::write(&file, "on the host\n").unwrap();
    let registry = ToolRegistry::new();
    harnessx_builtin::register_filesystem_tools(&registry, Default::default()).unwrap();
    let out = common::call(&registry, "read_file", json!({"path": file})).await;
    assert_eq!(out.content, "     1\ton the host\n");
    // Host reads follow a symlink, as ordinary programs do; writes never go through one.
    let link = tmp.path().join("link.txt");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let out = common::call(&registry, "read_file", json!({"path": link})).await;
    assert_eq!(out.content, "     1\ton the host\n");
    let out =
        common::call(&registry, "write_file", json!({"path": link, "content": "x", "overwrite": true})).await;
    assert!(out.is_error && out.content.contains("symbolic link"), "{}", out.content);
    let out = common::call(&registry, "grep", json!({"pattern": "host", "path": link})).await;
    assert_eq!(out.content, format!("{}:1:on the host\n", link.display()));
    let out = common::call(&registry, "glob", json!({"pattern": "*.txt", "path": tmp.path()})).await;
    assert_eq!(out.content, format!("{}/host.txt\n", tmp.path().display()));
}

// Regression: a model's deeply nested pattern came back whole in the error, twice for a
// regex (the engine's picture of it): 4 MB of text for a 2 MB pattern.
#[tokio::test]
async fn deeply_nested_patterns_get_one_short_line() {
    let env = env();
    write(&env, "a.txt", "a\n");
    for depth in [1usize, 10, 100, 1_000, 10_000, 100_000, 1_000_000] {
        let regex = format!("{}a{}", "(".repeat(depth), ")".repeat(depth));
        let glob = format!("{}a{}", "{a,".repeat(depth), "}".repeat(depth));
        for (tool, pattern) in [("grep", regex), ("glob", glob)] {
            let result = env.call(tool, json!({"pattern": pattern})).await;
            let what = format!("{tool} at depth {depth}: {} bytes", result.content.len());
            assert!(result.content.len() < 400, "{what}");
            assert!(!result.is_error || !result.content.contains('\n'), "{what}: one line");
            if depth >= 1_000 {
                assert!(result.is_error, "{what}");
                assert!(result.content.contains("nested"), "{what}: {}", result.content);
                let cut = format!("…` ({} bytes): ", pattern.len());
                assert!(result.content.contains(&cut), "{what}: {}", result.content);
            }
        }
    }
    // An unclosed group, a huge repetition: the engine's reason, on one line.
    assert_eq!(env.refused("grep", json!({"pattern": "("})).await, "invalid pattern `(`: unclosed group");
    let msg = env.refused("grep", json!({"pattern": "a{99999999}"})).await;
    assert!(msg.starts_with("invalid pattern `a{99999999}`: ") && !msg.contains('\n'), "{msg}");
    let msg = env.refused("glob", json!({"pattern": "a["})).await;
    assert_eq!(msg, "invalid glob pattern `a[`: unclosed character class; missing ']'");
}
