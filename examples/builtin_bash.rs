//! The `bash` bundle: `run_bash` on the local sandbox (each command in a pids-capped cgroup
//! of its own where the machine allows one), then in a bubblewrap sandbox that owns its
//! workspace, so that the file tools act there too.
//!
//! `cargo run --example builtin_bash` (the bubblewrap half needs `bwrap`:
//! `apt-get install bubblewrap`; without it, the example says why and stops there).

use harnessx::ToolCall;
use harnessx::ToolRegistry;
use harnessx::agent::Agent;
use std::sync::Arc;

use harnessx::builtin::sandbox::{BubblewrapSandbox, CgroupLimits, LocalSandbox};
use harnessx::model::{FunctionModel, Message, ModelResponse};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // By name, with no sandbox given: a local one is bound, and commands run on the host.
    let registry = ToolRegistry::new();
    registry.load_builtin("bash", json!({"output_limit": 4096, "env": {"GREETING": "hello"}})).unwrap();
    println!("bound sandbox: {}", registry.sandbox().unwrap().name());
    let def = registry.get_tool("run_bash").unwrap();
    println!(
        "run_bash: concurrent={}, replay={}, timeout={:?} s, annotations={}",
        def.concurrent,
        def.replay_policy,
        def.timeout_seconds,
        serde_json::to_string(&def.annotations).unwrap()
    );
    let call = |command: &str| ToolCall::new("c", "run_bash", json!({ "command": command }).to_string());
    let result =
        registry.execute(&call("echo \"$GREETING from $(uname -s)\"; echo oops >&2; exit 3"), None).await;
    println!("{}\n", result.content);

    // A daemon the command leaves behind does not outlive it.
    let result = registry.execute(&call("setsid sleep 1000 & echo started a daemon"), None).await;
    println!("{}\n", result.content);

    // Each command runs in a cgroup of its own where the machine lets the harness make
    // one (root, or a delegated cgroup v2 subtree), capped at `pids_max` tasks, so a fork
    // bomb fills its own cgroup, never the harness's, and times out like any command. This
    // command shows the cgroups it runs in.
    let capped = ToolRegistry::new();
    let small = CgroupLimits { pids_max: Some(64), ..CgroupLimits::default() };
    capped.bind_sandbox(Arc::new(LocalSandbox::new().cgroup(Some(small))));
    capped.load_builtin("bash", json!({})).unwrap();
    let show = "grep -h harnessx-cmd /proc/self/cgroup || echo 'no cgroup of its own here (not root, no delegated cgroup v2)'";
    let result = capped.execute(&call(show), None).await;
    println!("{}\n", result.content);

    // An agent whose shell runs in bubblewrap: the file tools act on the sandbox's workspace.
    let sandbox = match BubblewrapSandbox::new() {
        Ok(sandbox) => sandbox,
        Err(e) => {
            println!("no bubblewrap sandbox here: {e}");
            return;
        }
    };
    let workspace = sandbox.workspace().to_path_buf();
    let model = FunctionModel::new(|request| {
        Ok(match request.messages.len() {
            1 => ModelResponse::tool_calls(vec![ToolCall::new(
                "c1",
                "run_bash",
                json!({"command": "echo written inside > note.txt; touch /etc/nope 2>&1; curl -sS https://example.com 2>&1 | head -1"})
                    .to_string(),
            )]),
            3 => ModelResponse::tool_calls(vec![ToolCall::new("c2", "read_file", json!({"path": "/workspace/note.txt"}).to_string())]),
            _ => {
                let Some(Message::Tool { content, .. }) = request.messages.last() else { unreachable!() };
                ModelResponse::text(format!("Last tool result: {content}"))
            }
        })
    });
    let agent =
        Agent::builder().model(model).tool("bash").tool("filesystem").sandbox(sandbox).build().unwrap();
    println!("agent.tools().sandbox(): {}", agent.tools().sandbox().unwrap().name());
    let result = agent.run("Leave a note in the workspace.").await.unwrap();
    for message in &result.messages {
        if let Message::Tool { content, .. } = message {
            println!("tool result:\n{content}\n");
        }
    }
    println!("{}", result.output);
    println!("on the host: {}", std::fs::read_to_string(workspace.join("note.txt")).unwrap().trim());
}
