//! The agent loop over test models: call order, planning, cut-off calls, name repair,
//! streaming events, specialists.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use harnessx_agent::model::{FunctionModel, Message, ModelRequest, ModelResponse, TestModel};
use harnessx_agent::{
    Agent, AgentConfig, AgentError, AgentEvent, KnowledgeSource, Limit, PLANNING_PROMPT_LINE, RunLimits,
    RunStatus, SkillSource, SubAgent,
};
use harnessx_core::{
    ApprovalDecision, ApprovalRequest, PERMISSION_DENIED, PermissionLevel, PermissionManager, ToolCall,
    ToolDefinition, ToolHandler, ToolPolicy, ToolRegistry,
};
use serde_json::json;

fn echo_tool(name: &str, delay_ms: u64, concurrent: bool, runs: Arc<AtomicUsize>) -> ToolDefinition {
    let n = name.to_owned();
    ToolDefinition::new(
        name,
        "Echo v.",
        json!({"type": "object", "properties": {"v": {"type": "string"}}, "required": ["v"]}),
        ToolHandler::from_async(move |args, _| {
            let runs = runs.clone();
            let n = n.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                Ok(format!("{n}:{}", args["v"].as_str().unwrap_or_default()).into())
            }
        }),
    )
    .with_concurrent(concurrent)
}

/// A model that makes `calls` on the first turn and then answers with what it saw.
fn scripted(calls: Vec<ToolCall>, log: Arc<Mutex<Vec<ModelRequest>>>) -> FunctionModel {
    FunctionModel::new(move |req| {
        log.lock().unwrap().push(req.clone());
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => ModelResponse::tool_calls(calls.clone()),
            _ => ModelResponse::text("done"),
        })
    })
}

fn no_planning() -> AgentConfig {
    AgentConfig { planning: false, ..AgentConfig::default() }
}

