//! [`OpenAiResponsesModel`]: OpenAI's Responses API (`POST {base_url}/responses`), run
//! stateless (`store: false`): every request carries the whole conversation, and the
//! model's reasoning travels in it as the encrypted `reasoning` items the API returned.
//!
//! The wire format is read into `#[derive(Deserialize)]` structs, not indexed by hand.
//! A stream event is one flat struct (`WireEvent`) whose `type` is an enum with a
//! catch-all, so an event type added later is skipped; an event of a known type that
//! does not have the shape it should is a [`ModelError::Protocol`] naming it. serde_json
//! bounds the nesting of what it parses (128 levels), so no answer recurses without end.

use std::borrow::Cow;
use std::fmt;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value, json};

use super::compatible::Host;
use super::{OPENAI_BASE_URL, strict_schema};
use crate::model::http::{self, Decoder, Provider, Step};
use crate::model::sse::SseEvent;
use crate::model::{
    FinishReason, Message, Model, ModelError, ModelEvent, ModelRequest, ModelResponse, Reasoning, ToolChoice,
    Usage, collect_response,
};
use harnessx_core::{ToolCall, ToolSpec};

/// The [`Reasoning::provider`] of the reasoning items this adapter returns and sends back.
pub const RESPONSES_PROVIDER: &str = "openai-responses";

const PROVIDER: Provider = Provider { name: "OpenAI Responses API", key_env: "OPENAI_API_KEY" };

/// A model behind OpenAI's Responses API (`POST {base_url}/responses`), streamed.
///
/// Requests are stateless (`"store": false`): the conversation is sent whole each time,
/// as with [`OpenAiModel`](super::OpenAiModel). A reasoning model's `reasoning` items
/// come back in [`ModelResponse::reasoning`] (provider `openai-responses`, the item as
/// received in [`data`](Reasoning::data), its summary as the text) and are sent back
/// unchanged before that turn's calls, so the model keeps its chain of thought across
/// tool calls. For that the request asks for `"include": ["reasoning.encrypted_content"]`
/// when the model reasons: a request with [`ModelRequest::reasoning`] set, or a model
/// whose name says it reasons (`o1`, `o3`, `o4-*`, `gpt-5*`, `*codex*`). Models that do
/// not reason (`gpt-4o`, `gpt-4.1`) refuse it; [`encrypted_reasoning`](Self::encrypted_reasoning)
/// decides for a model the names do not tell.
///
/// The key comes from [`api_key`](Self::api_key) or `OPENAI_API_KEY`, the base URL from
/// [`base_url`](Self::base_url) or `OPENAI_BASE_URL`; a key is required only for OpenAI's
/// own API. [`name`](Model::name) is `openai-responses:MODEL`.
///
/// ```no_run
/// use harnessx_agent::model::{Message, Model, ModelRequest, OpenAiResponsesModel};
/// use harnessx_agent::model::{ReasoningConfig, ReasoningEffort};
///
/// # async fn demo() -> Result<(), harnessx_agent::model::ModelError> {
/// let model = OpenAiResponsesModel::new("gpt-5-mini");
/// let request = ModelRequest {
///     messages: vec![Message::user("What is 12 * 7?")],
///     reasoning: Some(ReasoningConfig { effort: Some(ReasoningEffort::Low), budget_tokens: None }),
///     ..Default::default()
/// };
/// let response = model.complete(&request).await?;
/// println!("{}", response.content);
/// for piece in &response.reasoning {
///     println!("(thought: {})", piece.text);
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct OpenAiResponsesModel {
    model: String,
    base_url: String,
    host: Host,
    api_key: Option<String>,
    strict: bool,
    encrypted_reasoning: Option<bool>,
}

impl fmt::Debug for OpenAiResponsesModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiResponsesModel")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("strict", &self.strict)
            .field("encrypted_reasoning", &self.encrypted_reasoning)
            .finish()
    }
}

