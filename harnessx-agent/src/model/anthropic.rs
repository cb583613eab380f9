//! [`AnthropicModel`]: the Anthropic Messages API.

use std::collections::HashMap;
use std::fmt;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use serde_json::{Map, Value, json};

use crate::model::http::{self, Decoder, Provider, Step};
use crate::model::sse::SseEvent;
use crate::model::{
    FinishReason, Message, Model, ModelError, ModelEvent, ModelRequest, ModelResponse, ReasoningConfig,
    ToolChoice, Usage, collect_response,
};
use harnessx_core::ToolCall;

mod cache;
mod thinking;

pub use thinking::{MIN_THINKING_BUDGET, PROVIDER_NAME, thinking_budget};

/// The default base URL.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The output token limit when the request sets none (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

const PROVIDER: Provider = Provider { name: "Anthropic API", key_env: "ANTHROPIC_API_KEY" };

/// A model behind the Anthropic Messages API (`POST {base_url}/v1/messages`).
///
/// [`stream`](Model::stream) uses the streaming API; [`complete`](Model::complete) the
/// non-streaming one. The key comes from [`api_key`](Self::api_key) or
/// `ANTHROPIC_API_KEY`, the base URL from [`base_url`](Self::base_url) or
/// `ANTHROPIC_BASE_URL`.
///
/// ```no_run
/// use harnessx_agent::model::{AnthropicModel, Message, Model, ModelRequest};
///
/// # async fn demo() -> Result<(), harnessx_agent::model::ModelError> {
/// let model = AnthropicModel::new("claude-sonnet-4-5").max_tokens(2048);
/// let request = ModelRequest { messages: vec![Message::user("Hi")], ..Default::default() };
/// println!("{}", model.complete(&request).await?.content);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct AnthropicModel {
    model: String,
    base_url: String,
    api_key: Option<String>,
    max_tokens: u32,
    prompt_cache: bool,
    adaptive_thinking: Option<bool>,
}

impl fmt::Debug for AnthropicModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicModel")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("max_tokens", &self.max_tokens)
            .field("prompt_cache", &self.prompt_cache)
            .field("adaptive_thinking", &self.adaptive_thinking)
            .finish()
    }
}

