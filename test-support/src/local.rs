//! Imitations of the OpenAI-compatible servers people run at home, answering
//! `POST /v1/chat/completions` as their code does: which request bodies each refuses and
//! how (status and body), what it does with `tool_choice`, what a stream with tools looks
//! like, what of the tool results reaches the model, and whether token usage comes back.
//! Each stands in front of a stand-in model that calls a tool (the forced one, else the
//! first offered) until it has called one in the conversation, then answers with the text
//! of the last tool result in its prompt (on a server whose template drops `tool`
//! messages, the last user message after the call, where a client may have put the
//! results), or says that it saw none.
//!
//! The behaviour of each, and where it was read (the rows of `docs/models.md`):
//!
//! - [`Local::LlamaCppPython`]: llama-cpp-python 0.3.x, `python -m llama_cpp.server
//!   --chat_format chatml-function-calling` (`llama_cpp/server/app.py`, `errors.py`,
//!   `llama_chat_format.py::chatml_function_calling`, `llama_types.py`). An assistant
//!   message's `content` must be a string: `null` fails request validation (HTTP 500, the
//!   pydantic errors as the message), an absent one fails the prompt template (HTTP 500).
//!   Without `tool_choice` (or with `none`) the tools are left out of the prompt; `auto`
//!   and a named function work; anything else fails an `assert` (HTTP 500, empty
//!   message). A stream with `required`, or with `auto` when the model calls a tool,
//!   answers 200 with SSE headers and then an empty body (the handler raises after the
//!   headers are sent); named streams work, and so does `auto` when the model answers in
//!   words (with nothing, as below). No usage in streams. A call's id is
//!   `call__{i}_{name}_{completion id}`, the completion id `cmpl-` and a UUID
//!   ([`LLAMA_CPP_PYTHON_COMPLETION_ID`]). The template has no branch for the `tool` role:
//!   a tool message renders as `<|im_start|>tool` and nothing more, so no tool result
//!   reaches the model unless it comes as a user message. Under `auto` the model picks `functions.NAME:` or `message:`, and the text
//!   after `message:` is sampled under the grammar meant for the next call's name
//!   (`functions.NAME:` or `<|im_end|>`, the stop string): an answer in words comes back
//!   as `{"content": "", "role": "assistant"}`, finish reason `stop`. Only without
//!   `tool_choice` or with `none` does the model answer in words. (All of this seen live
//!   with 0.3.36 and Gemma 3 270M, which under `auto` also often calls a tool again.)
//! - [`Local::LlamaServer`]: llama.cpp's `llama-server --jinja` (`tools/server`,
//!   `common/chat.cpp`). `content` may be a string, an array or `null`, but must be
//!   there (HTTP 500 `Failed to parse messages: Expected 'content'`). `tool_choice` is
//!   read as a string, `auto` when absent; a named-function object is the wrong type and
//!   read as `auto`; an unknown string is HTTP 400 `Invalid tool_choice`. Tool calls
//!   stream; usage comes in a last chunk with `choices: []` when asked for.
//! - [`Local::Vllm`]: vLLM's OpenAI server started with `--enable-auto-tool-choice
//!   --tool-call-parser ..` (`vllm/entrypoints/openai`). `content` may be anything the
//!   OpenAI types allow; without `tool_choice`, tools mean `auto`; named, `required`
//!   and `none` are honoured. [`Local::VllmWithoutAutoToolChoice`] is the same server
//!   without those flags: `auto`, sent or defaulted, is HTTP 400.
//! - [`Local::Ollama`]: Ollama's `/v1` (`openai/openai.go`). `content` may be a string,
//!   or `null` / absent beside tool calls; `tool_choice` is not a field it knows, so it
//!   is ignored (the model always chooses). A streamed call comes whole in one chunk;
//!   usage when asked for.

use serde_json::{Value, json};

use crate::server::{Recorded, Reply, Server};
use crate::sse;

/// The arguments the stand-in model calls a tool with.
pub const ARGUMENTS: &str = r#"{"path": "note.txt"}"#;

