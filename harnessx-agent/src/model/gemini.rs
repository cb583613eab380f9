//! [`GeminiModel`]: the Gemini API (`generateContent` / `streamGenerateContent`).
//!
//! Hand-mapped rather than generated from Google's discovery document: the adapter sends
//! a handful of fields and reads fewer, and what it defends against is what matters —
//! a stream cut off before its `finishReason`, chunks that are not JSON (or nested past
//! serde_json's limit of 128), part kinds it cannot represent (`executableCode`,
//! `inlineData`, streamed `partialArgs`): each ends in a [`ModelError`], never a panic.
//!
//! Function calls have no ids on the Gemini API: a call keeps the id Gemini gave it, if
//! any, and is otherwise left without one (the run gives it `call_{turn}_{i}`). Results
//! go back as `functionResponse` parts paired by name and order, in call order, never by
//! id.
//!
//! Thought signatures (`thoughtSignature`) are kept as [`Reasoning`] with provider
//! `gemini` and sent back, byte for byte, on the part they came on: the function call
//! (`data: {"part": "call", "call": i}`), the span of the answer text
//! (`data: {"part": "text", "start": s, "end": e}`, byte offsets into the content), or
//! the thought (`data: {"part": "thought"}`). Thought text (`thought: true` parts)
//! streams as [`ModelEvent::ReasoningDelta`] and is sent back only as a signed thought
//! part, never as answer text.

use std::fmt;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::model::http::{self, Decoder, Provider, Step};
use crate::model::sse::SseEvent;
use crate::model::{
    FinishReason, Message, Model, ModelError, ModelEvent, ModelRequest, ModelResponse, Reasoning,
    ReasoningEffort, ToolChoice, Usage, collect_response,
};
use harnessx_core::ToolCall;

/// The default base URL.
pub const GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// The [`Reasoning::provider`] of what Gemini returns; only such pieces are sent back.
pub const REASONING_PROVIDER: &str = "gemini";

const PROVIDER: Provider = Provider { name: "Gemini API", key_env: "GEMINI_API_KEY" };

/// A model behind the Gemini API (`POST {base_url}/v1beta/models/{model}:generateContent`,
/// streamed through `:streamGenerateContent?alt=sse`).
///
/// [`stream`](Model::stream) uses the streaming method; [`complete`](Model::complete) the
/// non-streaming one. The key comes from [`api_key`](Self::api_key) or `GEMINI_API_KEY`
/// and is sent as `x-goog-api-key`; the base URL from [`base_url`](Self::base_url) or
/// `GEMINI_BASE_URL`. Tool schemas are sent as `parameters` in Gemini's OpenAPI subset
/// ([`gemini_schema`]).
///
/// ```no_run
/// use harnessx_agent::model::{GeminiModel, Message, Model, ModelRequest};
///
/// # async fn demo() -> Result<(), harnessx_agent::model::ModelError> {
/// let model = GeminiModel::new("gemini-2.5-flash");
/// let request = ModelRequest { messages: vec![Message::user("Hi")], ..Default::default() };
/// println!("{}", model.complete(&request).await?.content);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct GeminiModel {
    model: String,
    base_url: String,
    api_key: Option<String>,
}

impl fmt::Debug for GeminiModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeminiModel")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .finish()
    }
}

impl GeminiModel {
    /// A model by name (e.g. `gemini-2.5-flash`; a leading `models/` is dropped). Reads
    /// `GEMINI_API_KEY` and `GEMINI_BASE_URL` (default [`GEMINI_BASE_URL`]).
    pub fn new(model: impl Into<String>) -> Self {
        let model = model.into();
        Self {
            model: model.strip_prefix("models/").map(str::to_owned).unwrap_or(model),
            base_url: http::trim_base(
                &http::env_setting("GEMINI_BASE_URL").unwrap_or_else(|| GEMINI_BASE_URL.to_owned()),
            ),
            api_key: http::env_setting("GEMINI_API_KEY"),
        }
    }

