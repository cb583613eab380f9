//! `run_bash` in the bubblewrap sandbox: the shared cases, and what only a sandbox that
//! confines commands can promise.

use crate::sandbox_cases;

use harnessx_builtin::sandbox::BubblewrapSandbox;
use harnessx_test_support::system::ensure_debian_package;

/// A sandbox over a new temporary workspace; `None` (printed) only without apt-get.
fn bubblewrap() -> Option<BubblewrapSandbox> {
    ensure_debian_package("bubblewrap", "bwrap")?;
    Some(BubblewrapSandbox::new().expect("bubblewrap is installed, so the sandbox builds"))
}

sandbox_cases!(bubblewrap().map(|s| Arc::new(s) as Arc<dyn Sandbox>));

use harnessx_builtin::fs::FilesystemOptions;
use harnessx_core::{ToolCall, ToolRegistry};

/// A registry with the sandbox bound, `run_bash` and the file tools (given a `base_path`
/// elsewhere, which the sandbox's filesystem overrides).
fn bound(sandbox: &BubblewrapSandbox, elsewhere: &std::path::Path) -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry.bind_sandbox(Arc::new(sandbox.clone()));
    harnessx_builtin::register_bash_tools(&registry, BashOptions::default()).unwrap();
    let options = FilesystemOptions { base_path: Some(elsewhere.to_path_buf()), ..Default::default() };
    harnessx_builtin::register_filesystem_tools(&registry, options).unwrap();
    registry
}

async fn call(registry: &ToolRegistry, name: &str, args: serde_json::Value) -> harnessx_core::ToolResult {
    registry.execute(&ToolCall::new("c", name, args.to_string()), None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_outside_the_workspace_fail_even_to_missing_paths() {
    let Some(sb) = bubblewrap() else { return };
    let reg = registry(Arc::new(sb.clone()), BashOptions::default());
    let m = marker("probe");
    let script = format!(
        "for p in /etc/{m} \"$HOME/{m}\" /{m}-missing/dir/file /{m} /usr/{m} /tmp/../{m}; do \
           if (echo x > \"$p\") 2>/dev/null; then echo \"WROTE $p\"; else echo \"refused $p\"; fi; \
         done; echo kept > inside.txt; echo x > /tmp/scratch && echo tmp-ok; pwd"
    );
    let r = bash(&reg, cmd(&script)).await;
    assert_eq!(facts(&r)["exit_code"], 0, "{}", r.content);
    assert!(!r.content.contains("WROTE"), "{}", r.content);
    assert_eq!(r.content.matches("refused").count(), 6, "{}", r.content);
    assert!(r.content.contains("tmp-ok\n/workspace\n"), "{}", r.content);
    assert_eq!(std::fs::read_to_string(sb.workspace().join("inside.txt")).unwrap(), "kept\n");
    for host in [format!("/etc/{m}"), format!("/{m}-missing"), format!("/{m}")] {
        assert!(!std::path::Path::new(&host).exists(), "{host} appeared on the host");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn there_is_no_network_unless_enabled() {
    let Some(sb) = bubblewrap() else { return };
    // A server on the host's loopback, which a command without the network cannot reach.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let reg = registry(Arc::new(sb), BashOptions::default());
    let script = format!(
        "(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo HOST-LOOPBACK; \
         (exec 3<>/dev/tcp/1.1.1.1/53) 2>/dev/null && echo INTERNET; \
         getent hosts example.com && echo DNS; echo checked"
    );
    let r = bash(&reg, json!({"command": script, "timeout": 30})).await;
    assert!(r.content.contains("checked"), "{}", r.content);
    for reached in ["HOST-LOOPBACK", "INTERNET", "DNS"] {
        assert!(!r.content.contains(reached), "{reached} reachable: {}", r.content);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_file_tools_act_on_the_workspace_and_refuse_planted_symlinks() {
    let Some(sb) = bubblewrap() else { return };
    let elsewhere = tempfile::tempdir().unwrap();
    let reg = bound(&sb, elsewhere.path());
    assert_eq!(reg.sandbox().unwrap().name(), "bubblewrap");
    assert_eq!(reg.effective_timeout_seconds("read_file"), Some(300.0));

    let w = call(&reg, "write_file", json!({"path": "notes.md", "content": "from the file tool\n"})).await;
    assert!(!w.is_error, "{}", w.content);
    let r = bash(
        &reg,
        cmd("cat /workspace/notes.md; echo from bash > made.txt; ln -s / root-link; ln -s /etc/passwd pw"),
    )
    .await;
    assert!(r.content.contains("from the file tool"), "{}", r.content);
    assert!(elsewhere.path().read_dir().unwrap().next().is_none(), "base_path must not apply");

    let made = call(&reg, "read_file", json!({"path": "/workspace/made.txt"})).await;
    assert!(!made.is_error && made.content.contains("from bash"), "{}", made.content);
    for planted in ["root-link/etc/passwd", "pw", "root-link"] {
        let read = call(&reg, "read_file", json!({"path": planted})).await;
        assert!(read.is_error, "{planted}: {}", read.content);
        assert!(!read.content.contains("root:"), "{planted} leaked: {}", read.content);
    }
    let outside = call(&reg, "read_file", json!({"path": "/etc/passwd"})).await;
    assert!(outside.is_error, "{}", outside.content);
}

#[test]
fn building_fails_naming_the_package_when_bwrap_is_missing_or_cannot_start() {
    let missing = BubblewrapSandbox::builder().bwrap("/nonexistent/bwrap").build().unwrap_err().to_string();
    assert!(
        missing.contains("/nonexistent/bwrap") && missing.contains("apt-get install bubblewrap"),
        "{missing}"
    );

    // A `bwrap` that fails as it does where user namespaces are off.
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("bwrap");
    std::fs::write(&fake, "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
        .unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(&mut std::fs::metadata(&fake).unwrap().permissions(), 0o755);
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let refused = BubblewrapSandbox::builder().bwrap(&fake).build().unwrap_err().to_string();
    assert!(refused.contains("No permissions to create new namespace"), "{refused}");
    assert!(refused.contains("user namespaces") && refused.contains("bubblewrap"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_limit_holds_inside_the_sandbox() {
    if ensure_debian_package("bubblewrap", "bwrap").is_none() {
        return;
    }
    let limits =
        harnessx_builtin::sandbox::ProcessLimits { max_memory_bytes: Some(128 << 20), max_processes: None };
    let sb = BubblewrapSandbox::builder().limits(limits).build().unwrap();
    let reg = registry(Arc::new(sb), BashOptions::default());
    let r = bash(&reg, cmd(BIG_ALLOCATION)).await;
    assert!(!r.content.contains("allocated"), "{}", r.content);
    assert!(r.content.contains("after"), "{}", r.content);
}
