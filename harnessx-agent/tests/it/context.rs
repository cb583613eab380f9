//! Long runs that fit the context window, against a loopback provider that enforces a
//! window as real ones do (HTTP 400 with the real error bodies once a request is too
//! large; `harnessx_test_support::window`): a run whose tool results add up to several
//! windows completes without a refused request, every request keeps the system prompt
//! and the first message and carries no orphan call or result, the prompt prefix is
//! byte-identical between compactions, a refusal is recovered once, and the cap applies
//! to user, built-in and MCP tools alike.

use futures_util::StreamExt;
use harnessx_agent::model::{AnthropicModel, Model, OpenAiModel};
use harnessx_agent::{Agent, AgentConfig, AgentError, AgentEvent, ContextPolicy, RunLimits};
use harnessx_core::{ResultDir, ToolCall, ToolHandler, ToolOptions, ToolPolicy, ToolRegistry};
use harnessx_test_support::window::{Dialect, Seen, WindowServer};
use serde_json::{Value, json};

const SYSTEM: &str = "You are a careful reader. Fetch every page.";
const PROMPT: &str = "Read all the pages and tell me when you are done.";

/// A registry with `fetch`, whose result is `size` characters of numbered lines.
fn fetching(size: usize) -> ToolRegistry {
    let registry = ToolRegistry::new();
    let schema = json!({"type": "object", "properties": {"page": {"type": "integer"}}, "required": ["page"]});
    let handler = ToolHandler::from_async(move |args: Value, _| async move {
        let page = args["page"].as_u64().unwrap_or_default();
        let mut text = String::new();
        let mut line = 0;
        while text.len() < size {
            text.push_str(&format!("page {page} line {line}: the quick brown fox jumps over the lazy dog\n"));
            line += 1;
        }
        text.truncate(size);
        Ok(text.into())
    });
    registry.register_with_schema("fetch", "Fetches a page.", schema, handler, ToolOptions::new()).unwrap();
    registry
}

fn openai(server: &WindowServer, name: &str) -> OpenAiModel {
    OpenAiModel::new(name).base_url(format!("{}/v1", server.server.url)).api_key("sk-test")
}

fn agent(model: impl Model + 'static, registry: ToolRegistry, window: Option<u64>) -> Agent {
    let config = AgentConfig {
        planning: false,
        stream: false,
        limits: RunLimits { max_turns: Some(200), ..RunLimits::default() },
        context: ContextPolicy { window, keep_turns: 3, ..ContextPolicy::default() },
        ..AgentConfig::default()
    };
    Agent::builder().model(model).registry(registry).system_prompt(SYSTEM).config(config).build().unwrap()
}

/// Runs to the end, collecting the compaction events.
async fn run(agent: &Agent) -> (Result<String, AgentError>, Vec<(u64, u64)>) {
    let mut stream = agent.run_stream(PROMPT);
    let mut compactions = Vec::new();
    while let Some(event) = stream.next().await {
        if let AgentEvent::Compaction { tokens_before, tokens_after } = event {
            compactions.push((tokens_before, tokens_after));
        }
    }
    let result = stream.into_result().unwrap().map(|r| r.output);
    (result, compactions)
}

/// The messages of an OpenAI-format body.
fn messages(body: &Value) -> &[Value] {
    body["messages"].as_array().map(Vec::as_slice).unwrap_or_default()
}

/// Every call in the body has exactly one result right after its message, and every
/// result answers a call of the message before it.
fn assert_paired(body: &Value) {
    let mut open: Vec<String> = Vec::new();
    for m in messages(body) {
        match m["role"].as_str() {
            Some("assistant") => {
                assert!(open.is_empty(), "calls without results: {open:?}");
                open = m["tool_calls"]
                    .as_array()
                    .map(|calls| calls.iter().map(|c| c["id"].as_str().unwrap().to_owned()).collect())
                    .unwrap_or_default();
            }
            Some("tool") => {
                let id = m["tool_call_id"].as_str().unwrap();
                let at = open.iter().position(|o| o == id);
                assert!(at.is_some(), "a result without its call: {id}");
                open.remove(at.unwrap());
            }
            _ => assert!(open.is_empty(), "calls without results: {open:?}"),
        }
    }
    assert!(open.is_empty(), "calls without results: {open:?}");
}