impl AnthropicModel {
    /// A model by name (e.g. `claude-sonnet-4-5`). Reads `ANTHROPIC_API_KEY` and
    /// `ANTHROPIC_BASE_URL` (default [`ANTHROPIC_BASE_URL`]) from the environment.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            base_url: http::trim_base(
                &http::env_setting("ANTHROPIC_BASE_URL").unwrap_or_else(|| ANTHROPIC_BASE_URL.to_owned()),
            ),
            api_key: http::env_setting("ANTHROPIC_API_KEY"),
            max_tokens: DEFAULT_MAX_TOKENS,
            prompt_cache: true,
            adaptive_thinking: None,
        }
    }

    /// The API base URL; requests go to `{base_url}/v1/messages` (or `{base_url}/messages`
    /// when it already ends in `/v1`).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = http::trim_base(&url.into());
        self
    }

    /// The API key, sent as `x-api-key` (overrides `ANTHROPIC_API_KEY`).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into()).filter(|k| !k.trim().is_empty());
        self
    }

    /// The output token limit used when a request sets none (default
    /// [`DEFAULT_MAX_TOKENS`]).
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Whether requests mark their stable prefix as cacheable (default on): a
    /// `cache_control: {"type": "ephemeral"}` breakpoint on the last tool, on the system
    /// prompt, and on the last block of the message before the newest turn, so each
    /// request reads the previous one's prefix from Anthropic's prompt cache (see
    /// `docs/models.md`, "Prompt caching"). Off sends no `cache_control` at all.
    pub fn prompt_cache(mut self, on: bool) -> Self {
        self.prompt_cache = on;
        self
    }

    /// Asks for adaptive thinking instead of a fixed budget when the request sets
    /// [`ModelRequest::reasoning`]: `thinking: {"type": "adaptive"}` and the effort as
    /// `output_config.effort` (`minimal` goes as `low`; a budget stands for an effort),
    /// `max_tokens` unchanged. The models from Claude Opus 4.7 on take only this form;
    /// Opus 4.6 and Sonnet 4.6 take both; older ones only a budget. By default it is
    /// chosen by the model's name: Claude 4.6 and later (and the Mythos and Fable models)
    /// think adaptively, older models with a budget.
    pub fn adaptive_thinking(mut self, on: bool) -> Self {
        self.adaptive_thinking = Some(on);
        self
    }

    /// Whether this model thinks adaptively (see [`adaptive_thinking`](Self::adaptive_thinking)).
    fn adaptive(&self) -> bool {
        self.adaptive_thinking.unwrap_or_else(|| adaptive_by_name(&self.model))
    }

    /// The model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The endpoint requests go to.
    pub fn endpoint(&self) -> String {
        if self.base_url.ends_with("/v1/messages") {
            self.base_url.clone()
        } else if self.base_url.ends_with("/v1") {
            format!("{}/messages", self.base_url)
        } else {
            format!("{}/v1/messages", self.base_url)
        }
    }

    /// The JSON body sent for `request`, streamed or not.
    ///
    /// The system prompt is top-level; consecutive tool results become one user message
    /// of `tool_result` blocks (text the user sent after them joins it); each tool call
    /// is a `tool_use` block whose `input` is the call's arguments, or `{}` when they are
    /// not a JSON object (garbled or cut off), so the API accepts the conversation.
    ///
    /// An assistant message's Anthropic reasoning goes back as the `thinking` and
    /// `redacted_thinking` blocks it came as, at their places (first, as a rule); other
    /// providers' reasoning is left out. With [`ModelRequest::reasoning`] set, the body
    /// asks for extended thinking ([`thinking_budget`], or adaptive thinking with
    /// [`adaptive_thinking`](Self::adaptive_thinking)), except when it forces a tool call
    /// (`Required` or a named tool), which Anthropic refuses with thinking on; with
    /// [`prompt_cache`](Self::prompt_cache) on, it carries cache breakpoints.
    pub fn request_body(&self, request: &ModelRequest, stream: bool) -> Value {
        let mut body = Map::new();
        let max_tokens = request.max_tokens.unwrap_or(self.max_tokens);
        // Anthropic refuses a forced tool choice with thinking on: a request that forces a
        // call (the first of a run, as a rule; later ones are `auto` again) goes without
        // thinking rather than being refused.
        let forced = !request.tools.is_empty()
            && matches!(request.tool_choice, ToolChoice::Required | ToolChoice::Tool(_));
        let reasoning = request.reasoning.as_ref().filter(|_| !forced);
        let (thinking, effort) = if self.adaptive() {
            (None, reasoning.and_then(ReasoningConfig::effort_or_from_budget).map(thinking::adaptive_effort))
        } else {
            (reasoning.and_then(|r| thinking_budget(r, max_tokens)), None)
        };
        body.insert("model".into(), json!(self.model));
        body.insert("max_tokens".into(), json!(thinking.map_or(max_tokens, |(_, max)| max)));
        if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
            let system = if self.prompt_cache {
                json!([{"type": "text", "text": system, "cache_control": cache::ephemeral()}])
            } else {
                json!(system)
            };
            body.insert("system".into(), system);
        }
        let mut messages = wire_messages(&request.messages);
        if self.prompt_cache {
            cache::mark_before_newest_turn(&mut messages);
        }
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            let mut tools: Vec<Value> = request
                .tools
                .iter()
                .map(
                    |t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}),
                )
                .collect();
            if self.prompt_cache
                && let Some(Value::Object(last)) = tools.last_mut()
            {
                last.insert("cache_control".into(), cache::ephemeral());
            }
            body.insert("tools".into(), Value::Array(tools));
            // Only with tools: the API refuses `tool_choice` without them.
            if let Some(choice) = wire_tool_choice(&request.tool_choice, request.parallel_tool_calls) {
                body.insert("tool_choice".into(), choice);
            }
        }
        let mut output_config = Map::new();
        if let Some(format) = request.output.as_ref().filter(|f| f.native) {
            // Structured outputs (generally available, no beta header): the answer is
            // the text, constrained to the schema.
            let schema = structured_schema(&format.schema);
            output_config.insert("format".into(), json!({"type": "json_schema", "schema": schema}));
        }
        if let Some(effort) = effort {
            output_config.insert("effort".into(), json!(effort));
        }
        if !output_config.is_empty() {
            body.insert("output_config".into(), Value::Object(output_config));
        }
        if let Some((budget, _)) = thinking {
            body.insert("thinking".into(), json!({"type": "enabled", "budget_tokens": budget}));
        } else if effort.is_some() {
            body.insert("thinking".into(), json!({"type": "adaptive"}));
        }
        if stream {
            body.insert("stream".into(), json!(true));
        }
        Value::Object(body)
    }

    fn http_request(&self, body: &Value) -> Result<reqwest::RequestBuilder, ModelError> {
        let mut request = http::client()?
            .post(self.endpoint())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("anthropic-version", ANTHROPIC_VERSION)
            .body(body.to_string());
        match &self.api_key {
            Some(key) => request = request.header("x-api-key", key),
            None if self.base_url.starts_with(ANTHROPIC_BASE_URL) => return Err(http::missing_key(PROVIDER)),
            None => {}
        }
        Ok(request)
    }
}

