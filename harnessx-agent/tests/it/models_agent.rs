//! The agent loop over the provider adapters and a loopback server: recorded parallel
//! calls run, and their results go back in call order in the provider's format; a call
//! cut off by the token limit never runs and the next request is still a valid one; a
//! whole tool round trip through imitations of the servers people run at home
//! (llama-cpp-python, llama-server, vLLM, Ollama), streamed and not, under every tool
//! choice.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Reply, Server, fixture};
use futures_util::StreamExt;
use harnessx_agent::model::{AnthropicModel, OpenAiModel};
use harnessx_agent::{Agent, AgentConfig, AgentEvent};
use harnessx_core::{ToolDefinition, ToolHandler};
use serde_json::{Value, json};

/// A tool that records its calls and answers `name:<arguments>` after `delay_ms`.
fn tool(name: &str, delay_ms: u64, log: Arc<Mutex<Vec<String>>>) -> ToolDefinition {
    let n = name.to_owned();
    ToolDefinition::new(
        name,
        "A test tool.",
        json!({"type": "object", "properties": {}, "additionalProperties": true}),
        ToolHandler::from_async(move |args, _| {
            let n = n.clone();
            let log = log.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                log.lock().unwrap().push(n.clone());
                Ok(format!("{n}:{args}").into())
            }
        }),
    )
}

fn no_planning() -> AgentConfig {
    AgentConfig { planning: false, ..AgentConfig::default() }
}

