//! Adversarial tests of the containment layer, through `registry.execute` (the pipeline a
//! model's calls take), under both resolvers (openat2 and the O_NOFOLLOW walk).

use crate::common;

use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Env, RESOLVERS, SECRET};
use harnessx_builtin::fs::{FilesystemOptions, Resolver, register_filesystem_tools};
use harnessx_core::ToolRegistry;
use serde_json::json;

#[tokio::test]
async fn dotdot_and_absolute_paths_are_refused() {
    for resolver in RESOLVERS {
        let env = Env::new(resolver);
        std::fs::create_dir(env.root.join("a")).unwrap();
        let outside_abs = env.outside.join("secret.txt");
        let outside_abs = outside_abs.to_str().unwrap();
        for path in ["../outside/secret.txt", "a/../../outside/secret.txt", "..", "/etc/passwd", outside_abs]
        {
            let msg = env.refused("read_file", json!({"path": path})).await;
            assert!(msg.contains("outside the root"), "{msg}");
            env.refused("write_file", json!({"path": path, "content": "x", "overwrite": true})).await;
            env.refused("edit_file", json!({"path": path, "old_string": SECRET, "new_string": "x"})).await;
            env.refused("delete", json!({"path": path, "recursive": true})).await;
            env.refused("list_directory", json!({"path": path})).await;
            env.refused("glob", json!({"pattern": "*", "path": path})).await;
            env.refused("grep", json!({"pattern": "SECRET", "path": path})).await;
        }
        env.refused("write_file", json!({"path": "../escaped.txt", "content": "x"})).await;
        assert!(!env.base().join("escaped.txt").exists());
        // `..` that stays inside the root, and an absolute path naming the root, are fine.
        std::fs::write(env.root.join("in.txt"), "inside").unwrap();
        assert!(env.ok("read_file", json!({"path": "a/../in.txt"})).await.contains("inside"));
        let abs_inside = env.root.join("in.txt");
        assert!(env.ok("read_file", json!({"path": abs_inside})).await.contains("inside"));
        env.outside_intact();
    }
}

#[tokio::test]
async fn a_sibling_whose_name_extends_the_root_is_outside() {
    for resolver in RESOLVERS {
        let env = Env::new(resolver);
        // `/…/data-evil` starts with the string `/…/data` but is not under it.
        let evil = env.sibling.join("secret.txt");
        env.refused("read_file", json!({"path": evil})).await;
        env.refused("read_file", json!({"path": "../data-evil/secret.txt"})).await;
        env.refused("write_file", json!({"path": env.sibling.join("new.txt"), "content": "x"})).await;
        let evil_dir = format!("{}/", env.sibling.display());
        env.refused("list_directory", json!({"path": evil_dir})).await;
        assert!(!env.sibling.join("new.txt").exists());
        env.outside_intact();
    }
}

#[tokio::test]
async fn nul_bytes_are_refused() {
    for resolver in RESOLVERS {
        let env = Env::new(resolver);
        std::fs::write(env.root.join("a"), "x").unwrap();
        for tool in ["read_file", "delete", "list_directory"] {
            let msg = env.refused(tool, json!({"path": "a\u{0}/../../outside/secret.txt"})).await;
            assert!(msg.contains("NUL"), "{msg}");
        }
        let msg = env.refused("write_file", json!({"path": "b\u{0}c", "content": "x"})).await;
        assert!(msg.contains("NUL"), "{msg}");
        assert!(std::fs::read_dir(&env.root).unwrap().count() == 1);
    }
}

#[tokio::test]
async fn a_symlink_as_the_final_component_is_refused() {
    for resolver in RESOLVERS {
        let env = Env::new(resolver);
        symlink(env.outside.join("secret.txt"), env.root.join("link")).unwrap();
        let msg = env.refused("read_file", json!({"path": "link"})).await;
        assert!(msg.contains("symbolic link"), "{msg}");
        env.refused("write_file", json!({"path": "link", "content": "pwned", "overwrite": true})).await;
        env.refused("edit_file", json!({"path": "link", "old_string": SECRET, "new_string": "pwned"})).await;
        env.refused("delete", json!({"path": "link"})).await;
        env.refused("grep", json!({"pattern": "SECRET", "path": "link"})).await;
        assert!(env.root.join("link").symlink_metadata().unwrap().file_type().is_symlink());
        // A walk over the root lists the link but never reads through it.
        let out = env.ok("list_directory", json!({})).await;
        assert!(out.contains("link  [symlink]"), "{out}");
        let out = env.ok("grep", json!({"pattern": "SECRET"})).await;
        assert!(out.starts_with("No matches"), "{out}");
        env.outside_intact();
    }
}

