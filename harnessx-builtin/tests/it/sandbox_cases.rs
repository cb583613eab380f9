//! The behaviour both sandboxes share, as one set of tests instantiated per sandbox by
//! [`sandbox_cases!`]: each case runs `run_bash` through the registry's pipeline.
#![allow(dead_code, reason = "each test file uses a different part of this module")]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use harnessx_builtin::bash::{BashOptions, register_bash_tools};
use harnessx_core::{Sandbox, ToolCall, ToolPolicy, ToolRegistry, ToolResult};
use harnessx_test_support::system::processes_with;
use serde_json::{Value, json};

/// A name no other process on the machine has: commands `exec -a` it so that the test
/// can look for their processes afterwards, from outside any namespace.
pub(crate) fn marker(case: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!("hxmark-{case}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// A registry with `run_bash` over `sandbox`.
pub(crate) fn registry(sandbox: Arc<dyn Sandbox>, options: BashOptions) -> ToolRegistry {
    // The central cap on results (40,000 characters by default) set far above the
    // tool's own output limit, which these tests are about.
    let registry =
        ToolRegistry::with_policy(ToolPolicy { max_result_chars: Some(10_000_000), ..ToolPolicy::default() });
    register_bash_tools(&registry, BashOptions { sandbox: Some(sandbox), ..options }).unwrap();
    registry
}

/// Runs `run_bash` with these arguments through the pipeline.
pub(crate) async fn bash(registry: &ToolRegistry, args: Value) -> ToolResult {
    registry.execute(&ToolCall::new("c1", "run_bash", args.to_string()), None).await
}

/// The structured content of a successful result.
pub(crate) fn facts(result: &ToolResult) -> &Value {
    assert!(!result.is_error, "{}", result.content);
    result.structured_content.as_ref().expect("run_bash results carry structured content")
}

/// Waits (briefly: killed processes take a moment to leave `/proc`) until no process
/// carries `marker`, and fails naming the survivors otherwise.
pub(crate) async fn assert_all_gone(marker: &str) {
    for _ in 0..200 {
        if processes_with(marker).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("processes marked {marker} survived: {:?}", processes_with(marker));
}

/// Waits until a process carries `marker` (so a test knows the daemon really started).
pub(crate) async fn assert_started(marker: &str) {
    for _ in 0..500 {
        if !processes_with(marker).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no process marked {marker} ever started");
}

/// A `setsid` grandchild and a double-fork daemon, both marked, then `tail`.
pub(crate) fn daemons(marker: &str, tail: &str) -> String {
    format!(
        "setsid bash -c 'exec -a {marker}-setsid sleep 1000' >/dev/null 2>&1 & \
         ( ( exec -a {marker}-double sleep 1000 ) >/dev/null 2>&1 & ) ; \
         nohup bash -c 'exec -a {marker}-nohup sleep 1000' >/dev/null 2>&1 & disown; \
         sleep 0.2; {tail}"
    )
}

/// A command that needs about 300 MB of memory (a child bash builds a 300 MB string),
/// then one that needs little.
pub(crate) const BIG_ALLOCATION: &str =
    "bash -c 'x=$(head -c 300000000 /dev/zero | tr \"\\0\" x) && echo allocated ${#x}'; echo after";

/// `{"command": COMMAND}`.
pub(crate) fn cmd(command: &str) -> Value {
    json!({ "command": command })
}

/// The shared cases, for the sandbox `$make` builds (`None`: skipped, already printed why).
#[macro_export]
macro_rules! sandbox_cases {
    ($make:expr) => {
        use std::sync::Arc;

        use harnessx_builtin::bash::BashOptions;
        use harnessx_core::Sandbox;
        use serde_json::json;
        use sandbox_cases::*;

        fn sandbox() -> Option<Arc<dyn Sandbox>> {
            $make
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn exit_code_and_labelled_streams_in_order() {
            let Some(sb) = sandbox() else { return };
            let reg = registry(sb, BashOptions::default());
            let r = bash(&reg, cmd("echo one; sleep 0.1; echo two >&2; sleep 0.1; echo three; exit 3")).await;
            assert_eq!(r.content, "[stdout]\none\n[stderr]\ntwo\n[stdout]\nthree\n[exit code 3]");
            let f = facts(&r);
            assert_eq!(f["exit_code"], 3);
            assert_eq!(f["stdout"], "one\nthree\n");
            assert_eq!(f["stderr"], "two\n");
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn stdin_is_empty_so_read_returns_at_once() {
            let Some(sb) = sandbox() else { return };
            let reg = registry(sb, BashOptions::default());
            let r = bash(&reg, json!({"command": "read x; echo \"status=$? x=[$x]\"; tty || true", "timeout": 20})).await;
            let f = facts(&r);
            assert_eq!(f["timed_out"], false, "{}", r.content);
            assert!(r.content.contains("status=1 x=[]"), "{}", r.content);
            assert!(r.content.contains("not a tty"), "no terminal: {}", r.content);
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_environment_is_the_allow_list_plus_what_the_caller_adds() {
            let Some(sb) = sandbox() else { return };
            let mut options = BashOptions::default();
            options.env.insert("PROJECT_FLAG".into(), "on".into());
            let reg = registry(sb, options);
            let r = bash(&reg, cmd("env")).await;
            let names: Vec<&str> = facts(&r)["stdout"].as_str().unwrap().lines().filter_map(|l| l.split('=').next()).collect();
            for name in &names {
                assert!(
                    ["PATH", "HOME", "LANG", "TERM", "PROJECT_FLAG", "PWD", "SHLVL", "_", "OLDPWD"].contains(name),
                    "{name} leaked into the command's environment: {names:?}"
                );
            }
            assert!(!r.content.contains("_API_KEY"), "{}", r.content);
            assert!(r.content.contains("TERM=dumb"), "{}", r.content);
            assert!(r.content.contains("PROJECT_FLAG=on"), "{}", r.content);
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_timeout_stops_setsid_and_double_fork_daemons_too() {
            let Some(sb) = sandbox() else { return };
            let reg = registry(sb, BashOptions::default());
            let m = marker("timeout");
            let script = daemons(&m, "echo started; sleep 1000");
            let r = bash(&reg, json!({"command": script, "timeout": 1.5})).await;
            let f = facts(&r);
            assert_eq!(f["timed_out"], true, "{}", r.content);
            assert!(r.content.starts_with("[stdout]\nstarted\n"), "{}", r.content);
            assert!(r.content.ends_with("[timed out after 1.5 s: the command and every process it started were stopped]"), "{}", r.content);
            assert_all_gone(&m).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn daemons_do_not_outlive_a_command_that_exits() {
            let Some(sb) = sandbox() else { return };
            let reg = registry(sb, BashOptions::default());
            let m = marker("exit");
            let r = bash(&reg, cmd(&daemons(&m, "echo done"))).await;
            assert_eq!(facts(&r)["exit_code"], 0, "{}", r.content);
            assert_all_gone(&m).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_output_limit_stops_a_runaway_writer_with_bounded_memory() {
            let Some(sb) = sandbox() else { return };
            let limit = 100_000;
            let reg = registry(sb, BashOptions { output_limit: limit, ..BashOptions::default() });
            let m = marker("cap");
            let script = format!("{}; bash -c 'exec -a {m}-yes yes' | head -c 5000000000", daemons(&m, "true"));
            let r = bash(&reg, cmd(&script)).await;
            let f = facts(&r);
            assert_eq!(f["output_limit_reached"], true, "{}", &r.content[r.content.len() - 200..]);
            assert_eq!(f["stdout"].as_str().unwrap().len(), limit);
            assert!(r.content.ends_with("[output cut at 100000 bytes: the command and every process it started were stopped; redirect long output to a file and read parts of it]"));
            assert_all_gone(&m).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_dropped_call_kills_everything_too() {
            let Some(sb) = sandbox() else { return };
            let m = marker("drop");
            let request = harnessx_core::SandboxCommand {
                script: daemons(&m, "sleep 1000"),
                timeout: std::time::Duration::from_secs(100),
                output_limit: 1000,
                env: Vec::new(),
            };
            let mut run = sb.run(request);
            let daemon = format!("{m}-setsid");
            tokio::select! {
                _ = &mut run => panic!("the command was meant to be running"),
                () = assert_started(&daemon) => {}
            }
            drop(run);
            assert_all_gone(&m).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn run_bash_is_destructive_serial_manual_with_its_own_timeout() {
            let Some(sb) = sandbox() else { return };
            let reg = registry(sb, BashOptions::default());
            let def = reg.get_tool("run_bash").unwrap();
            assert!(def.annotations.destructive == Some(true) && def.annotations.read_only == Some(false));
            assert!(!def.concurrent);
            assert_eq!(def.replay_policy, harnessx_core::ReplayPolicy::Manual);
            assert_eq!(reg.effective_timeout_seconds("run_bash"), Some(300.0));
            let too_long = bash(&reg, json!({"command": "true", "timeout": 301})).await;
            assert!(too_long.is_error, "{}", too_long.content);
        }
    };
}
