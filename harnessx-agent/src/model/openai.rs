//! [`OpenAiModel`]: the OpenAI Chat Completions API and the servers that speak it (vLLM,
//! llama.cpp's `llama-server`, Ollama, Groq, DeepSeek, ...); [`OpenAiResponsesModel`]: the
//! Responses API ([`responses`]).

use std::fmt;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::{Map, Value, json};

use crate::model::http::{self, Decoder, Provider, Step};
use crate::model::sse::SseEvent;
use crate::model::{
    FinishReason, Message, Model, ModelError, ModelEvent, ModelRequest, ModelResponse, Reasoning, ToolChoice,
    Usage, collect_response,
};
use harnessx_core::ToolCall;
use harnessx_core::ToolSpec;

mod compatible;
pub mod responses;

use compatible::{Host, Learned, ToolResults};
pub use responses::OpenAiResponsesModel;

/// The default base URL.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

const PROVIDER: Provider = Provider { name: "OpenAI-compatible server", key_env: "OPENAI_API_KEY" };

/// A model behind an OpenAI-compatible Chat Completions endpoint
/// (`POST {base_url}/chat/completions`), streamed.
///
/// The key comes from [`api_key`](Self::api_key) or `OPENAI_API_KEY`, the base URL from
/// [`base_url`](Self::base_url) or `OPENAI_BASE_URL`. A key is required only for the
/// default base URL; local servers usually take none.
///
/// Whether the base URL is OpenAI's own API (`api.openai.com`) is decided when it is set.
/// OpenAI gets its bodies exactly as its API documents them. Every other server gets the
/// forms all of them accept where OpenAI takes either (`"content": ""` beside tool calls,
/// `"tool_choice": "auto"` spelled out), and what the server turns out not to take is
/// worked around for the rest of the model's life: a refused `"required"` is retried
/// with the one tool named, a stream that comes back empty is asked for again without
/// streaming, an answer to `"auto"` with neither text nor tool calls is asked for
/// again with `"none"`, and a server whose call ids show a prompt template without the
/// `tool` role (llama-cpp-python's function-calling chat formats) gets each turn's tool
/// results as one `user` message (see `docs/models.md`). Each such finding is said once,
/// through [`on_warning`](Self::on_warning) and `tracing`.
///
/// ```no_run
/// use harnessx_agent::model::{Model, ModelRequest, Message, OpenAiModel};
///
/// # async fn demo() -> Result<(), harnessx_agent::model::ModelError> {
/// // Ollama; vLLM is http://localhost:8000/v1, llama-server http://localhost:8080/v1.
/// let model = OpenAiModel::new("qwen3:8b").base_url("http://localhost:11434/v1");
/// let request = ModelRequest { messages: vec![Message::user("Hi")], ..Default::default() };
/// let response = model.complete(&request).await?;
/// println!("{}", response.content);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct OpenAiModel {
    model: String,
    base_url: String,
    host: Host,
    api_key: Option<String>,
    strict: bool,
    stream_usage: bool,
    /// What this server was found not to take; shared by clones, new with a new base URL.
    learned: Arc<Learned>,
    on_warning: Option<Notice>,
    required_fallback: Option<String>,
    prompt_cache_key: Option<String>,
}

/// Where [`OpenAiModel::on_warning`] sends its lines.
type Notice = Arc<dyn Fn(&str) + Send + Sync>;

impl fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("host", &self.host)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("strict", &self.strict)
            .field("stream_usage", &self.stream_usage)
            .field("learned", &self.learned)
            .field("on_warning", &self.on_warning.as_ref().map(|_| "<set>"))
            .field("required_fallback", &self.required_fallback)
            .field("prompt_cache_key", &self.prompt_cache_key)
            .finish()
    }
}