    /// The API base URL; requests go to `{base_url}/v1beta/models/...` (or
    /// `{base_url}/models/...` when it already ends in a version, `/v1beta` or `/v1`).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = http::trim_base(&url.into());
        self
    }

    /// The API key, sent as `x-goog-api-key` (overrides `GEMINI_API_KEY`).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into()).filter(|k| !k.trim().is_empty());
        self
    }

    /// The model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The endpoint requests go to, streamed (`:streamGenerateContent?alt=sse`) or not.
    pub fn endpoint(&self, stream: bool) -> String {
        let versioned = self.base_url.ends_with("/v1beta") || self.base_url.ends_with("/v1");
        let base = if versioned { self.base_url.clone() } else { format!("{}/v1beta", self.base_url) };
        let method = if stream { "streamGenerateContent?alt=sse" } else { "generateContent" };
        format!("{base}/models/{}:{method}", self.model)
    }

    /// The model's own name, without a resource path before it (`gemini-3-pro-preview`).
    fn short_name(&self) -> &str {
        self.model.rsplit('/').next().unwrap_or(&self.model)
    }

    /// Whether the model refuses calls without a thought signature (Gemini 3 and later).
    fn checks_signatures(&self) -> bool {
        self.short_name()
            .strip_prefix("gemini-")
            .and_then(|v| v.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|major| major.parse::<u32>().ok())
            .is_some_and(|major| major >= 3)
    }

    /// An effort as Gemini 3's `thinkingLevel`: `minimal`, `low`, `medium` or `high`, except
    /// that Pro models take only `low` and `high` (minimal goes as low, medium as high).
    fn thinking_level(&self, effort: ReasoningEffort) -> &'static str {
        let pro = self.short_name().contains("-pro");
        match effort {
            ReasoningEffort::Minimal | ReasoningEffort::Low if pro => "low",
            ReasoningEffort::Medium | ReasoningEffort::High if pro => "high",
            other => other.as_str(),
        }
    }

    /// The JSON body sent for `request` (the same streamed or not).
    ///
    /// The system prompt is `systemInstruction`; turns are `user` and `model` contents;
    /// consecutive tool results are one `user` content of `functionResponse` parts (text
    /// the user sent after them joins it); a call whose arguments are not a JSON object
    /// is sent with `{}`, so the API accepts the conversation. For Gemini 3 and later, a
    /// model turn whose calls carry no signature of Gemini's (another provider's, after a
    /// fallback) gets [`FOREIGN_SIGNATURE`] on its first call, as Google documents. See
    /// the module docs for reasoning.
    pub fn request_body(&self, request: &ModelRequest) -> Value {
        let mut body = Map::new();
        if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
            body.insert("systemInstruction".into(), json!({"parts": [{"text": system}]}));
        }
        body.insert(
            "contents".into(),
            Value::Array(wire_contents(&request.messages, self.checks_signatures())),
        );
        if !request.tools.is_empty() {
            let declarations: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    let mut declaration = json!({"name": t.name, "description": t.description});
                    // A tool without parameters sends none: Gemini refuses an object
                    // schema with no properties.
                    if has_properties(&t.input_schema) {
                        declaration["parameters"] = gemini_schema(&t.input_schema);
                    }
                    declaration
                })
                .collect();
            body.insert("tools".into(), json!([{"functionDeclarations": declarations}]));
            // Only with tools: a tool config without them says nothing.
            if let Some(config) = wire_tool_config(&request.tool_choice) {
                body.insert("toolConfig".into(), json!({"functionCallingConfig": config}));
            }
        }
        let mut generation = Map::new();
        if let Some(max) = request.max_tokens {
            generation.insert("maxOutputTokens".into(), json!(max));
        }
        if let Some(reasoning) = &request.reasoning {
            let mut thinking = Map::new();
            // Gemini 3 and later take an effort as `thinkingLevel` (never together with a
            // budget: the API refuses both); a budget alone, and earlier models, go as
            // `thinkingBudget`.
            match (reasoning.effort, reasoning.budget_tokens) {
                (Some(effort), None) if self.checks_signatures() => {
                    thinking.insert("thinkingLevel".into(), json!(self.thinking_level(effort)));
                }
                _ => {
                    if let Some(budget) = reasoning.budget_or_from_effort() {
                        thinking.insert("thinkingBudget".into(), json!(budget));
                    }
                }
            }
            thinking.insert("includeThoughts".into(), json!(true));
            generation.insert("thinkingConfig".into(), Value::Object(thinking));
        }
        if let Some(format) = request.output.as_ref().filter(|f| f.native) {
            // The answer is the text, constrained to the schema (in the same dialect as
            // the tools'); the run still checks it against the whole schema.
            generation.insert("responseMimeType".into(), json!("application/json"));
            generation.insert("responseSchema".into(), gemini_schema(&format.schema));
        }
        if !generation.is_empty() {
            body.insert("generationConfig".into(), Value::Object(generation));
        }
        Value::Object(body)
    }

    fn http_request(&self, body: &Value, stream: bool) -> Result<reqwest::RequestBuilder, ModelError> {
        let mut request = http::client()?
            .post(self.endpoint(stream))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        match &self.api_key {
            Some(key) => request = request.header("x-goog-api-key", key),
            None if self.base_url.starts_with(GEMINI_BASE_URL) => return Err(http::missing_key(PROVIDER)),
            None => {}
        }
        Ok(request)
    }
}