/// The completion id in the ids of [`Local::LlamaCppPython`]'s calls (the real server's is
/// `f"cmpl-{uuid.uuid4()}"`, new with each completion).
pub const LLAMA_CPP_PYTHON_COMPLETION_ID: &str = "cmpl-5b0c4bd9-7f7e-4c35-9b7b-0e2a1f9d8c61";

/// The id [`Local::LlamaCppPython`] gives its call to `name`, the first of its answer.
pub fn llama_cpp_python_call_id(name: &str) -> String {
    format!("call__0_{name}_{LLAMA_CPP_PYTHON_COMPLETION_ID}")
}

/// One of the servers imitated. See the [module docs](self).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Local {
    /// llama-cpp-python 0.3.x with the `chatml-function-calling` chat format.
    LlamaCppPython,
    /// llama.cpp's `llama-server --jinja`.
    LlamaServer,
    /// vLLM with `--enable-auto-tool-choice --tool-call-parser ..`.
    Vllm,
    /// vLLM without those flags.
    VllmWithoutAutoToolChoice,
    /// Ollama's OpenAI-compatible `/v1`.
    Ollama,
}

/// What the stand-in model does in one turn.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Turn {
    Call(String),
    Text(String),
}

/// How the server passes `tool_choice` on to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Choice {
    /// No tools in the prompt.
    NoTools,
    Auto,
    Required,
    Named(String),
}

impl Local {
    /// Every imitated server.
    pub const ALL: [Self; 5] =
        [Self::LlamaCppPython, Self::LlamaServer, Self::Vllm, Self::VllmWithoutAutoToolChoice, Self::Ollama];

    /// A loopback server behaving as this one.
    pub fn start(self) -> Server {
        Server::respond(move |request| self.answer(request))
    }

    /// Its answer to one request.
    pub fn answer(self, request: &Recorded) -> Reply {
        let body = &request.body;
        match self {
            Self::LlamaCppPython => llama_cpp_python(body),
            Self::LlamaServer => llama_server(body),
            Self::Vllm => vllm(body, true),
            Self::VllmWithoutAutoToolChoice => vllm(body, false),
            Self::Ollama => ollama(body),
        }
    }
}

fn messages(body: &Value) -> &[Value] {
    body["messages"].as_array().map(Vec::as_slice).unwrap_or_default()
}

fn tool_names(body: &Value) -> Vec<&str> {
    body["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect()
}

fn streamed(body: &Value) -> bool {
    body["stream"] == true
}

fn include_usage(body: &Value) -> bool {
    streamed(body) && body["stream_options"]["include_usage"] == true
}

/// What the server puts in the model's prompt of the tool results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Results {
    /// Each `tool` message, as its chat template renders it.
    Shown,
    /// Nothing: the template has no branch for the `tool` role. A user message after the
    /// call is rendered, so a result sent as one is seen.
    Dropped,
}

/// The stand-in model: calls the forced tool, or the first offered one while it has not
/// called one yet in the conversation (always under `required`); otherwise answers with
/// the text of the last tool result it was shown, or says it saw none.
fn turn(body: &Value, choice: &Choice, results: Results) -> Turn {
    let tools = tool_names(body);
    let called = messages(body).iter().find_map(|m| {
        let call = m["tool_calls"].as_array().and_then(|calls| calls.first());
        (m["role"] == "assistant").then_some(call).flatten()
    });
    let shown = match results {
        Results::Shown => messages(body).iter().rev().find(|m| m["role"] == "tool"),
        Results::Dropped => {
            let after_call = messages(body).iter().position(|m| {
                m["role"] == "assistant" && m["tool_calls"].as_array().is_some_and(|c| !c.is_empty())
            });
            after_call.and_then(|at| messages(body)[at..].iter().rev().find(|m| m["role"] == "user"))
        }
    };
    let text = match (shown, called) {
        (Some(m), _) => format!("The note says: {}", m["content"].as_str().unwrap_or_default()),
        (None, Some(call)) => {
            format!("I called {} and saw no result.", call["function"]["name"].as_str().unwrap_or_default())
        }
        (None, None) => "Hello.".to_owned(),
    };
    match choice {
        Choice::NoTools => Turn::Text(text),
        Choice::Named(name) => Turn::Call(name.clone()),
        Choice::Required => tools.first().map_or(Turn::Text(text), |t| Turn::Call((*t).to_owned())),
        Choice::Auto if called.is_some() => Turn::Text(text),
        Choice::Auto => tools.first().map_or(Turn::Text(text), |t| Turn::Call((*t).to_owned())),
    }
}