impl OpenAiResponsesModel {
    /// A model by name (e.g. `gpt-5-mini`, `o4-mini`). Reads `OPENAI_API_KEY` and
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
            encrypted_reasoning: None,
        }
    }

    /// The API base URL, e.g. `https://api.openai.com/v1`; requests go to
    /// `{base_url}/responses` (a URL that already ends in `/responses` is used as it is).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = http::trim_base(&url.into());
        self.host = Host::of(&self.base_url);
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

    /// Whether to ask for the reasoning items' encrypted content
    /// (`"include": ["reasoning.encrypted_content"]`), without which a stateless request
    /// cannot send the model's reasoning back. By default it is asked for when the
    /// request sets [`ModelRequest::reasoning`] or the model's name is a reasoning
    /// model's (`o1`, `o3`, `o4-*`, `gpt-5*`, `*codex*`): models that do not reason
    /// (`gpt-4o`, `gpt-4.1`) refuse the request with it.
    pub fn encrypted_reasoning(mut self, on: bool) -> Self {
        self.encrypted_reasoning = Some(on);
        self
    }

    /// Whether `request` asks for the encrypted reasoning (see
    /// [`encrypted_reasoning`](Self::encrypted_reasoning)).
    fn wants_encrypted_reasoning(&self, request: &ModelRequest) -> bool {
        self.encrypted_reasoning.unwrap_or_else(|| {
            let name = self.model.rsplit('/').next().unwrap_or(&self.model);
            request.reasoning.is_some()
                || ["o1", "o3", "o4", "gpt-5"].iter().any(|p| name.starts_with(p))
                || name.contains("codex")
        })
    }

    /// The model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The endpoint requests go to: `{base_url}/responses`. A base URL with no path at
    /// all (`http://localhost:8000`) gets the `/v1` OpenAI-compatible servers serve under.
    pub fn endpoint(&self) -> String {
        if self.base_url.ends_with("/responses") {
            return self.base_url.clone();
        }
        let after_scheme = self.base_url.split_once("://").map_or(self.base_url.as_str(), |(_, rest)| rest);
        if after_scheme.contains('/') {
            format!("{}/responses", self.base_url)
        } else {
            format!("{}/v1/responses", self.base_url)
        }
    }

    /// The JSON body sent for `request`, streamed or not.
    ///
    /// The system prompt is `instructions`; the conversation is `input` items (see
    /// [`wire_input`]); tools, `tool_choice` and `parallel_tool_calls` only when there
    /// are tools; `reasoning` (`effort`, `summary: "auto"`) when the request sets it; a
    /// native answer format as `text.format` (the strict dialect); `store: false`.
    pub fn request_body(&self, request: &ModelRequest, stream: bool) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
            body.insert("instructions".into(), json!(system));
        }
        body.insert("input".into(), Value::Array(wire_input(&request.messages)));
        if !request.tools.is_empty() {
            body.insert("tools".into(), request.tools.iter().map(|t| self.wire_tool(t)).collect());
            // Only with tools: the API refuses `tool_choice` without them.
            body.insert("tool_choice".into(), wire_tool_choice(&request.tool_choice));
            if let Some(parallel) = request.parallel_tool_calls {
                body.insert("parallel_tool_calls".into(), json!(parallel));
            }
        }
        if let Some(config) = &request.reasoning {
            let mut reasoning = Map::new();
            if let Some(effort) = config.effort_or_from_budget() {
                reasoning.insert("effort".into(), json!(effort.as_str()));
            }
            reasoning.insert("summary".into(), json!("auto"));
            body.insert("reasoning".into(), Value::Object(reasoning));
        }
        if let Some(format) = request.output.as_ref().filter(|f| f.native) {
            let format = json!({
                "type": "json_schema",
                "name": format.name,
                "schema": strict_schema(&format.schema),
                "strict": true
            });
            body.insert("text".into(), json!({"format": format}));
        }
        if let Some(max) = request.max_tokens {
            body.insert("max_output_tokens".into(), json!(max));
        }
        body.insert("store".into(), json!(false));
        // A run's cache key (a durable run's id), to OpenAI itself only.
        if self.host == Host::OpenAi
            && let Some(key) = &request.prompt_cache_key
        {
            body.insert("prompt_cache_key".into(), json!(key));
        }
        if self.wants_encrypted_reasoning(request) {
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        }
        if stream {
            body.insert("stream".into(), json!(true));
        }
        Value::Object(body)
    }

    fn wire_tool(&self, tool: &ToolSpec) -> Value {
        let (parameters, strict) = if self.strict {
            (strict_schema(&tool.input_schema), true)
        } else {
            (tool.input_schema.clone(), false)
        };
        json!({
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": parameters,
            "strict": strict
        })
    }

    fn http_request(&self, body: &Value) -> Result<reqwest::RequestBuilder, ModelError> {
        if self.api_key.is_none() && self.host == Host::OpenAi {
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
}

/// `tool_choice` on the wire: `"auto"`, `"required"`, `"none"` or
/// `{"type": "function", "name": ..}` (the Responses form, without Chat Completions'
/// nested `function`).
fn wire_tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::Required => json!("required"),
        ToolChoice::None => json!("none"),
        ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
    }
}

