//! The request sent: the JSON body of a Chat Completions call (messages, tools, tool
//! choice, answer format, token limit), in the forms OpenAI and other servers take.

use serde_json::{Map, Value, json};

use super::compatible::{self, Host, ToolResults};
use super::{OpenAiModel, strict_schema};
use crate::model::http;
use crate::model::media::{self, Blobs, WireBody};
use crate::model::{Message, ModelRequest, ToolChoice};
use harnessx_core::{Blob, Part, ToolSpec};

impl OpenAiModel {
    /// The JSON body sent for `request`, streamed or not (before any detour the server
    /// was found to need: tool results are `tool` messages here), media written out as
    /// their data URLs.
    pub fn request_body(&self, request: &ModelRequest, stream: bool) -> Value {
        self.body(request, &request.tool_choice, stream, ToolResults::AsToolMessages).into_value()
    }

    /// The body sent, its media standing as placeholders until it is written (see
    /// [`media`]).
    pub(super) fn body(
        &self,
        request: &ModelRequest,
        tool_choice: &ToolChoice,
        stream: bool,
        results: ToolResults,
    ) -> WireBody {
        let mut blobs = Blobs::new();
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.extend(wire_messages(&request.messages, self.host, results, &mut blobs));
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
        WireBody::new(Value::Object(body), blobs)
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

/// The conversation in the Chat Completions format: each message as [`wire_message`]
/// writes it, except that with [`ToolResults::AsUserText`] each run of tool results (one
/// turn's) becomes one `user` message. A `tool` message takes text only, so the media of
/// a turn's results follow its `tool` messages in one `user` message ([`results_media`]).
fn wire_messages(messages: &[Message], host: Host, results: ToolResults, blobs: &mut Blobs) -> Vec<Value> {
    let is_result = |m: &Message| matches!(m, Message::Tool { .. });
    let mut wire = Vec::with_capacity(messages.len());
    for turn in messages.chunk_by(|a, b| is_result(a) && is_result(b)) {
        match turn {
            [first, ..] if results == ToolResults::AsUserText && is_result(first) => {
                wire.push(compatible::results_as_user(turn, host, blobs));
            }
            _ => {
                wire.extend(turn.iter().map(|m| wire_message(m, host, blobs)));
                wire.extend(results_media(turn, host, blobs));
            }
        }
    }
    wire
}

/// A message in the Chat Completions format. Arguments that are not a JSON object
/// (garbled or cut off) are sent as `{}`, so the server accepts the conversation. An
/// assistant message with tool calls and no text has `"content": null` for OpenAI (as
/// always) and `""` for other servers: llama-cpp-python refuses `null` and a missing
/// `content`, llama-server a missing one, and all of them take `""`. A user message
/// with media is an array of content parts ([`content_part`]); without, its text.
fn wire_message(message: &Message, host: Host, blobs: &mut Blobs) -> Value {
    match message {
        Message::User { content, parts } if parts.is_empty() => json!({"role": "user", "content": content}),
        Message::User { content, parts } => {
            let mut items = Vec::with_capacity(parts.len() + 1);
            if !content.is_empty() {
                items.push(text_part(content));
            }
            items.extend(parts.iter().map(|part| content_part(part, host, blobs)));
            json!({"role": "user", "content": items})
        }
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
        // The text only: a `tool` message takes no image (its media follow, see
        // `results_media`).
        Message::Tool { call_id, content, .. } => {
            json!({"role": "tool", "tool_call_id": call_id, "content": content})
        }
    }
}

/// The media of a turn's tool results (`turn`), as the one `user` message that follows
/// their `tool` messages: each result's parts under a line naming its call
/// ([`media::result_header`]). `None` when no result has any, or `turn` is not results.
fn results_media(turn: &[Message], host: Host, blobs: &mut Blobs) -> Option<Value> {
    let mut items = Vec::new();
    for message in turn {
        if let Message::Tool { call_id, name, is_error, parts, .. } = message
            && !parts.is_empty()
        {
            items.push(text_part(&media::result_header(name, call_id, *is_error)));
            items.extend(parts.iter().map(|part| content_part(part, host, blobs)));
        }
    }
    (!items.is_empty()).then(|| json!({"role": "user", "content": items}))
}

/// A text content part.
pub(super) fn text_part(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// A part as a Chat Completions content part: an image as `image_url` (its URL, or a data
/// URL of its bytes), a PDF as a `file` part (`file_data`, a data URL; OpenAI only, and
/// only PDF: other servers take no `file` parts), WAV or MP3 audio as `input_audio`
/// (base64). What the API cannot take (another kind of file, a file or audio by URL,
/// another audio format) is a text part naming it ([`media::unsupported`]).
pub(super) fn content_part(part: &Part, host: Host, blobs: &mut Blobs) -> Value {
    let provider = match host {
        Host::OpenAi => "OpenAI Chat Completions",
        Host::Compatible => "OpenAI-compatible servers",
    };
    match part {
        Part::Text(text) => text_part(text),
        Part::Image { media_type, data } => {
            json!({"type": "image_url", "image_url": {"url": blobs.url(media_type, data)}})
        }
        Part::File { media_type, name, data: Blob::Bytes(bytes) }
            if host == Host::OpenAi && media_type.eq_ignore_ascii_case("application/pdf") =>
        {
            let filename = name.as_deref().unwrap_or("document.pdf");
            json!({"type": "file", "file": {"filename": filename, "file_data": blobs.data_url(media_type, bytes)}})
        }
        Part::Audio { media_type, data: Blob::Bytes(bytes) } => match audio_format(media_type) {
            Some(format) => {
                json!({"type": "input_audio", "input_audio": {"data": blobs.base64(bytes), "format": format}})
            }
            None => text_part(&media::unsupported(part, provider)),
        },
        Part::File { .. } | Part::Audio { data: Blob::Url(_), .. } => {
            text_part(&media::unsupported(part, provider))
        }
    }
}

/// The `input_audio` format of an audio media type: `wav` or `mp3`, the two the API takes.
fn audio_format(media_type: &str) -> Option<&'static str> {
    let is = |names: &[&str]| names.iter().any(|n| media_type.eq_ignore_ascii_case(n));
    if is(&["audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave"]) {
        Some("wav")
    } else if is(&["audio/mpeg", "audio/mp3"]) {
        Some("mp3")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harnessx_core::ToolCall;

    #[test]
    fn auto_and_empty_content_are_spelled_out_for_servers_other_than_openai() {
        assert_eq!(wire_tool_choice(&ToolChoice::Auto, Host::OpenAi), None);
        assert_eq!(wire_tool_choice(&ToolChoice::Auto, Host::Compatible), Some(json!("auto")));
        let call = Message::assistant("", vec![ToolCall::new("c", "f", "[1]")]);
        let wire = |host| wire_message(&call, host, &mut Blobs::new());
        assert_eq!(wire(Host::OpenAi)["content"], Value::Null);
        assert_eq!(wire(Host::Compatible)["content"], json!(""));
        assert_eq!(wire(Host::OpenAi)["tool_calls"][0]["function"]["arguments"], "{}");
    }
}
