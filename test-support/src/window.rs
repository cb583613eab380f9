//! A loopback provider with a context window it enforces the way real ones do: a request
//! whose prompt is larger than the window is answered HTTP 400 with the provider's own
//! error body (OpenAI's `context_length_exceeded`, Anthropic's `prompt is too long`,
//! llama.cpp's `exceed_context_size_error`, vLLM's `maximum context length`), and never
//! reaches the stand-in model. It counts a prompt its own way (the characters of its
//! system prompt, messages and tools as JSON, a token per 3), unlike any client
//! estimate, and reports that count as the prompt's usage, as providers do.
//!
//! The stand-in model calls the tool `fetch` with `{"page": N}` once per request it
//! accepts, N counting up from 1, until `pages` calls were made; then it answers
//! `done after N pages`. A request whose system prompt starts with
//! [`SUMMARY_MARK`] is a compaction's summarising request: it is answered with a short
//! summary text (and counted, and refused when too large, like any other).

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::server::{Recorded, Reply, Server};

/// How a summarising request's system prompt starts (harnessx's instructions).
pub const SUMMARY_MARK: &str = "You compact the history";

/// The provider a window server imitates: its wire format and error body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// OpenAI chat completions; 400 `context_length_exceeded`.
    OpenAi,
    /// Anthropic messages; 400 `prompt is too long: N tokens > M maximum`.
    Anthropic,
    /// llama.cpp's `llama-server` (chat completions); 400 `exceed_context_size_error`.
    LlamaCpp,
    /// vLLM (chat completions); 400 `This model's maximum context length is …`.
    Vllm,
}

/// One request as the window server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Its size by the server's count.
    pub tokens: u64,
    /// Whether it was refused as too large.
    pub refused: bool,
    /// Whether it was a summarising request.
    pub summary: bool,
    /// The request body.
    pub body: Value,
}

