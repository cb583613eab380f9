//! Run budgets in the one loop: usage read exactly from loopback OpenAI-compatible
//! (streamed and not) and Anthropic servers that script it (cache reads and writes,
//! reasoning), summed per run, model and turn and priced; a specialist's usage in its
//! parent's; limits stopping where they must with no request after the stop; per-tool
//! limits; the budget note; a cost limit with no price.

use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use harnessx_agent::budget::{Limit, ModelPrice, RunLimits};
use harnessx_agent::model::{
    AnthropicModel, FunctionModel, Message, ModelRequest, ModelResponse, OpenAiModel, Usage,
};
use harnessx_agent::{Agent, AgentConfig, AgentError, AgentEvent, RunOutcome, RunStatus, SubAgent};
use harnessx_core::{ToolCall, ToolDefinition, ToolHandler};
use harnessx_test_support::server::{Reply, Server};
use harnessx_test_support::sse::{anthropic as anthropic_sse, openai as openai_sse};
use serde_json::{Value, json};

/// A tool that counts its calls.
fn counter(calls: Arc<Mutex<usize>>) -> ToolDefinition {
    let handler = ToolHandler::from_async(move |_, _| {
        let calls = calls.clone();
        async move {
            *calls.lock().unwrap() += 1;
            Ok("counted".into())
        }
    });
    ToolDefinition::new("count", "Count one.", json!({"type": "object", "properties": {}}), handler)
}

fn no_planning() -> AgentConfig {
    AgentConfig { planning: false, ..AgentConfig::default() }
}

fn openai_usage(prompt: u64, completion: u64, cached: u64, reasoning: u64) -> Value {
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached}, "completion_tokens_details": {"reasoning_tokens": reasoning}})
}

/// An OpenAI response calling `count` `n` times, streamed or not.
fn openai_calls(n: usize, usage: Value, stream: bool) -> Reply {
    let calls: Vec<Value> = (0..n)
        .map(|i| json!({"id": format!("c{i}"), "type": "function", "function": {"name": "count", "arguments": "{}"}}))
        .collect();
    if stream {
        let mut chunks: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut c = c.clone();
                c["index"] = json!(i);
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [c]}}]})
            })
            .collect();
        chunks.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}));
        chunks.push(json!({"choices": [], "usage": usage}));
        Reply::event_stream(openai_sse(&chunks))
    } else {
        let body = json!({"choices": [{"index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": null, "tool_calls": calls}}], "usage": usage});
        Reply::json(200, body.to_string())
    }
}

fn openai_answer(text: &str, usage: Value, stream: bool) -> Reply {
    if stream {
        Reply::event_stream(openai_sse(&[
            json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]}),
            json!({"choices": [], "usage": usage}),
        ]))
    } else {
        let body = json!({"choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": text}}], "usage": usage});
        Reply::json(200, body.to_string())
    }
}

fn openai_agent(server: &Server, calls: Arc<Mutex<usize>>, config: AgentConfig) -> Agent {
    Agent::builder()
        .model(OpenAiModel::new("gpt-4o").base_url(format!("{}/v1", server.url)).without_api_key())
        .tool(counter(calls))
        .config(config)
        .build()
        .unwrap()
}

/// Runs streamed (`run_stream`) or not (`run`); the state either way.
async fn run(agent: &Agent, stream: bool) -> harnessx_agent::RunState {
    if stream {
        let mut events = agent.run_stream("Count.");
        while events.next().await.is_some() {}
        events.into_result().unwrap().unwrap()
    } else {
        agent.run("Count.").await.unwrap()
    }
}

