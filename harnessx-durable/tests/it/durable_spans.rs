//! The spans of durable runs: a run that failed on its second model request, resumed,
//! shows what it replayed from the journal (`harnessx.replayed`) and what it did again.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use harnessx_agent::model::{FunctionModel, Message, ModelError, ModelResponse};
use harnessx_agent::telemetry::{TraceTarget, init_for_current_thread};
use harnessx_agent::{Agent, AgentConfig};
use harnessx_core::{ToolCall, ToolDefinition, ToolHandler};
use harnessx_durable::AgentRuntime;
use serde_json::{Value, json};

/// A model that calls `add` and then answers, failing its second request once.
fn agent() -> Agent {
    let fail = Arc::new(AtomicBool::new(true));
    let model = FunctionModel::new(move |request| match request.messages.last() {
        Some(Message::Tool { content, .. }) => {
            if fail.swap(false, Ordering::SeqCst) {
                Err(ModelError::Other("the model is down".into()))
            } else {
                Ok(ModelResponse::text(format!("the sum is {content}")))
            }
        }
        _ => Ok(ModelResponse::tool_calls(vec![ToolCall::new("c1", "add", r#"{"a":2,"b":3}"#)])),
    });
    let schema =
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}});
    let add = ToolHandler::from_async(|args, _| async move {
        Ok((args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)).to_string().into())
    });
    Agent::builder()
        .name("adder")
        .model(model)
        .tool(ToolDefinition::new("add", "Add two numbers.", schema, add))
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_resumed_run_marks_what_it_replayed_from_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    let (guard, scope) = init_for_current_thread(TraceTarget::File(path.clone())).unwrap();
    let runtime = AgentRuntime::in_memory(agent());
    assert!(runtime.start("run-1", "Add 2 and 3.").await.is_err(), "the second request fails");
    let result = runtime.resume("run-1").await.unwrap();
    assert_eq!(result.output, "the sum is 5");
    drop(scope);
    guard.shutdown().unwrap();

    let spans: Vec<Value> =
        std::fs::read_to_string(&path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let runs: Vec<&Value> = spans.iter().filter(|s| s["name"] == "invoke_agent adder").collect();
    let [first, resumed] = runs[..] else { panic!("two invoke_agent spans: {spans:#?}") };
    let children = |run: &Value, name: &str| -> Vec<Value> {
        spans.iter().filter(|s| s["name"] == name && s["parent_span_id"] == run["span_id"]).cloned().collect()
    };
    let attr = |span: &Value, key: &str| span["attributes"][key].clone();

    // The first attempt: the tool ran, the second request failed, and so did the run.
    assert_eq!(attr(first, "harnessx.run_id"), "run-1");
    assert_eq!(attr(first, "harnessx.replayed"), Value::Null);
    assert_eq!(first["status"]["code"], "ERROR");
    assert_eq!(attr(first, "error.type"), "model_error");
    let chats = children(first, "chat function");
    assert_eq!(chats.len(), 2);
    assert_eq!(chats[1]["status"]["code"], "ERROR");
    assert_eq!(children(first, "execute_tool add").len(), 1);

    // The resume: turn 1's response and the call's result come from the journal.
    assert_eq!(attr(resumed, "harnessx.replayed"), true);
    assert_eq!(resumed["status"]["code"], "UNSET");
    assert_eq!(attr(resumed, "harnessx.turns"), 2);
    let chats = children(resumed, "chat function");
    assert_eq!(chats.len(), 2, "{spans:#?}");
    assert_eq!(attr(&chats[0], "harnessx.turn"), 1);
    assert_eq!(attr(&chats[0], "harnessx.replayed"), true);
    assert_eq!(attr(&chats[1], "harnessx.turn"), 2);
    assert_eq!(attr(&chats[1], "harnessx.replayed"), Value::Null);
    let [tool] = &children(resumed, "execute_tool add")[..] else { panic!("one execute_tool span") };
    assert_eq!(attr(tool, "harnessx.replayed"), true);
    assert_eq!(attr(tool, "gen_ai.tool.call.id"), "c1");
}
