//! `run_bash` on the local sandbox: the shared cases.

mod sandbox_cases;

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
    assert_eq!(facts(&r)["output_limit_reached"], true);

    let err = ToolRegistry::new().load_builtin("bash", json!({"timeout": 5})).unwrap_err().to_string();
    assert!(err.contains("unknown option `timeout`") && err.contains("output_limit, env"), "{err}");
    let err = ToolRegistry::new().load_builtin("bash", json!({"output_limit": 0})).unwrap_err().to_string();
    assert!(err.contains("output_limit"), "{err}");
}
