//! The request sent: the JSON body of a Messages API call (messages, tools, tool choice,
//! thinking, structured output) and the schema form structured outputs take.

use serde_json::{Map, Value, json};

use super::{AnthropicModel, cache, thinking, thinking_budget};
use crate::model::http;
use crate::model::media::{self, Blobs, WireBody};
use crate::model::{Message, ModelRequest, ReasoningConfig, ToolChoice};
use harnessx_core::{Blob, Part};

impl AnthropicModel {
    /// Whether this model thinks adaptively (see [`adaptive_thinking`](Self::adaptive_thinking)).
    fn adaptive(&self) -> bool {
        self.adaptive_thinking.unwrap_or_else(|| adaptive_by_name(&self.model))
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
    ///
    /// Media go as `image` and `document` blocks, in user messages and inside a
    /// `tool_result`'s content, written out here as their base64.
    pub fn request_body(&self, request: &ModelRequest, stream: bool) -> Value {
        self.wire_body(request, stream).into_value()
    }

    /// The body sent, its media standing as placeholders until it is written (see
    /// [`media`]).
    pub(super) fn wire_body(&self, request: &ModelRequest, stream: bool) -> WireBody {
        let mut blobs = Blobs::new();
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
        let mut messages = wire_messages(&request.messages, &mut blobs);
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
        WireBody::new(Value::Object(body), blobs)
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

/// `tool_choice` on the wire: `auto`, `any` (required), `none` or `tool`, with
/// `disable_parallel_tool_use: true` when parallel calls are turned off (except under
/// `none`, which calls no tool). Nothing for `Auto` with parallel calls left to the API,
/// so requests that do not set either stay as they were.
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

/// The conversation as Messages API turns.
fn wire_messages(messages: &[Message], blobs: &mut Blobs) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::with_capacity(messages.len());
    for message in messages {
        let (role, blocks) = match message {
            Message::User { content, parts } => {
                let mut blocks: Vec<Value> = text_block(content).into_iter().collect();
                blocks.extend(parts.iter().filter_map(|part| media_block(part, blobs)));
                ("user", blocks)
            }
            Message::Assistant { content, tool_calls, reasoning } => {
                let mut blocks: Vec<Value> = text_block(content).into_iter().collect();
                blocks.extend(tool_calls.iter().map(|call| {
                    let input = http::arguments_object(&call.arguments).unwrap_or_default();
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input})
                }));
                ("assistant", thinking::with_reasoning(reasoning, blocks))
            }
            Message::Tool { call_id, content, is_error, parts, .. } => {
                let content = if parts.is_empty() {
                    json!(content)
                } else {
                    // A result with media: its text and its media as blocks.
                    let mut blocks: Vec<Value> = text_block(content).into_iter().collect();
                    blocks.extend(parts.iter().filter_map(|part| media_block(part, blobs)));
                    Value::Array(blocks)
                };
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

/// A part as a content block, in a user message or a `tool_result`'s content: an image as
/// an `image` block, a PDF as a `document` block, each with a `base64` source (its media
/// type and data) or a `url` one. Another kind of file, and audio, are a text block naming
/// them ([`media::unsupported`]); an empty text part is none (the API refuses empty text).
fn media_block(part: &Part, blobs: &mut Blobs) -> Option<Value> {
    let source = |media_type: &str, data: &Blob, blobs: &mut Blobs| match data {
        Blob::Bytes(bytes) => {
            json!({"type": "base64", "media_type": media_type, "data": blobs.base64(bytes)})
        }
        Blob::Url(url) => json!({"type": "url", "url": url}),
    };
    match part {
        Part::Text(text) => text_block(text),
        Part::Image { media_type, data } => {
            Some(json!({"type": "image", "source": source(media_type, data, blobs)}))
        }
        Part::File { media_type, data, .. } if media_type.eq_ignore_ascii_case("application/pdf") => {
            Some(json!({"type": "document", "source": source(media_type, data, blobs)}))
        }
        Part::File { .. } | Part::Audio { .. } => text_block(&media::unsupported(part, "anthropic")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harnessx_core::{Parts, ToolCall};

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
            Message::Tool {
                call_id: "a".into(),
                name: "f".into(),
                content: "bad".into(),
                is_error: true,
                parts: Parts::new(),
            },
            Message::user("and?"),
            Message::assistant("", vec![]),
            Message::user("well"),
        ];
        assert_eq!(
            Value::Array(wire_messages(&messages, &mut Blobs::new())),
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
}
