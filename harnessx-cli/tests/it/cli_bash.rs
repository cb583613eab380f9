//! `run_bash` through the `harnessx` command: `tools call` on both sandboxes, the
//! environment a command gets, and `run` asking before it.

use std::path::Path;
use std::process::Output;

use harnessx_test_support::bin::{Binary, json_lines, stderr, stdout};
use harnessx_test_support::system::ensure_debian_package;
use serde_json::{Value, json};

fn harnessx(dir: &Path, args: &[&str]) -> Output {
    Binary::new(env!("CARGO_BIN_EXE_harnessx")).env("OPENAI_API_KEY", "sk-host-secret").run(dir, args)
}

fn call(dir: &Path, command: &str, extra: &[&str]) -> (Value, Output) {
    let args = json!({ "command": command }).to_string();
    let mut argv = vec!["tools", "call", "run_bash", args.as_str(), "--json"];
    argv.extend_from_slice(extra);
    let out = harnessx(dir, &argv);
    let v = serde_json::from_str(stdout(&out).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    (v, out)
}

#[test]
fn tools_call_runs_bash_locally_by_default_with_the_exit_code_in_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let (v, out) = call(dir.path(), "echo out; sleep 0.1; echo err >&2; exit 4", &[]);
    assert_eq!(out.status.code(), Some(0), "a command's own failure is a result: {}", stderr(&out));
    assert_eq!(
        v,
        json!({"name": "run_bash", "is_error": false, "content": "[stdout]\nout\n[stderr]\nerr\n[exit code 4]"})
    );
}

#[test]
fn the_host_environment_and_its_keys_stay_out_of_commands() {
    let dir = tempfile::tempdir().unwrap();
    let (v, _) = call(dir.path(), "env", &["--sandbox", "local"]);
    let content = v["content"].as_str().unwrap();
    assert!(!content.contains("sk-host-secret") && !content.contains("_API_KEY"), "{content}");
    assert!(content.contains("TERM=dumb"), "{content}");
}

#[test]
fn local_runs_in_the_base_path() {
    let dir = tempfile::tempdir().unwrap();
    let (v, _) =
        call(dir.path(), "pwd", &["--sandbox", "local", "--base-path", dir.path().to_str().unwrap()]);
    let canonical = dir.path().canonicalize().unwrap();
    assert!(v["content"].as_str().unwrap().contains(canonical.to_str().unwrap()), "{v}");
}

#[test]
fn bubblewrap_writes_only_its_workspace_which_is_the_base_path() {
    if ensure_debian_package("bubblewrap", "bwrap").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = "pwd; echo made > made.txt; (echo x > /etc/hx-cli-probe) 2>/dev/null || echo etc-refused";
    let (v, out) =
        call(dir.path(), script, &["--sandbox", "bubblewrap", "--base-path", dir.path().to_str().unwrap()]);
    assert_eq!(v["is_error"], false, "{v} {}", stderr(&out));
    assert_eq!(v["content"], "[stdout]\n/workspace\netc-refused\n[exit code 0]");
    assert_eq!(std::fs::read_to_string(dir.path().join("made.txt")).unwrap(), "made\n");
    // The file tools act on the same workspace, under its name inside the sandbox too.
    let args = json!({"path": "/workspace/made.txt"}).to_string();
    let base = dir.path().to_str().unwrap();
    let out = harnessx(
        dir.path(),
        &["tools", "call", "read_file", &args, "--sandbox", "bubblewrap", "--base-path", base],
    );
    assert!(out.status.success() && stdout(&out).contains("made"), "{}", stdout(&out));
}