/// Keywords Anthropic's structured outputs refuse in a schema (numeric and length bounds,
/// and `minItems` above 1): left out of what is sent. The answer is still checked against
/// the whole schema, so a value outside them is refused and asked again.
const UNSUPPORTED_KEYWORDS: [&str; 9] = [
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "maxItems",
    "minProperties",
];

/// A canonical schema in the form Anthropic's structured outputs take: every object
/// closed (`"additionalProperties": false` unless it says otherwise) and the keywords of
/// `UNSUPPORTED_KEYWORDS` (and `minItems` above 1) left out, at every schema position
/// (properties, items, branches). Depth is bounded by the canonical schema's.
pub fn structured_schema(schema: &Value) -> Value {
    fn walk(schema: &Value) -> Value {
        let Value::Object(map) = schema else { return schema.clone() };
        let mut out = Map::new();
        for (key, value) in map {
            if UNSUPPORTED_KEYWORDS.contains(&key.as_str())
                || (key == "minItems" && value.as_u64().is_some_and(|n| n > 1))
            {
                continue;
            }
            let value = match (key.as_str(), value) {
                ("properties" | "patternProperties" | "$defs", Value::Object(props)) => {
                    Value::Object(props.iter().map(|(k, v)| (k.clone(), walk(v))).collect())
                }
                ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(list)) => {
                    Value::Array(list.iter().map(walk).collect())
                }
                ("items" | "additionalProperties" | "not", sub) => walk(sub),
                (_, other) => other.clone(),
            };
            out.insert(key.clone(), value);
        }
        let is_object = map.get("type").is_some_and(|t| t == "object") || map.contains_key("properties");
        if is_object && !out.contains_key("additionalProperties") {
            out.insert("additionalProperties".into(), Value::Bool(false));
        }
        Value::Object(out)
    }
    walk(schema)
}

