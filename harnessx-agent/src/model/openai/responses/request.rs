//! The request sent: the JSON body of a Responses API call, with the conversation as
//! `input` items and this provider's reasoning items sent back in it.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value, json};

use super::{OpenAiResponsesModel, RESPONSES_PROVIDER};
use crate::model::http;
use crate::model::media::{self, Blobs, WireBody};
use crate::model::openai::compatible::Host;
use crate::model::openai::strict_schema;
use crate::model::{Message, ModelRequest, ToolChoice};
use harnessx_core::{Blob, Part, ToolSpec};

impl OpenAiResponsesModel {
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

    /// The JSON body sent for `request`, streamed or not.
    ///
    /// The system prompt is `instructions`; the conversation is `input` items (see
    /// [`wire_input`]); tools, `tool_choice` and `parallel_tool_calls` only when there
    /// are tools; `reasoning` (`effort`, `summary: "auto"`) when the request sets it; a
    /// native answer format as `text.format` (the strict dialect); `store: false`. Media
    /// are written out as their data URLs.
    pub fn request_body(&self, request: &ModelRequest, stream: bool) -> Value {
        self.wire_body(request, stream).into_value()
    }

    /// The body sent, its media standing as placeholders until it is written (see
    /// [`media`]).
    pub(super) fn wire_body(&self, request: &ModelRequest, stream: bool) -> WireBody {
        let mut blobs = Blobs::new();
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
            body.insert("instructions".into(), json!(system));
        }
        body.insert("input".into(), Value::Array(input_items(&request.messages, &mut blobs)));
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
        WireBody::new(Value::Object(body), blobs)
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
///
/// A user message or a tool result with media has a content array in place of its text:
/// the text as `input_text`, then each part (`input_image`, `input_file`); a tool result's array is the
/// `function_call_output`'s `output`. The media's base64 is written out here.
pub fn wire_input(messages: &[Message]) -> Vec<Value> {
    let mut blobs = Blobs::new();
    let items = input_items(messages, &mut blobs);
    match WireBody::new(Value::Array(items), blobs).into_value() {
        Value::Array(items) => items,
        // Filling placeholders in keeps an array an array.
        other => vec![other],
    }
}

/// [`wire_input`], the media standing as placeholders in `blobs`.
fn input_items(messages: &[Message], blobs: &mut Blobs) -> Vec<Value> {
    let mut input = Vec::with_capacity(messages.len());
    for message in messages {
        match message {
            Message::User { content, parts } if parts.is_empty() => {
                input.push(json!({"role": "user", "content": content}))
            }
            Message::User { content, parts } => {
                input.push(json!({"role": "user", "content": input_content(content, parts, blobs)}))
            }
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
            Message::Tool { call_id, content, parts, .. } if parts.is_empty() => {
                input.push(json!({"type": "function_call_output", "call_id": call_id, "output": content}));
            }
            Message::Tool { call_id, content, parts, .. } => {
                let output = input_content(content, parts, blobs);
                input.push(json!({"type": "function_call_output", "call_id": call_id, "output": output}));
            }
        }
    }
    input
}

/// A text and its media as a content array: the text as `input_text` (when there is
/// one), then each part as [`input_part`] writes it.
fn input_content(content: &str, parts: &[Part], blobs: &mut Blobs) -> Vec<Value> {
    let mut items = Vec::with_capacity(parts.len() + 1);
    if !content.is_empty() {
        items.push(input_text(content));
    }
    items.extend(parts.iter().map(|part| input_part(part, blobs)));
    items
}

fn input_text(text: &str) -> Value {
    json!({"type": "input_text", "text": text})
}

/// A part as a Responses input content item: an image as `input_image` (`image_url`: its
/// URL or a data URL of its bytes; `detail` `auto`, the API's default), a file as
/// `input_file` (`filename` and `file_data`, a data URL, or `file_url`). Audio is not an
/// input content type of the API: a text item names it ([`media::unsupported`]).
fn input_part(part: &Part, blobs: &mut Blobs) -> Value {
    match part {
        Part::Text(text) => input_text(text),
        Part::Image { media_type, data } => {
            json!({"type": "input_image", "image_url": blobs.url(media_type, data), "detail": "auto"})
        }
        Part::File { media_type, name, data: Blob::Bytes(bytes) } => {
            let filename = name.as_deref().unwrap_or("file");
            json!({"type": "input_file", "filename": filename, "file_data": blobs.data_url(media_type, bytes)})
        }
        Part::File { data: Blob::Url(url), .. } => json!({"type": "input_file", "file_url": url}),
        Part::Audio { .. } => input_text(&media::unsupported(part, "the OpenAI Responses API")),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Reasoning;
    use harnessx_core::ToolCall;

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
}