#[test]
fn sandbox_flags_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let out = harnessx(dir.path(), &["tools", "call", "run_bash", "{}", "--sandbox", "docker"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("local") && stderr(&out).contains("bubblewrap"), "{}", stderr(&out));
    let out = harnessx(dir.path(), &["tools", "call", "run_bash", "{}", "--sandbox-network"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--sandbox-network needs --sandbox bubblewrap"), "{}", stderr(&out));
}

#[test]
fn run_asks_before_run_bash_and_yes_lets_it_run() {
    let dir = tempfile::tempdir().unwrap();
    let end = |out: &Output| {
        json_lines(out).into_iter().find(|e| e["type"] == "tool_call_end" && e["name"] == "run_bash").unwrap()
    };
    let out = harnessx(dir.path(), &["run", "Run something.", "--tools", "bash", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(end(&out)["content"], "Permission denied", "no terminal to ask on: denied");
    let out = harnessx(dir.path(), &["run", "Run something.", "--tools", "bash", "--yes", "--json"]);
    let content = end(&out)["content"].as_str().unwrap().to_owned();
    assert!(content.contains("[exit code"), "{content}");
}

#[test]
fn a_reader_that_goes_away_is_not_a_crash() {
    use std::io::Read as _;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_harnessx"))
        .args(["tools", "call", "run_bash", r#"{"command": "yes | head -c 5000000000"}"#])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 9];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap(); // then the pipe closes
    let out = child.wait_with_output().unwrap();
    assert_eq!(&first, b"[stdout]\n");
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// `harnessx tools call run_bash ARGS --json EXTRA` as `program` (`harnessx` itself, or a
/// wrapper that execs it) sees it: the parsed result, the output, and the harness's pid.
fn call_as(
    mut command: std::process::Command,
    dir: &Path,
    args: Value,
    extra: &[&str],
) -> (Value, Output, u32) {
    let args = args.to_string();
    command
        .args(["tools", "call", "run_bash", args.as_str(), "--json"])
        .args(extra)
        .current_dir(dir)
        .env_remove("ANTHROPIC_API_KEY")
        .env("OPENAI_API_KEY", "sk-host-secret")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = command.spawn().unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let v = serde_json::from_str(stdout(&out).trim())
        .unwrap_or_else(|e| panic!("{e}: {} {}", stdout(&out), stderr(&out)));
    (v, out, pid)
}

/// Bubblewrap's flags (installed on demand), or `None` where it cannot be.
fn bubblewrap(dir: &Path) -> Option<Vec<String>> {
    ensure_debian_package("bubblewrap", "bwrap")?;
    Some(vec!["--sandbox".into(), "bubblewrap".into(), "--base-path".into(), dir.display().to_string()])
}

// Regression: in a pids cgroup (as operators run it), a fork bomb made `harnessx` panic
// ("OS can't spawn worker thread") instead of returning the timed-out result.
#[test]
fn a_fork_bomb_under_a_pids_cap_around_harnessx_times_out_and_the_next_call_works() {
    use harnessx_test_support::system::PidsCgroup;
    let dir = tempfile::tempdir().unwrap();
    let Some(cgroup) = PidsCgroup::new(60) else { return };
    let bomb = json!({"command": "bash -c 'b() { while :; do b & done; }; b' 2>/dev/null", "timeout": 1});
    let mut sandboxes = vec![vec!["--sandbox".to_owned(), "local".to_owned()]];
    sandboxes.extend(bubblewrap(dir.path()));
    for flags in sandboxes {
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let (v, out, _) =
            call_as(cgroup.command(env!("CARGO_BIN_EXE_harnessx")), dir.path(), bomb.clone(), &flags);
        assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
        assert_eq!(out.status.code(), Some(0), "{v} {}", stderr(&out));
        assert_eq!(v["is_error"], false, "{v}");
        assert!(
            v["content"]
                .as_str()
                .unwrap()
                .ends_with("[timed out after 1 s: the command and every process it started were stopped]"),
            "{v}"
        );
        let (v, _, _) = call_as(
            cgroup.command(env!("CARGO_BIN_EXE_harnessx")),
            dir.path(),
            json!({"command": "echo next"}),
            &flags,
        );
        assert_eq!(v["content"], "[stdout]\nnext\n[exit code 0]", "{v}");
    }
}

/// A command that prints its `$PPID`, that process's name, and then, for it and every
/// process above it, whether it could read its `/proc/PID/environ` (and what it read).
const READ_ANCESTORS: &str = r#"p=$PPID; echo "ppid=$p"; sed -n 's/^Name:\t*/name=/p' /proc/$p/status 2>/dev/null
while [ "$p" -gt 1 ]; do
  if e=$(tr '\0' '\n' < /proc/$p/environ 2>/dev/null); then echo "read $p"; echo "$e"; else echo "denied $p"; fi
  p=$(sed 's/.*) . \([0-9]*\) .*/\1/' /proc/$p/stat)
done"#;

#[test]
fn a_local_command_of_the_same_user_cannot_read_the_harness_environment() {
    if ensure_debian_package("util-linux", "setpriv").is_none() {
        return;
    }
    if !is_root() {
        harnessx_test_support::skip_or_fail("needs root to run the harness as another user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let script = format!("{READ_ANCESTORS}{READ_ALL_PROCESSES}");
    let (v, out, pid) =
        call_as(setpriv_nobody(dir.path()), dir.path(), json!({"command": script}), &["--sandbox", "local"]);
    let content = v["content"].as_str().unwrap();
    if nobody_may_make_namespaces() {
        // A user, PID and mount namespace of its own: the harness is outside it.
        assert!(content.contains("ppid=0\n"), "{content} {}", stderr(&out));
        assert_only_the_sandbox_is_seen(content);
    } else {
        // The host's processes, but the harness is non-dumpable.
        assert!(
            content.contains(&format!("ppid={pid}\nname=harnessx\n")),
            "the harness is $PPID: {content} {}",
            stderr(&out)
        );
        assert!(content.contains(&format!("denied {pid}\n")), "{content}");
    }
    // Nor any other process's: the secret is in the harness's environment only.
    assert!(content.contains("environs\n0\n") && !content.contains("sk-host-secret"), "{content}");
}

/// Whether `nobody` may make a user, PID and mount namespace with a fresh `/proc` (user
/// namespaces allowed to unprivileged users), tried with util-linux's `unshare`.
fn nobody_may_make_namespaces() -> bool {
    std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .args(["unshare", "--user", "--pid", "--mount", "--fork", "--mount-proc", "true"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// In [`READ_ALL_PROCESSES`]'s output: the sandbox's shell is pid 1, and nothing but it and
/// the command's own processes is there.
fn assert_only_the_sandbox_is_seen(content: &str) {
    let seen = processes_seen(content);
    assert_eq!(seen.first().map(|(pid, name)| (*pid, name.as_str())), Some((1, "bash")), "{content}");
    assert!(
        seen.iter().all(|(_, name)| ["bash", "sed", "cat", "tr", "grep"].contains(&name.as_str())),
        "{content}"
    );
    assert!(seen.len() < 10, "{content}");
}

/// `harnessx` run as `nobody` (uid and gid 65534, no groups) through `setpriv`, with its
/// home in `home`.
fn setpriv_nobody(home: &Path) -> std::process::Command {
    let mut nobody = std::process::Command::new("setpriv");
    nobody.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--", env!("CARGO_BIN_EXE_harnessx")]);
    nobody.env("HOME", home);
    nobody
}

/// After [`READ_ANCESTORS`]: every process the command can see in `/proc`, one
/// `pid name` line each after `processes`, then how many `/proc/*/environ` files hold the
/// secret after `environs`.
const READ_ALL_PROCESSES: &str = r#"
echo processes; for d in /proc/[0-9]*; do echo "${d#/proc/} $(sed -n 's/^Name:\t*//p' $d/status 2>/dev/null)"; done
echo environs; cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -c sk-host-secret"#;

/// The `pid name` lines [`READ_ALL_PROCESSES`] printed (output arrives in order, so the
/// `[stderr]` chunk of [`READ_ANCESTORS`] may come between them).
fn processes_seen(content: &str) -> Vec<(u32, String)> {
    let listed = content.split("processes\n").nth(1).unwrap().split("environs").next().unwrap();
    listed
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter_map(|(pid, name)| Some((pid.parse().ok()?, name.to_owned())))
        .collect()
}

// Regression: as root, a local command read the harness's provider key from
// `/proc/$PPID/environ` (root is not stopped by non-dumpable).
#[test]
fn as_root_a_local_command_cannot_read_the_harness_environment() {
    if !is_root() {
        harnessx_test_support::skip_or_fail("needs root, whose local commands could read the harness");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = format!("{READ_ANCESTORS}{READ_ALL_PROCESSES}");
    let harnessx = std::process::Command::new(env!("CARGO_BIN_EXE_harnessx"));
    let (v, out, _) = call_as(harnessx, dir.path(), json!({"command": script}), &["--sandbox", "local"]);
    let content = v["content"].as_str().unwrap();
    assert!(!content.contains("sk-host-secret") && content.contains("environs\n0\n"), "{content}");
    // Its own PID namespace: the harness is outside it ($PPID 0), the sandbox's shell is
    // its init, and nothing but the shell and the command's own processes is there.
    assert!(content.contains("ppid=0\n"), "{content} {}", stderr(&out));
    assert_only_the_sandbox_is_seen(content);

    // Root may unmount the command's /proc: the host's is not underneath. (Only in a
    // mount namespace other than this test's: the host's /proc must stay.)
    let host_mounts = std::fs::read_link("/proc/self/ns/mnt").unwrap();
    let script = format!(
        "[ \"$(readlink /proc/self/ns/mnt)\" != '{}' ] || {{ echo same-mount-namespace; exit 1; }}
         umount -l /proc; ls /proc | wc -l; {READ_ALL_PROCESSES}",
        host_mounts.display()
    );
    let harnessx = std::process::Command::new(env!("CARGO_BIN_EXE_harnessx"));
    let (v, _, _) = call_as(harnessx, dir.path(), json!({"command": script}), &["--sandbox", "local"]);
    let content = v["content"].as_str().unwrap();
    assert!(content.starts_with("[stdout]\n0\n"), "{content}");
    assert!(!content.contains("sk-host-secret"), "{content}");
}

// Where no namespace may be made (root without `CAP_SYS_ADMIN` and user namespaces off,
// as a container's root often is), a local command still runs, on the host's processes;
// there root's commands can read the harness's environment, as the docs say.
#[test]
fn where_no_namespace_may_be_made_a_local_command_runs_on_the_host_as_documented() {
    if ensure_debian_package("util-linux", "unshare").is_none() {
        return;
    }
    if !is_root() {
        harnessx_test_support::skip_or_fail("needs root to take CAP_SYS_ADMIN away");
        return;
    }
    // Root of a user namespace of its own, where it turns user namespaces off, then
    // without CAP_SYS_ADMIN; `unshare` and `setpriv` exec, so the harness keeps the pid.
    let mut confined = std::process::Command::new("unshare");
    confined.args([
        "--user",
        "--map-root-user",
        "sh",
        "-c",
        r#"echo 0 > /proc/sys/user/max_user_namespaces && exec setpriv --bounding-set=-sys_admin --inh-caps=-sys_admin -- "$0" "$@""#,
        env!("CARGO_BIN_EXE_harnessx"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (v, out, pid) =
        call_as(confined, dir.path(), json!({"command": READ_ANCESTORS}), &["--sandbox", "local"]);
    assert_eq!(v["is_error"], false, "{v} {}", stderr(&out));
    let content = v["content"].as_str().unwrap();
    assert!(content.contains(&format!("ppid={pid}\nname=harnessx\nread {pid}\n")), "{content}");
}

#[test]
fn a_bubblewrap_command_cannot_see_the_harness_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let Some(flags) = bubblewrap(dir.path()) else { return };
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let script = format!(
        "{READ_ANCESTORS}\necho names; cat /proc/[0-9]*/status 2>/dev/null | sed -n 's/^Name:\\t*//p'\n\
         echo environs; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c sk-host-secret"
    );
    let harnessx = std::process::Command::new(env!("CARGO_BIN_EXE_harnessx"));
    let (v, out, _) = call_as(harnessx, dir.path(), json!({"command": script}), &flags);
    let content = v["content"].as_str().unwrap();
    assert!(
        content.contains("ppid=1\n"),
        "the command's parent is the namespace's init: {content} {}",
        stderr(&out)
    );
    let names = content.split("names\n").nth(1).unwrap().split("environs").next().unwrap();
    assert!(!names.contains("harnessx"), "{content}");
    assert!(content.contains("environs\n0\n") && !content.contains("sk-host-secret"), "{content}");
}

/// Whether this test runs as root (`Uid:` 0 in `/proc/self/status`).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}