impl OpenAiModel {
    /// A model by name (e.g. `gpt-4o`, `qwen3:8b`). Reads `OPENAI_API_KEY` and
    /// `OPENAI_BASE_URL` (default [`OPENAI_BASE_URL`]) from the environment.
    pub fn new(model: impl Into<String>) -> Self {
        let base_url = http::trim_base(
            &http::env_setting("OPENAI_BASE_URL").unwrap_or_else(|| OPENAI_BASE_URL.to_owned()),
        );
        Self {
            model: model.into(),
            host: Host::of(&base_url),
            base_url,
            api_key: http::env_setting("OPENAI_API_KEY"),
            strict: false,
            stream_usage: true,
            learned: Arc::default(),
            on_warning: None,
            required_fallback: None,
            prompt_cache_key: None,
        }
    }

    /// The API base URL, e.g. `http://localhost:8000/v1`; requests go to
    /// `{base_url}/chat/completions` (a URL that already ends in `/chat/completions` is
    /// used as it is). Anything learned about the previous server is forgotten.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = http::trim_base(&url.into());
        self.host = Host::of(&self.base_url);
        self.learned = Arc::default();
        self
    }

    /// Where the one-line notices go when a server is found not to take something and
    /// the model works around it for the rest of its life (an empty stream asked again
    /// without streaming, a refused `"required"` replaced by the tool's name, an answer
    /// of nothing to `"auto"` asked again with `"none"`, tool results sent as user
    /// messages to a template that drops `tool` ones). They go to
    /// `tracing` at WARN level in any case; the `harnessx` command prints them on stderr.
    pub fn on_warning(mut self, notice: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_warning = Some(Arc::new(notice));
        self
    }

    /// The tool to name in place of `"required"` when the server refuses it and the
    /// request offers several tools, if this one is among them. With exactly one tool
    /// that tool is named anyway; this is for the tools a harness adds beside the
    /// user's own (the planning tools): the `harnessx` command sets it when its flags
    /// loaded exactly one tool.
    pub fn required_fallback(mut self, tool: impl Into<String>) -> Self {
        self.required_fallback = Some(tool.into());
        self
    }

    /// OpenAI's `prompt_cache_key`: requests with the same key and prefix are routed to
    /// the same prompt cache. Sent only to `api.openai.com` (compatible servers may refuse
    /// an unknown field), and there in place of the run's own key
    /// ([`ModelRequest::prompt_cache_key`], a durable run's id); without either nothing is
    /// sent and the body is as before.
    pub fn prompt_cache_key(mut self, key: impl Into<String>) -> Self {
        self.prompt_cache_key = Some(key.into()).filter(|k| !k.is_empty());
        self
    }

    /// The API key, sent as `Authorization: Bearer ...` (overrides `OPENAI_API_KEY`).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into()).filter(|k| !k.trim().is_empty());
        self
    }

    /// Sends no key even if `OPENAI_API_KEY` is set (for local servers).
    pub fn without_api_key(mut self) -> Self {
        self.api_key = None;
        self
    }

    /// OpenAI strict mode (off by default): tools are sent with `"strict": true` and
    /// their schemas transformed as strict mode requires (see [`strict_schema`]).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Whether to ask for token usage in the stream (`stream_options.include_usage`,
    /// on by default). Turn it off for a server that rejects the option.
    pub fn stream_usage(mut self, on: bool) -> Self {
        self.stream_usage = on;
        self
    }

    /// The model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The endpoint requests go to: `{base_url}/chat/completions`. A base URL with no path
    /// at all (`http://localhost:8000`) gets the `/v1` every OpenAI-compatible server
    /// (OpenAI, vLLM, llama.cpp, Ollama) serves the API under.
    pub fn endpoint(&self) -> String {
        if self.base_url.ends_with("/chat/completions") {
            return self.base_url.clone();
        }
        let after_scheme = self.base_url.split_once("://").map_or(self.base_url.as_str(), |(_, rest)| rest);
        if after_scheme.contains('/') {
            format!("{}/chat/completions", self.base_url)
        } else {
            format!("{}/v1/chat/completions", self.base_url)
        }
    }

    /// The JSON body sent for `request`, streamed or not (before any detour the server
    /// was found to need: tool results are `tool` messages here).
    pub fn request_body(&self, request: &ModelRequest, stream: bool) -> Value {
        self.body(request, &request.tool_choice, stream, ToolResults::AsToolMessages)
    }

    fn body(
        &self,
        request: &ModelRequest,
        tool_choice: &ToolChoice,
        stream: bool,
        results: ToolResults,
    ) -> Value {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.extend(wire_messages(&request.messages, self.host, results));
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            body.insert("tools".into(), request.tools.iter().map(|t| self.wire_tool(t)).collect());
            // Only with tools: OpenAI refuses `tool_choice` without them.
            if let Some(choice) = wire_tool_choice(tool_choice, self.host) {
                body.insert("tool_choice".into(), choice);
            }
            if let Some(parallel) = request.parallel_tool_calls {
                body.insert("parallel_tool_calls".into(), json!(parallel));
            }
        }
        if let Some(format) = request.output.as_ref().filter(|f| f.native) {
            // Structured outputs: the strict dialect, as strict tools get it.
            let json_schema =
                json!({"name": format.name, "schema": strict_schema(&format.schema), "strict": true});
            body.insert("response_format".into(), json!({"type": "json_schema", "json_schema": json_schema}));
        }
        if let Some(max) = request.max_tokens {
            // OpenAI's reasoning models refuse `max_tokens`; other servers know only it.
            let field = if self.is_openai() { "max_completion_tokens" } else { "max_tokens" };
            body.insert(field.into(), json!(max));
        }
        if let Some(effort) = request.reasoning.and_then(|r| r.effort_or_from_budget()) {
            // Only when asked: a body without it is what it always was.
            body.insert("reasoning_effort".into(), json!(effort.as_str()));
        }
        if self.is_openai()
            && let Some(key) = self.prompt_cache_key.as_ref().or(request.prompt_cache_key.as_ref())
        {
            body.insert("prompt_cache_key".into(), json!(key));
        }
        if stream {
            body.insert("stream".into(), json!(true));
            if self.stream_usage {
                body.insert("stream_options".into(), json!({"include_usage": true}));
            }
        }
        Value::Object(body)
    }

    fn is_openai(&self) -> bool {
        self.host == Host::OpenAi
    }

    fn wire_tool(&self, tool: &ToolSpec) -> Value {
        let mut function = Map::new();
        function.insert("name".into(), json!(tool.name));
        function.insert("description".into(), json!(tool.description));
        if self.strict {
            function.insert("parameters".into(), strict_schema(&tool.input_schema));
            function.insert("strict".into(), json!(true));
        } else {
            function.insert("parameters".into(), tool.input_schema.clone());
        }
        json!({"type": "function", "function": function})
    }

    fn http_request(&self, body: &Value) -> Result<reqwest::RequestBuilder, ModelError> {
        if self.api_key.is_none() && self.is_openai() {
            return Err(http::missing_key(PROVIDER));
        }
        let mut request = http::client()?
            .post(self.endpoint())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        Ok(request)
    }

    /// One response, streamed or not: as it always was for OpenAI, through
    /// [`negotiate`](Self::negotiate) for every other server.
    fn respond<'a>(
        &'a self,
        request: &'a ModelRequest,
        streaming: bool,
    ) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        match self.host {
            Host::OpenAi => {
                let body = self.request_body(request, streaming);
                http::drive(self.http_request(&body), PROVIDER, OpenAiDecoder::default())
            }
            Host::Compatible => stream::once(self.negotiate(request, streaming)).flatten().boxed(),
        }
    }
}

