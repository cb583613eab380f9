//! `run_bash` on the local sandbox: the shared cases.

use crate::sandbox_cases;

sandbox_cases!(Some(Arc::new(harnessx_builtin::sandbox::LocalSandbox::new()) as Arc<dyn Sandbox>));

use harnessx_builtin::sandbox::{LocalSandbox, ProcessLimits};
use harnessx_core::{ToolCall, ToolRegistry};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_limit_holds_for_every_process_of_a_command() {
    let limited =
        LocalSandbox::new().limits(ProcessLimits { max_memory_bytes: Some(128 << 20), max_processes: None });
    let reg = registry(Arc::new(limited), BashOptions::default());
    let r = bash(&reg, cmd(BIG_ALLOCATION)).await;
    assert!(!r.content.contains("allocated"), "{}", r.content);
    assert!(r.content.contains("after"), "{}", r.content);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_builtin_bash_takes_its_options_as_a_map() {
    let registry = ToolRegistry::new();
    let names = registry.load_builtin("bash", json!({"output_limit": 10, "env": {"WHO": "map"}})).unwrap();
    assert_eq!(names, ["run_bash"]);
    let r = registry
        .execute(&ToolCall::new("c", "run_bash", cmd("echo $WHO; echo 0123456789").to_string()), None)
        .await;
    assert_eq!(facts(&r)["stdout"], "map\n012345");
    // Cut at the limit; whether the cut or the command's own exit came first is a race
    // (both are reported: `output_limit_reached`, or the exit code plus the cut).
    assert_eq!(facts(&r)["truncated"], true);
    assert!(r.content.contains("[output cut at 10 bytes"), "{}", r.content);

    let err = ToolRegistry::new().load_builtin("bash", json!({"timeout": 5})).unwrap_err().to_string();
    assert!(err.contains("unknown option `timeout`") && err.contains("output_limit, env"), "{err}");
    let err = ToolRegistry::new().load_builtin("bash", json!({"output_limit": 0})).unwrap_err().to_string();
    assert!(err.contains("output_limit"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shell_survives_big_scripts_abandoned_commands_and_its_own_death() {
    let reg = registry(Arc::new(LocalSandbox::new()), BashOptions::default());
    // A script far bigger than a socket buffer.
    let big = format!(": '{}'; echo big-ok", "x".repeat(2_000_000));
    assert_eq!(facts(&bash(&reg, cmd(&big)).await)["stdout"], "big-ok\n");
    // A timed-out command's late answer does not leak into the next one.
    let r = bash(&reg, json!({"command": "sleep 5", "timeout": 0.2})).await;
    assert_eq!(facts(&r)["timed_out"], true);
    let r = bash(&reg, cmd("echo next; exit 5")).await;
    assert_eq!((facts(&r)["stdout"].as_str(), facts(&r)["exit_code"].as_i64()), (Some("next\n"), Some(5)));
    // Nothing of one command's shell state reaches the next.
    let r = bash(&reg, cmd("x=1; cd /; f() { :; }")).await;
    assert_eq!(facts(&r)["exit_code"], 0);
    let r = bash(&reg, cmd("echo \"[$x] $(type -t f) $# $0\"; pwd")).await;
    let here = std::env::current_dir().unwrap();
    assert_eq!(facts(&r)["stdout"], format!("[]  0 bash\n{}\n", here.display()));
    // A shell that dies during a command fails it; the next command gets a new shell. In
    // a PID namespace of its own the shell is pid 1, whom the kernel keeps from signals
    // sent from inside (even `kill -9`), so there it is killed from outside.
    if facts(&bash(&reg, cmd("echo $$")).await)["stdout"] == "1\n" {
        let r = bash(&reg, cmd("kill -9 $$; echo survived")).await;
        assert_eq!(facts(&r)["stdout"], "survived\n", "{}", r.content);
        let (r, ()) = tokio::join!(bash(&reg, cmd("sleep 5.0417")), async {
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            let shell = init_above("sleep\x005.0417").expect("the shell, pid 1 above the command");
            rustix::process::kill_process(shell, rustix::process::Signal::KILL).unwrap();
        });
        assert!(r.is_error && r.content.contains("shell exited"), "{}", r.content);
    } else {
        let r = bash(&reg, cmd("kill -9 $$")).await;
        assert!(r.is_error && r.content.contains("shell exited"), "{}", r.content);
    }
    assert_eq!(facts(&bash(&reg, cmd("echo alive")).await)["stdout"], "alive\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_jobs_kill_and_wait_work_under_the_shell() {
    // The shell is pid 1 of its PID namespace where it may be: it reaps, and `$!`, `kill`
    // and `wait` behave as in any shell.
    let reg = registry(Arc::new(LocalSandbox::new()), BashOptions::default());
    let script =
        "sleep 30 & p=$!; kill $p; wait $p; echo killed=$?; (sleep 0.1; echo late) & wait; echo done";
    let r = bash(&reg, cmd(script)).await;
    assert_eq!(facts(&r)["stdout"], "killed=143\nlate\ndone\n", "{}", r.content);
}

/// The pid 1 of the PID namespace of the process whose command line is `cmdline` (its
/// arguments joined by NUL), found from this process's side: the local sandbox's shell.
fn init_above(cmdline: &str) -> Option<rustix::process::Pid> {
    let status = |pid: &str, name: &str| -> Option<String> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        Some(status.lines().find_map(|l| l.strip_prefix(name))?.trim().to_owned())
    };
    let mut pid = std::fs::read_dir("/proc").ok()?.flatten().find_map(|entry| {
        let pid = entry.file_name().into_string().ok()?;
        let line = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        (line.strip_suffix(b"\0")? == cmdline.as_bytes()).then_some(pid)
    })?;
    while status(&pid, "NSpid:")?.split_whitespace().last()? != "1" {
        pid = status(&pid, "PPid:")?;
    }
    rustix::process::Pid::from_raw(pid.parse().ok()?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_command_runs_in_cgroups_of_its_own_which_are_removed_after() {
    // Where this process can make a pids cgroup (root here and in CI), it can make the
    // commands' cgroups too.
    if harnessx_test_support::system::PidsCgroup::new(1_000_000).is_none() {
        return;
    }
    let reg = registry(Arc::new(LocalSandbox::new()), BashOptions::default());
    let mine = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let mut seen = Vec::new();
    for _ in 0..2 {
        // The pids controller on cgroup v1 (this machine and CI) or on v2 (`0::` lines).
        let r = bash(
            &reg,
            cmd("cat /proc/self/cgroup; \
                 cat /sys/fs/cgroup/pids/$(sed -n 's/^[0-9]*:pids://p' /proc/self/cgroup)/pids.max 2>/dev/null; \
                 cat /sys/fs/cgroup/$(sed -n 's/^0:://p' /proc/self/cgroup)/pids.max 2>/dev/null"),
        )
        .await;
        let out = facts(&r)["stdout"].as_str().unwrap().to_owned();
        let ours: Vec<&str> = out.lines().filter(|l| l.contains("harnessx-cmd-")).collect();
        assert!(
            ours.iter().any(|l| l.contains(":pids:") || l.starts_with("0::")),
            "no pids cgroup of its own: {out}\n(harness: {mine})"
        );
        assert!(
            out.lines()
                .any(|l| l.parse::<u64>().is_ok_and(|n| n <= harnessx_builtin::sandbox::DEFAULT_PIDS_MAX)),
            "{out}"
        );
        seen.extend(ours.iter().map(|l| l.splitn(3, ':').nth(2).unwrap().to_owned()));
    }
    assert_ne!(seen[0], seen[seen.len() - 1], "each command gets a new cgroup: {seen:?}");
    for path in seen {
        for root in ["/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"] {
            assert!(!std::path::Path::new(&format!("{root}{path}")).is_dir(), "{root}{path} was left");
        }
    }
}