impl Model for GeminiModel {
    fn name(&self) -> String {
        format!("gemini:{}", self.model)
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        let body = self.request_body(request);
        http::drive(self.http_request(&body, true), PROVIDER, GeminiDecoder::default())
    }

    /// One non-streaming request (`:generateContent`).
    fn complete<'a>(&'a self, request: &'a ModelRequest) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let body = self.request_body(request);
        Box::pin(collect_response(http::drive(
            self.http_request(&body, false),
            PROVIDER,
            GeminiDecoder::default(),
        )))
    }
}

/// `functionCallingConfig`: nothing for `Auto` (the API's default). Gemini has no switch
/// for parallel calls, so `parallel_tool_calls` is not sent.
fn wire_tool_config(choice: &ToolChoice) -> Option<Value> {
    match choice {
        ToolChoice::Auto => None,
        ToolChoice::Required => Some(json!({"mode": "ANY"})),
        ToolChoice::None => Some(json!({"mode": "NONE"})),
        ToolChoice::Tool(name) => Some(json!({"mode": "ANY", "allowedFunctionNames": [name]})),
    }
}

fn has_properties(schema: &Value) -> bool {
    schema.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty())
}

/// The `thoughtSignature` Google documents for a call Gemini did not make (another
/// provider's, before a fallback; a test model's; a hand-built history): Gemini 3 refuses
/// a step whose first call has no signature at all.
pub const FOREIGN_SIGNATURE: &str = "skip_thought_signature_validator";

/// The conversation as Gemini contents. With `foreign_signatures` (Gemini 3), a model turn
/// whose calls carry no signature of Gemini's gets [`FOREIGN_SIGNATURE`] on its first.
fn wire_contents(messages: &[Message], foreign_signatures: bool) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::with_capacity(messages.len());
    for message in messages {
        let (role, parts) = match message {
            Message::User { content } if content.is_empty() => continue,
            Message::User { content } => ("user", vec![json!({"text": content})]),
            Message::Assistant { content, tool_calls, reasoning } => {
                ("model", model_parts(content, tool_calls, reasoning, foreign_signatures))
            }
            Message::Tool { name, content, is_error, .. } => {
                let key = if *is_error { "error" } else { "result" };
                ("user", vec![json!({"functionResponse": {"name": name, "response": {key: content}}})])
            }
        };
        if parts.is_empty() {
            // The API refuses a content without parts; an empty turn says nothing anyway.
            continue;
        }
        match out.last_mut() {
            Some((last, last_parts)) if *last == role => last_parts.extend(parts),
            _ => out.push((role, parts)),
        }
    }
    out.into_iter().map(|(role, parts)| json!({"role": role, "parts": parts})).collect()
}

/// Where a Gemini signature was, read back from [`Reasoning::data`].
#[derive(Debug, Deserialize)]
#[serde(tag = "part", rename_all = "snake_case")]
enum SignedPart {
    Thought,
    Text { start: usize, end: usize },
    Call { call: usize },
}

/// A model turn's parts: signed thoughts, the text (split where a signature covered a
/// span of it), then the calls, each with the signature it came with.
fn model_parts(
    content: &str,
    tool_calls: &[ToolCall],
    reasoning: &[Reasoning],
    foreign_signatures: bool,
) -> Vec<Value> {
    let mut parts = Vec::new();
    let mut text_spans: Vec<(usize, usize, &str)> = Vec::new();
    let mut loose_text_signatures: Vec<&str> = Vec::new();
    let mut call_signatures: Vec<Option<&str>> = vec![None; tool_calls.len()];
    for piece in reasoning.iter().filter(|r| r.provider == REASONING_PROVIDER) {
        let Some(signature) = piece.signature.as_deref() else { continue };
        match serde_json::from_value::<SignedPart>(piece.data.clone()) {
            Ok(SignedPart::Thought) => {
                parts.push(json!({"text": piece.text, "thought": true, "thoughtSignature": signature}))
            }
            Ok(SignedPart::Call { call }) if call < tool_calls.len() => {
                call_signatures[call] = Some(signature)
            }
            Ok(SignedPart::Text { start, end })
                if start <= end && content.is_char_boundary(start) && content.is_char_boundary(end) =>
            {
                text_spans.push((start, end, signature))
            }
            // A position that does not fit this message (edited since): the signature
            // still goes back, on a text part of its own.
            _ => loose_text_signatures.push(signature),
        }
    }
    text_spans.sort_by_key(|&(start, end, _)| (start, end));
    let mut at = 0;
    for (start, end, signature) in text_spans {
        if start < at {
            loose_text_signatures.push(signature);
            continue;
        }
        if start > at {
            parts.push(json!({"text": &content[at..start]}));
        }
        parts.push(json!({"text": &content[start..end], "thoughtSignature": signature}));
        at = end;
    }
    if at < content.len() {
        parts.push(json!({"text": &content[at..]}));
    }
    parts.extend(loose_text_signatures.into_iter().map(|s| json!({"text": "", "thoughtSignature": s})));
    if foreign_signatures
        && call_signatures.iter().all(Option::is_none)
        && let Some(first) = call_signatures.first_mut()
    {
        *first = Some(FOREIGN_SIGNATURE);
    }
    for (call, signature) in tool_calls.iter().zip(call_signatures) {
        let args = http::arguments_object(&call.arguments).unwrap_or_default();
        let mut part = json!({"functionCall": {"name": call.name, "args": args}});
        if let Some(signature) = signature {
            part["thoughtSignature"] = json!(signature);
        }
        parts.push(part);
    }
    parts
}