/// Where the `messages` array sits in a raw body: (start of `[`, end after `]`).
fn messages_span(raw: &str) -> (usize, usize) {
    let key = raw.find("\"messages\":").expect("a messages array");
    let start = key + raw[key..].find('[').unwrap();
    let mut values = serde_json::Deserializer::from_str(&raw[start..]).into_iter::<Value>();
    values.next().unwrap().unwrap();
    (start, start + values.byte_offset())
}

/// Whether `later`'s messages begin with `earlier`'s, byte for byte, and the rest of the
/// request is the same.
fn prefix_kept(earlier: &str, later: &str) -> bool {
    let (sa, ea) = messages_span(earlier);
    let (sb, eb) = messages_span(later);
    later[sb..eb].starts_with(&earlier[sa..ea - 1]) && earlier[..sa] == later[..sb]
}

fn accepted_turns(seen: &[Seen]) -> Vec<&Seen> {
    seen.iter().filter(|s| !s.summary && !s.refused).collect()
}

#[tokio::test]
async fn a_run_whose_results_add_up_to_several_windows_completes() {
    // 40 pages of 3,000 characters (about 1,000 of the server's tokens each): over six
    // windows of 6,000 tokens in all.
    let server = WindowServer::start(Dialect::OpenAi, 6_000, 40);
    let agent = agent(openai(&server, "gpt-4o"), fetching(3_000), Some(6_000));
    let (result, compactions) = run(&agent).await;
    assert_eq!(result.unwrap(), "done after 40 pages");
    let seen = server.seen();
    let total: usize = 40 * 3_000;
    assert!(total as u64 / 3 > 6 * 6_000, "the results add up to several windows");
    // No request over the window reached the server: none was refused.
    assert!(
        seen.iter().all(|s| !s.refused && s.tokens <= 6_000),
        "{:?}",
        seen.iter().map(|s| s.tokens).collect::<Vec<_>>()
    );
    assert!(compactions.len() >= 2, "compacted {} times", compactions.len());
    assert!(compactions.len() <= 20, "compaction should be rare: {}", compactions.len());
    for (before, after) in &compactions {
        assert!(after < before, "{before} -> {after}");
    }
    for s in accepted_turns(&seen) {
        let m = messages(&s.body);
        assert_eq!(m[0], json!({"role": "system", "content": SYSTEM}));
        assert_eq!(m[1], json!({"role": "user", "content": PROMPT}));
        assert_paired(&s.body);
    }
}

#[tokio::test]
async fn the_prompt_prefix_is_identical_between_compactions() {
    let server = WindowServer::start(Dialect::OpenAi, 6_000, 30);
    let agent = agent(openai(&server, "gpt-4o"), fetching(3_000), Some(6_000));
    let (result, compactions) = run(&agent).await;
    result.unwrap();
    assert!(!compactions.is_empty());
    // The raw bodies of the agent's own requests (not the summarising ones), in order.
    let raws: Vec<String> = server
        .server
        .requests()
        .iter()
        .filter(|r| !r.body["messages"][0]["content"].as_str().unwrap_or("").starts_with("You compact"))
        .map(|r| String::from_utf8(r.raw.clone()).unwrap())
        .collect();
    let breaks = raws.windows(2).filter(|pair| !prefix_kept(&pair[0], &pair[1])).count();
    // Each compaction changes the history once; every other request extends the one
    // before it byte for byte.
    assert_eq!(breaks, compactions.len(), "{breaks} prefix changes for {} compactions", compactions.len());
}

/// A model the window table does not know, so the run learns the window from the
/// provider's first refusal.
async fn recovers(dialect: Dialect) {
    let server = WindowServer::start(dialect, 4_000, 20);
    let model: Box<dyn FnOnce() -> Agent> = match dialect {
        Dialect::Anthropic => Box::new(|| {
            let model =
                AnthropicModel::new("local-claude").base_url(&server.server.url).api_key("sk-ant-test");
            agent(model, fetching(2_000), None)
        }),
        _ => Box::new(|| agent(openai(&server, "local-model"), fetching(2_000), None)),
    };
    let agent = model();
    let (result, compactions) = run(&agent).await;
    assert_eq!(result.unwrap(), "done after 20 pages", "{dialect:?}");
    let seen = server.seen();
    let refused = seen.iter().filter(|s| s.refused).count();
    assert_eq!(refused, 1, "{dialect:?}: one refusal teaches the window; later requests fit");
    assert!(!compactions.is_empty());
}

#[tokio::test]
async fn a_context_length_refusal_is_recovered_openai() {
    recovers(Dialect::OpenAi).await;
}

#[tokio::test]
async fn a_context_length_refusal_is_recovered_anthropic() {
    recovers(Dialect::Anthropic).await;
}