/// `tool_choice` on the wire. `Auto` is OpenAI's default with tools, so OpenAI gets
/// nothing for it (its requests stay as they were); other servers get `"auto"` spelled
/// out: llama-cpp-python takes a missing `tool_choice` as `none` and leaves the tools out
/// of the prompt, and for vLLM and llama-server the two are the same.
fn wire_tool_choice(choice: &ToolChoice, host: Host) -> Option<Value> {
    Some(match choice {
        ToolChoice::Auto if host == Host::OpenAi => return None,
        ToolChoice::Auto => json!("auto"),
        ToolChoice::Required => json!("required"),
        ToolChoice::None => json!("none"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
    })
}

impl Model for OpenAiModel {
    fn name(&self) -> String {
        format!("openai:{}", self.model)
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        self.respond(request, true)
    }

    /// One non-streaming request (`"stream": false`). A server that streams anyway is
    /// understood too.
    fn complete<'a>(&'a self, request: &'a ModelRequest) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(collect_response(self.respond(request, false)))
    }
}

/// The conversation in the Chat Completions format: each message as [`wire_message`]
/// writes it, except that with [`ToolResults::AsUserText`] each run of tool results (one
/// turn's) becomes one `user` message.
fn wire_messages(messages: &[Message], host: Host, results: ToolResults) -> Vec<Value> {
    let is_result = |m: &Message| matches!(m, Message::Tool { .. });
    let mut wire = Vec::with_capacity(messages.len());
    for turn in messages.chunk_by(|a, b| is_result(a) && is_result(b)) {
        match turn {
            [first, ..] if results == ToolResults::AsUserText && is_result(first) => {
                wire.push(compatible::results_as_user(turn));
            }
            _ => wire.extend(turn.iter().map(|m| wire_message(m, host))),
        }
    }
    wire
}