/// The keywords of Gemini's schema dialect (the OpenAPI 3.0 subset of its `Schema`
/// object) that [`gemini_schema`] keeps; every other keyword is left out.
pub const GEMINI_SCHEMA_KEYWORDS: [&str; 19] = [
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "items",
    "minItems",
    "maxItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "anyOf",
];

/// The JSON Schema types Gemini's dialect has (`null` is `nullable` there).
const GEMINI_TYPES: [&str; 6] = ["string", "number", "integer", "boolean", "array", "object"];

/// Beyond this depth a schema is cut to `{}` (canonical schemas are far shallower).
const MAX_SCHEMA_DEPTH: usize = 64;

/// A canonical JSON Schema in Gemini's dialect: the OpenAPI 3.0 subset that
/// `functionDeclarations[].parameters` and `generationConfig.responseSchema` take.
///
/// Why that field and not `parametersJsonSchema` / `responseJsonSchema` (which take JSON
/// Schema as it is): the subset is accepted by every Gemini model and by Vertex AI,
/// the JSON Schema fields only by newer models. So the schema is translated:
///
/// - only [`GEMINI_SCHEMA_KEYWORDS`] are kept: `additionalProperties`, `$schema`,
///   `default`, `examples`, `exclusiveMinimum`, `multipleOf`, `not`, `patternProperties`,
///   `prefixItems`, `uniqueItems` and the rest are left out (the engine still checks the
///   arguments against the whole schema);
/// - a `type` list becomes one type plus `nullable: true` (several types: `anyOf`);
///   `{"type": "null"}` branches of `anyOf` / `oneOf` become `nullable` too, and `oneOf`
///   becomes `anyOf`; a single remaining branch is merged in;
/// - `const` becomes a one-value `enum`; an `enum` of other than strings (Gemini's enums
///   are strings) is left out and its values are named in the description;
/// - `required` keeps only names in `properties`; an object without properties is
///   `{"type": "object"}`; `format` only where Gemini knows it (`enum`, `date-time` for
///   strings, `int32`/`int64`, `float`/`double`).
///
/// ```
/// use harnessx_agent::model::gemini::gemini_schema;
/// use serde_json::json;
///
/// let canonical = json!({
///     "type": "object",
///     "properties": {"unit": {"const": "c"}, "note": {"type": ["string", "null"], "default": null}},
///     "required": ["unit", "note"],
///     "additionalProperties": false
/// });
/// assert_eq!(gemini_schema(&canonical), json!({
///     "type": "object",
///     "properties": {"unit": {"type": "string", "enum": ["c"]}, "note": {"type": "string", "nullable": true}},
///     "required": ["unit", "note"]
/// }));
/// ```
pub fn gemini_schema(schema: &Value) -> Value {
    walk_schema(schema, 0)
}