#[tokio::test]
async fn a_context_length_refusal_is_recovered_llama_cpp() {
    recovers(Dialect::LlamaCpp).await;
}

#[tokio::test]
async fn a_context_length_refusal_is_recovered_vllm() {
    recovers(Dialect::Vllm).await;
}

#[tokio::test]
async fn a_request_that_cannot_fit_fails_clearly_without_looping() {
    // One result alone (the cap raised past it) is larger than the window.
    let server = WindowServer::start(Dialect::OpenAi, 2_000, 5);
    let registry =
        ToolRegistry::with_policy(ToolPolicy { max_result_chars: Some(30_000), ..Default::default() });
    let big = fetching(12_000);
    let spec = big.get_tool("fetch").unwrap();
    registry.register_tool(spec).unwrap();
    let agent = agent(openai(&server, "local-model"), registry, None);
    let (result, _) = run(&agent).await;
    let error = result.unwrap_err();
    assert!(matches!(error, AgentError::ContextOverflow { .. }), "{error:?}");
    let text = error.to_string();
    assert!(
        text.contains("does not fit the model's context window") && text.contains("--max-result-chars"),
        "{text}"
    );
    assert!(server.seen().len() <= 3, "bounded: {} requests", server.seen().len());
}

#[tokio::test]
async fn a_user_tool_s_long_result_is_capped_and_saved() {
    let dir = tempfile::tempdir().unwrap();
    let server = WindowServer::start(Dialect::OpenAi, 1_000_000, 1);
    let registry =
        ToolRegistry::with_policy(ToolPolicy { max_result_chars: Some(2_000), ..Default::default() });
    let big = fetching(100_000);
    registry.register_tool(big.get_tool("fetch").unwrap()).unwrap();
    let mut agent = agent(openai(&server, "gpt-4o"), registry, None);
    agent = rebuild_with_result_dir(agent, ResultDir::new(dir.path().join("results")).shown_as("results"));
    let (result, _) = run(&agent).await;
    result.unwrap();
    let second = &server.seen()[1].body;
    let content = messages(second).last().unwrap()["content"].as_str().unwrap().to_owned();
    assert!(content.chars().count() <= 2_000, "{}", content.chars().count());
    assert!(content.starts_with("page 1 line 0:"), "the head");
    assert!(
        content.contains("characters cut here; the whole result is saved in results/fetch-call_1.txt"),
        "{content}"
    );
    let saved = std::fs::read_to_string(dir.path().join("results/fetch-call_1.txt")).unwrap();
    assert_eq!(saved.len(), 100_000);
    assert!(saved.ends_with(content.lines().last().unwrap()), "the tail is the end of the whole text");
}

fn rebuild_with_result_dir(agent: Agent, dir: ResultDir) -> Agent {
    let mut config = agent.config().clone();
    config.result_dir = Some(dir);
    let model = agent.model().unwrap().clone();
    Agent::builder()
        .model_arc(model)
        .registry(agent.tools().clone())
        .system_prompt(SYSTEM)
        .config(config)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_built_in_tool_s_long_result_is_capped() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..20_000).map(|i| format!("row {i}\n")).collect();
    std::fs::write(dir.path().join("big.txt"), &text).unwrap();
    let registry =
        ToolRegistry::with_policy(ToolPolicy { max_result_chars: Some(1_500), ..Default::default() });
    registry.load_builtin("read_file", json!({"base_path": dir.path()})).unwrap();
    let ctx = harnessx_core::RunContext::new()
        .with_result_dir(ResultDir::new(dir.path().join("out")).shown_as("out"));
    let result = registry.execute_in(&ToolCall::new("c9", "read_file", r#"{"path": "big.txt"}"#), &ctx).await;
    assert!(!result.is_error, "{}", result.content);
    assert!(result.content.chars().count() <= 1_500);
    assert!(
        result.content.contains("row 0") && result.content.contains("saved in out/read_file-c9.txt"),
        "{}",
        result.content
    );
    let saved = std::fs::read_to_string(dir.path().join("out/read_file-c9.txt")).unwrap();
    // The whole output, after read_file's own limits: the capped text's head and tail
    // are its ends.
    assert!(saved.chars().count() > 1_500);
    let tail = result.content.lines().last().unwrap();
    assert!(saved.trim_end().ends_with(tail.trim_end()), "{tail:?}");
    assert!(saved.starts_with(result.content.lines().next().unwrap()));
}

#[cfg(feature = "mcp")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tool_s_long_result_is_capped() {
    use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
    use harnessx_mcp::{McpOptions, McpServer};
    use harnessx_test_support::npm::ensure_npm_package;

    let Some(prefix) = tokio::task::spawn_blocking(|| {
        ensure_npm_package("@modelcontextprotocol/server-everything", "2026.8.31")
    })
    .await
    .unwrap() else {
        return;
    };
    let script = prefix.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let server = McpServer::stdio(
        "node",
        [script.display().to_string(), "stdio".into()],
        Vec::<(String, String)>::new(),
    );
    let long = "mcp ".repeat(5_000);
    let arguments = json!({"message": long}).to_string();
    let model = FunctionModel::new(move |request| {
        Ok(match request.messages.last() {
            Some(Message::Tool { content, .. }) => ModelResponse::text(content.clone()),
            _ => ModelResponse::tool_calls(vec![ToolCall::new("m1", "echo", arguments.clone())]),
        })
    });
    let config = AgentConfig {
        planning: false,
        tools: ToolPolicy { max_result_chars: Some(1_000), ..Default::default() },
        ..AgentConfig::default()
    };
    let agent = Agent::builder()
        .model(model)
        .config(config)
        .mcp_with(server, McpOptions::default())
        .connect()
        .await
        .unwrap();
    let output = agent.run("Echo it.").await.unwrap().output;
    agent.close().await;
    assert!(output.chars().count() <= 1_000, "{}", output.chars().count());
    assert!(output.starts_with("Echo: mcp mcp") && output.contains("characters cut here"), "{output}");
}