/// A message in the Chat Completions format. Arguments that are not a JSON object
/// (garbled or cut off) are sent as `{}`, so the server accepts the conversation. An
/// assistant message with tool calls and no text has `"content": null` for OpenAI (as
/// always) and `""` for other servers: llama-cpp-python refuses `null` and a missing
/// `content`, llama-server a missing one, and all of them take `""`.
fn wire_message(message: &Message, host: Host) -> Value {
    match message {
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant { content, tool_calls, .. } if tool_calls.is_empty() => {
            json!({"role": "assistant", "content": content})
        }
        Message::Assistant { content, tool_calls, .. } => {
            let calls: Vec<Value> = tool_calls
                .iter()
                .map(|call| {
                    let arguments = match http::arguments_object(&call.arguments) {
                        Some(_) => call.arguments.clone(),
                        None => "{}".to_owned(),
                    };
                    json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}})
                })
                .collect();
            let content = match host {
                Host::OpenAi if content.is_empty() => Value::Null,
                _ => json!(content),
            };
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
        Message::Tool { call_id, content, .. } => {
            json!({"role": "tool", "tool_call_id": call_id, "content": content})
        }
    }
}

/// The strict-mode form of a canonical schema: every object gets
/// `"additionalProperties": false` and lists all its properties in `required`; a property
/// that was optional becomes nullable (`"type": ["string", "null"]`, or
/// `anyOf [.., {"type": "null"}]` when it has no plain `type`). Applied to nested objects,
/// array items, `anyOf`/`oneOf`/`allOf` branches and `$defs`.
pub fn strict_schema(schema: &Value) -> Value {
    let mut schema = schema.clone();
    make_strict(&mut schema);
    schema
}

fn make_strict(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    for key in ["items", "additionalItems", "not"] {
        if let Some(sub) = map.get_mut(key) {
            make_strict(sub);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(subs)) = map.get_mut(key) {
            subs.iter_mut().for_each(make_strict);
        }
    }
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = map.get_mut(key) {
            defs.values_mut().for_each(make_strict);
        }
    }
    let is_object = map
        .get("type")
        .is_some_and(|t| t == "object" || t.as_array().is_some_and(|a| a.iter().any(|t| t == "object")))
        || map.contains_key("properties");
    if !is_object {
        return;
    }
    let required: Vec<String> = match map.get("required") {
        Some(Value::Array(r)) => r.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    };
    let mut all = Vec::new();
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            make_strict(prop);
            if !required.contains(name) {
                make_nullable(prop);
            }
            all.push(Value::String(name.clone()));
        }
    }
    map.insert("required".into(), Value::Array(all));
    map.insert("additionalProperties".into(), Value::Bool(false));
}