/// `tool_choice` on the wire: `auto`, `any` (required), `none` or `tool`, with
/// `disable_parallel_tool_use: true` when parallel calls are turned off (except under
/// `none`, which calls no tool). Nothing for `Auto` with parallel calls left to the API,
/// so requests that do not set either stay as they were.
/// Whether a Claude model's name is of a generation that thinks adaptively: version 4.6
/// and later (`claude-opus-4-7`, `claude-sonnet-4-6`, `claude-opus-5`), and the Mythos
/// and Fable models. Dates (`-20251001`) are not versions; the old naming
/// (`claude-3-7-sonnet`) is read the same way.
fn adaptive_by_name(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    let Some(rest) = name.strip_prefix("claude-") else { return false };
    if rest.contains("mythos") || rest.contains("fable") {
        return true;
    }
    let mut numbers =
        rest.split(['-', '.', '@']).filter_map(|part| part.parse::<u32>().ok()).filter(|n| *n < 100);
    match (numbers.next(), numbers.next()) {
        (Some(major), minor) => (major, minor.unwrap_or(0)) >= (4, 6),
        (None, _) => false,
    }
}

fn wire_tool_choice(choice: &ToolChoice, parallel: Option<bool>) -> Option<Value> {
    let mut wire = match choice {
        ToolChoice::Auto if parallel != Some(false) => return None,
        ToolChoice::Auto => json!({"type": "auto"}),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::None => return Some(json!({"type": "none"})),
        ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
    };
    if parallel == Some(false) {
        wire["disable_parallel_tool_use"] = json!(true);
    }
    Some(wire)
}

impl Model for AnthropicModel {
    fn name(&self) -> String {
        format!("anthropic:{}", self.model)
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        let body = self.request_body(request, true);
        http::drive(self.http_request(&body), PROVIDER, AnthropicDecoder::default())
    }

    /// One non-streaming request. A server that streams anyway is understood too.
    fn complete<'a>(&'a self, request: &'a ModelRequest) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let body = self.request_body(request, false);
        Box::pin(collect_response(http::drive(
            self.http_request(&body),
            PROVIDER,
            AnthropicDecoder::default(),
        )))
    }
}

/// The conversation as Messages API turns.
fn wire_messages(messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::with_capacity(messages.len());
    for message in messages {
        let (role, blocks) = match message {
            Message::User { content } => ("user", text_block(content).into_iter().collect()),
            Message::Assistant { content, tool_calls, reasoning } => {
                let mut blocks: Vec<Value> = text_block(content).into_iter().collect();
                blocks.extend(tool_calls.iter().map(|call| {
                    let input = http::arguments_object(&call.arguments).unwrap_or_default();
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input})
                }));
                ("assistant", thinking::with_reasoning(reasoning, blocks))
            }
            Message::Tool { call_id, content, is_error, .. } => {
                let mut block = json!({"type": "tool_result", "tool_use_id": call_id, "content": content});
                if *is_error {
                    block["is_error"] = json!(true);
                }
                ("user", vec![block])
            }
        };
        if blocks.is_empty() {
            // The API refuses empty content; an empty turn says nothing anyway.
            continue;
        }
        match out.last_mut() {
            // Turns alternate: tool results and text that follow each other share a turn.
            Some((last, last_blocks)) if *last == role => last_blocks.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    out.into_iter()
        .map(|(role, blocks)| {
            // A lone text block goes as a plain string, the API's shortest form.
            let content = match blocks.as_slice() {
                [block] if block["type"] == "text" => block["text"].clone(),
                _ => Value::Array(blocks),
            };
            json!({"role": role, "content": content})
        })
        .collect()
}

fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

fn stop_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// The token counts of a Messages API `usage` object, each kept until a later event gives
/// it again: `message_start` has the input counts, `message_delta` the cumulative output
/// count (and, from some servers, the input counts again).
#[derive(Debug, Default, Clone, Copy)]
struct AnthropicUsage {
    input: u64,
    cache_read: u64,
    cache_write: u64,
    output: u64,
}

impl AnthropicUsage {
    fn add(&mut self, value: &Value) {
        let n = |k: &str| value.get(k).and_then(Value::as_u64);
        for (field, key) in [
            (&mut self.input, "input_tokens"),
            (&mut self.cache_read, "cache_read_input_tokens"),
            (&mut self.cache_write, "cache_creation_input_tokens"),
            (&mut self.output, "output_tokens"),
        ] {
            if let Some(count) = n(key) {
                *field = count;
            }
        }
    }