impl Model for OpenAiResponsesModel {
    fn name(&self) -> String {
        format!("openai-responses:{}", self.model)
    }

    /// `openai`: the same provider as the Chat Completions adapter, by another API.
    fn provider_name(&self) -> String {
        "openai".to_owned()
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        let body = self.request_body(request, true);
        http::drive(self.http_request(&body), PROVIDER, ResponsesDecoder::default())
    }

    /// One non-streaming request. A server that streams anyway is understood too.
    fn complete<'a>(&'a self, request: &'a ModelRequest) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let body = self.request_body(request, false);
        Box::pin(collect_response(http::drive(
            self.http_request(&body),
            PROVIDER,
            ResponsesDecoder::default(),
        )))
    }
}

/// The conversation as Responses `input` items: a user message as
/// `{"role": "user", "content": ..}`; an assistant turn as its own reasoning items
/// (see below), its text as an assistant `message` item of one `output_text` part, and
/// each call as a `function_call` item (arguments that are not a JSON object, garbled
/// or cut off, go as `{}` so the API takes the conversation); a tool result as a
/// `function_call_output` item.
///
/// The reasoning items sent back are this provider's ([`RESPONSES_PROVIDER`]) that carry
/// their `encrypted_content`, each exactly as it was received: the request is stateless,
/// so an item without its encrypted content names something the server never kept and
/// would be refused. Other providers' reasoning is left out.
pub fn wire_input(messages: &[Message]) -> Vec<Value> {
    let mut input = Vec::with_capacity(messages.len());
    for message in messages {
        match message {
            Message::User { content } => input.push(json!({"role": "user", "content": content})),
            Message::Assistant { content, tool_calls, reasoning } => {
                input.extend(
                    reasoning
                        .iter()
                        .filter(|r| r.provider == RESPONSES_PROVIDER && sendable_reasoning(&r.data))
                        .map(|r| r.data.clone()),
                );
                if !content.is_empty() {
                    input.push(json!({
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": content}]
                    }));
                }
                input.extend(tool_calls.iter().map(|call| {
                    let arguments = match http::arguments_object(&call.arguments) {
                        Some(_) => call.arguments.as_str(),
                        None => "{}",
                    };
                    json!({"type": "function_call", "call_id": call.id, "name": call.name, "arguments": arguments})
                }));
            }
            Message::Tool { call_id, content, .. } => {
                input.push(json!({"type": "function_call_output", "call_id": call_id, "output": content}));
            }
        }
    }
    input
}

/// Whether a stored reasoning item can go back to a stateless request: a `reasoning`
/// item with its encrypted content.
fn sendable_reasoning(data: &Value) -> bool {
    #[derive(Deserialize)]
    struct Stored<'a> {
        #[serde(rename = "type", borrow)]
        kind: Cow<'a, str>,
        encrypted_content: Option<IgnoredAny>,
    }
    Stored::deserialize(data).is_ok_and(|s| s.kind == "reasoning" && s.encrypted_content.is_some())
}

// ---- the wire format of answers --------------------------------------------------------

/// The stream event types this adapter acts on; any other is skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
enum Kind {
    #[serde(rename = "response.output_item.added")]
    ItemAdded,
    #[serde(rename = "response.output_item.done")]
    ItemDone,
    #[serde(rename = "response.output_text.delta")]
    TextDelta,
    #[serde(rename = "response.refusal.delta")]
    RefusalDelta,
    #[serde(rename = "response.function_call_arguments.delta")]
    ArgumentsDelta,
    #[serde(rename = "response.function_call_arguments.done")]
    ArgumentsDone,
    #[serde(rename = "response.reasoning_summary_text.delta")]
    ReasoningDelta,
    #[serde(rename = "response.reasoning_summary_part.added")]
    ReasoningPartAdded,
    #[serde(rename = "response.completed")]
    Completed,
    #[serde(rename = "response.incomplete")]
    Incomplete,
    #[serde(rename = "response.failed")]
    Failed,
    #[serde(rename = "error")]
    Error,
    #[serde(other)]
    Other,
}

