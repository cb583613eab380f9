//! Fork bombs in each sandbox: contained by the command's timeout, every process of them
//! gone afterwards, and the next command runs, also when the harness itself is in a pids
//! cgroup the bomb fills. Each test runs in a process of its own (`in_own_process`: the
//! capped tests move their whole process into a pids cgroup, which no other test may
//! share), and they take turns (`ONE_BOMB`), so that no two bombs run at once. Every bomb
//! runs under a pids cap: the command's own cgroup, and in the capped tests the test
//! process's cgroup around it.

use crate::sandbox_cases;

use std::sync::Arc;

use harnessx_builtin::bash::BashOptions;
use harnessx_builtin::sandbox::{BubblewrapSandbox, CgroupLimits, LocalSandbox};
use harnessx_core::Sandbox;
use harnessx_test_support::process::in_own_process;
use harnessx_test_support::system::{PidsCgroup, ensure_debian_package};
use sandbox_cases::{assert_all_gone, bash, cmd, facts, marker, registry};
use serde_json::json;

static ONE_BOMB: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The classic bomb (its processes give up when forks fail) and one whose every process
/// keeps forking forever, which holds a pids cap full until it is killed. Their stderr
/// (a line per failed fork) is dropped, or it would reach the output limit first.
fn bombs(m: &str) -> [String; 2] {
    [
        format!("exec -a {m} bash -c 'b() {{ b | b & }}; b; sleep 100' 2>/dev/null"),
        format!("exec -a {m} bash -c 'b() {{ while :; do b & done; }}; b' 2>/dev/null"),
    ]
}

async fn bombs_then_echo(sandbox: Arc<dyn Sandbox>) {
    let reg = registry(sandbox, BashOptions::default());
    let m = marker("bomb");
    // Every fork keeps the marked command line, so the test can count the survivors.
    for script in bombs(&m) {
        let r = bash(&reg, json!({"command": script, "timeout": 1})).await;
        assert_eq!(facts(&r)["timed_out"], true, "{}", r.content);
        assert_all_gone(&m).await;
        let next = bash(&reg, cmd("echo still-working")).await;
        assert_eq!(facts(&next)["stdout"], "still-working\n", "{}", next.content);
    }
}

/// Both sandboxes, each with child cgroups on (`Some`, the default) or off (`None`);
/// bubblewrap installed on demand, skipped only where it cannot be.
fn each_sandbox(cgroup: Option<CgroupLimits>) -> Vec<Arc<dyn Sandbox>> {
    let mut sandboxes: Vec<Arc<dyn Sandbox>> = vec![Arc::new(LocalSandbox::new().cgroup(cgroup))];
    if ensure_debian_package("bubblewrap", "bwrap").is_some() {
        sandboxes.push(Arc::new(BubblewrapSandbox::builder().cgroup(cgroup).build().unwrap()));
    }
    sandboxes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_bomb_is_contained_and_the_next_call_works() {
    let _turn = ONE_BOMB.lock().await;
    if !in_own_process("bash_fork_bomb::a_fork_bomb_is_contained_and_the_next_call_works") {
        return;
    }
    for sandbox in each_sandbox(Some(CgroupLimits::default())) {
        bombs_then_echo(sandbox).await;
    }
}

/// This test process in a pids cgroup whose cap leaves `room` tasks free beyond the ones
/// it has now (threads included), as an operator's `TasksMax=` would.
fn harness_in_pids_cgroup(room: u64) -> Option<PidsCgroup> {
    let cgroup = PidsCgroup::new(1_000_000)?;
    cgroup.enter();
    cgroup.set_max(cgroup.current() + room);
    Some(cgroup)
}

// Regression: a bomb that filled the pids cgroup around the harness made the sandbox's
// `spawn_blocking` panic ("OS can't spawn worker thread") instead of timing out. With
// child cgroups off, the bomb fills the harness's own cgroup: the threads that stop it
// were reserved before it started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_bomb_that_fills_the_harness_pids_cgroup_times_out_and_the_next_call_works() {
    let _turn = ONE_BOMB.lock().await;
    if !in_own_process(
        "bash_fork_bomb::a_fork_bomb_that_fills_the_harness_pids_cgroup_times_out_and_the_next_call_works",
    ) {
        return;
    }
    let sandboxes = each_sandbox(None);
    let Some(_cgroup) = harness_in_pids_cgroup(40) else { return };
    for sandbox in sandboxes {
        bombs_then_echo(sandbox).await;
    }
}

// With child cgroups on (the default), the bomb fills only its own cgroup, whose cap is
// lowered below the harness's room: the harness's cgroup never fills.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_bomb_fills_only_its_own_cgroup_under_a_harness_pids_cap() {
    let _turn = ONE_BOMB.lock().await;
    if !in_own_process("bash_fork_bomb::a_fork_bomb_fills_only_its_own_cgroup_under_a_harness_pids_cap") {
        return;
    }
    let sandboxes = each_sandbox(Some(CgroupLimits::default()));
    let Some(cgroup) = harness_in_pids_cgroup(200) else { return };
    let max: u64 = std::fs::read_to_string(cgroup.dir().join("pids.max")).unwrap().trim().parse().unwrap();
    let watch = cgroup.dir().join("pids.current");
    for sandbox in sandboxes {
        let peak = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let sampler = {
            let (peak, watch) = (peak.clone(), watch.clone());
            // Started before the bomb: its thread is already counted.
            std::thread::spawn(move || {
                while stopped.try_recv().is_err() {
                    let now = std::fs::read_to_string(&watch).unwrap_or_default().trim().parse().unwrap_or(0);
                    peak.fetch_max(now, std::sync::atomic::Ordering::Relaxed);
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            })
        };
        bombs_then_echo(sandbox).await;
        let _ = stop.send(());
        sampler.join().unwrap();
        let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
        eprintln!("harness cgroup: pids.max {max}, peak pids.current {peak}");
        assert!(peak + 20 < max, "the bomb reached the harness's cgroup: peak {peak} of {max}");
    }
}