fn usage() -> Value {
    json!({"prompt_tokens": 21, "completion_tokens": 7, "total_tokens": 28})
}

fn error(status: u16, error: Value) -> Reply {
    Reply::json(status, json!({"error": error}).to_string())
}

/// 200, SSE headers, then nothing: the answer of a handler that raised after the
/// response started.
fn empty_stream() -> Reply {
    Reply::sse(Vec::new(), Some(1))
}

/// A chat-completions object with one choice.
fn completion(message: Value, finish: &str, usage: Option<Value>) -> Reply {
    let mut body = json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "local",
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
    });
    if let Some(usage) = usage {
        body["usage"] = usage;
    }
    Reply::json(200, body.to_string())
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "local",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
    })
}

fn usage_chunk() -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "local", "choices": [], "usage": usage()})
}

fn stream(mut events: Vec<Value>, usage: bool) -> Reply {
    if usage {
        events.push(usage_chunk());
    }
    Reply::sse(sse::openai(&events).into_bytes(), Some(64))
}

/// A text answer streamed in two pieces.
fn text_chunks(text: &str) -> Vec<Value> {
    let mut half = text.len() / 2;
    while !text.is_char_boundary(half) {
        half -= 1;
    }
    let (a, b) = text.split_at(half);
    vec![
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": a}), None),
        chunk(json!({"content": b}), None),
        chunk(json!({}), Some("stop")),
    ]
}

// ---- llama-cpp-python 0.3.x, chat format `chatml-function-calling` --------------------