fn make_nullable(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    let null = Value::String("null".into());
    match map.get_mut("type") {
        Some(Value::String(t)) if t == "null" => return,
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            map.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(types)) => {
            if !types.contains(&null) {
                types.push(null.clone());
            }
        }
        _ => {
            let inner = std::mem::take(map);
            *schema = json!({"anyOf": [Value::Object(inner), {"type": "null"}]});
            return;
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

/// A tool call being assembled from deltas.
#[derive(Debug, Default)]
struct PartialCall {
    /// The `index` the server gave it (may start at 1, may be absent).
    wire_index: Option<i64>,
    id: String,
    name: String,
    arguments: String,
    started: bool,
}

/// Assembles a Chat Completions stream.
#[derive(Debug, Default)]
struct OpenAiDecoder {
    content: String,
    /// `reasoning_content` (DeepSeek, vLLM, llama.cpp) or `reasoning` (Ollama, OpenRouter)
    /// text, shown as it comes and kept, never sent back.
    reasoning: String,
    calls: Vec<PartialCall>,
    finish: Option<FinishReason>,
    usage: Usage,
}

impl OpenAiDecoder {
    fn chunk(&mut self, chunk: &Value, out: &mut Vec<ModelEvent>) {
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = usage_of(usage);
        }
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else { return };
        for choice in choices.iter().filter(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0) {
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish = Some(finish_reason(reason));
            }
            let Some(delta) = choice.get("delta") else { continue };
            if let Some(text) = reasoning_text(delta) {
                self.reasoning.push_str(text);
                out.push(ModelEvent::ReasoningDelta(text.to_owned()));
            }
            if let Some(text) = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                self.content.push_str(text);
                out.push(ModelEvent::TextDelta(text.to_owned()));
            }
            for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                self.call_delta(call, out);
            }
        }
    }

    fn call_delta(&mut self, delta: &Value, out: &mut Vec<ModelEvent>) {
        let wire_index = delta.get("index").and_then(Value::as_i64);
        let id = delta.get("id").and_then(Value::as_str).unwrap_or_default();
        let function = delta.get("function");
        let name = function.and_then(|f| f.get("name")).and_then(Value::as_str).unwrap_or_default();
        let piece = match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(s)) => s.clone(),
            None | Some(Value::Null) => String::new(),
            // A few servers send the arguments as an object.
            Some(other) => other.to_string(),
        };
        let position = match wire_index {
            Some(i) => self.calls.iter().position(|c| c.wire_index == Some(i)),
            // No index: a new id starts a new call, anything else continues the last.
            None => match self.calls.last() {
                Some(last) if id.is_empty() || last.id == id || last.id.is_empty() => {
                    Some(self.calls.len() - 1)
                }
                _ => None,
            },
        };
        let position = position.unwrap_or_else(|| {
            self.calls.push(PartialCall { wire_index, ..PartialCall::default() });
            self.calls.len() - 1
        });
        let call = &mut self.calls[position];
        if call.id.is_empty() {
            call.id = id.to_owned();
        }
        // A continuation may repeat `name: ""`: it never replaces a known name.
        if call.name.is_empty() {
            call.name = name.to_owned();
        }
        call.arguments.push_str(&piece);
        if !call.started && !call.name.is_empty() {
            call.started = true;
            out.push(ModelEvent::ToolCallStart {
                index: position,
                id: call.id.clone(),
                name: call.name.clone(),
            });
            if !call.arguments.is_empty() {
                out.push(ModelEvent::ToolCallDelta { index: position, delta: call.arguments.clone() });
            }
        } else if call.started && !piece.is_empty() {
            out.push(ModelEvent::ToolCallDelta { index: position, delta: piece });
        }
    }
}