#[tokio::test]
async fn openai_parallel_calls_run_and_both_results_go_back_in_call_order() {
    let server = Server::start(vec![
        Reply::sse(fixture("openai/chat_stream_parallel_two_tools_gpt4o.sse"), Some(64)),
        Reply::sse(fixture("openai/chat_stream_text_only_gpt4o.sse"), Some(7)),
    ]);
    let ran = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::builder()
        .model(OpenAiModel::new("gpt-4o").base_url(format!("{}/v1", server.url)).api_key("sk-test"))
        // The first call finishes last.
        .tool(tool("GetWeatherArgs", 80, ran.clone()))
        .tool(tool("get_stock_price", 0, ran.clone()))
        .config(no_planning())
        .build()
        .unwrap();
    let result = agent.run("Weather in Edinburgh and the AAPL price?").await.unwrap();
    assert!(result.output.starts_with("I'm unable"));
    assert_eq!(*ran.lock().unwrap(), ["get_stock_price", "GetWeatherArgs"]);
    assert_eq!((result.usage.input_tokens, result.usage.output_tokens), (149 + 14, 60 + 30));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap();
    let tail: Vec<Value> = messages[messages.len() - 3..].to_vec();
    assert_eq!(tail[0]["role"], "assistant");
    assert_eq!(tail[0]["tool_calls"][0]["id"], "call_JMW1whyEaYG438VE1OIflxA2");
    assert_eq!(tail[0]["tool_calls"][1]["id"], "call_DNYTawLBoN8fj3KN6qU9N1Ou");
    assert_eq!(
        tail[1],
        json!({"role": "tool", "tool_call_id": "call_JMW1whyEaYG438VE1OIflxA2",
               "content": r#"GetWeatherArgs:{"city":"Edinburgh","country":"GB","units":"c"}"#})
    );
    assert_eq!(
        tail[2],
        json!({"role": "tool", "tool_call_id": "call_DNYTawLBoN8fj3KN6qU9N1Ou",
               "content": r#"get_stock_price:{"ticker":"AAPL","exchange":"NASDAQ"}"#})
    );
    // Both requests share the prefix: the second only appends.
    let first = requests[0].body["messages"].as_array().unwrap();
    assert_eq!(&messages[..first.len()], first.as_slice());
}

#[tokio::test]
async fn openai_run_stream_shows_text_and_calls_in_order() {
    let server = Server::start(vec![
        Reply::sse(fixture("openai/chat_stream_parallel_two_tools_gpt4o.INTERLEAVED_DERIVED.sse"), Some(1)),
        Reply::sse(fixture("openai/chat_stream_text_only_gpt4o.sse"), Some(64)),
    ]);
    let ran = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::builder()
        .model(OpenAiModel::new("gpt-4o").base_url(format!("{}/v1", server.url)).api_key("sk-test"))
        .tool(tool("GetWeatherArgs", 30, ran.clone()))
        .tool(tool("get_stock_price", 0, ran.clone()))
        .config(no_planning())
        .build()
        .unwrap();
    let events: Vec<AgentEvent> = agent.run_stream("go").collect().await;
    let starts: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCallStart { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(starts, ["call_JMW1whyEaYG438VE1OIflxA2", "call_DNYTawLBoN8fj3KN6qU9N1Ou"]);
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(text.starts_with("I'm unable to provide real-time weather updates."), "{text}");
    assert!(matches!(events.last(), Some(AgentEvent::RunEnd { .. })), "{:?}", events.last());
}

/// A non-streamed Messages API answer with only text (written for this test).
const ANTHROPIC_FINAL: &str = r#"{"id":"msg_final","type":"message","role":"assistant","content":[{"type":"text","text":"Daisy is the youngest."}],"stop_reason":"end_turn","usage":{"input_tokens":700,"output_tokens":9}}"#;

#[tokio::test]
async fn anthropic_parallel_calls_go_back_as_one_user_turn_in_call_order() {
    let server = Server::start(vec![
        Reply::json(200, fixture("anthropic/messages_nonstream_four_parallel_tool_use.json")),
        Reply::json(200, ANTHROPIC_FINAL),
    ]);
    let ran = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::builder()
        .model(AnthropicModel::new("claude-haiku-4-5").base_url(&server.url).api_key("sk-ant-test"))
        .tool(tool("retrieve_entity_info", 10, ran.clone()))
        .config(no_planning())
        .build()
        .unwrap();
    let result = agent.run("Who is the youngest?").await.unwrap();
    assert_eq!(result.output, "Daisy is the youngest.");
    assert_eq!(ran.lock().unwrap().len(), 4);

    let requests = server.requests();
    assert_eq!(requests[0].body.get("stream"), None, "run() uses the non-streaming API");
    let messages = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1]["role"], "assistant");
    let ids: Vec<&str> = messages[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b.get("id"))
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        ids,
        [
            "toolu_0167cfEnoQaPviGdVXA95zcu",
            "toolu_01EEe2V5HD1Ac4rKiUR4HD2T",
            "toolu_01XFyAjstT3966qvRynZyVPo",
            "toolu_013mnQZbgtK2oe3Mo3XKJsx3"
        ]
    );
    assert_eq!(messages[2]["role"], "user");
    let results: Vec<(&str, &str)> = messages[2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            assert_eq!(b["type"], "tool_result");
            (b["tool_use_id"].as_str().unwrap(), b["content"].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        results,
        [
            ("toolu_0167cfEnoQaPviGdVXA95zcu", r#"retrieve_entity_info:{"name":"Alice"}"#),
            ("toolu_01EEe2V5HD1Ac4rKiUR4HD2T", r#"retrieve_entity_info:{"name":"Bob"}"#),
            ("toolu_01XFyAjstT3966qvRynZyVPo", r#"retrieve_entity_info:{"name":"Charlie"}"#),
            ("toolu_013mnQZbgtK2oe3Mo3XKJsx3", r#"retrieve_entity_info:{"name":"Daisy"}"#),
        ]
    );
}

#[tokio::test]
async fn anthropic_call_cut_off_by_max_tokens_never_runs_and_the_next_request_is_valid() {
    let server = Server::start(vec![
        Reply::sse(fixture("anthropic/messages_stream_tool_use_cut_off_max_tokens.sse"), Some(7)),
        Reply::sse(fixture("anthropic/messages_stream_text_only.sse"), Some(64)),
    ]);
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let make_file = ToolDefinition::new(
        "make_file",
        "Write lines to a file.",
        json!({"type": "object", "properties": {"filename": {"type": "string"}, "lines_of_text": {"type": "array", "items": {"type": "string"}}}, "required": ["filename", "lines_of_text"]}),
        ToolHandler::from_async(move |_, _| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Ok("written".to_owned().into()) }
        }),
    );
    let agent = Agent::builder()
        .model(AnthropicModel::new("claude-3-7-sonnet").base_url(&server.url).api_key("sk-ant-test"))
        .tool(make_file)
        .config(no_planning())
        .build()
        .unwrap();
    let events: Vec<AgentEvent> = agent.run_stream("Write a tax guide to taxes.txt").collect().await;
    assert!(matches!(events.last(), Some(AgentEvent::RunEnd { .. })), "{:?}", events.last());
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the cut-off call must not run");

    let second = &server.requests()[1].body;
    let messages = second["messages"].as_array().unwrap();
    let assistant = &messages[1]["content"].as_array().unwrap();
    let tool_use = assistant.iter().find(|b| b["type"] == "tool_use").unwrap();
    assert_eq!(tool_use["input"], json!({}), "history keeps the cut-off call as a valid object");
    let result = &messages[2]["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_01EKqbqmZrGRXy18eN7m9kvY");
    assert_eq!(result["is_error"], true);
}

// ---- A tool round trip on the servers people run at home --------------------------------

use harnessx_agent::model::ModelError;
use harnessx_agent::model::Usage;
use harnessx_agent::{AgentError, ToolChoice};
use harnessx_test_support::local::Local;

const SECRET: &str = "The secret word is plum.";

fn read_note() -> ToolDefinition {
    ToolDefinition::new(
        "read_file",
        "Read a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ToolHandler::from_async(|args, _| async move {
            assert_eq!(args, json!({"path": "note.txt"}));
            Ok(SECRET.into())
        }),
    )
}

fn local_agent(server: &Server, tool_choice: ToolChoice, stream: bool) -> Agent {
    Agent::builder()
        .model(OpenAiModel::new("local").base_url(format!("{}/v1", server.url)).without_api_key())
        .tool(read_note())
        .config(AgentConfig { tool_choice, stream, ..no_planning() })
        .build()
        .unwrap()
}

/// The run's outcome through `run_stream` (streamed model requests when `stream`).
async fn run_local(agent: &Agent) -> Result<(String, u32, Usage), String> {
    let events: Vec<AgentEvent> =
        agent.run_stream("Read note.txt and tell me the secret word.").collect().await;
    match events.last() {
        Some(AgentEvent::RunEnd { output, turns, usage, .. }) => Ok((output.clone(), *turns, *usage)),
        Some(AgentEvent::Error { message }) => Err(message.clone()),
        other => panic!("{other:?}"),
    }
}

/// Each server, streamed and not, under auto, required and a named tool: the call runs,
/// its result goes back (beside `"content": ""` and `"tool_choice": "auto"`), and the
/// answer ends the run. On llama-cpp-python the detours (an empty stream, a refused
/// `required`, an answer of nothing to `auto`) are taken on the way, its call's id shows
/// that its template drops `tool` messages, so the result goes back as a user message,
/// and the answer comes under `none` from a model that saw it; on servers that ignore a choice (Ollama all of them, llama-server a named
/// one) the model chooses, and calls. Usage comes back where the server sends it.
#[tokio::test]
async fn a_tool_round_trip_completes_on_every_local_server() {
    let named = ToolChoice::Tool("read_file".into());
    for server_kind in [Local::LlamaCppPython, Local::LlamaServer, Local::Vllm, Local::Ollama] {
        for stream in [true, false] {
            for choice in [ToolChoice::Auto, ToolChoice::Required, named.clone()] {
                let case = format!("{server_kind:?} stream={stream} {choice:?}");
                let server = server_kind.start();
                let agent = local_agent(&server, choice.clone(), stream);
                let (output, turns, usage) =
                    run_local(&agent).await.unwrap_or_else(|e| panic!("{case}: {e}"));
                let bodies = server.bodies();
                let last = bodies.last().unwrap();
                let messages = last["messages"].as_array().unwrap();
                assert_eq!(messages[1]["role"], "assistant", "{case}");
                assert_eq!(messages[1]["content"], "", "{case}");
                let id = messages[1]["tool_calls"][0]["id"].as_str().unwrap();
                let (answer, result) = match server_kind {
                    Local::LlamaCppPython => {
                        let text = format!("[read_file result, call {id}]\n{SECRET}");
                        (format!("The note says: {text}"), json!({"role": "user", "content": text}))
                    }
                    _ => (
                        format!("The note says: {SECRET}"),
                        json!({"role": "tool", "tool_call_id": id, "content": SECRET}),
                    ),
                };
                assert_eq!((output.as_str(), turns), (answer.as_str(), 2), "{case}");
                assert_eq!(messages[2], result, "{case}");
                assert_eq!(messages.len(), 3, "{case}");
                let choices: Vec<&Value> = bodies.iter().map(|b| &b["tool_choice"]).collect();
                match server_kind {
                    // `auto` answered nothing: asked again with `none`.
                    Local::LlamaCppPython => {
                        assert_eq!(choices[choices.len() - 2..], [&json!("auto"), &json!("none")], "{case}")
                    }
                    _ => assert_eq!(choices.last(), Some(&&json!("auto")), "{case}"),
                }
                // Streams of llama-cpp-python carry no usage, and with a named tool nothing
                // of that run goes unstreamed; everything else has usage.
                if !(server_kind == Local::LlamaCppPython && stream && choice == named) {
                    assert!(usage.input_tokens > 0, "{case}: {usage:?}");
                }
                let detours = match (server_kind, stream, &choice) {
                    // The empty stream, then the refused `required`; the tool named is the
                    // third send; the answer's request goes unstreamed at once, answers
                    // nothing, and is asked again with `none`.
                    (Local::LlamaCppPython, true, ToolChoice::Required) => 3,
                    // The empty stream, then the answer of nothing.
                    (Local::LlamaCppPython, true, ToolChoice::Auto) => 2,
                    (Local::LlamaCppPython, false, ToolChoice::Required) => 2,
                    // Named streams work, and so does `auto` when the model answers in
                    // words: the stream of nothing is asked again, streamed, with `none`.
                    (Local::LlamaCppPython, _, ToolChoice::Tool(_)) => 1,
                    (Local::LlamaCppPython, false, _) => 1,
                    _ => 0,
                };
                assert_eq!(bodies.len(), 2 + detours, "{case}: {bodies:#?}");
            }
        }
    }
}

/// vLLM started without `--enable-auto-tool-choice` refuses `auto`, whether it is sent
/// or defaulted for a request with tools: spelling it out changes nothing there. A run
/// that forces a tool gets its call, then fails on the `auto` that follows, with the
/// server's words.
#[tokio::test]
async fn vllm_without_auto_tool_choice_refuses_auto_sent_or_not() {
    let refusal = "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set";
    let body = |tool_choice: Option<&str>| {
        let mut body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "read_file", "description": "", "parameters": {}}}]});
        if let Some(choice) = tool_choice {
            body["tool_choice"] = json!(choice);
        }
        Local::VllmWithoutAutoToolChoice.answer(&common::Recorded::post("/v1/chat/completions", body))
    };
    let (sent, defaulted) = (body(Some("auto")), body(None));
    assert_eq!((sent.status, &sent.body), (defaulted.status, &defaulted.body));
    assert_eq!(sent.status, 400);

    for stream in [true, false] {
        let server = Local::VllmWithoutAutoToolChoice.start();
        let e = run_local(&local_agent(&server, ToolChoice::Required, stream)).await.unwrap_err();
        assert!(
            e.contains(&format!("the model provider answered HTTP 400: {refusal} (BadRequestError)")),
            "{e}"
        );
        assert_eq!(server.bodies().len(), 2, "not retried: a 400");
        let server = Local::VllmWithoutAutoToolChoice.start();
        let agent = local_agent(&server, ToolChoice::Auto, stream);
        let e = agent.run("hi").await.unwrap_err();
        assert!(matches!(&e, AgentError::Model(ModelError::Http { status: 400, .. })), "{e:?}");
    }
}