/// One stream event: its `type` and the fields the types above use. Every field but
/// the type is optional; which ones a type needs is checked where it is handled.
#[derive(Debug, Deserialize)]
struct WireEvent {
    /// Absent in no OpenAI event; a server that leaves it out gets the SSE `event:` name.
    #[serde(rename = "type")]
    kind: Option<Kind>,
    output_index: Option<u64>,
    /// Which part of a reasoning summary a `reasoning_summary_part.added` starts.
    summary_index: Option<u64>,
    delta: Option<String>,
    arguments: Option<String>,
    /// An output item, kept as received (a reasoning item goes back byte for byte).
    item: Option<Value>,
    response: Option<WireResponse<IgnoredAny>>,
    /// An `error` event: OpenAI documents `code`, `message` and `param` beside the type;
    /// some recordings nest them in `error`.
    error: Option<Value>,
    code: Option<Value>,
    message: Option<String>,
    param: Option<Value>,
}

/// Just the type of an event, for one that did not parse as [`WireEvent`].
#[derive(Deserialize)]
struct Head {
    #[serde(rename = "type")]
    kind: Option<Kind>,
}

/// A response object (`response.completed` and its kin carry one; a non-streamed
/// answer is one). `O` is its `output`: skipped in a stream, whose items came already.
#[derive(Debug, Deserialize)]
struct WireResponse<O> {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    output: O,
}

#[derive(Debug, Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

/// `usage`: every input token (cached included) and every output token (reasoning
/// included), with those parts in the details.
#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<TokenDetails>,
    #[serde(default)]
    output_tokens_details: Option<TokenDetails>,
}

#[derive(Debug, Default, Deserialize)]
struct TokenDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    fn usage(&self) -> Usage {
        let detail = |d: &Option<TokenDetails>, f: fn(&TokenDetails) -> Option<u64>| {
            d.as_ref().and_then(f).unwrap_or(0)
        };
        Usage {
            input_tokens: self.input_tokens.unwrap_or(0),
            output_tokens: self.output_tokens.unwrap_or(0),
            cached_input_tokens: detail(&self.input_tokens_details, |d| d.cached_tokens),
            reasoning_tokens: detail(&self.output_tokens_details, |d| d.reasoning_tokens),
            ..Usage::default()
        }
    }
}