fn llama_cpp_python(body: &Value) -> Reply {
    // Request validation (pydantic, before the handler): an assistant message's content
    // is `NotRequired[str]`, so `null` fails every member of the message union. The
    // route's error handler answers any exception with 500 and its text.
    for (i, m) in messages(body).iter().enumerate() {
        if m["role"] == "assistant" && m.get("content").is_some_and(Value::is_null) {
            return error(500, lcp_internal(&lcp_validation_errors(i)));
        }
    }
    // The prompt template reads `message.content` under StrictUndefined.
    if messages(body).iter().any(|m| m["role"] == "assistant" && m.get("content").is_none()) {
        return error(500, lcp_internal("'dict object' has no attribute 'content'"));
    }
    let tools = tool_names(body);
    let choice = match body.get("tool_choice") {
        _ if tools.is_empty() => Choice::NoTools,
        None | Some(Value::Null) => Choice::NoTools,
        Some(Value::String(s)) if s == "none" => Choice::NoTools,
        Some(Value::String(s)) if s == "auto" => Choice::Auto,
        Some(Value::Object(o)) => {
            let name = o.get("function").and_then(|f| f["name"].as_str()).unwrap_or_default().to_owned();
            if !tools.contains(&name.as_str()) {
                // Raised inside the handler: after the headers when streaming.
                if streamed(body) {
                    return empty_stream();
                }
                return error(500, lcp_internal(&format!("Tool with name '{name}' not found in tools")));
            }
            Choice::Named(name)
        }
        // `assert isinstance(tool_choice, str) and tool_choice == "auto"`.
        Some(_) if streamed(body) => return empty_stream(),
        Some(_) => return error(500, lcp_internal("")),
    };
    let picks_words =
        choice == Choice::Auto && matches!(turn(body, &choice, Results::Dropped), Turn::Text(_));
    match (&choice, streamed(body)) {
        // The model picked `message:`; what follows is sampled under the grammar for the
        // next call's name, `functions.NAME:` or `<|im_end|>`, the stop string: nothing.
        (Choice::Auto, false) if picks_words => {
            completion(json!({"content": "", "role": "assistant"}), "stop", Some(usage()))
        }
        (Choice::Auto, true) if picks_words => stream(
            vec![
                chunk(json!({"role": "assistant"}), None),
                chunk(json!({"content": ""}), None),
                chunk(json!({}), Some("stop")),
            ],
            false,
        ),
        // It picked a call: "Automatic streaming tool choice is not supported", raised
        // after the headers.
        (Choice::Auto, true) => empty_stream(),
        (choice, streaming) => match (turn(body, choice, Results::Dropped), streaming) {
            (Turn::Text(text), false) => {
                completion(json!({"content": text, "role": "assistant"}), "stop", Some(usage()))
            }
            (Turn::Text(text), true) => stream(text_chunks(&text), false),
            (Turn::Call(name), false) => {
                let id = llama_cpp_python_call_id(&name);
                let function = json!({"name": name, "arguments": ARGUMENTS});
                completion(
                    json!({"role": "assistant", "content": null, "function_call": function,
                           "tool_calls": [{"id": id, "type": "function", "function": function}]}),
                    "tool_calls",
                    Some(usage()),
                )
            }
            (Turn::Call(name), true) => {
                let id = llama_cpp_python_call_id(&name);
                let mut events = vec![chunk(
                    json!({"role": "assistant", "content": null, "function_call": null, "tool_calls": null}),
                    None,
                )];
                let (a, b) = ARGUMENTS.split_at(5);
                for piece in [a, b] {
                    let function = json!({"name": name, "arguments": piece});
                    events.push(chunk(
                        json!({"role": null, "content": null, "function_call": function,
                               "tool_calls": [{"index": 0, "id": id, "type": "function", "function": function}]}),
                        None,
                    ));
                }
                events.push(chunk(
                    json!({"role": null, "content": null, "function_call": null, "tool_calls": null}),
                    Some("tool_calls"),
                ));
                stream(events, false)
            }
        },
    }
}

fn lcp_internal(message: &str) -> Value {
    json!({"message": message, "type": "internal_server_error", "param": null, "code": null})
}

/// The text of FastAPI's `RequestValidationError` for a `null` assistant content at
/// message `i`: one error per member of the message union.
fn lcp_validation_errors(i: usize) -> String {
    let members = [
        ("ChatCompletionRequestSystemMessage", "literal_error", "role", "Input should be 'system'"),
        ("ChatCompletionRequestUserMessage", "literal_error", "role", "Input should be 'user'"),
        ("ChatCompletionRequestAssistantMessage", "string_type", "content", "Input should be a valid string"),
        ("ChatCompletionRequestToolMessage", "literal_error", "role", "Input should be 'tool'"),
        ("ChatCompletionRequestToolMessage", "missing", "tool_call_id", "Field required"),
        ("ChatCompletionRequestFunctionMessage", "literal_error", "role", "Input should be 'function'"),
        ("ChatCompletionRequestFunctionMessage", "missing", "name", "Field required"),
    ];
    let mut text = format!("{} validation errors:\n", members.len());
    for (member, kind, field, msg) in members {
        text.push_str(&format!(
            "  {{'type': '{kind}', 'loc': ('body', 'messages', {i}, '{member}', '{field}'), 'msg': '{msg}', 'input': None}}\n"
        ));
    }
    text
}

// ---- llama.cpp llama-server --jinja ---------------------------------------------------