/// A PNG header of `width` × `height` (enough for its size to be read; never decoded).
fn png_header(width: u32, height: u32) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    png.extend(width.to_be_bytes());
    png.extend(height.to_be_bytes());
    png.extend([8, 2, 0, 0, 0, 0, 0, 0, 0]);
    png
}

// Images are counted by the provider's formula (a 1024×1024 PNG of a few bytes is 765
// tokens for OpenAI), and a compaction drops old images before any old text: each
// leaves a line naming it, the newest turns keep theirs, and no text is cleared.
#[tokio::test]
async fn old_images_go_before_old_text_each_leaving_a_line_that_names_it() {
    use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
    use harnessx_core::content::Image;
    use std::sync::{Arc, Mutex};

    let registry = ToolRegistry::new();
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let handler = ToolHandler::from_async(|args: Value, _| async move {
        let n = args["n"].as_u64().unwrap_or_default();
        Ok(harnessx_core::content::Content::new()
            .text(format!("screenshot {n}"))
            .image(Image::png(png_header(1024, 1024)))
            .into())
    });
    registry
        .register_with_schema("screenshot", "Takes a screenshot.", schema, handler, ToolOptions::new())
        .unwrap();
    let seen: Arc<Mutex<Vec<Vec<Message>>>> = Arc::default();
    let log = seen.clone();
    let model = FunctionModel::new(move |req| {
        log.lock().unwrap().push(req.messages.clone());
        let n = req.messages.iter().filter(|m| matches!(m, Message::Tool { .. })).count();
        Ok(if n < 8 {
            ModelResponse::tool_calls(vec![ToolCall::new(
                format!("c{n}"),
                "screenshot",
                format!(r#"{{"n": {n}}}"#),
            )])
        } else {
            ModelResponse::text("done")
        })
    })
    .with_name("openai:gpt-4o");
    // 8 images of 765 tokens: about 6,100 tokens, over 70 % of a 6,000 window.
    let agent = agent(model, registry, Some(6_000));
    let (result, compactions) = run(&agent).await;
    assert_eq!(result.unwrap(), "done");
    assert!(!compactions.is_empty(), "the images were never counted");
    let seen = seen.lock().unwrap();
    let last = seen.last().unwrap();
    let tools: Vec<&Message> = last.iter().filter(|m| matches!(m, Message::Tool { .. })).collect();
    assert_eq!(tools.len(), 8);
    let dropped = tools.iter().filter(|m| m.parts().is_empty()).count();
    assert!((1..8).contains(&dropped), "{dropped} of 8 images dropped");
    for m in &tools[..dropped] {
        let (text, line) = m.content().split_once('\n').unwrap();
        assert!(text.starts_with("screenshot "), "the text stays: {}", m.content());
        assert_eq!(line, "[image: image/png, 33 bytes: removed from the history to fit the context window]");
    }
    assert!(tools[dropped..].iter().all(|m| m.parts().len() == 1), "the newest keep their images");
}