impl Decoder for OpenAiDecoder {
    fn event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<Step, ModelError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(Step::Complete);
        }
        if data.is_empty() {
            return Ok(Step::More);
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            ModelError::Protocol(format!("a stream event is not JSON ({e}): {}", http::truncate(data, 200)))
        })?;
        if event.event == "error" || chunk.get("error").is_some_and(|e| !e.is_null()) {
            return Err(http::body_error(&chunk, PROVIDER));
        }
        self.chunk(&chunk, out);
        Ok(Step::More)
    }

    fn finish(self, complete: bool) -> Result<ModelResponse, ModelError> {
        // Without `[DONE]`, a finish reason still marks a complete answer.
        let complete = complete || self.finish.is_some();
        if !complete && self.calls.is_empty() {
            return Err(ModelError::Transport(
                "the response stream ended before the answer was complete".into(),
            ));
        }
        let finish = match self.finish {
            Some(FinishReason::Stop) if !self.calls.is_empty() => FinishReason::ToolCalls,
            Some(reason) => reason,
            None if complete => FinishReason::Stop,
            None => FinishReason::Other("incomplete".into()),
        };
        let cut_off = !complete || finish == FinishReason::Length;
        let count = self.calls.len();
        let tool_calls = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let arguments = if cut_off && i + 1 == count && c.arguments.is_empty() {
                    http::CUT_OFF_EMPTY_ARGUMENTS.to_owned()
                } else {
                    c.arguments
                };
                ToolCall::new(c.id, c.name, arguments)
            })
            .collect();
        Ok(ModelResponse {
            content: self.content,
            tool_calls,
            finish_reason: finish,
            usage: self.usage,
            reasoning: reasoning_of(self.reasoning),
            model: None,
        })
    }

    fn parse_full(&self, body: &Value) -> Result<ModelResponse, ModelError> {
        let choice = body
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
            .ok_or_else(|| ModelError::Protocol(format!("the answer has no choices: {body}")))?;
        let message = choice.get("message").cloned().unwrap_or(Value::Null);
        let content = message.get("content").and_then(Value::as_str).unwrap_or_default().to_owned();
        let reasoning = reasoning_of(reasoning_text(&message).unwrap_or_default().to_owned());
        let tool_calls: Vec<ToolCall> = message
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|call| {
                let function = call.get("function");
                let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_owned();
                let arguments = match function.and_then(|f| f.get("arguments")) {
                    Some(Value::String(s)) => s.clone(),
                    None | Some(Value::Null) => String::new(),
                    Some(other) => other.to_string(),
                };
                ToolCall::new(text(call.get("id")), text(function.and_then(|f| f.get("name"))), arguments)
            })
            .collect();
        let finish = match choice.get("finish_reason").and_then(Value::as_str).map(finish_reason) {
            Some(FinishReason::Stop) | None if !tool_calls.is_empty() => FinishReason::ToolCalls,
            Some(reason) => reason,
            None => FinishReason::Stop,
        };
        let usage = body.get("usage").map(usage_of).unwrap_or_default();
        Ok(ModelResponse { content, tool_calls, finish_reason: finish, usage, reasoning, model: None })
    }
}

/// The reasoning text of a message or delta: `reasoning_content` (DeepSeek, vLLM,
/// llama.cpp) or `reasoning` (Ollama, OpenRouter, newer vLLM), when it is non-empty text.
fn reasoning_text(message: &Value) -> Option<&str> {
    ["reasoning_content", "reasoning"]
        .into_iter()
        .find_map(|k| message.get(k).and_then(Value::as_str))
        .filter(|t| !t.is_empty())
}