fn llama_server(body: &Value) -> Reply {
    let server_error =
        |message: String| error(500, json!({"code": 500, "message": message, "type": "server_error"}));
    for m in messages(body) {
        match m.get("content") {
            None => {
                return server_error(format!(
                    "Failed to parse messages: Expected 'content' (ref: https://github.com/ggml-org/llama.cpp/issues/8367); messages = {}",
                    serde_json::to_string_pretty(&body["messages"]).unwrap_or_default()
                ));
            }
            Some(Value::String(_) | Value::Array(_) | Value::Null) => {}
            Some(other) => {
                return server_error(format!(
                    "Failed to parse messages: Invalid 'content' type: expected string or array, got {other} (ref: https://github.com/ggml-org/llama.cpp/issues/8367)"
                ));
            }
        }
    }
    // `json_value(body, "tool_choice", std::string("auto"))`: a value of the wrong type
    // (the named-function object) logs a warning and reads as the default.
    let tool_choice = body.get("tool_choice").and_then(Value::as_str).unwrap_or("auto");
    let choice = match tool_choice {
        _ if tool_names(body).is_empty() => Choice::NoTools,
        "auto" => Choice::Auto,
        "none" => Choice::NoTools,
        "required" => Choice::Required,
        other => {
            return error(
                400,
                json!({"code": 400, "message": format!("Invalid tool_choice: {other}"), "type": "invalid_request_error"}),
            );
        }
    };
    let usage_on = include_usage(body);
    match (turn(body, &choice, Results::Shown), streamed(body)) {
        (Turn::Text(text), false) => {
            completion(json!({"role": "assistant", "content": text}), "stop", Some(usage()))
        }
        (Turn::Text(text), true) => stream(text_chunks(&text), usage_on),
        (Turn::Call(name), false) => completion(
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"type": "function", "function": {"name": name, "arguments": ARGUMENTS}, "id": "Xq3mGJ0rHhmCdTa2cB3Xo0LN0ZYBg6fL"}]}),
            "tool_calls",
            Some(usage()),
        ),
        (Turn::Call(name), true) => {
            let (a, b) = ARGUMENTS.split_at(7);
            stream(
                vec![
                    chunk(json!({"role": "assistant", "content": null}), None),
                    chunk(
                        json!({"tool_calls": [{"index": 0, "id": "Xq3mGJ0rHhmCdTa2cB3Xo0LN0ZYBg6fL", "type": "function",
                                "function": {"name": name, "arguments": a}}]}),
                        None,
                    ),
                    chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": b}}]}), None),
                    chunk(json!({}), Some("tool_calls")),
                ],
                usage_on,
            )
        }
    }
}

// ---- vLLM -----------------------------------------------------------------------------

fn vllm(body: &Value, auto_tool_choice: bool) -> Reply {
    let bad = |message: &str| {
        error(400, json!({"message": message, "type": "BadRequestError", "param": null, "code": 400}))
    };
    if body.get("stream_options").is_some_and(|o| !o.is_null()) && !streamed(body) {
        return bad("Stream options can only be defined when `stream=True`.");
    }
    let has_tools = !tool_names(body).is_empty();
    // `check_tool_usage`: tools without `tool_choice` mean "auto".
    let tool_choice = match body.get("tool_choice") {
        None | Some(Value::Null) if has_tools => json!("auto"),
        None | Some(Value::Null) => json!("none"),
        Some(choice) => choice.clone(),
    };
    if tool_choice != "none" && !has_tools {
        return bad("When using `tool_choice`, `tools` must be set.");
    }
    let choice = match &tool_choice {
        Value::String(s) if s == "none" => Choice::NoTools,
        Value::String(s) if s == "auto" => {
            if !auto_tool_choice {
                return bad(
                    "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set",
                );
            }
            Choice::Auto
        }
        Value::String(s) if s == "required" => Choice::Required,
        Value::Object(o) => Choice::Named(o["function"]["name"].as_str().unwrap_or_default().to_owned()),
        other => return bad(&format!("Invalid tool_choice: {other}")),
    };
    let usage_on = include_usage(body);
    let id = "chatcmpl-tool-4f1c0c3e9b2a4d5e8f6a7b8c9d0e1f2a";
    match (turn(body, &choice, Results::Shown), streamed(body)) {
        (Turn::Text(text), false) => {
            completion(json!({"role": "assistant", "content": text}), "stop", Some(usage()))
        }
        (Turn::Text(text), true) => stream(text_chunks(&text), usage_on),
        (Turn::Call(name), false) => completion(
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": name, "arguments": ARGUMENTS}}]}),
            "tool_calls",
            Some(usage()),
        ),
        (Turn::Call(name), true) => {
            let (a, b) = ARGUMENTS.split_at(3);
            stream(
                vec![
                    chunk(json!({"role": "assistant", "content": ""}), None),
                    chunk(
                        json!({"tool_calls": [{"id": id, "type": "function", "index": 0, "function": {"name": name}}]}),
                        None,
                    ),
                    chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": a}}]}), None),
                    chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": b}}]}), None),
                    chunk(json!({"content": ""}), Some("tool_calls")),
                ],
                usage_on,
            )
        }
    }
}