/// A running window server. See the [module docs](self).
pub struct WindowServer {
    /// The server (its `url`, and every request's raw body).
    pub server: Server,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl WindowServer {
    /// Starts a server of `dialect` with a window of `window` tokens whose model makes
    /// `pages` calls before it answers.
    pub fn start(dialect: Dialect, window: u64, pages: u32) -> Self {
        Self::calling(dialect, window, pages, "fetch", None)
    }

    /// Like [`start`](Self::start), with a model that calls `tool` with `arguments`
    /// (`{"page": N}` when `None`).
    pub fn calling(dialect: Dialect, window: u64, pages: u32, tool: &str, arguments: Option<&str>) -> Self {
        let call = Call { tool: tool.to_owned(), arguments: arguments.map(str::to_owned) };
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let log = seen.clone();
        let page = Arc::new(Mutex::new(0u32));
        let server = Server::respond(move |request| {
            let answer = answer(dialect, window, pages, &page, &call, request);
            log.lock().unwrap_or_else(|e| e.into_inner()).push(answer.0);
            answer.1
        });
        Self { server, seen }
    }

    /// What it saw, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The server's count of a request's prompt: a token per 3 characters of its system
/// prompt, messages and tools as JSON.
pub fn count(body: &Value) -> u64 {
    let chars = |v: &Value| if v.is_null() { 0 } else { v.to_string().chars().count() as u64 };
    (chars(&body["system"]) + chars(&body["messages"]) + chars(&body["tools"])).div_ceil(3)
}

fn system_text(dialect: Dialect, body: &Value) -> String {
    match dialect {
        Dialect::Anthropic => match &body["system"] {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
            _ => String::new(),
        },
        _ => body["messages"][0]
            .as_object()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("system"))
            .and_then(|m| m.get("content"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    }
}

/// The call the stand-in model makes.
struct Call {
    tool: String,
    arguments: Option<String>,
}

fn answer(
    dialect: Dialect,
    window: u64,
    pages: u32,
    page: &Mutex<u32>,
    call: &Call,
    request: &Recorded,
) -> (Seen, Reply) {
    let body = &request.body;
    let tokens = count(body);
    let summary = system_text(dialect, body).starts_with(SUMMARY_MARK);
    let mut seen = Seen { tokens, refused: false, summary, body: body.clone() };
    if tokens > window {
        seen.refused = true;
        return (seen, refusal(dialect, window, tokens));
    }
    let streamed = body["stream"] == true;
    if summary {
        let text = "Summary: the agent fetched pages and read their text; nothing failed.";
        return (seen, text_reply(dialect, text, tokens, streamed));
    }
    let mut page = page.lock().unwrap_or_else(|e| e.into_inner());
    if *page >= pages {
        let text = format!("done after {page} pages");
        return (seen, text_reply(dialect, &text, tokens, streamed));
    }
    *page += 1;
    (seen, call_reply(dialect, call, *page, tokens, streamed))
}

/// The 400 each provider answers a prompt larger than its window with.
fn refusal(dialect: Dialect, window: u64, tokens: u64) -> Reply {
    let body = match dialect {
        Dialect::OpenAi => json!({"error": {
            "message": format!("This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages."),
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
        Dialect::Anthropic => json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": format!("prompt is too long: {tokens} tokens > {window} maximum")}}),
        Dialect::LlamaCpp => json!({"error": {"code": 400,
            "message": format!("request ({tokens} tokens) exceeds the available context size ({window} tokens), try increasing it"),
            "type": "exceed_context_size_error", "n_prompt_tokens": tokens, "n_ctx": window}}),
        Dialect::Vllm => json!({"object": "error",
            "message": format!("This model's maximum context length is {window} tokens. However, you requested {tokens} tokens in the messages, Please reduce the length of the messages."),
            "type": "BadRequestError", "param": null, "code": 400}),
    };
    Reply::json(400, body.to_string())
}

fn call_reply(dialect: Dialect, call: &Call, page: u32, tokens: u64, streamed: bool) -> Reply {
    let id = format!("call_{page}");
    let args = call.arguments.clone().unwrap_or_else(|| format!("{{\"page\": {page}}}"));
    let input: Value = serde_json::from_str(&args).unwrap_or_default();
    let name = call.tool.as_str();
    match dialect {
        Dialect::Anthropic => Reply::json(
            200,
            json!({"id": "msg", "type": "message", "role": "assistant", "model": "m",
                "content": [{"type": "tool_use", "id": id, "name": name, "input": input}],
                "stop_reason": "tool_use", "usage": {"input_tokens": tokens, "output_tokens": 9}})
            .to_string(),
        ),
        _ if streamed => {
            let call = json!({"id": "r", "object": "chat.completion.chunk", "choices": [{"index": 0,
                "delta": {"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": id,
                "type": "function", "function": {"name": name, "arguments": args}}]}, "finish_reason": null}]});
            let end = json!({"id": "r", "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]});
            Reply::event_stream(stream(&[call, end], tokens))
        }
        _ => Reply::json(
            200,
            json!({"id": "r", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": null,
                    "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": args}}]}}],
                "usage": {"prompt_tokens": tokens, "completion_tokens": 9, "total_tokens": tokens + 9}})
            .to_string(),
        ),
    }
}

fn text_reply(dialect: Dialect, text: &str, tokens: u64, streamed: bool) -> Reply {
    match dialect {
        Dialect::Anthropic => Reply::json(
            200,
            json!({"id": "msg", "type": "message", "role": "assistant", "model": "m",
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": tokens, "output_tokens": 12}})
            .to_string(),
        ),
        _ if streamed => {
            let delta = json!({"id": "r", "object": "chat.completion.chunk", "choices": [{"index": 0,
                "delta": {"role": "assistant", "content": text}, "finish_reason": null}]});
            let end = json!({"id": "r", "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
            Reply::event_stream(stream(&[delta, end], tokens))
        }
        _ => Reply::json(
            200,
            json!({"id": "r", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": tokens, "completion_tokens": 12, "total_tokens": tokens + 12}})
            .to_string(),
        ),
    }
}

/// SSE chunks, then the usage chunk (`choices: []`) and `[DONE]`.
fn stream(chunks: &[Value], tokens: u64) -> String {
    let usage = json!({"id": "r", "object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": tokens, "completion_tokens": 9, "total_tokens": tokens + 9}});
    let mut out = String::new();
    for chunk in chunks.iter().chain([&usage]) {
        out.push_str(&format!("data: {chunk}\n\n"));
    }
    out.push_str("data: [DONE]\n\n");
    out
}