#[tokio::test]
async fn openai_usage_with_cache_and_reasoning_is_summed_per_run_model_and_turn_streamed_or_not() {
    for stream in [true, false] {
        let server = Server::start(vec![
            openai_calls(2, openai_usage(1000, 80, 600, 30), stream),
            openai_answer("Two.", openai_usage(1300, 20, 1000, 0), stream),
        ]);
        let calls = Arc::new(Mutex::new(0));
        let agent = openai_agent(&server, calls.clone(), AgentConfig { stream, ..no_planning() });
        let state = run(&agent, stream).await;
        assert_eq!(state.status, RunStatus::Completed, "{state:?}");
        if stream {
            assert_eq!(server.bodies()[0]["stream_options"], json!({"include_usage": true}));
        }
        let u = state.usage;
        assert_eq!(
            (u.input_tokens, u.output_tokens, u.cached_input_tokens, u.reasoning_tokens),
            (2300, 100, 1600, 30)
        );
        assert_eq!((u.requests, u.tool_calls, u.cache_write_tokens), (2, 2, 0));
        // gpt-4o's built-in price: 700 uncached at $2.50, 1600 cached at $1.25, 100 out at $10.
        assert!((u.cost_usd.unwrap() - 0.00475).abs() < 1e-12, "{u:?}");
        assert_eq!(state.usage_by_turn.len(), 2);
        assert_eq!((state.usage_by_turn[0].input_tokens, state.usage_by_turn[0].tool_calls), (1000, 2));
        assert_eq!((state.usage_by_turn[1].input_tokens, state.usage_by_turn[1].tool_calls), (1300, 0));
        assert_eq!(state.usage_by_model.keys().collect::<Vec<_>>(), ["openai:gpt-4o"]);
        assert_eq!(state.usage_by_model["openai:gpt-4o"], u);
    }
}