#[tokio::test]
async fn a_symlink_as_a_parent_is_refused() {
    for resolver in RESOLVERS {
        let env = Env::new(resolver);
        symlink(&env.outside, env.root.join("dirlink")).unwrap();
        std::fs::create_dir(env.root.join("real")).unwrap();
        symlink(&env.outside, env.root.join("real/nested")).unwrap();
        for path in ["dirlink/secret.txt", "real/nested/secret.txt", "dirlink/../dirlink/secret.txt"] {
            let msg = env.refused("read_file", json!({"path": path})).await;
            assert!(msg.contains("symbolic link"), "{path}: {msg}");
        }
        env.refused("write_file", json!({"path": "dirlink/new.txt", "content": "x"})).await;
        env.refused("write_file", json!({"path": "dirlink/sub/new.txt", "content": "x"})).await;
        env.refused("delete", json!({"path": "dirlink/secret.txt"})).await;
        env.refused("list_directory", json!({"path": "dirlink"})).await;
        env.refused("glob", json!({"pattern": "*", "path": "dirlink"})).await;
        env.refused("grep", json!({"pattern": "S", "path": "real/nested"})).await;
        let out = env.ok("glob", json!({"pattern": "**/*"})).await;
        assert!(!out.contains("secret"), "{out}");
        env.outside_intact();
    }
}

#[tokio::test]
async fn dangling_and_looping_symlinks_are_refused() {
    for resolver in RESOLVERS {
        let env = Env::new(resolver);
        symlink(env.outside.join("created-through-link.txt"), env.root.join("dangling")).unwrap();
        symlink("loop2", env.root.join("loop1")).unwrap();
        symlink("loop1", env.root.join("loop2")).unwrap();
        symlink("self", env.root.join("self")).unwrap();
        env.refused("read_file", json!({"path": "dangling"})).await;
        env.refused("write_file", json!({"path": "dangling", "content": "x"})).await;
        env.refused("write_file", json!({"path": "dangling", "content": "x", "overwrite": true})).await;
        for path in ["loop1", "loop1/x", "self/self/self", "loop2/a/b"] {
            env.refused("read_file", json!({"path": path})).await;
            env.refused("write_file", json!({"path": path, "content": "x", "overwrite": true})).await;
            env.refused("list_directory", json!({"path": path})).await;
        }
        // Walks pass over them.
        env.ok("grep", json!({"pattern": "x"})).await;
        env.ok("glob", json!({"pattern": "*"})).await;
        env.outside_intact();
    }
}

#[tokio::test]
async fn symlinks_inside_the_root_are_refused_too() {
    for resolver in RESOLVERS {
        let env = Env::new(resolver);
        std::fs::create_dir(env.root.join("dir")).unwrap();
        std::fs::write(env.root.join("dir/real.txt"), "real").unwrap();
        symlink("dir/real.txt", env.root.join("alias.txt")).unwrap();
        symlink("dir", env.root.join("alias_dir")).unwrap();
        env.refused("read_file", json!({"path": "alias.txt"})).await;
        env.refused("read_file", json!({"path": "alias_dir/real.txt"})).await;
        env.refused("edit_file", json!({"path": "alias.txt", "old_string": "real", "new_string": "x"})).await;
        assert_eq!(std::fs::read_to_string(env.root.join("dir/real.txt")).unwrap(), "real");
    }
}

