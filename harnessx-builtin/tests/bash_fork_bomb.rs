//! A fork bomb in each sandbox: contained by the command's timeout, every process of it
//! gone afterwards, and the next command runs. Its own test binary, and one test that
//! takes the sandboxes in turn, so that nothing else runs while the bomb does.

mod sandbox_cases;

use std::sync::Arc;

use harnessx_builtin::bash::BashOptions;
use harnessx_builtin::sandbox::{BubblewrapSandbox, LocalSandbox};
use harnessx_core::Sandbox;
use harnessx_test_support::system::ensure_debian_package;
use sandbox_cases::{assert_all_gone, bash, cmd, facts, marker, registry};
use serde_json::json;

async fn bomb_then_echo(sandbox: Arc<dyn Sandbox>) {
    let reg = registry(sandbox, BashOptions::default());
    let m = marker("bomb");
    // Every fork keeps the marked command line, so the test can count the survivors.
    let script = format!("exec -a {m} bash -c 'b() {{ b | b & }}; b; sleep 100'");
    let r = bash(&reg, json!({"command": script, "timeout": 1})).await;
    assert_eq!(facts(&r)["timed_out"], true, "{}", r.content);
    assert_all_gone(&m).await;
    let next = bash(&reg, cmd("echo still-working")).await;
    assert_eq!(facts(&next)["stdout"], "still-working\n", "{}", next.content);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_bomb_is_contained_and_the_next_call_works() {
    bomb_then_echo(Arc::new(LocalSandbox::new())).await;
    if ensure_debian_package("bubblewrap", "bwrap").is_some() {
        bomb_then_echo(Arc::new(BubblewrapSandbox::new().unwrap())).await;
    }
}