    /// Cache reads and writes are input tokens too.
    fn usage(self) -> Usage {
        Usage {
            input_tokens: self.input.saturating_add(self.cache_read).saturating_add(self.cache_write),
            output_tokens: self.output,
            cached_input_tokens: self.cache_read,
            cache_write_tokens: self.cache_write,
            ..Usage::default()
        }
    }
}

/// A non-streaming Messages API response.
fn parse_message(body: &Value) -> Result<ModelResponse, ModelError> {
    let blocks = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| ModelError::Protocol(format!("the answer has no content: {body}")))?;
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    let mut reasoning = Vec::new();
    let mut last_is_tool = false;
    for (index, block) in blocks.iter().enumerate() {
        last_is_tool = false;
        if let Some(piece) = thinking::reasoning_of(index, block) {
            reasoning.push(piece);
            continue;
        }
        match block.get("type").and_then(Value::as_str) {
            Some("text") => content.push_str(block.get("text").and_then(Value::as_str).unwrap_or_default()),
            Some("tool_use") => {
                let text = |k| block.get(k).and_then(Value::as_str).unwrap_or_default();
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                tool_calls.push(ToolCall::from_value(text("id"), text("name"), &input));
                last_is_tool = true;
            }
            _ => {}
        }
    }
    let finish_reason = stop_reason(body.get("stop_reason").and_then(Value::as_str).unwrap_or("end_turn"));
    if finish_reason == FinishReason::Length
        && last_is_tool
        && let Some(call) = tool_calls.last_mut()
    {
        // The last block was cut off by the token limit: its `input` may lack fields.
        // Drop the closing brace so the engine refuses it as cut off and the tool does
        // not run.
        call.arguments.pop();
    }
    let mut usage = AnthropicUsage::default();
    if let Some(u) = body.get("usage") {
        usage.add(u);
    }
    Ok(ModelResponse { content, tool_calls, finish_reason, usage: usage.usage(), reasoning, model: None })
}

#[derive(Debug, Default)]
struct ToolBlock {
    position: usize,
    id: String,
    name: String,
    /// `input` from `content_block_start`, used when no JSON delta follows.
    initial: Option<Value>,
    json: String,
    stopped: bool,
}

/// Assembles a Messages API stream.
#[derive(Debug, Default)]
struct AnthropicDecoder {
    content: String,
    /// Tool blocks by their content block index.
    tools: HashMap<u64, ToolBlock>,
    /// Thinking and redacted thinking blocks by their content block index.
    thinking: HashMap<u64, thinking::StreamBlock>,
    stop: Option<FinishReason>,
    usage: AnthropicUsage,
}