fn walk_schema(schema: &Value, depth: usize) -> Value {
    let Value::Object(map) = schema else { return json!({}) };
    if depth > MAX_SCHEMA_DEPTH {
        return json!({});
    }
    let mut out = Map::new();
    let mut nullable = map.get("nullable").and_then(Value::as_bool).unwrap_or(false);
    let mut branches: Vec<Value> = Vec::new();
    match map.get("type") {
        Some(Value::String(t)) if GEMINI_TYPES.contains(&t.as_str()) => {
            out.insert("type".into(), json!(t));
        }
        Some(Value::String(t)) if t == "null" => nullable = true,
        Some(Value::Array(types)) => {
            let named: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            nullable |= named.contains(&"null");
            let kept: Vec<&str> = named.into_iter().filter(|t| GEMINI_TYPES.contains(t)).collect();
            match kept.as_slice() {
                [] => {}
                [one] => {
                    out.insert("type".into(), json!(one));
                }
                many => branches.extend(many.iter().map(|t| json!({"type": t}))),
            }
        }
        _ => {}
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(list)) = map.get(key) {
            for branch in list {
                if branch.get("type").and_then(Value::as_str) == Some("null")
                    && branch.as_object().map(Map::len) == Some(1)
                {
                    nullable = true;
                } else {
                    branches.push(walk_schema(branch, depth + 1));
                }
            }
        }
    }
    if let Some(Value::Array(list)) = map.get("allOf") {
        // All must hold: merged into one (properties and requirements joined).
        for branch in list {
            if let Value::Object(merged) = walk_schema(branch, depth + 1) {
                merge_into(&mut out, merged);
            }
        }
    }
    match branches.len() {
        0 => {}
        1 => {
            if let Some(Value::Object(one)) = branches.pop() {
                merge_into(&mut out, one);
            }
        }
        _ => {
            out.insert("anyOf".into(), Value::Array(branches));
        }
    }
    for (key, value) in map {
        match (key.as_str(), value) {
            ("title" | "description" | "pattern", Value::String(_)) => {
                out.insert(key.clone(), value.clone());
            }
            (
                "minItems" | "maxItems" | "minProperties" | "maxProperties" | "minLength" | "maxLength",
                Value::Number(n),
            ) if n.is_u64() => {
                out.insert(key.clone(), value.clone());
            }
            ("minimum" | "maximum", Value::Number(_)) => {
                out.insert(key.clone(), value.clone());
            }
            ("format", Value::String(f)) => {
                let known = match map.get("type").and_then(Value::as_str) {
                    Some("string") => matches!(f.as_str(), "enum" | "date-time"),
                    Some("integer") => matches!(f.as_str(), "int32" | "int64"),
                    Some("number") => matches!(f.as_str(), "float" | "double"),
                    _ => false,
                };
                if known {
                    out.insert(key.clone(), value.clone());
                }
            }
            ("items", Value::Object(_)) => {
                out.insert("items".into(), walk_schema(value, depth + 1));
            }
            ("properties", Value::Object(props)) if !props.is_empty() => {
                let props: Map<String, Value> =
                    props.iter().map(|(k, v)| (k.clone(), walk_schema(v, depth + 1))).collect();
                out.insert("properties".into(), Value::Object(props));
            }
            _ => {}
        }
    }
    let values = match (map.get("enum"), map.get("const")) {
        (Some(Value::Array(values)), _) => Some(values.clone()),
        (None, Some(value)) => Some(vec![value.clone()]),
        _ => None,
    };
    if let Some(values) = values {
        let strings: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
        let nulls = values.iter().filter(|v| v.is_null()).count();
        nullable |= nulls > 0;
        if strings.len() + nulls == values.len() && !strings.is_empty() {
            out.insert("type".into(), json!("string"));
            out.insert("enum".into(), json!(strings));
        } else if strings.len() + nulls < values.len() {
            let listed: Vec<String> = values.iter().map(Value::to_string).collect();
            let note = format!("One of: {}.", listed.join(", "));
            let description = match out.get("description").and_then(Value::as_str) {
                Some(d) if !d.is_empty() => format!("{d} {note}"),
                _ => note,
            };
            out.insert("description".into(), json!(description));
        }
    }
    if let Some(Value::Array(required)) = map.get("required") {
        let names: Vec<&Value> = required
            .iter()
            .filter(|name| {
                name.as_str().is_some_and(|n| out.get("properties").and_then(|p| p.get(n)).is_some())
            })
            .collect();
        if !names.is_empty() {
            out.insert("required".into(), json!(names));
        }
    }
    if nullable {
        out.insert("nullable".into(), json!(true));
    }
    Value::Object(out)
}