/// An output item, as far as this adapter reads it.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item {
    Message {
        #[serde(default)]
        content: Vec<Part>,
    },
    FunctionCall {
        #[serde(default)]
        call_id: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        arguments: String,
    },
    Reasoning {
        #[serde(default)]
        summary: Vec<SummaryPart>,
    },
    /// Built-in tools' calls (web search, ...), which this adapter does not offer.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part {
    OutputText {
        #[serde(default)]
        text: String,
    },
    Refusal {
        #[serde(default)]
        refusal: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct SummaryPart {
    #[serde(default)]
    text: String,
}

impl Item {
    fn of(value: &Value) -> Result<Self, ModelError> {
        Self::deserialize(value).map_err(|e| {
            ModelError::Protocol(format!(
                "an output item of the {} is not as documented ({e}): {}",
                PROVIDER.name,
                http::truncate(&value.to_string(), 200)
            ))
        })
    }
}

/// A reasoning item as a [`Reasoning`]: its summary texts joined by a blank line, the
/// whole item as its data.
fn reasoning_of(summary: &[SummaryPart], item: Value) -> Reasoning {
    let text = summary.iter().map(|p| p.text.as_str()).collect::<Vec<_>>().join("\n\n");
    Reasoning { provider: RESPONSES_PROVIDER.to_owned(), text, signature: None, data: item }
}

/// The error a reported failure stands for (an `error` event, `response.failed`'s
/// `response.error`): its code decides the status where it names one (a context-window
/// refusal is [`ModelError::ContextWindow`], a rate limit a retryable 429, a server
/// error a retryable 500); otherwise the shared mapping by `type`.
fn reported_error(error: &Value) -> ModelError {
    #[derive(Deserialize)]
    struct Reported {
        #[serde(default)]
        code: Option<Value>,
    }
    let code = Reported::deserialize(error).ok().and_then(|r| r.code);
    let status = match code.as_ref().and_then(Value::as_str) {
        Some("context_length_exceeded" | "invalid_prompt") => Some(400),
        Some("rate_limit_exceeded") => Some(429),
        Some("server_error") => Some(500),
        _ => None,
    };
    let mut body = json!({"error": error});
    if let Some(status) = status {
        body["status_code"] = json!(status);
    }
    http::body_error(&body, PROVIDER)
}

fn finish_of(status: Option<&str>, incomplete: Option<&IncompleteDetails>, calls: bool) -> FinishReason {
    match status {
        Some("incomplete") => match incomplete.and_then(|d| d.reason.as_deref()) {
            Some("max_output_tokens") => FinishReason::Length,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
            None => FinishReason::Other("incomplete".into()),
        },
        _ if calls => FinishReason::ToolCalls,
        _ => FinishReason::Stop,
    }
}

// ---- assembling a stream ---------------------------------------------------------------

/// A function call being assembled.
#[derive(Debug, Default)]
struct PartialCall {
    /// The `output_index` of its item.
    output_index: u64,
    id: String,
    name: String,
    arguments: String,
    /// Its item is done: the arguments are whole.
    done: bool,
}

/// Assembles a Responses stream.
#[derive(Debug, Default)]
struct ResponsesDecoder {
    content: String,
    /// The output indexes of the message items that streamed text deltas.
    streamed_text: Vec<u64>,
    calls: Vec<PartialCall>,
    reasoning: Vec<Reasoning>,
    refused: bool,
    finish: Option<FinishReason>,
    usage: Usage,
}

impl ResponsesDecoder {
    fn text(&mut self, output_index: Option<u64>, text: &str, out: &mut Vec<ModelEvent>) {
        if let Some(index) = output_index
            && !self.streamed_text.contains(&index)
        {
            self.streamed_text.push(index);
        }
        if !text.is_empty() {
            self.content.push_str(text);
            out.push(ModelEvent::TextDelta(text.to_owned()));
        }
    }

    /// The position of the call of item `output_index`, started (with its start event)
    /// if it is new.
    fn call(&mut self, output_index: u64, id: &str, name: &str, out: &mut Vec<ModelEvent>) -> usize {
        if let Some(position) = self.calls.iter().position(|c| c.output_index == output_index) {
            return position;
        }
        self.calls.push(PartialCall {
            output_index,
            id: id.to_owned(),
            name: name.to_owned(),
            ..PartialCall::default()
        });
        let index = self.calls.len() - 1;
        out.push(ModelEvent::ToolCallStart { index, id: id.to_owned(), name: name.to_owned() });
        index
    }

    fn arguments(&mut self, position: usize, piece: &str, out: &mut Vec<ModelEvent>) {
        if !piece.is_empty() {
            self.calls[position].arguments.push_str(piece);
            out.push(ModelEvent::ToolCallDelta { index: position, delta: piece.to_owned() });
        }
    }

    /// The whole arguments of a call (`.done` events): used when no delta came.
    fn whole_arguments(&mut self, position: usize, arguments: &str, out: &mut Vec<ModelEvent>) {
        if self.calls[position].arguments.is_empty() {
            self.arguments(position, arguments, out);
        }
        self.calls[position].done = true;
    }

    fn item_added(
        &mut self,
        output_index: u64,
        item: &Value,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        if let Item::FunctionCall { call_id, name, arguments } = Item::of(item)? {
            let position = self.call(output_index, &call_id, &name, out);
            self.arguments(position, &arguments, out);
        }
        Ok(())
    }

    fn item_done(
        &mut self,
        output_index: u64,
        item: Value,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        match Item::of(&item)? {
            Item::Message { content } if !self.streamed_text.contains(&output_index) => {
                for part in content {
                    match part {
                        Part::OutputText { text } => self.text(Some(output_index), &text, out),
                        Part::Refusal { refusal } => {
                            self.refused = true;
                            self.text(Some(output_index), &refusal, out);
                        }
                        Part::Other => {}
                    }
                }
            }
            Item::FunctionCall { call_id, name, arguments } => {
                let position = self.call(output_index, &call_id, &name, out);
                self.whole_arguments(position, &arguments, out);
            }
            Item::Reasoning { summary } => self.reasoning.push(reasoning_of(&summary, item)),
            Item::Message { .. } | Item::Other => {}
        }
        Ok(())
    }

    fn ended(&mut self, response: &WireResponse<IgnoredAny>) {
        if let Some(usage) = &response.usage {
            self.usage = usage.usage();
        }
        let finish = finish_of(
            response.status.as_deref(),
            response.incomplete_details.as_ref(),
            !self.calls.is_empty(),
        );
        self.finish = Some(match finish {
            FinishReason::Stop if self.refused => FinishReason::ContentFilter,
            other => other,
        });
    }
}

/// What an event of a known type lacked.
fn missing(kind: Kind, field: &str) -> ModelError {
    ModelError::Protocol(format!("a `{kind:?}` event of the {} has no `{field}`", PROVIDER.name))
}

impl Decoder for ResponsesDecoder {
    fn event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<Step, ModelError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(Step::More);
        }
        let wire: WireEvent = match serde_json::from_str(data) {
            Ok(wire) => wire,
            // An event of a type this adapter skips need not have the shape it expects.
            Err(e) => match serde_json::from_str::<Head>(data) {
                Ok(Head { kind: Some(Kind::Other) }) => return Ok(Step::More),
                _ => {
                    return Err(ModelError::Protocol(format!(
                        "a stream event of the {} is not as documented ({e}): {}",
                        PROVIDER.name,
                        http::truncate(data, 200)
                    )));
                }
            },
        };
        let kind = match wire.kind {
            Some(kind) => kind,
            // No type at all but an error: a gateway's error in the stream.
            None if wire.error.as_ref().is_some_and(|e| !e.is_null()) => Kind::Error,
            None => Kind::deserialize(serde::de::value::StrDeserializer::<serde::de::value::Error>::new(
                &event.event,
            ))
            .unwrap_or(Kind::Other),
        };
        let index = || wire.output_index.ok_or_else(|| missing(kind, "output_index"));
        match kind {
            Kind::TextDelta | Kind::RefusalDelta => {
                self.refused |= kind == Kind::RefusalDelta;
                self.text(wire.output_index, wire.delta.as_deref().unwrap_or_default(), out);
            }
            // The parts of a summary are joined by a blank line, streamed or not.
            Kind::ReasoningPartAdded if wire.summary_index.is_some_and(|i| i > 0) => {
                out.push(ModelEvent::ReasoningDelta("\n\n".into()));
            }
            Kind::ReasoningPartAdded => {}
            Kind::ReasoningDelta => {
                if let Some(delta) = wire.delta.filter(|d| !d.is_empty()) {
                    out.push(ModelEvent::ReasoningDelta(delta));
                }
            }
            Kind::ItemAdded => {
                let item = wire.item.as_ref().ok_or_else(|| missing(kind, "item"))?;
                self.item_added(index()?, item, out)?;
            }
            Kind::ItemDone => {
                let output_index = index()?;
                self.item_done(output_index, wire.item.ok_or_else(|| missing(kind, "item"))?, out)?;
            }
            Kind::ArgumentsDelta | Kind::ArgumentsDone => {
                let output_index = index()?;
                let Some(position) = self.calls.iter().position(|c| c.output_index == output_index) else {
                    return Err(ModelError::Protocol(format!(
                        "the {} sent arguments for output item {output_index}, which is not a function call it started",
                        PROVIDER.name
                    )));
                };
                match kind {
                    Kind::ArgumentsDelta => {
                        self.arguments(position, wire.delta.as_deref().unwrap_or_default(), out)
                    }
                    _ => self.whole_arguments(position, wire.arguments.as_deref().unwrap_or_default(), out),
                }
            }
            Kind::Completed | Kind::Incomplete => {
                let response = wire.response.ok_or_else(|| missing(kind, "response"))?;
                self.ended(&response);
                return Ok(Step::Complete);
            }
            Kind::Failed => {
                let error = wire.response.and_then(|r| r.error).filter(|e| !e.is_null());
                return Err(match error {
                    Some(error) => reported_error(&error),
                    None => ModelError::Protocol(format!(
                        "the {} failed the response without saying why",
                        PROVIDER.name
                    )),
                });
            }
            Kind::Error => {
                let error = match wire.error.filter(|e| !e.is_null()) {
                    Some(error) => error,
                    None => json!({"code": wire.code, "message": wire.message, "param": wire.param}),
                };
                return Err(reported_error(&error));
            }
            Kind::Other => {}
        }
        Ok(Step::More)
    }

    fn finish(self, complete: bool) -> Result<ModelResponse, ModelError> {
        if !complete && self.calls.is_empty() {
            return Err(ModelError::Transport(
                "the response stream ended before the answer was complete".into(),
            ));
        }
        let finish = match self.finish {
            Some(reason) => reason,
            None if complete => FinishReason::Stop,
            None => FinishReason::Other("incomplete".into()),
        };
        let tool_calls = self
            .calls
            .into_iter()
            .map(|c| {
                // Cut off before any argument text: nothing must not read as `{}`.
                let arguments = if !c.done && c.arguments.is_empty() {
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
            reasoning: self.reasoning,
            model: None,
        })
    }

    fn parse_full(&self, body: &Value) -> Result<ModelResponse, ModelError> {
        let response = WireResponse::<Vec<Value>>::deserialize(body).map_err(|e| {
            ModelError::Protocol(format!(
                "the answer of the {} is not a response ({e}): {}",
                PROVIDER.name,
                http::truncate(&body.to_string(), 200)
            ))
        })?;
        if response.status.as_deref() == Some("failed") {
            return Err(match response.error.as_ref().filter(|e| !e.is_null()) {
                Some(error) => reported_error(error),
                None => ModelError::Protocol(format!(
                    "the {} failed the response without saying why",
                    PROVIDER.name
                )),
            });
        }
        let mut decoder = Self::default();
        let mut out = Vec::new();
        for (output_index, item) in response.output.iter().enumerate() {
            decoder.item_done(output_index as u64, item.clone(), &mut out)?;
        }
        decoder.ended(&WireResponse {
            status: response.status,
            usage: response.usage,
            incomplete_details: response.incomplete_details,
            error: None,
            output: IgnoredAny,
        });
        decoder.finish(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encrypted_reasoning_is_asked_of_reasoning_models_only() {
        let plain = ModelRequest::default();
        let reasoning = ModelRequest {
            reasoning: Some(crate::model::ReasoningConfig {
                effort: Some(crate::model::ReasoningEffort::Low),
                budget_tokens: None,
            }),
            ..ModelRequest::default()
        };
        let asks = |model: OpenAiResponsesModel, request: &ModelRequest| {
            model.request_body(request, false).get("include").is_some()
        };
        for name in ["gpt-5", "gpt-5-mini", "o3", "o4-mini", "gpt-5.1-codex-max", "openai/gpt-5"] {
            assert!(asks(OpenAiResponsesModel::new(name), &plain), "{name}");
        }
        for name in ["gpt-4o", "gpt-4.1-mini", "qwen3"] {
            assert!(!asks(OpenAiResponsesModel::new(name), &plain), "{name}");
            assert!(asks(OpenAiResponsesModel::new(name), &reasoning), "{name} asked to reason");
        }
        assert!(!asks(OpenAiResponsesModel::new("gpt-5").encrypted_reasoning(false), &plain));
        assert!(asks(OpenAiResponsesModel::new("my-reasoner").encrypted_reasoning(true), &plain));
    }

    #[test]
    fn endpoints_from_base_urls() {
        let at = |base: &str| OpenAiResponsesModel::new("m").base_url(base).endpoint();
        assert_eq!(at("https://api.openai.com/v1"), "https://api.openai.com/v1/responses");
        assert_eq!(at("http://127.0.0.1:8000/v1/"), "http://127.0.0.1:8000/v1/responses");
        assert_eq!(at("http://127.0.0.1:8000"), "http://127.0.0.1:8000/v1/responses");
        assert_eq!(at("http://h/x/responses"), "http://h/x/responses");
    }

    #[test]
    fn only_own_reasoning_with_encrypted_content_goes_back() {
        let own = json!({"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAA", "summary": []});
        let bare = json!({"id": "rs_2", "type": "reasoning", "summary": []});
        let message = Message::assistant_with_reasoning(
            "",
            vec![ToolCall::new("c", "f", "{}")],
            vec![
                Reasoning::new("anthropic", "hmm"),
                Reasoning { data: own.clone(), ..Reasoning::new(RESPONSES_PROVIDER, "") },
                Reasoning { data: bare, ..Reasoning::new(RESPONSES_PROVIDER, "") },
                Reasoning { data: json!("not an item"), ..Reasoning::new(RESPONSES_PROVIDER, "") },
            ],
        );
        assert_eq!(
            wire_input(&[message]),
            vec![own, json!({"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"})]
        );
    }

    #[test]
    fn unknown_events_are_skipped_and_known_ones_of_the_wrong_shape_refused() {
        let mut d = ResponsesDecoder::default();
        let mut out = Vec::new();
        let event = |data: &str| SseEvent { event: String::new(), data: data.into(), id: None };
        for skipped in [
            r#"{"type":"response.created","response":{"id":"r"}}"#,
            r#"{"type":"response.future_thing","delta":{"an":"object"},"output_index":"x"}"#,
            r#"{"type":"response.output_text.annotation.added","annotation":{}}"#,
        ] {
            assert_eq!(d.event(event(skipped), &mut out).unwrap(), Step::More, "{skipped}");
        }
        for bad in [
            r#"{"type":"response.output_text.delta","delta":7}"#,
            r#"{"type":"response.output_item.added","output_index":0}"#,
            r#"{"type":"response.function_call_arguments.delta","output_index":3,"delta":"{"}"#,
            r#"{"type":"response.completed"}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","name":5}}"#,
            "{not json",
        ] {
            let e = d.event(event(bad), &mut out).unwrap_err();
            assert!(matches!(&e, ModelError::Protocol(m) if m.contains("Responses API")), "{bad}: {e:?}");
        }
        assert!(out.is_empty());
    }

    fn feed(d: &mut ResponsesDecoder, events: &[Value]) -> Result<Vec<ModelEvent>, ModelError> {
        let mut out = Vec::new();
        for e in events {
            d.event(SseEvent { event: String::new(), data: e.to_string(), id: None }, &mut out)?;
        }
        Ok(out)
    }

    #[test]
    fn summary_parts_stream_and_join_with_a_blank_line() {
        let mut d = ResponsesDecoder::default();
        let item = json!({"id": "rs", "type": "reasoning", "encrypted_content": "e",
            "summary": [{"type": "summary_text", "text": "One."}, {"type": "summary_text", "text": "Two."}]});
        let out = feed(&mut d, &[
            json!({"type": "response.reasoning_summary_part.added", "output_index": 0, "summary_index": 0}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "One."}),
            json!({"type": "response.reasoning_summary_part.added", "output_index": 0, "summary_index": 1}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 1, "delta": "Two."}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ])
        .unwrap();
        let streamed: String = out
            .iter()
            .map(|e| match e {
                ModelEvent::ReasoningDelta(t) => t.as_str(),
                other => panic!("{other:?}"),
            })
            .collect();
        let response = d.finish(true).unwrap();
        assert_eq!(streamed, "One.\n\nTwo.");
        assert_eq!(response.reasoning[0].text, streamed);
    }

    #[test]
    fn an_untyped_error_in_the_stream_is_an_error() {
        let mut d = ResponsesDecoder::default();
        let e = feed(&mut d, &[json!({"error": {"message": "upstream timed out", "type": "server_error"}})])
            .unwrap_err();
        assert!(
            matches!(&e, ModelError::Http { status: 500, message } if message.contains("upstream timed out")),
            "{e:?}"
        );
    }

    #[test]
    fn reported_errors_map_by_code() {
        let e = reported_error(&json!({"code": "rate_limit_exceeded", "message": "slow down"}));
        assert!(matches!(e, ModelError::Http { status: 429, .. }) && e.is_retryable(), "{e:?}");
        let e = reported_error(&json!({"code": "server_error", "message": "oops"}));
        assert!(matches!(e, ModelError::Http { status: 500, .. }) && e.is_retryable(), "{e:?}");
        let e = reported_error(
            &json!({"code": "context_length_exceeded", "message": "Your input exceeds the context window of this model."}),
        );
        assert!(matches!(e, ModelError::ContextWindow { .. }), "{e:?}");
        let e = reported_error(
            &json!({"type": "insufficient_quota", "code": "insufficient_quota", "message": "You exceeded your current quota"}),
        );
        assert!(
            matches!(&e, ModelError::Protocol(m) if m.contains("You exceeded your current quota (insufficient_quota)")),
            "{e:?}"
        );
        assert!(!e.is_retryable());
    }
}