impl AnthropicDecoder {
    fn block_start(&mut self, index: u64, block: &Value, out: &mut Vec<ModelEvent>) {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(text) = block.get("text").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                    self.content.push_str(text);
                    out.push(ModelEvent::TextDelta(text.to_owned()));
                }
            }
            Some("tool_use") => {
                let text = |k| block.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
                let tool = ToolBlock {
                    position: self.tools.len(),
                    id: text("id"),
                    name: text("name"),
                    initial: block
                        .get("input")
                        .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                        .cloned(),
                    ..ToolBlock::default()
                };
                out.push(ModelEvent::ToolCallStart {
                    index: tool.position,
                    id: tool.id.clone(),
                    name: tool.name.clone(),
                });
                self.tools.insert(index, tool);
            }
            _ => {
                if let Some((block, text)) = thinking::StreamBlock::start(block) {
                    if !text.is_empty() {
                        out.push(ModelEvent::ReasoningDelta(text));
                    }
                    self.thinking.insert(index, block);
                }
                // Server tools and block types added later: not part of the response.
            }
        }
    }

    fn block_delta(
        &mut self,
        index: u64,
        delta: &Value,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        let kind = delta.get("type").and_then(Value::as_str);
        if let Some(kind @ ("thinking_delta" | "signature_delta")) = kind {
            let Some(block) = self.thinking.get_mut(&index) else {
                return Err(ModelError::Protocol(format!(
                    "a {kind} came for content block {index}, which is not a thinking block"
                )));
            };
            let field = if kind == "thinking_delta" { "thinking" } else { "signature" };
            let piece = delta.get(field).and_then(Value::as_str).ok_or_else(|| {
                ModelError::Protocol(format!("a {kind} for content block {index} has no `{field}` text"))
            })?;
            if kind == "signature_delta" {
                return block.push_signature(index, piece);
            }
            block.push_text(index, piece)?;
            if !piece.is_empty() {
                out.push(ModelEvent::ReasoningDelta(piece.to_owned()));
            }
            return Ok(());
        }
        match kind {
            Some("text_delta") => {
                if let Some(text) = delta.get("text").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                    self.content.push_str(text);
                    out.push(ModelEvent::TextDelta(text.to_owned()));
                }
            }
            Some("input_json_delta") => {
                let piece = delta.get("partial_json").and_then(Value::as_str).unwrap_or_default();
                if let Some(tool) = self.tools.get_mut(&index)
                    && !piece.is_empty()
                {
                    tool.json.push_str(piece);
                    out.push(ModelEvent::ToolCallDelta { index: tool.position, delta: piece.to_owned() });
                }
            }
            _ => {}
        }
        Ok(())
    }
}