/// An Anthropic response: `tool_use` blocks calling `count` `n` times (or text), with
/// its usage, streamed or not.
fn anthropic_reply(n: usize, text: &str, usage: Value, stream: bool) -> Reply {
    let stop = if n > 0 { "tool_use" } else { "end_turn" };
    if !stream {
        let mut content: Vec<Value> = (0..n)
            .map(|i| json!({"type": "tool_use", "id": format!("t{i}"), "name": "count", "input": {}}))
            .collect();
        if n == 0 {
            content.push(json!({"type": "text", "text": text}));
        }
        let body = json!({"id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": content, "stop_reason": stop, "usage": usage});
        return Reply::json(200, body.to_string());
    }
    let mut start_usage = usage.clone();
    start_usage["output_tokens"] = json!(1);
    let mut events = vec![json!({"type": "message_start", "message": {"id": "m", "type": "message",
        "role": "assistant", "content": [], "model": "claude-sonnet-4-5", "usage": start_usage}})];
    for i in 0..n {
        events.push(json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": format!("t{i}"), "name": "count", "input": {}}}));
        events.push(json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": "{}"}}));
        events.push(json!({"type": "content_block_stop", "index": i}));
    }
    if n == 0 {
        events.push(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        );
        events.push(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        );
        events.push(json!({"type": "content_block_stop", "index": 0}));
    }
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": usage["output_tokens"]}}));
    events.push(json!({"type": "message_stop"}));
    Reply::event_stream(anthropic_sse(&events))
}

fn anthropic_agent(server: &Server, calls: Arc<Mutex<usize>>, config: AgentConfig) -> Agent {
    Agent::builder()
        .model(AnthropicModel::new("claude-sonnet-4-5").base_url(&server.url).api_key("test"))
        .tool(counter(calls))
        .config(config)
        .build()
        .unwrap()
}

#[tokio::test]
async fn anthropic_cache_reads_and_writes_are_input_and_priced_at_the_cache_prices_streamed_or_not() {
    for stream in [true, false] {
        let first = json!({"input_tokens": 100, "cache_creation_input_tokens": 200, "cache_read_input_tokens": 1000, "output_tokens": 50});
        let second = json!({"input_tokens": 40, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1300, "output_tokens": 10});
        let server = Server::start(vec![
            anthropic_reply(1, "", first, stream),
            anthropic_reply(0, "One.", second, stream),
        ]);
        let calls = Arc::new(Mutex::new(0));
        let agent = anthropic_agent(&server, calls.clone(), AgentConfig { stream, ..no_planning() });
        let state = run(&agent, stream).await;
        assert_eq!((state.status, state.output.as_str()), (RunStatus::Completed, "One."), "{state:?}");
        let u = state.usage;
        assert_eq!(
            (u.input_tokens, u.cached_input_tokens, u.cache_write_tokens, u.output_tokens),
            (2640, 2300, 200, 60)
        );
        // claude-sonnet-4-5: 140 at $3, 2300 cached at $0.30, 200 written at $3.75, 60 out at $15.
        let expected = (140.0 * 3.0 + 2300.0 * 0.3 + 200.0 * 3.75 + 60.0 * 15.0) / 1e6;
        assert!((u.cost_usd.unwrap() - expected).abs() < 1e-12, "{u:?} vs {expected}");
        // An explicit price wins over the table.
        let server = Server::start(vec![anthropic_reply(
            0,
            "Hi.",
            json!({"input_tokens": 1_000_000, "output_tokens": 0}),
            stream,
        )]);
        let price = ModelPrice::new(1.0, 1.0);
        let agent = anthropic_agent(
            &server,
            calls.clone(),
            AgentConfig { stream, price: Some(price), ..no_planning() },
        );
        assert_eq!(run(&agent, stream).await.usage.cost_usd, Some(1.0));
    }
}

#[tokio::test]
async fn anthropic_tool_call_limit_runs_up_to_it_and_sends_nothing_more() {
    for stream in [true, false] {
        let usage = json!({"input_tokens": 10, "output_tokens": 5});
        let server = Server::start(vec![
            anthropic_reply(3, "", usage.clone(), stream),
            anthropic_reply(0, "no", usage, stream),
        ]);
        let calls = Arc::new(Mutex::new(0));
        let limits = RunLimits { max_tool_calls: Some(2), ..RunLimits::default() };
        let agent = anthropic_agent(&server, calls.clone(), AgentConfig { stream, limits, ..no_planning() });
        let state = run(&agent, stream).await;
        assert_eq!(
            state.run_outcome(),
            RunOutcome::LimitReached { limit: Limit::ToolCalls, usage: state.usage }
        );
        assert_eq!((*calls.lock().unwrap(), server.requests().len()), (2, 1));
        let Some(Message::Tool { content, is_error, .. }) = state.messages.last() else {
            panic!("{state:?}")
        };
        assert_eq!(
            (content.as_str(), *is_error),
            ("tool-call limit of 2 reached: this call was not run", true)
        );
    }
}

#[tokio::test]
async fn the_run_end_event_says_completed_or_which_limit_with_the_usage() {
    let server = Server::start(vec![
        openai_calls(1, openai_usage(10, 1, 0, 0), true),
        openai_calls(1, openai_usage(20, 1, 0, 0), true),
    ]);
    let calls = Arc::new(Mutex::new(0));
    let config =
        AgentConfig { limits: RunLimits { max_turns: Some(2), ..RunLimits::default() }, ..no_planning() };
    let agent = openai_agent(&server, calls.clone(), config);
    let events: Vec<AgentEvent> = agent.run_stream("Count.").collect().await;
    let end = serde_json::to_value(events.last().unwrap()).unwrap();
    assert_eq!(end["type"], "run_end");
    assert_eq!(
        (&end["status"], &end["limit"], &end["turns"]),
        (&json!("limit_reached"), &json!("turns"), &json!(2))
    );
    assert_eq!(end["usage"]["input_tokens"], 30);
    assert_eq!(end["usage"]["tool_calls"], 2);
    assert_eq!((*calls.lock().unwrap(), server.requests().len()), (2, 2));
}

/// A model answering from a script of responses, recording every request.
fn scripted(script: Vec<ModelResponse>, seen: Arc<Mutex<Vec<ModelRequest>>>) -> FunctionModel {
    let script = Arc::new(Mutex::new(script.into_iter()));
    FunctionModel::new(move |request: &ModelRequest| {
        seen.lock().unwrap().push(request.clone());
        Ok(script.lock().unwrap().next().unwrap_or_else(|| ModelResponse::text("done")))
    })
}

fn with_usage(mut response: ModelResponse, input: u64, output: u64) -> ModelResponse {
    response.usage = Usage { input_tokens: input, output_tokens: output, ..Usage::default() };
    response
}

#[tokio::test]
async fn a_specialists_usage_is_added_to_its_parents_by_model_and_turn() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let specialist_model =
        scripted(vec![with_usage(ModelResponse::text("found it"), 500, 20)], Arc::default())
            .with_name("test:small");
    let parent = scripted(
        vec![
            with_usage(
                ModelResponse::tool_calls(vec![ToolCall::new("s1", "researcher", r#"{"task": "look"}"#)]),
                100,
                10,
            ),
            with_usage(ModelResponse::text("done"), 200, 5),
        ],
        seen,
    );
    let agent = Agent::builder()
        .model(parent)
        .specialist(SubAgent::new("researcher", "Looks things up.").model(specialist_model))
        .config(no_planning())
        .build()
        .unwrap();
    let state = agent.run("Go.").await.unwrap();
    assert_eq!(state.status, RunStatus::Completed);
    assert_eq!((state.usage.input_tokens, state.usage.output_tokens, state.usage.requests), (800, 35, 3));
    assert_eq!(state.usage.tool_calls, 1);
    assert_eq!(state.usage_by_model["test:small"].input_tokens, 500, "{:?}", state.usage_by_model);
    assert_eq!(state.usage_by_model.len(), 2, "{:?}", state.usage_by_model);
    assert_eq!(state.usage_by_model.values().copied().sum::<Usage>(), state.usage);
    assert_eq!(state.usage_by_turn[0].input_tokens, 600, "the specialist's usage is its turn's");
}

#[tokio::test]
async fn a_tool_past_its_own_limit_gets_an_error_result_and_the_run_goes_on() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let call = |id: &str| ToolCall::new(id, "count", "{}");
    let model = scripted(
        vec![
            ModelResponse::tool_calls(vec![call("a"), call("b")]),
            ModelResponse::tool_calls(vec![call("c")]),
        ],
        seen.clone(),
    );
    let calls = Arc::new(Mutex::new(0));
    let mut limits = RunLimits::default();
    limits.max_calls_per_tool.insert("count".into(), 1);
    let agent = Agent::builder()
        .model(model)
        .tool(counter(calls.clone()))
        .config(AgentConfig { limits, ..no_planning() })
        .build()
        .unwrap();
    let state = agent.run("Count.").await.unwrap();
    assert_eq!((state.status, state.output.as_str()), (RunStatus::Completed, "done"));
    assert_eq!(*calls.lock().unwrap(), 1);
    let refusals: Vec<&str> = state
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { content, is_error: true, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(refusals, ["tool-call limit of 1 for count reached: this call was not run"; 2]);
}

#[tokio::test]
async fn the_budget_note_tells_the_model_what_is_left_and_keeps_each_request_a_prefix_of_the_next() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let model = scripted(
        vec![
            with_usage(ModelResponse::tool_calls(vec![ToolCall::new("a", "count", "{}")]), 100, 10),
            with_usage(ModelResponse::text("done"), 200, 5),
        ],
        seen.clone(),
    );
    let limits = RunLimits {
        max_turns: Some(4),
        max_tool_calls: Some(5),
        max_tokens: Some(10_000),
        ..RunLimits::default()
    };
    let config = AgentConfig { limits, budget_note: true, ..no_planning() };
    let agent = Agent::builder().model(model).tool(counter(Arc::default())).config(config).build().unwrap();
    assert_eq!(agent.run("Count.").await.unwrap().status, RunStatus::Completed);
    let seen = seen.lock().unwrap().clone();
    let last = |r: &ModelRequest| r.messages.last().map(|m| format!("{m:?}")).unwrap_or_default();
    assert!(
        last(&seen[0]).contains("[Budget left for this run: 4 model requests, 5 tool calls, 10000 tokens."),
        "{}",
        last(&seen[0])
    );
    assert!(
        last(&seen[1]).contains("[Budget left for this run: 3 model requests, 4 tool calls, 9890 tokens."),
        "{}",
        last(&seen[1])
    );
    // The note stays where it was sent: the first request is a prefix of the second.
    assert_eq!(seen[1].messages[..seen[0].messages.len()], seen[0].messages[..]);
    // Off by default: no note.
    let model = scripted(vec![ModelResponse::text("hi")], Arc::new(Mutex::new(Vec::new())));
    let agent = Agent::builder().model(model).config(no_planning()).build().unwrap();
    let state = agent.run("Count.").await.unwrap();
    assert!(!format!("{:?}", state.messages).contains("Budget left"));
}

#[tokio::test]
async fn a_cost_limit_with_no_known_price_fails_before_the_first_request() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let limits = RunLimits { max_cost_usd: Some(1.0), ..RunLimits::default() };
    let model = scripted(vec![], seen.clone());
    let agent =
        Agent::builder().model(model).config(AgentConfig { limits, ..no_planning() }).build().unwrap();
    let e = agent.run("Hi.").await.unwrap_err();
    assert!(matches!(e, AgentError::UnknownPrice { .. }), "{e}");
    assert!(e.to_string().contains("--price IN,OUT[,CACHED_IN]"), "{e}");
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn limits_given_for_one_run_replace_the_agents() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let model =
        scripted(vec![ModelResponse::tool_calls(vec![ToolCall::new("a", "count", "{}")])], seen.clone());
    let agent =
        Agent::builder().model(model).tool(counter(Arc::default())).config(no_planning()).build().unwrap();
    let start = harnessx_agent::Start {
        prompt: "Count.".into(),
        limits: Some(RunLimits { max_turns: Some(1), ..RunLimits::default() }),
        ..Default::default()
    };
    let permissions = agent.permissions().clone();
    let mut steps = DirectSteps;
    let state = harnessx_agent::drive(&agent, &mut steps, start, &permissions, None).await.unwrap();
    assert_eq!(
        (state.status, state.limit, seen.lock().unwrap().len()),
        (RunStatus::LimitReached, Some(Limit::Turns), 1)
    );
}

/// The plainest backend: asks the model, runs the batch, records nothing.
struct DirectSteps;

impl harnessx_agent::Steps for DirectSteps {
    type Error = AgentError;

    fn run_id(&self) -> Option<&str> {
        None
    }

    async fn response(
        &mut self,
        agent: &Agent,
        turn: u32,
        request: &ModelRequest,
        events: Option<&harnessx_agent::Events>,
    ) -> Result<ModelResponse, AgentError> {
        agent.request_turn(request, events, turn).await
    }

    async fn decide(
        &mut self,
        permissions: &harnessx_core::PermissionManager,
        request: harnessx_core::ApprovalRequest,
        _arguments: &str,
    ) -> Result<Option<harnessx_core::ApprovalDecision>, AgentError> {
        Ok(permissions.decision(&request).await)
    }

    async fn execute(
        &mut self,
        agent: &Agent,
        _turn: u32,
        batch: harnessx_core::PlannedBatch,
        ctx: &harnessx_core::RunContext,
    ) -> Result<Vec<harnessx_agent::Executed>, AgentError> {
        let outcomes = agent.tools().run_planned(batch, ctx, &harnessx_core::RunHooks::new()).await;
        Ok(outcomes.into_iter().map(|o| harnessx_agent::Executed::new(o.result)).collect())
    }

    async fn finish(&mut self, _output: &str) -> Result<(), AgentError> {
        Ok(())
    }
}

// A call cut by the tool-call limit got no `tool_call_end` event: a `--json` reader never
// saw the error result the model was given.
#[tokio::test]
async fn a_call_cut_by_a_limit_has_its_start_and_end_events() {
    let call = |id: &str| ToolCall::new(id, "count", "{}");
    // The tool-call limit cuts the batch; the token limit stops the next one before it runs.
    for (limits, text, ran) in [
        (
            RunLimits { max_tool_calls: Some(2), ..RunLimits::default() },
            "tool-call limit of 2 reached: this call was not run",
            2,
        ),
        (
            RunLimits { max_tokens: Some(10), ..RunLimits::default() },
            "token limit of 10 reached: this call was not run",
            0,
        ),
    ] {
        let model = scripted(
            vec![with_usage(ModelResponse::tool_calls(vec![call("a"), call("b"), call("c")]), 20, 5)],
            Arc::default(),
        );
        let calls = Arc::new(Mutex::new(0));
        let agent = Agent::builder()
            .model(model)
            .tool(counter(calls.clone()))
            .config(AgentConfig { limits, ..no_planning() })
            .build()
            .unwrap();
        let events: Vec<Value> =
            agent.run_stream("Count.").map(|e| serde_json::to_value(e).unwrap()).collect::<Vec<_>>().await;
        assert_eq!(*calls.lock().unwrap(), ran);
        let of =
            |kind: &str| -> Vec<Value> { events.iter().filter(|e| e["type"] == kind).cloned().collect() };
        let starts = of("tool_call_start");
        let ends = of("tool_call_end");
        let ids = |list: &[Value]| -> Vec<String> {
            let mut ids: Vec<String> =
                list.iter().map(|e| e["call_id"].as_str().unwrap().to_owned()).collect();
            ids.sort();
            ids
        };
        assert_eq!(ids(&starts), ["a", "b", "c"], "{events:?}");
        assert_eq!(ids(&ends), ["a", "b", "c"], "{events:?}");
        let indexes: Vec<u64> = starts.iter().map(|e| e["index"].as_u64().unwrap()).collect();
        assert_eq!(indexes, [0, 1, 2], "positions in the turn: {starts:?}");
        assert!(starts.iter().all(|s| s["tool"] == "count"), "{starts:?}");
        let cut: Vec<&Value> = ends.iter().filter(|e| e["is_error"] == true).collect();
        assert_eq!(cut.len(), 3 - ran, "{ends:?}");
        assert!(cut.iter().all(|e| e["content"] == text), "{cut:?}");
        assert_eq!(events.last().unwrap()["type"], "run_end");
    }
}

/// A model that thinks aloud at length and calls `count` each turn, with little usage.
fn verbose(turns: usize) -> FunctionModel {
    let n = Arc::new(Mutex::new(0));
    FunctionModel::new(move |_| {
        let mut n = n.lock().unwrap();
        *n += 1;
        let mut response = if *n <= turns {
            let mut r = ModelResponse::tool_calls(vec![ToolCall::new(format!("c{n}"), "count", "{}")]);
            r.content = "Thinking it over at length. ".repeat(120);
            r
        } else {
            ModelResponse::text("done")
        };
        response.usage = Usage { input_tokens: 10, output_tokens: 1, ..Usage::default() };
        Ok(response)
    })
}

// A compaction summary's usage never reached the budget, so summaries escaped
// `--max-tokens` and `--max-cost-usd`.
#[tokio::test]
async fn a_summary_s_tokens_count_toward_the_run_s_usage_and_limits() {
    let summaries = Arc::new(Mutex::new(0));
    let count = summaries.clone();
    let summarizer = FunctionModel::new(move |_| {
        *count.lock().unwrap() += 1;
        Ok(with_usage(ModelResponse::text("Earlier: counted a few times."), 5_000, 100))
    })
    .with_name("test:summarizer");
    let context = harnessx_agent::ContextPolicy {
        window: Some(2_000),
        keep_turns: 1,
        summarizer: harnessx_agent::Summarizer::model(summarizer),
        ..Default::default()
    };
    let build = |limits: RunLimits, context: harnessx_agent::ContextPolicy| {
        Agent::builder()
            .model(verbose(12))
            .tool(counter(Arc::default()))
            .config(AgentConfig { limits, context, ..no_planning() })
            .build()
            .unwrap()
    };
    // No limit: the summaries' requests and tokens are the run's, under the summarizer.
    let state = build(RunLimits::default(), context.clone()).run("Count.").await.unwrap();
    assert_eq!(state.status, RunStatus::Completed);
    let n = *summaries.lock().unwrap() as u64;
    assert!(n >= 1, "the history was summarised");
    assert_eq!(state.usage.requests, 13 + n, "{:?}", state.usage);
    assert_eq!(state.usage.input_tokens, 130 + 5_000 * n, "{:?}", state.usage);
    assert_eq!(state.usage_by_model["test:summarizer"].input_tokens, 5_000 * n, "{:?}", state.usage_by_model);
    // A token limit the summary passes stops the run.
    let limits = RunLimits { max_tokens: Some(3_000), ..RunLimits::default() };
    let state = build(limits, context).run("Count.").await.unwrap();
    assert_eq!(state.status, RunStatus::LimitReached, "{:?}", state.usage);
    assert_eq!(state.limit, Some(Limit::Tokens));
}

// A tool's image is input of the next request before any provider has counted it: a
// token limit that the last input plus the image (765 tokens for a 1024×1024 PNG by
// OpenAI's formula) would pass stops the run before that request is sent; without the
// image the same limit lets it through.
#[tokio::test]
async fn an_image_a_tool_returned_counts_against_the_tokens_left_before_the_next_request() {
    use harnessx_core::content::{Content, Image};

    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    png.extend(1024u32.to_be_bytes());
    png.extend(1024u32.to_be_bytes());
    png.extend([8, 2, 0, 0, 0, 0, 0, 0, 0]);
    for with_image in [true, false] {
        let png = png.clone();
        let handler = ToolHandler::from_async(move |_, _| {
            let png = png.clone();
            async move {
                Ok(match with_image {
                    true => Content::new().text("shot").image(Image::png(png)).into(),
                    false => "shot".into(),
                })
            }
        });
        let shoot =
            ToolDefinition::new("shoot", "Screenshot.", json!({"type": "object", "properties": {}}), handler);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let model = scripted(
            vec![with_usage(ModelResponse::tool_calls(vec![ToolCall::new("a", "shoot", "{}")]), 100, 10)],
            seen.clone(),
        )
        .with_name("openai:gpt-4o");
        let limits = RunLimits { max_tokens: Some(800), ..RunLimits::default() };
        let config = AgentConfig { limits, ..no_planning() };
        let agent = Agent::builder().model(model).tool(shoot).config(config).build().unwrap();
        let result = agent.run("Look.").await.unwrap();
        let asked = seen.lock().unwrap().len();
        match with_image {
            true => {
                assert_eq!(result.status, RunStatus::LimitReached);
                assert_eq!(result.limit, Some(Limit::Tokens));
                assert_eq!(asked, 1, "the request with the image was sent");
            }
            false => {
                assert_eq!(result.status, RunStatus::Completed);
                assert_eq!(asked, 2);
            }
        }
    }
}