/// Adds `from` to `into`: properties and `required` joined, other keys kept from `into`.
fn merge_into(into: &mut Map<String, Value>, from: Map<String, Value>) {
    for (key, value) in from {
        match (into.get_mut(&key), value) {
            (Some(Value::Object(props)), Value::Object(more)) if key == "properties" => props.extend(more),
            (Some(Value::Array(names)), Value::Array(more)) if key == "required" => {
                for name in more {
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
            }
            (Some(_), _) => {}
            (None, value) => {
                into.insert(key, value);
            }
        }
    }
}

/// One streamed chunk, or the whole non-streamed answer (`GenerateContentResponse`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk {
    #[serde(default)]
    candidates: Vec<Candidate>,
    #[serde(default)]
    usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Content {
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: bool,
    #[serde(default)]
    thought_signature: Option<String>,
    #[serde(default)]
    function_call: Option<FunctionCall>,
    /// Anything else: a part kind this adapter does not handle.
    #[serde(flatten)]
    other: Map<String, Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FunctionCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    args: Option<Value>,
    /// Vertex AI's streamed arguments (`streamFunctionCallArguments`), never asked for.
    #[serde(default)]
    partial_args: Option<Value>,
    #[serde(default)]
    will_continue: Option<bool>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct UsageMetadata {
    prompt_token_count: u64,
    candidates_token_count: u64,
    cached_content_token_count: u64,
    thoughts_token_count: u64,
    tool_use_prompt_token_count: u64,
}

impl UsageMetadata {
    /// The prompt count includes the cached tokens; the output includes the thoughts.
    fn usage(self) -> Usage {
        Usage {
            input_tokens: self.prompt_token_count.saturating_add(self.tool_use_prompt_token_count),
            output_tokens: self.candidates_token_count.saturating_add(self.thoughts_token_count),
            cached_input_tokens: self.cached_content_token_count,
            reasoning_tokens: self.thoughts_token_count,
            ..Usage::default()
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            FinishReason::ContentFilter
        }
        other => FinishReason::Other(other.to_ascii_lowercase()),
    }
}

/// Assembles a Gemini answer, streamed chunk by chunk or whole.
#[derive(Debug, Default)]
struct GeminiDecoder {
    content: String,
    tool_calls: Vec<ToolCall>,
    reasoning: Vec<Reasoning>,
    /// Thought text not yet closed by a signature or another kind of part.
    thought: String,
    finish: Option<FinishReason>,
    usage: UsageMetadata,
}

impl GeminiDecoder {
    fn chunk(&mut self, chunk: Chunk, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        if let Some(error) = chunk.error {
            return Err(in_body_error(&error));
        }
        if let Some(usage) = chunk.usage_metadata {
            self.usage = usage;
        }
        if let Some(reason) = chunk.prompt_feedback.and_then(|f| f.block_reason) {
            // The prompt itself was refused: no candidates follow.
            tracing::debug!(reason, "Gemini blocked the prompt");
            self.finish = Some(FinishReason::ContentFilter);
        }
        // One candidate is asked for (no `candidateCount`): the first is the answer.
        let Some(candidate) = chunk.candidates.into_iter().next() else { return Ok(()) };
        for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
            self.part(part, out)?;
        }
        if let Some(reason) = candidate.finish_reason {
            self.finish = Some(finish_reason(&reason));
        }
        Ok(())
    }

    fn part(&mut self, part: Part, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        if part.thought {
            let text = part.text.unwrap_or_default();
            if !text.is_empty() {
                out.push(ModelEvent::ReasoningDelta(text.clone()));
                self.thought.push_str(&text);
            }
            if let Some(signature) = part.thought_signature {
                let text = std::mem::take(&mut self.thought);
                self.reasoning.push(signed(text, signature, json!({"part": "thought"})));
            }
            return Ok(());
        }
        self.close_thought();
        if let Some(call) = part.function_call {
            if call.partial_args.is_some() || call.will_continue == Some(true) {
                return Err(ModelError::Protocol(
                    "Gemini streamed a function call's arguments in pieces (`partialArgs`), which this adapter does not ask for or read".into(),
                ));
            }
            let Some(name) = call.name.filter(|n| !n.is_empty()) else {
                return Err(ModelError::Protocol("Gemini sent a function call without a name".into()));
            };
            let arguments = match call.args {
                None | Some(Value::Null) => "{}".to_owned(),
                Some(args) => args.to_string(),
            };
            let index = self.tool_calls.len();
            let id = call.id.unwrap_or_default();
            out.push(ModelEvent::ToolCallStart { index, id: id.clone(), name: name.clone() });
            out.push(ModelEvent::ToolCallDelta { index, delta: arguments.clone() });
            if let Some(signature) = part.thought_signature {
                self.reasoning.push(signed(String::new(), signature, json!({"part": "call", "call": index})));
            }
            self.tool_calls.push(ToolCall::new(id, name, arguments));
            return Ok(());
        }
        if part.text.is_none() && part.thought_signature.is_none() {
            if part.other.is_empty() {
                // `{}`: seen at the end of streams, says nothing.
                return Ok(());
            }
            let kinds: Vec<&str> = part.other.keys().map(String::as_str).collect();
            return Err(ModelError::Protocol(format!(
                "Gemini answered with a part this adapter cannot represent ({})",
                kinds.join(", ")
            )));
        }
        let start = self.content.len();
        if let Some(text) = part.text.filter(|t| !t.is_empty()) {
            self.content.push_str(&text);
            out.push(ModelEvent::TextDelta(text));
        }
        if let Some(signature) = part.thought_signature {
            let end = self.content.len();
            self.reasoning.push(signed(
                String::new(),
                signature,
                json!({"part": "text", "start": start, "end": end}),
            ));
        }
        Ok(())
    }

    /// Thought text with no signature is kept as it is (shown, not sent back).
    fn close_thought(&mut self) {
        if !self.thought.is_empty() {
            let text = std::mem::take(&mut self.thought);
            self.reasoning.push(Reasoning {
                provider: REASONING_PROVIDER.into(),
                text,
                signature: None,
                data: json!({"part": "thought"}),
            });
        }
    }
}

fn signed(text: String, signature: String, data: Value) -> Reasoning {
    Reasoning { provider: REASONING_PROVIDER.into(), text, signature: Some(signature), data }
}

/// An `{"error": {"code", "message", "status"}}` inside an answer: the error its HTTP
/// status gives (the `code`), or a protocol error when it has none.
fn in_body_error(error: &Value) -> ModelError {
    let body = json!({"error": error}).to_string();
    match error.get("code").and_then(Value::as_u64).and_then(|c| u16::try_from(c).ok()) {
        Some(status) => http::status_error(status, &body, PROVIDER),
        None => ModelError::Protocol(format!(
            "the {} reported an error in its answer: {}",
            PROVIDER.name,
            http::error_text(&body)
        )),
    }
}

/// A recorded `streamGenerateContent?alt=sse` body, parsed as the adapter parses a live
/// one: the events it would stream (without [`ModelEvent::Done`]) and the response. For
/// replaying recordings, and for measuring the parser (`benches/gemini_sse.rs`).
///
/// ```
/// use harnessx_agent::model::gemini::parse_sse;
/// use harnessx_agent::model::ModelEvent;
///
/// let body = b"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hi\"}]},\"finishReason\":\"STOP\"}]}\r\n\r\n";
/// let (events, response) = parse_sse(body).unwrap();
/// assert_eq!(events, [ModelEvent::TextDelta("Hi".into())]);
/// assert_eq!(response.content, "Hi");
/// assert!(parse_sse(b"data: {\"candidates\":[]}\r\n\r\n").is_err()); // no finishReason
/// ```
pub fn parse_sse(body: &[u8]) -> Result<(Vec<ModelEvent>, ModelResponse), ModelError> {
    let mut parser = crate::model::sse::SseParser::new();
    let mut decoder = GeminiDecoder::default();
    let mut events = Vec::new();
    for event in parser.feed(body) {
        decoder.event(event, &mut events)?;
    }
    // As a live stream: an unterminated last event is used when it is whole JSON.
    if let Some(tail) =
        parser.finish().filter(|e| serde_json::from_str::<serde::de::IgnoredAny>(e.data.trim()).is_ok())
    {
        decoder.event(tail, &mut events)?;
    }
    let response = decoder.finish(false)?;
    Ok((events, response))
}

fn parse_chunk(data: &str) -> Result<Chunk, ModelError> {
    serde_json::from_str(data).map_err(|e| {
        ModelError::Protocol(format!(
            "a {} stream chunk is not the JSON expected ({e}): {}",
            PROVIDER.name,
            http::truncate(data, 200)
        ))
    })
}

impl Decoder for GeminiDecoder {
    fn event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<Step, ModelError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Step::More);
        }
        let chunk = parse_chunk(data)?;
        self.chunk(chunk, out)?;
        // No end marker: the stream ends when the server closes it, after the chunk with
        // the finish reason.
        Ok(Step::More)
    }

    fn finish(mut self, _complete: bool) -> Result<ModelResponse, ModelError> {
        self.close_thought();
        let Some(finish) = self.finish else {
            return Err(ModelError::Transport(
                "the response stream ended before the answer was complete (no finishReason)".into(),
            ));
        };
        // Gemini says STOP after function calls too.
        let finish_reason = match finish {
            FinishReason::Stop if !self.tool_calls.is_empty() => FinishReason::ToolCalls,
            other => other,
        };
        Ok(ModelResponse {
            content: self.content,
            tool_calls: self.tool_calls,
            finish_reason,
            usage: self.usage.usage(),
            reasoning: self.reasoning,
            model: None,
        })
    }

    fn parse_full(&self, body: &Value) -> Result<ModelResponse, ModelError> {
        let chunk: Chunk = serde_json::from_value(body.clone()).map_err(|e| {
            ModelError::Protocol(format!("the {} answer is not the JSON expected ({e})", PROVIDER.name))
        })?;
        let mut decoder = Self::default();
        decoder.chunk(chunk, &mut Vec::new())?;
        decoder.finish(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_pair_by_name_and_order_and_user_text_joins_their_turn() {
        let messages = vec![
            Message::user("go"),
            Message::assistant("", vec![ToolCall::new("", "f", "[1]"), ToolCall::new("", "g", r#"{"a":1}"#)]),
            Message::Tool {
                call_id: "call_1_0".into(),
                name: "f".into(),
                content: "bad".into(),
                is_error: true,
            },
            Message::Tool {
                call_id: "call_1_1".into(),
                name: "g".into(),
                content: "ok".into(),
                is_error: false,
            },
            Message::user("and?"),
            Message::assistant("", vec![]),
            Message::user(""),
        ];
        assert_eq!(
            Value::Array(wire_contents(&messages, false)),
            json!([
                {"role": "user", "parts": [{"text": "go"}]},
                {"role": "model", "parts": [
                    {"functionCall": {"name": "f", "args": {}}},
                    {"functionCall": {"name": "g", "args": {"a": 1}}}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "f", "response": {"error": "bad"}}},
                    {"functionResponse": {"name": "g", "response": {"result": "ok"}}},
                    {"text": "and?"}
                ]}
            ])
        );
    }

    #[test]
    fn gemini_3_gets_the_documented_signature_on_a_call_it_did_not_make() {
        let messages = vec![
            Message::user("go"),
            Message::assistant("", vec![ToolCall::new("c1", "f", "{}"), ToolCall::new("c2", "g", "{}")]),
        ];
        let request = ModelRequest { messages, ..ModelRequest::default() };
        let first_call =
            |model: &str| GeminiModel::new(model).request_body(&request)["contents"][1]["parts"].clone();
        for model in ["gemini-3-pro-preview", "gemini-3.5-flash", "models/gemini-3-flash-preview"] {
            let parts = first_call(model);
            assert_eq!(parts[0]["thoughtSignature"], FOREIGN_SIGNATURE, "{model}");
            assert!(parts[1].get("thoughtSignature").is_none(), "{model}: only the first call");
        }
        for model in ["gemini-2.5-flash", "gemini-2.0-flash", "gemma-3-27b-it"] {
            assert!(first_call(model)[0].get("thoughtSignature").is_none(), "{model}");
        }
        // Gemini's own signature is kept, never replaced.
        let mut signed = request.clone();
        signed.messages[1] = Message::assistant_with_reasoning(
            "",
            vec![ToolCall::new("c1", "f", "{}")],
            vec![Reasoning {
                provider: REASONING_PROVIDER.into(),
                text: String::new(),
                signature: Some("REAL".into()),
                data: json!({"part": "call", "call": 0}),
            }],
        );
        let parts =
            GeminiModel::new("gemini-3-pro-preview").request_body(&signed)["contents"][1]["parts"].clone();
        assert_eq!(parts[0]["thoughtSignature"], "REAL");
    }

    #[test]
    fn text_signatures_go_back_on_the_span_they_covered_and_others_are_left_out() {
        let reasoning = vec![
            signed(String::new(), "S1".into(), json!({"part": "text", "start": 6, "end": 11})),
            signed(String::new(), "S2".into(), json!({"part": "text", "start": 11, "end": 11})),
            signed("why".into(), "S0".into(), json!({"part": "thought"})),
            Reasoning::new(REASONING_PROVIDER, "unsigned thought"),
            Reasoning { signature: Some("A".into()), ..Reasoning::new("anthropic", "theirs") },
            signed(String::new(), "S3".into(), json!({"part": "text", "start": 99, "end": 100})),
        ];
        assert_eq!(
            Value::Array(model_parts("Hello world", &[], &reasoning, true)),
            json!([
                {"text": "why", "thought": true, "thoughtSignature": "S0"},
                {"text": "Hello "},
                {"text": "world", "thoughtSignature": "S1"},
                {"text": "", "thoughtSignature": "S2"},
                {"text": "", "thoughtSignature": "S3"}
            ])
        );
    }

    #[test]
    fn schema_keeps_only_what_gemini_takes() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "n": {"type": "integer", "exclusiveMinimum": 0, "multipleOf": 2, "format": "uint32"},
                "k": {"enum": [1, 2, null], "description": "Kind."},
                "u": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
                "o": {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}},
                "v": {"oneOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]}
            },
            "required": ["n", "missing"],
            "additionalProperties": false
        });
        assert_eq!(
            gemini_schema(&schema),
            json!({
                "type": "object",
                "properties": {
                    "n": {"type": "integer"},
                    "k": {"description": "Kind. One of: 1, 2, null.", "nullable": true},
                    "u": {"anyOf": [{"type": "string"}, {"type": "integer"}], "nullable": true},
                    "o": {"type": "object"},
                    "v": {"type": "string", "maxLength": 3, "nullable": true}
                },
                "required": ["n"]
            })
        );
    }

    #[test]
    fn schema_nested_past_the_bound_is_cut_not_overflowed() {
        let mut deep = json!({"type": "string"});
        for _ in 0..1_000 {
            deep = json!({"type": "array", "items": deep});
        }
        let out = gemini_schema(&deep);
        let mut depth = 0;
        let mut at = &out;
        while let Some(next) = at.get("items") {
            at = next;
            depth += 1;
        }
        assert!(depth <= MAX_SCHEMA_DEPTH + 1, "{depth}");
    }
}