/// A compatible server's reasoning text as [`Reasoning`]: kept in the transcript under
/// the provider name `openai` and never sent back (DeepSeek refuses `reasoning_content`
/// in its input, and no server needs it).
fn reasoning_of(text: String) -> Vec<Reasoning> {
    if text.is_empty() { Vec::new() } else { vec![Reasoning::new(REASONING_PROVIDER, text)] }
}

/// The provider name in [`Reasoning::provider`] for what a Chat Completions server
/// returned.
pub const REASONING_PROVIDER: &str = "openai";

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// A Chat Completions `usage` object: `prompt_tokens` (cached ones included),
/// `completion_tokens` (reasoning included) and their details, where the server gives them.
fn usage_of(usage: &Value) -> Usage {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let detail = |outer: &str, inner: &str| n(usage.get(outer).and_then(|d| d.get(inner)));
    Usage {
        input_tokens: n(usage.get("prompt_tokens")),
        output_tokens: n(usage.get("completion_tokens")),
        cached_input_tokens: detail("prompt_tokens_details", "cached_tokens"),
        reasoning_tokens: detail("completion_tokens_details", "reasoning_tokens"),
        ..Usage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_from_base_urls() {
        let at = |base: &str| OpenAiModel::new("m").base_url(base).endpoint();
        assert_eq!(at("http://127.0.0.1:8000/v1"), "http://127.0.0.1:8000/v1/chat/completions");
        assert_eq!(at("http://127.0.0.1:8000/v1/"), "http://127.0.0.1:8000/v1/chat/completions");
        assert_eq!(at("http://127.0.0.1:8000"), "http://127.0.0.1:8000/v1/chat/completions");
        assert_eq!(at("http://localhost:11434/"), "http://localhost:11434/v1/chat/completions");
        assert_eq!(at("https://gw.example/openai/v1"), "https://gw.example/openai/v1/chat/completions");
        assert_eq!(at("http://h/x/chat/completions"), "http://h/x/chat/completions");
    }

    #[test]
    fn strict_schema_requires_everything_and_nulls_the_optional() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "limit": {"type": "integer"},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "opts": {"type": "object", "properties": {"x": {"type": ["number"]}}},
                "any": {"$ref": "#/$defs/T"}
            },
            "required": ["path"],
            "$defs": {"T": {"type": "object", "properties": {"y": {"type": "string"}}, "required": ["y"]}}
        });
        assert_eq!(
            strict_schema(&schema),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "limit": {"type": ["integer", "null"]},
                    "mode": {"type": ["string", "null"], "enum": ["a", "b", null]},
                    "opts": {
                        "type": ["object", "null"],
                        "properties": {"x": {"type": ["number", "null"]}},
                        "required": ["x"],
                        "additionalProperties": false
                    },
                    "any": {"anyOf": [{"$ref": "#/$defs/T"}, {"type": "null"}]}
                },
                "required": ["path", "limit", "mode", "opts", "any"],
                "$defs": {"T": {"type": "object", "properties": {"y": {"type": "string"}}, "required": ["y"], "additionalProperties": false}},
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn call_without_index_continues_the_last_or_starts_on_a_new_id() {
        let mut d = OpenAiDecoder::default();
        let mut out = Vec::new();
        d.call_delta(&json!({"id": "a", "function": {"name": "f", "arguments": "{\"x\""}}), &mut out);
        d.call_delta(&json!({"function": {"arguments": ":1}"}}), &mut out);
        d.call_delta(&json!({"id": "b", "function": {"name": "g", "arguments": {"y": 2}}}), &mut out);
        let r = d.finish(true).unwrap();
        assert_eq!(
            r.tool_calls,
            vec![ToolCall::new("a", "f", r#"{"x":1}"#), ToolCall::new("b", "g", r#"{"y":2}"#)]
        );
    }
}