#[tokio::test]
async fn parallel_calls_go_back_in_call_order_even_when_the_first_finishes_last() {
    let runs = Arc::new(AtomicUsize::new(0));
    let log = Arc::new(Mutex::new(Vec::new()));
    let calls = vec![ToolCall::new("a", "slow", r#"{"v":"1"}"#), ToolCall::new("b", "fast", r#"{"v":"2"}"#)];
    let agent = Agent::builder()
        .model(scripted(calls, log.clone()))
        .tool(echo_tool("slow", 60, true, runs.clone()))
        .tool(echo_tool("fast", 0, true, runs.clone()))
        .config(no_planning())
        .build()
        .unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(result.output, "done");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let second = &log.lock().unwrap()[1];
    let tool_msgs: Vec<_> = second
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { call_id, content, .. } => Some((call_id.as_str(), content.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(tool_msgs, [("a", "slow:1"), ("b", "fast:2")]);
}

#[tokio::test]
async fn stream_emits_tool_call_start_in_call_order_and_ends_with_run_end() {
    let runs = Arc::new(AtomicUsize::new(0));
    let log = Arc::new(Mutex::new(Vec::new()));
    let calls = vec![
        ToolCall::new("a", "slow", r#"{"v":"1"}"#),
        ToolCall::new("b", "fast", r#"{"v":"2"}"#),
        ToolCall::new("c", "fast", r#"{"v":"3"}"#),
    ];
    let agent = Agent::builder()
        .model(scripted(calls, log))
        .tool(echo_tool("slow", 50, true, runs.clone()))
        .tool(echo_tool("fast", 0, true, runs))
        .config(no_planning())
        .build()
        .unwrap();
    let events: Vec<AgentEvent> = agent.run_stream("go").collect().await;
    let starts: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCallStart { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(starts, ["a", "b", "c"]);
    let ends: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCallEnd { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ends.last(), Some(&"a"), "the slow call finishes last: {ends:?}");
    assert!(matches!(events.first(), Some(AgentEvent::ModelRequest { turn: 1, .. })));
    assert!(matches!(events.last(), Some(AgentEvent::RunEnd { output, turns: 2, .. }) if output == "done"));
    let json = serde_json::to_value(&events[1]).unwrap();
    assert_eq!(json["type"], "tool_call_start");
    assert_eq!(json["call_id"], "a");
    assert_eq!(json["name"], "slow");
}

#[tokio::test]
async fn a_cut_off_call_never_runs_and_history_stays_acceptable() {
    let runs = Arc::new(AtomicUsize::new(0));
    let log = Arc::new(Mutex::new(Vec::new()));
    let calls = vec![ToolCall::new("a", "echo", r#"{"v": "line one\nli"#)];
    let agent = Agent::builder()
        .model(scripted(calls, log.clone()))
        .tool(echo_tool("echo", 0, true, runs.clone()))
        .config(no_planning())
        .build()
        .unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the tool must not run on a partial call");
    let second = &log.lock().unwrap()[1];
    match &second.messages[1] {
        Message::Assistant { tool_calls, .. } => assert_eq!(tool_calls[0].arguments, "{}"),
        other => panic!("{other:?}"),
    }
    match &second.messages[2] {
        Message::Tool { call_id, is_error, content, .. } => {
            assert_eq!(call_id, "a");
            assert!(is_error);
            assert!(content.contains("EOF while parsing"), "{content}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(result.output, "done");
}

#[tokio::test]
async fn a_wrong_name_is_repaired_and_a_typo_is_not() {
    let runs = Arc::new(AtomicUsize::new(0));
    let log = Arc::new(Mutex::new(Vec::new()));
    let calls = vec![
        ToolCall::new("a", "functions.searchWeb", r#"{"v":"x"}"#),
        ToolCall::new("b", "serch_web", r#"{"v":"y"}"#),
    ];
    let agent = Agent::builder()
        .model(scripted(calls, log.clone()))
        .tool(echo_tool("search_web", 0, true, runs.clone()))
        .config(no_planning())
        .build()
        .unwrap();
    agent.run("go").await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let second = &log.lock().unwrap()[1];
    let results: Vec<_> = second.messages.iter().filter(|m| matches!(m, Message::Tool { .. })).collect();
    assert_eq!(results[0].content(), "search_web:x");
    assert!(results[1].content().starts_with("Unknown tool \"serch_web\". Did you mean: search_web?"));
}

fn planner(log: Arc<Mutex<Vec<ModelRequest>>>) -> FunctionModel {
    FunctionModel::new(move |req| {
        let mut log = log.lock().unwrap();
        log.push(req.clone());
        Ok(match log.len() {
            1 => ModelResponse::tool_calls(vec![ToolCall::new(
                "p1",
                "write_todos",
                r#"{"todos":[{"content":"read","status":"in_progress","note":"extra keys are fine"},{"content":"write","status":"pending"}]}"#,
            )]),
            2 => ModelResponse::tool_calls(vec![ToolCall::new(
                "p2",
                "write_todos",
                r#"{"todos":[{"content":"x","status":"done"}]}"#,
            )]),
            3 => ModelResponse::tool_calls(vec![ToolCall::new("p3", "read_todos", "")]),
            _ => ModelResponse::text("finished"),
        })
    })
}

#[tokio::test]
async fn planning_adds_the_line_attaches_the_list_and_keeps_request_prefixes_identical() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::builder().model(planner(log.clone())).system_prompt("Be brief.").build().unwrap();
    assert!(agent.tools().contains("write_todos") && agent.tools().contains("read_todos"));
    let result = agent.run("plan it").await.unwrap();
    assert_eq!(result.output, "finished");
    let log = log.lock().unwrap();
    assert_eq!(log.len(), 4);
    for req in log.iter() {
        assert_eq!(req.system.as_deref(), Some(format!("Be brief.\n\n{PLANNING_PROMPT_LINE}").as_str()));
    }
    // The invalid second write is a one-line error and leaves the list unchanged.
    let err = log[2].messages.iter().rev().find(|m| matches!(m, Message::Tool { .. })).unwrap().content();
    assert!(err.starts_with("invalid arguments for write_todos: todos[0].status: "), "{err}");
    assert!(!err.lines().next().unwrap().is_empty());
    let read = log[3].messages.iter().rev().find(|m| matches!(m, Message::Tool { .. })).unwrap().content();
    assert!(
        read.starts_with("<todo_list>\n1. [in_progress] read\n2. [pending] write\n</todo_list>"),
        "{read}"
    );
    // The list is attached to the newest message of each request once it exists.
    assert!(log[1].messages.last().unwrap().content().ends_with("2. [pending] write\n</todo_list>"));
    // Each request starts with the previous request, byte for byte.
    for pair in log.windows(2) {
        let prev = serde_json::to_string(&pair[0].messages).unwrap();
        let next = serde_json::to_string(&pair[1].messages[..pair[0].messages.len()]).unwrap();
        assert_eq!(prev, next);
    }
}

#[tokio::test]
async fn own_write_todos_is_used_as_is_without_the_line_and_planning_false_removes_both() {
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = Agent::builder()
        .model(TestModel::new())
        .tool(echo_tool("write_todos", 0, true, runs))
        .system_prompt("S")
        .build()
        .unwrap();
    assert_eq!(agent.effective_system_prompt().as_deref(), Some("S"));
    assert!(!agent.tools().contains("read_todos"));

    let plain = Agent::builder().model(TestModel::new()).config(no_planning()).build().unwrap();
    assert!(plain.tools().is_empty());
    assert_eq!(plain.effective_system_prompt(), None);
}

#[tokio::test]
async fn the_planning_bundle_loaded_by_name_is_recognised_as_the_built_in() {
    // By name, with the agent's own planning off: the built-in write_todos is recognised
    // by its handler, so the line and the list follow it.
    let agent =
        Agent::builder().model(TestModel::new()).tool("planning").config(no_planning()).build().unwrap();
    assert_eq!(agent.tools().tool_names(), ["write_todos", "read_todos"]);
    assert_eq!(agent.effective_system_prompt().as_deref(), Some(PLANNING_PROMPT_LINE));
    assert!(agent.planning().is_some());

    // Loaded by name with planning on, the agent installs nothing twice.
    let agent = Agent::builder().model(TestModel::new()).tool("all").build().unwrap();
    assert_eq!(agent.tools().tool_names().iter().filter(|n| *n == "write_todos").count(), 1);
    assert!(agent.planning().is_some());

    // Replaced later by a tool of the user's own: the line and the list go with it.
    let runs = Arc::new(AtomicUsize::new(0));
    agent
        .tools()
        .register_tool_with(
            echo_tool("write_todos", 0, true, runs),
            harnessx_core::ToolOptions::new().replace(true),
        )
        .unwrap();
    assert!(agent.planning().is_none());
    assert_eq!(agent.effective_system_prompt(), None);
}

#[tokio::test]
async fn an_attached_registry_is_shared_and_the_policy_is_adopted_below_its_own() {
    let registry = ToolRegistry::with_policy(ToolPolicy { dedupe_calls: Some(true), ..Default::default() });
    let agent = Agent::builder()
        .registry(registry.clone())
        .config(AgentConfig {
            tools: ToolPolicy {
                default_timeout_seconds: Some(60.0),
                dedupe_calls: Some(false),
                ..Default::default()
            },
            ..AgentConfig::default()
        })
        .build()
        .unwrap();
    assert!(agent.tools().same_registry(&registry));
    assert_eq!(agent.tools().policy().default_timeout_seconds, 60.0);
    assert!(agent.tools().policy().dedupe_calls);
    assert!(registry.contains("write_todos"));
}

#[tokio::test]
async fn test_model_calls_every_tool_then_summarizes() {
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = Agent::builder()
        .model(TestModel::new())
        .tool(echo_tool("one", 0, true, runs.clone()))
        .tool(echo_tool("two", 0, false, runs.clone()))
        .config(no_planning())
        .build()
        .unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(result.output, "Ran 2 tool calls:\n- one: one:a\n- two: two:a");
    assert_eq!(result.turns, 2);
}

#[tokio::test]
async fn closing_ends_runs_and_a_missing_model_is_a_clear_error() {
    let agent = Agent::builder().build().unwrap();
    assert_eq!(agent.run("x").await.unwrap_err(), AgentError::NoModel);
    let agent = Agent::builder().model(TestModel::new()).build().unwrap();
    agent.close().await;
    assert_eq!(agent.run("x").await.unwrap_err(), AgentError::Closed);
}

#[tokio::test]
async fn max_turns_stops_a_model_that_never_answers() {
    let model =
        FunctionModel::new(|_| Ok(ModelResponse::tool_calls(vec![ToolCall::new("", "read_todos", "{}")])));
    let agent = Agent::builder()
        .model(model)
        .config(AgentConfig {
            limits: RunLimits { max_turns: Some(3), ..RunLimits::default() },
            ..AgentConfig::default()
        })
        .build()
        .unwrap();
    // A limit, not an error: the calls of the third turn ran, and no fourth request went.
    let state = agent.run("loop").await.unwrap();
    assert_eq!((state.status, state.limit, state.turns), (RunStatus::LimitReached, Some(Limit::Turns), 3));
    assert_eq!((state.usage.requests, state.usage.tool_calls), (3, 3));
    assert!(matches!(state.messages.last(), Some(Message::Tool { .. })), "{:?}", state.messages.last());
}

/// A serial tool that records how many serial tools run at once.
fn serial_probe(name: &str, active: Arc<AtomicUsize>, peak: Arc<AtomicUsize>) -> ToolDefinition {
    ToolDefinition::new(
        name,
        "Probe.",
        json!({"type": "object", "properties": {}}),
        ToolHandler::from_async(move |_, _| {
            let (active, peak) = (active.clone(), peak.clone());
            async move {
                let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(40)).await;
                active.fetch_sub(1, Ordering::SeqCst);
                Ok("ok".into())
            }
        }),
    )
    .with_concurrent(false)
}

#[tokio::test]
async fn serial_tools_take_turns_across_an_agent_and_its_specialists() {
    let active = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    // The parent calls two specialists and its own serial tool in one turn; each
    // specialist calls its own serial tool.
    let parent_model = FunctionModel::new(|req| {
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => ModelResponse::tool_calls(vec![
                ToolCall::new("s1", "helper_a", r#"{"task":"t"}"#),
                ToolCall::new("s2", "helper_b", r#"{"task":"t"}"#),
                ToolCall::new("w", "parent_write", "{}"),
            ]),
            _ => ModelResponse::text("all done"),
        })
    });
    let child_model = |tool: &'static str| {
        FunctionModel::new(move |req| {
            Ok(match req.messages.last() {
                Some(Message::User { .. }) => ModelResponse::tool_calls(vec![ToolCall::new("c", tool, "{}")]),
                _ => ModelResponse::text(format!("{tool} finished")),
            })
        })
    };
    let agent = Agent::builder()
        .model(parent_model)
        .tool(serial_probe("parent_write", active.clone(), peak.clone()))
        .specialist(SubAgent::new("helper_a", "Helper A.").model(child_model("write_a")).tool(serial_probe(
            "write_a",
            active.clone(),
            peak.clone(),
        )))
        .specialist(SubAgent::new("helper_b", "Helper B.").model(child_model("write_b")).tool(serial_probe(
            "write_b",
            active.clone(),
            peak.clone(),
        )))
        .config(no_planning())
        .build()
        .unwrap();
    assert_eq!(agent.tools().get_tool("helper_a").unwrap().timeout_seconds, Some(300.0));
    let result = agent.run("go").await.unwrap();
    assert_eq!(result.output, "all done");
    let outputs: Vec<_> =
        result.messages.iter().filter(|m| matches!(m, Message::Tool { .. })).map(|m| m.content()).collect();
    assert_eq!(outputs, ["write_a finished", "write_b finished", "ok"]);
    assert_eq!(
        peak.load(Ordering::SeqCst),
        1,
        "serial tools overlapped across the agent and its specialists"
    );
}

/// The tools the agent installs itself (planning, the `Skill` tool, the knowledge
/// tools), each called once in the first turn.
fn own_tools_caller(log: Arc<Mutex<Vec<ModelRequest>>>) -> FunctionModel {
    FunctionModel::new(move |req| {
        log.lock().unwrap().push(req.clone());
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => ModelResponse::tool_calls(vec![
                ToolCall::new("t1", "write_todos", r#"{"todos":[{"content":"look","status":"pending"}]}"#),
                ToolCall::new("t2", "read_todos", "{}"),
                ToolCall::new("t3", "Skill", r#"{"name":"pdf-forms"}"#),
                ToolCall::new("t4", "search_concepts", r#"{"query":"neutron star"}"#),
                ToolCall::new("t5", "read_concept", r#"{"id":"pulsar"}"#),
                ToolCall::new("t6", "get_neighbors", r#"{"id":"pulsar"}"#),
            ]),
            _ => ModelResponse::text("done"),
        })
    })
}

fn agent_with_own_tools(permissions: Option<PermissionManager>) -> (Agent, Arc<Mutex<Vec<ModelRequest>>>) {
    let fixtures = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut builder = Agent::builder()
        .model(own_tools_caller(log.clone()))
        .skills(SkillSource::dir(fixtures.join("skills")))
        .knowledge(KnowledgeSource::dir(fixtures.join("knowledge")));
    if let Some(permissions) = permissions {
        builder = builder.permissions(permissions);
    }
    (builder.build().unwrap(), log)
}

/// (tool name, whether it was refused) for each result of the run, in call order.
fn refusals(result: &harnessx_agent::RunResult) -> Vec<(String, bool)> {
    result
        .messages
        .iter()
        .filter_map(|m| match m {
            // (The newest message also carries the todo list, once there is one.)
            Message::Tool { name, content, is_error, .. } => Some((
                name.clone(),
                *is_error && content.split("\n\n<todo_list>").next() == Some(PERMISSION_DENIED),
            )),
            _ => None,
        })
        .collect()
}

const OWN_TOOLS: [&str; 6] =
    ["write_todos", "read_todos", "Skill", "search_concepts", "read_concept", "get_neighbors"];

// Regression: the agent installed write_todos/read_todos (and the Skill and knowledge
// tools) with an explicit ALLOW, so they ran under a DENY or ASK manager.
#[tokio::test]
async fn the_tools_the_agent_installs_follow_the_manager() {
    for name in OWN_TOOLS {
        let (agent, _) = agent_with_own_tools(None);
        assert_eq!(
            agent.tools().get_tool(name).unwrap().permission,
            None,
            "{name} has a permission of its own"
        );
    }
    // A plain agent: ALLOW.
    let (agent, _) = agent_with_own_tools(None);
    let result = agent.run("go").await.unwrap();
    assert_eq!(refusals(&result), OWN_TOOLS.map(|n| (n.to_owned(), false)));
    assert_eq!(agent.planning().unwrap().todos().len(), 1);

    // A DENY manager: every one refused, and the list is left as it was.
    let (agent, _) = agent_with_own_tools(Some(PermissionManager::new(PermissionLevel::Deny)));
    let result = agent.run("go").await.unwrap();
    assert_eq!(refusals(&result), OWN_TOOLS.map(|n| (n.to_owned(), true)));
    assert!(agent.planning().unwrap().todos().is_empty());

    // An ASK manager with no way to approve: denied.
    let (agent, _) = agent_with_own_tools(Some(PermissionManager::new(PermissionLevel::Ask)));
    let result = agent.run("go").await.unwrap();
    assert_eq!(refusals(&result), OWN_TOOLS.map(|n| (n.to_owned(), true)));

    // An ASK manager that asks a person: each tool is asked about, then runs.
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let manager =
        PermissionManager::new(PermissionLevel::Ask).with_approval_fn(move |request: ApprovalRequest| {
            seen.lock().unwrap().push(request.tool_name.clone());
            async { ApprovalDecision::Approve }
        });
    let (agent, _) = agent_with_own_tools(Some(manager));
    let result = agent.run("go").await.unwrap();
    assert_eq!(refusals(&result), OWN_TOOLS.map(|n| (n.to_owned(), false)));
    let mut asked = asked.lock().unwrap().clone();
    asked.sort();
    let mut expected = OWN_TOOLS.map(str::to_owned).to_vec();
    expected.sort();
    assert_eq!(asked, expected);

    // Under DENY, an override for one tool lets that one run.
    let manager =
        PermissionManager::new(PermissionLevel::Deny).with_override("write_todos", PermissionLevel::Allow);
    let (agent, _) = agent_with_own_tools(Some(manager));
    let result = agent.run("go").await.unwrap();
    let ran: Vec<_> = refusals(&result).into_iter().filter(|(_, refused)| !refused).map(|(n, _)| n).collect();
    assert_eq!(ran, ["write_todos"]);
    assert_eq!(agent.planning().unwrap().todos().len(), 1);
}

#[test]
fn the_planning_tools_use_the_default_timeout() {
    let agent = Agent::builder().model(TestModel::new()).build().unwrap();
    for name in ["write_todos", "read_todos"] {
        assert_eq!(
            agent.tools().get_tool(name).unwrap().timeout_seconds,
            None,
            "{name} has a limit of its own"
        );
        assert_eq!(agent.tools().effective_timeout_seconds(name), Some(25.0), "{name}");
    }
    // ...so the agent's policy changes it, as for any tool without a limit of its own.
    let agent = Agent::builder()
        .model(TestModel::new())
        .config(AgentConfig {
            tools: ToolPolicy { default_timeout_seconds: Some(7.0), ..ToolPolicy::default() },
            ..AgentConfig::default()
        })
        .build()
        .unwrap();
    assert_eq!(agent.tools().effective_timeout_seconds("write_todos"), Some(7.0));
}

#[test]
fn the_planning_prompt_line_reads_as_the_spec_words_it() {
    // Written out here on purpose, not read from PLANNING_PROMPT_LINE: a change to the
    // wording changes every request prefix (the prompt cache) and must be deliberate.
    let agent = Agent::builder().model(TestModel::new()).system_prompt("You help.").build().unwrap();
    assert_eq!(
        agent.effective_system_prompt().as_deref(),
        Some(
            "You help.\n\nPlan any task with three or more steps with write_todos, update the list in the same turn as the work, and when it is done, just answer."
        )
    );
    let agent = Agent::builder().model(TestModel::new()).build().unwrap();
    assert_eq!(
        agent.effective_system_prompt().as_deref(),
        Some(
            "Plan any task with three or more steps with write_todos, update the list in the same turn as the work, and when it is done, just answer."
        )
    );
}

#[tokio::test]
async fn a_tool_registered_after_build_reaches_the_next_runs_requests() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let seen = log.clone();
    let model = FunctionModel::new(move |req| {
        seen.lock().unwrap().push(req.clone());
        let offered = req.tools.iter().any(|t| t.name == "late");
        Ok(match req.messages.last() {
            Some(Message::User { .. }) if offered => {
                ModelResponse::tool_calls(vec![ToolCall::new("l1", "late", r#"{"v":"x"}"#)])
            }
            Some(Message::User { .. }) => ModelResponse::text("no late tool"),
            _ => ModelResponse::text("used it"),
        })
    });
    let agent = Agent::builder().model(model).config(no_planning()).build().unwrap();
    assert_eq!(agent.run("first").await.unwrap().output, "no late tool");

    let runs = Arc::new(AtomicUsize::new(0));
    agent.tools().register_tool(echo_tool("late", 0, true, runs.clone())).unwrap();
    let result = agent.run("second").await.unwrap();
    assert_eq!(result.output, "used it");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let log = log.lock().unwrap();
    assert!(log[0].tools.iter().all(|t| t.name != "late"));
    for req in &log[1..] {
        assert_eq!(req.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["late"]);
    }
    let late = log[1].tools.iter().find(|t| t.name == "late").unwrap();
    assert_eq!(late.description, "Echo v.");
}

#[tokio::test]
async fn two_specialist_tasks_get_registries_of_their_own() {
    // One specialist called twice in one turn (its two tasks run together), with planning
    // on: each task writes a list naming its task, then reads the list back. Each task's
    // registry is its own, so neither sees the other's list, nor the parent's.
    let parent = FunctionModel::new(|req| {
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => ModelResponse::tool_calls(vec![
                ToolCall::new("a", "planner", r#"{"task":"alpha"}"#),
                ToolCall::new("b", "planner", r#"{"task":"beta"}"#),
            ]),
            _ => ModelResponse::text("both done"),
        })
    });
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = requests.clone();
    let child = FunctionModel::new(move |req| {
        seen.lock().unwrap().push(req.clone());
        let task = match req.messages.first() {
            Some(Message::User { content, .. }) => content.clone(),
            _ => String::new(),
        };
        let turn = req.messages.iter().filter(|m| matches!(m, Message::Assistant { .. })).count();
        Ok(match turn {
            0 => ModelResponse::tool_calls(vec![ToolCall::new(
                "w",
                "write_todos",
                json!({"todos": [{"content": format!("step of {task}"), "status": "pending"}]}).to_string(),
            )]),
            1 => ModelResponse::tool_calls(vec![ToolCall::new("r", "read_todos", "{}")]),
            _ => {
                let read = req.messages.iter().rev().find(|m| matches!(m, Message::Tool { .. })).unwrap();
                ModelResponse::text(read.content().to_owned())
            }
        })
    });
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = Agent::builder()
        .model(parent)
        .specialist(
            SubAgent::new("planner", "Plans.")
                .model(child)
                .tool(echo_tool("probe", 0, true, runs.clone()))
                .config(AgentConfig::default()),
        )
        .build()
        .unwrap();
    // The parent's own tool of the same name, replaced after build, is not the
    // specialist's: each task gets copies of what the specialist declared.
    agent
        .tools()
        .register_tool_with(
            echo_tool("probe", 0, true, runs.clone()),
            harnessx_core::ToolOptions::new().replace(true),
        )
        .unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(result.output, "both done");
    let outputs: Vec<_> = result
        .messages
        .iter()
        .filter(|m| matches!(m, Message::Tool { .. }))
        .map(|m| m.content().to_owned())
        .collect();
    assert_eq!(outputs.len(), 2);
    assert!(outputs[0].contains("step of alpha") && !outputs[0].contains("beta"), "{}", outputs[0]);
    assert!(outputs[1].contains("step of beta") && !outputs[1].contains("alpha"), "{}", outputs[1]);
    // The parent's own list was never touched.
    assert!(agent.planning().unwrap().todos().is_empty());
    // Each task's requests offered the specialist's tools and its own planning tools only.
    for req in requests.lock().unwrap().iter() {
        let mut names: Vec<_> = req.tools.iter().map(|t| t.name.as_str()).collect();
        names.sort();
        assert_eq!(names, ["probe", "read_todos", "write_todos"]);
    }
}