// ---- Ollama /v1 -----------------------------------------------------------------------

fn ollama(body: &Value) -> Reply {
    for m in messages(body) {
        let content = m.get("content").unwrap_or(&Value::Null);
        if !(content.is_string() || content.is_array()) && m.get("tool_calls").is_none() {
            // Go's `%T` of a JSON null decoded into `any`.
            return error(
                400,
                json!({"message": "invalid message content type: <nil>", "type": "invalid_request_error", "param": null, "code": null}),
            );
        }
    }
    // No `tool_choice` field: the model always chooses.
    let choice = if tool_names(body).is_empty() { Choice::NoTools } else { Choice::Auto };
    let usage_on = include_usage(body);
    match (turn(body, &choice, Results::Shown), streamed(body)) {
        (Turn::Text(text), false) => {
            completion(json!({"role": "assistant", "content": text}), "stop", Some(usage()))
        }
        (Turn::Text(text), true) => stream(text_chunks(&text), usage_on),
        (Turn::Call(name), false) => completion(
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_k3v9x2lq", "index": 0, "type": "function", "function": {"name": name, "arguments": ARGUMENTS}}]}),
            "tool_calls",
            Some(usage()),
        ),
        (Turn::Call(name), true) => stream(
            vec![
                chunk(
                    json!({"role": "assistant", "content": "", "tool_calls": [
                        {"id": "call_k3v9x2lq", "index": 0, "type": "function", "function": {"name": name, "arguments": ARGUMENTS}}]}),
                    None,
                ),
                chunk(json!({"role": "assistant", "content": ""}), Some("tool_calls")),
            ],
            usage_on,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(body: Value) -> Recorded {
        Recorded::post("/v1/chat/completions", body)
    }

    fn tools() -> Value {
        json!([{"type": "function", "function": {"name": "read_file", "description": "Read.", "parameters": {"type": "object"}}}])
    }

    #[test]
    fn llama_cpp_python_refuses_null_content_and_required_and_streams_auto_empty() {
        let call = json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]});
        let body = json!({"messages": [{"role": "user", "content": "hi"}, call], "tools": tools(), "tool_choice": "auto"});
        let reply = Local::LlamaCppPython.answer(&post(body));
        assert_eq!(reply.status, 500);
        let text = String::from_utf8(reply.body).unwrap();
        assert!(
            text.contains("7 validation errors") && text.contains("Input should be a valid string"),
            "{text}"
        );

        let body = json!({"messages": [{"role": "user", "content": "hi"}], "tools": tools(), "tool_choice": "required"});
        let reply = Local::LlamaCppPython.answer(&post(body.clone()));
        assert_eq!(reply.status, 500);
        assert_eq!(
            serde_json::from_slice::<Value>(&reply.body).unwrap(),
            json!({"error": {"message": "", "type": "internal_server_error", "param": null, "code": null}})
        );
        let mut streamed = body;
        streamed["stream"] = json!(true);
        streamed["tool_choice"] = json!("auto");
        let reply = Local::LlamaCppPython.answer(&post(streamed));
        assert_eq!((reply.status, reply.content_type, reply.body.len()), (200, "text/event-stream", 0));
    }

    /// As seen live: after a call, `auto` answers in words with an empty content, and
    /// `none` answers without having seen the tool result; other servers show it.
    #[test]
    fn llama_cpp_python_drops_tool_results_and_answers_auto_with_nothing() {
        let after_call = |tool_choice: &str| {
            post(json!({"messages": [
                {"role": "user", "content": "Read note.txt."},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c", "content": "plum"}],
                "tools": tools(), "tool_choice": tool_choice}))
        };
        let message = |reply: Reply| {
            assert_eq!(reply.status, 200);
            let body: Value = serde_json::from_slice(&reply.body).unwrap();
            (body["choices"][0]["message"].clone(), body["choices"][0]["finish_reason"].clone())
        };
        assert_eq!(
            message(Local::LlamaCppPython.answer(&after_call("auto"))),
            (json!({"content": "", "role": "assistant"}), json!("stop"))
        );
        let mut streamed = after_call("auto");
        streamed.body["stream"] = json!(true);
        let reply = Local::LlamaCppPython.answer(&streamed);
        let text = String::from_utf8(reply.body).unwrap();
        assert_eq!(
            text,
            crate::sse::openai(&[
                chunk(json!({"role": "assistant"}), None),
                chunk(json!({"content": ""}), None),
                chunk(json!({}), Some("stop")),
            ])
        );
        assert_eq!(
            message(Local::LlamaCppPython.answer(&after_call("none"))),
            (json!({"content": "I called read_file and saw no result.", "role": "assistant"}), json!("stop"))
        );
        for server in [Local::LlamaServer, Local::Vllm, Local::Ollama] {
            assert_eq!(
                message(server.answer(&after_call("auto"))).0["content"],
                "The note says: plum",
                "{server:?}"
            );
        }
        // The result as a user message after the call is rendered, so it is seen; one
        // before the call is not a result.
        let mut as_user = after_call("none");
        as_user.body["messages"][2] = json!({"role": "user", "content": "[read_file result, call c]\nplum"});
        assert_eq!(
            message(Local::LlamaCppPython.answer(&as_user)).0["content"],
            "The note says: [read_file result, call c]\nplum"
        );
        as_user.body["messages"].as_array_mut().unwrap().swap(1, 2);
        assert_eq!(
            message(Local::LlamaCppPython.answer(&as_user)).0["content"],
            "I called read_file and saw no result."
        );
    }

    /// Its calls' ids are `call__0_NAME_cmpl-UUID`, streamed and not; a text streamed
    /// in two halves is cut between characters.
    #[test]
    fn llama_cpp_python_names_its_calls_by_index_name_and_completion() {
        let body = json!({"messages": [{"role": "user", "content": "hi"}], "tools": tools(),
            "tool_choice": {"type": "function", "function": {"name": "read_file"}}});
        let id = "call__0_read_file_cmpl-5b0c4bd9-7f7e-4c35-9b7b-0e2a1f9d8c61";
        assert_eq!(llama_cpp_python_call_id("read_file"), id);
        let reply: Value =
            serde_json::from_slice(&Local::LlamaCppPython.answer(&post(body.clone())).body).unwrap();
        assert_eq!(reply["choices"][0]["message"]["tool_calls"][0]["id"], id);
        let mut streamed = body;
        streamed["stream"] = json!(true);
        let text = String::from_utf8(Local::LlamaCppPython.answer(&post(streamed)).body).unwrap();
        assert!(text.contains(&format!("\"id\":\"{id}\"")), "{text}");
        let chunks = text_chunks("éé");
        assert_eq!(
            (&chunks[1]["choices"][0]["delta"]["content"], &chunks[2]["choices"][0]["delta"]["content"]),
            (&json!("é"), &json!("é"))
        );
        assert_eq!(text_chunks("aéb")[1]["choices"][0]["delta"]["content"], "a");
    }
}