impl Decoder for AnthropicDecoder {
    fn event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<Step, ModelError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Step::More);
        }
        let value: Value = serde_json::from_str(data).map_err(|e| {
            ModelError::Protocol(format!("a stream event is not JSON ({e}): {}", http::truncate(data, 200)))
        })?;
        let kind = value.get("type").and_then(Value::as_str).unwrap_or(&event.event);
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                if let Some(u) = value.get("message").and_then(|m| m.get("usage")) {
                    self.usage.add(u);
                }
            }
            "content_block_start" => {
                self.block_start(index, value.get("content_block").unwrap_or(&Value::Null), out)
            }
            "content_block_delta" => {
                self.block_delta(index, value.get("delta").unwrap_or(&Value::Null), out)?
            }
            "content_block_stop" => {
                if let Some(tool) = self.tools.get_mut(&index) {
                    tool.stopped = true;
                }
                if let Some(block) = self.thinking.get_mut(&index) {
                    block.stopped = true;
                }
            }
            "message_delta" => {
                if let Some(reason) =
                    value.get("delta").and_then(|d| d.get("stop_reason")).and_then(Value::as_str)
                {
                    self.stop = Some(stop_reason(reason));
                }
                if let Some(u) = value.get("usage") {
                    self.usage.add(u);
                }
            }
            "message_stop" => return Ok(Step::Complete),
            "error" => return Err(http::body_error(&value, PROVIDER)),
            // ping and event types added later
            _ => {}
        }
        Ok(Step::More)
    }

    fn finish(self, complete: bool) -> Result<ModelResponse, ModelError> {
        if let Some(index) = self.thinking.iter().filter(|(_, b)| !b.stopped).map(|(i, _)| *i).min() {
            // Its signature may be missing or partial: it could not be sent back.
            let message = format!("the response stream ended inside thinking block {index}");
            return Err(if complete {
                ModelError::Protocol(message)
            } else {
                ModelError::Transport(message)
            });
        }
        if !complete && self.tools.is_empty() {
            return Err(ModelError::Transport(
                "the response stream ended before the answer was complete".into(),
            ));
        }
        let finish_reason = match self.stop {
            Some(reason) => reason,
            None if complete => FinishReason::Stop,
            None => FinishReason::Other("incomplete".into()),
        };
        let mut tools: Vec<ToolBlock> = self.tools.into_values().collect();
        tools.sort_by_key(|t| t.position);
        let tool_calls = tools
            .into_iter()
            .map(|t| {
                let arguments = match (t.json.is_empty(), t.initial) {
                    // Cut off (no `content_block_stop`): the raw text, so the engine
                    // refuses it; nothing at all must not read as `{}`.
                    (true, _) if !t.stopped => http::CUT_OFF_EMPTY_ARGUMENTS.to_owned(),
                    (false, _) => t.json,
                    (true, Some(initial)) => initial.to_string(),
                    // No input at all: a tool without parameters.
                    (true, None) => "{}".to_owned(),
                };
                ToolCall::new(t.id, t.name, arguments)
            })
            .collect();
        let mut thinking: Vec<(u64, thinking::StreamBlock)> = self.thinking.into_iter().collect();
        thinking.sort_by_key(|(index, _)| *index);
        let reasoning = thinking
            .into_iter()
            .map(|(index, block)| block.finish(usize::try_from(index).unwrap_or(usize::MAX)))
            .collect();
        Ok(ModelResponse {
            content: self.content,
            tool_calls,
            finish_reason,
            usage: self.usage.usage(),
            reasoning,
            model: None,
        })
    }

    fn parse_full(&self, body: &Value) -> Result<ModelResponse, ModelError> {
        parse_message(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptive_thinking_is_chosen_by_the_models_generation() {
        for model in [
            "claude-opus-4-7",
            "claude-opus-4-6",
            "claude-sonnet-4-6",
            "claude-opus-4-8-20260528",
            "claude-opus-5",
            "claude-mythos-preview",
            "anthropic/claude-fable-5",
            "claude-sonnet-4.6",
        ] {
            assert!(adaptive_by_name(model), "{model}");
        }
        for model in [
            "claude-sonnet-4-5",
            "claude-haiku-4-5-20251001",
            "claude-sonnet-4-20250514",
            "claude-opus-4-1",
            "claude-3-7-sonnet-20250219",
            "claude-3-5-haiku-latest",
            "local-model",
        ] {
            assert!(!adaptive_by_name(model), "{model}");
        }
        let reasoning = Some(ReasoningConfig { effort: None, budget_tokens: Some(4000) });
        let request = ModelRequest { reasoning, ..ModelRequest::default() };
        let kind = |m: AnthropicModel| m.request_body(&request, false)["thinking"]["type"].clone();
        assert_eq!(kind(AnthropicModel::new("claude-opus-4-7")), "adaptive");
        assert_eq!(kind(AnthropicModel::new("claude-sonnet-4-5")), "enabled");
        assert_eq!(kind(AnthropicModel::new("claude-opus-4-7").adaptive_thinking(false)), "enabled");
        assert_eq!(kind(AnthropicModel::new("claude-sonnet-4-5").adaptive_thinking(true)), "adaptive");
    }

    #[test]
    fn user_text_after_tool_results_joins_their_turn_and_empty_turns_vanish() {
        let messages = vec![
            Message::user("go"),
            Message::assistant("", vec![ToolCall::new("a", "f", "[1]")]),
            Message::Tool { call_id: "a".into(), name: "f".into(), content: "bad".into(), is_error: true },
            Message::user("and?"),
            Message::assistant("", vec![]),
            Message::user("well"),
        ];
        assert_eq!(
            Value::Array(wire_messages(&messages)),
            json!([
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "a", "content": "bad", "is_error": true},
                    {"type": "text", "text": "and?"},
                    {"type": "text", "text": "well"}
                ]}
            ])
        );
    }

    #[test]
    fn non_streamed_tool_use_cut_off_by_max_tokens_is_not_valid_json() {
        let body = json!({"content": [{"type": "tool_use", "id": "t", "name": "w", "input": {"a": 1}}], "stop_reason": "max_tokens"});
        let r = parse_message(&body).unwrap();
        assert_eq!(r.finish_reason, FinishReason::Length);
        assert_eq!(r.tool_calls[0].arguments, r#"{"a":1"#);
    }
}