/// Spins up a thread that swaps `root/d` between a real directory and a symlink to the
/// outside directory, as fast as it can, until `stop` is set. Returns the rounds done.
fn swapper(
    root: std::path::PathBuf,
    outside: std::path::PathBuf,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let d = root.join("d");
        let real = root.join("real");
        let link = root.join("link");
        let mut rounds = 0;
        while !stop.load(Ordering::Relaxed) {
            // Make sure the real directory exists (a recursive delete may have taken it).
            if !real.exists() && !d.is_dir() {
                let _ = std::fs::create_dir(&real);
                let _ = std::fs::write(real.join("f.txt"), "inside");
                let _ = std::fs::create_dir(real.join("sub"));
                let _ = std::fs::write(real.join("sub/g.txt"), "inside");
            }
            if !link.exists() && link.symlink_metadata().is_err() {
                let _ = symlink(&outside, &link);
            }
            let _ = std::fs::rename(&real, &d);
            std::hint::spin_loop();
            let _ = std::fs::rename(&d, &real);
            let _ = std::fs::rename(&link, &d);
            std::hint::spin_loop();
            let _ = std::fs::rename(&d, &link);
            rounds += 1;
        }
        rounds
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_swapped_for_a_symlink_mid_operation_never_leads_outside() {
    for resolver in RESOLVERS {
        let env = Arc::new(Env::new(resolver));
        // Targets the outside directory would offer if a link were followed.
        std::fs::write(env.outside.join("f.txt"), SECRET).unwrap();
        std::fs::create_dir(env.outside.join("sub")).unwrap();
        std::fs::write(env.outside.join("sub/g.txt"), SECRET).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = swapper(env.root.clone(), env.outside.clone(), stop.clone());
        let started = Instant::now();
        let ops = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for worker in 0..4 {
            let env = env.clone();
            let ops = ops.clone();
            tasks.push(tokio::spawn(async move {
                let mut i = 0;
                while started.elapsed() < Duration::from_millis(1500) {
                    i += 1;
                    let r = match (worker + i) % 6 {
                        0 => env.call("read_file", json!({"path": "d/f.txt"})).await,
                        1 => env.call("read_file", json!({"path": "d/sub/g.txt"})).await,
                        2 => {
                            let name = format!("d/w{worker}-{i}.txt");
                            env.call("write_file", json!({"path": name, "content": "new"})).await
                        }
                        3 => env.call("delete", json!({"path": "d", "recursive": true})).await,
                        4 => env.call("grep", json!({"pattern": "SECRET|inside", "path": "d"})).await,
                        _ => {
                            env.call(
                                "edit_file",
                                json!({"path": "d/f.txt", "old_string": SECRET, "new_string": "x"}),
                            )
                            .await
                        }
                    };
                    env.assert_no_leak(&r.content);
                    ops.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        let rounds = swaps.join().unwrap();
        // Nothing outside was read (checked on every result), written, edited or deleted.
        assert_eq!(std::fs::read_to_string(env.outside.join("f.txt")).unwrap(), SECRET);
        assert_eq!(std::fs::read_to_string(env.outside.join("sub/g.txt")).unwrap(), SECRET);
        let mut names: Vec<_> = std::fs::read_dir(&env.outside)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["f.txt", "secret.txt", "sub"], "{resolver:?}: a write escaped");
        let ops = ops.load(Ordering::Relaxed);
        assert!(rounds >= 2000, "{resolver:?}: only {rounds} swap rounds");
        assert!(ops >= 200, "{resolver:?}: only {ops} operations");
        eprintln!("{resolver:?}: {rounds} swap rounds, {ops} operations, zero escapes");
    }
}

#[tokio::test]
async fn fifos_sockets_and_devices_are_refused_without_blocking() {
    for resolver in RESOLVERS {
        let env = Env::new(resolver);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            env.root.join("pipe").as_path(),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let _listener = std::os::unix::net::UnixListener::bind(env.root.join("sock")).unwrap();
        // A device node needs privileges; test it where the process has them.
        let device = rustix::fs::mknodat(
            rustix::fs::CWD,
            env.root.join("null").as_path(),
            rustix::fs::FileType::CharacterDevice,
            rustix::fs::Mode::from_raw_mode(0o666),
            rustix::fs::makedev(1, 3),
        )
        .is_ok();
        let mut specials = vec!["pipe", "sock"];
        if device {
            specials.push("null");
        }
        for name in specials {
            let msg =
                tokio::time::timeout(Duration::from_secs(5), env.refused("read_file", json!({"path": name})))
                    .await
                    .expect("read_file hung");
            assert!(msg.contains("not a regular file"), "{msg}");
            tokio::time::timeout(
                Duration::from_secs(5),
                env.refused("edit_file", json!({"path": name, "old_string": "a", "new_string": "b"})),
            )
            .await
            .expect("edit hung");
            tokio::time::timeout(
                Duration::from_secs(5),
                env.refused("write_file", json!({"path": name, "content": "x", "overwrite": true})),
            )
            .await
            .expect("write hung");
            tokio::time::timeout(
                Duration::from_secs(5),
                env.refused("list_directory", json!({"path": name})),
            )
            .await
            .expect("list hung");
            tokio::time::timeout(
                Duration::from_secs(5),
                env.refused("grep", json!({"pattern": "x", "path": name})),
            )
            .await
            .expect("grep hung");
        }
        tokio::time::timeout(Duration::from_secs(5), env.ok("grep", json!({"pattern": "x"})))
            .await
            .expect("grep over the root hung");
        tokio::time::timeout(Duration::from_secs(5), env.ok("glob", json!({"pattern": "*"})))
            .await
            .expect("glob hung");
        let listing =
            tokio::time::timeout(Duration::from_secs(5), env.ok("list_directory", json!({}))).await.unwrap();
        assert!(listing.contains("pipe  [FIFO (named pipe)]"), "{listing}");
        assert!(listing.contains("sock  [socket]"), "{listing}");
    }
}

#[tokio::test]
async fn huge_files_and_listings_stay_within_the_limits() {
    let env = Env::with(Resolver::Auto, |o| FilesystemOptions {
        max_read_bytes: 4096,
        max_directory_entries: 50,
        ..o
    });
    let line = "0123456789abcdef\n";
    std::fs::write(env.root.join("big.txt"), line.repeat(200_000)).unwrap(); // 3.4 MB
    let out = env.ok("read_file", json!({"path": "big.txt"})).await;
    assert!(out.len() < 4096 + 4096, "read_file returned {} bytes", out.len());
    assert!(out.contains("offset="), "{out}");
    // One enormous line without a newline.
    std::fs::write(env.root.join("oneline.txt"), "x".repeat(5_000_000)).unwrap();
    let out = env.ok("read_file", json!({"path": "oneline.txt"})).await;
    assert!(out.len() < 4096 + 512, "{} bytes", out.len());
    assert!(out.contains("cut short"), "{}", &out[out.len() - 200..]);
    // A directory of thousands of entries.
    std::fs::create_dir(env.root.join("many")).unwrap();
    for i in 0..3000 {
        std::fs::write(env.root.join(format!("many/f{i:05}.txt")), "match me\n").unwrap();
    }
    let out = env.ok("list_directory", json!({"path": "many"})).await;
    assert_eq!(out.lines().count(), 51, "{out}");
    assert!(out.lines().next().unwrap().starts_with("f00000.txt"), "{out}");
    assert!(out.contains("showing the first 50 of 3000 entries"), "{out}");
    let out = env.ok("glob", json!({"pattern": "*.txt", "path": "many"})).await;
    assert_eq!(out.lines().count(), 51);
    assert!(out.contains("50 of 3000"), "{out}");
    let out = env.ok("grep", json!({"pattern": "match"})).await;
    assert!(out.lines().count() <= 52, "{} lines", out.lines().count());
    assert!(out.len() <= 4096 + 512);
    assert!(out.contains("results truncated: 3000 matching lines in 3000 files"), "{out}");
    // The limits are the operator's: they appear in no schema.
    for spec in env.registry.get_tool_params() {
        let schema = spec.input_schema.to_string();
        assert!(!schema.contains("4096") && !schema.contains("max_"), "{}: {schema}", spec.name);
    }
}

#[tokio::test]
async fn an_ambiguous_or_missing_edit_changes_nothing() {
    let env = Env::new(Resolver::Auto);
    let original = "let x = 1;\nlet y = 1;\nlet z = 1;\n";
    std::fs::write(env.root.join("a.rs"), original).unwrap();
    let msg =
        env.refused("edit_file", json!({"path": "a.rs", "old_string": "= 1;", "new_string": "= 2;"})).await;
    assert!(msg.contains("matches 3 times"), "{msg}");
    let msg =
        env.refused("edit_file", json!({"path": "a.rs", "old_string": "let w", "new_string": "x"})).await;
    assert!(msg.contains("not found"), "{msg}");
    // Overlapping occurrences are ambiguous too.
    std::fs::write(env.root.join("b.txt"), "aaa").unwrap();
    let msg = env.refused("edit_file", json!({"path": "b.txt", "old_string": "aa", "new_string": "b"})).await;
    assert!(msg.contains("matches 2 times"), "{msg}");
    assert_eq!(std::fs::read_to_string(env.root.join("a.rs")).unwrap(), original);
    assert_eq!(std::fs::read_to_string(env.root.join("b.txt")).unwrap(), "aaa");
}

#[tokio::test]
async fn the_root_cannot_be_deleted() {
    for resolver in RESOLVERS {
        let env = Env::new(resolver);
        std::fs::create_dir(env.root.join("a")).unwrap();
        std::fs::write(env.root.join("a/f"), "x").unwrap();
        let abs = env.root.to_str().unwrap().to_owned();
        for path in ["", ".", "./", "a/..", "a/../.", &abs, &format!("{abs}/")] {
            let msg = env.refused("delete", json!({"path": path, "recursive": true})).await;
            assert!(msg.contains("root"), "{path}: {msg}");
        }
        assert!(env.root.join("a/f").exists());
    }
}

#[tokio::test]
async fn an_existing_file_is_replaced_only_with_overwrite() {
    let env = Env::new(Resolver::Auto);
    std::fs::write(env.root.join("keep.txt"), "original").unwrap();
    let msg = env.refused("write_file", json!({"path": "keep.txt", "content": "new"})).await;
    assert!(msg.contains("overwrite=true"), "{msg}");
    let msg =
        env.refused("write_file", json!({"path": "keep.txt", "content": "new", "overwrite": false})).await;
    assert!(msg.contains("already exists"), "{msg}");
    assert_eq!(std::fs::read_to_string(env.root.join("keep.txt")).unwrap(), "original");
    env.ok("write_file", json!({"path": "keep.txt", "content": "new", "overwrite": true})).await;
    assert_eq!(std::fs::read_to_string(env.root.join("keep.txt")).unwrap(), "new");
    // No temporary file is left behind either way.
    let names: Vec<_> = std::fs::read_dir(&env.root).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["keep.txt"]);
}

#[test]
fn concurrent_writers_never_leave_a_torn_file() {
    // Several registries (so no shared serial queue: like separate agents or processes)
    // replace one file over and over; a reader must only ever see one writer's whole file.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    const SIZE: usize = 256 * 1024;
    std::fs::write(root.join("shared.txt"), "a".repeat(SIZE)).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (root, done) = (root.clone(), done.clone());
        std::thread::spawn(move || {
            let mut reads = 0;
            while !done.load(Ordering::Relaxed) {
                let content = std::fs::read(root.join("shared.txt")).unwrap();
                assert_eq!(content.len(), SIZE, "torn file: {} bytes", content.len());
                assert!(content.iter().all(|b| *b == content[0]), "torn file: mixed writers");
                reads += 1;
            }
            reads
        })
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let mut tasks = Vec::new();
        for w in 0..6u8 {
            let registry = ToolRegistry::new();
            register_filesystem_tools(
                &registry,
                FilesystemOptions {
                    base_path: Some(root.clone()),
                    include: Some(vec!["write_file".into()]),
                    ..Default::default()
                },
            )
            .unwrap();
            tasks.push(tokio::spawn(async move {
                let content = String::from(char::from(b'a' + w)).repeat(SIZE);
                for _ in 0..25 {
                    let r = common::call(
                        &registry,
                        "write_file",
                        json!({"path": "shared.txt", "content": content, "overwrite": true}),
                    )
                    .await;
                    assert!(!r.is_error, "{}", r.content);
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    done.store(true, Ordering::Relaxed);
    let reads = reader.join().unwrap();
    assert!(reads > 0);
    let names: Vec<_> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["shared.txt"], "temporary files left behind");
}

#[tokio::test]
async fn generate_file_is_contained_in_the_output_directory() {
    let env = Env::new(Resolver::Auto);
    let out_dir = env.base().join("output");
    env.ok("generate_file", json!({"path": "report.md", "content": "# Report"})).await;
    assert_eq!(std::fs::read_to_string(out_dir.join("report.md")).unwrap(), "# Report");
    env.refused("generate_file", json!({"path": "../outside/x.md", "content": "x"})).await;
    env.refused("generate_file", json!({"path": env.outside.join("x.md"), "content": "x"})).await;
    symlink(&env.outside, out_dir.join("escape")).unwrap();
    env.refused("generate_file", json!({"path": "escape/x.md", "content": "x"})).await;
    let msg = env.refused("generate_file", json!({"path": "report.md", "content": "again"})).await;
    assert!(msg.contains("overwrite=true"), "{msg}");
    env.outside_intact();
}
