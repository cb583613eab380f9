//! The request sent: the JSON body of a `generateContent` call (contents, tools, tool
//! config, generation config) and the thought signatures sent back on the parts they came on.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::schema::gemini_schema;
use super::{GeminiModel, REASONING_PROVIDER};
use crate::model::http;
use crate::model::media::{self, Blobs, WireBody};
use crate::model::{Message, ModelRequest, Reasoning, ReasoningEffort, ToolChoice};
use harnessx_core::{Blob, Part, ToolCall};

impl GeminiModel {
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
    ///
    /// Media go as `inlineData` parts (or `fileData` for a URL) in user turns, and in
    /// function responses' `parts` for the models that take them (Gemini 3 and later);
    /// their base64 is written out here.
    pub fn request_body(&self, request: &ModelRequest) -> Value {
        self.wire_body(request).into_value()
    }

    /// The body sent, its media standing as placeholders until it is written (see
    /// [`media`]).
    pub(super) fn wire_body(&self, request: &ModelRequest) -> WireBody {
        let mut blobs = Blobs::new();
        let mut body = Map::new();
        if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
            body.insert("systemInstruction".into(), json!({"parts": [{"text": system}]}));
        }
        // Gemini 3 and later check signatures, and take media in function responses.
        let gemini_3 = self.checks_signatures();
        body.insert(
            "contents".into(),
            Value::Array(wire_contents(&request.messages, gemini_3, gemini_3, &mut blobs)),
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
        WireBody::new(Value::Object(body), blobs)
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
///
/// A user message's media follow its text as parts ([`user_part`]). A tool result's media
/// go, with `media_in_results` (Gemini 3 and later, which take multimodal function
/// responses), into its `functionResponse`'s own `parts` as `inlineData`: images and PDFs
/// given as bytes ([`in_function_response`]). Everything else of a result (its media for
/// earlier models, other files, audio, media given by URL, text parts) goes
/// after the turn's function responses, in the same user turn, under a line naming the
/// call ([`media::result_header`]): the function responses of a turn come first, as the
/// calls they answer did.
fn wire_contents(
    messages: &[Message],
    foreign_signatures: bool,
    media_in_results: bool,
    blobs: &mut Blobs,
) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::with_capacity(messages.len());
    // The tool results' parts that follow their turn's function responses.
    let mut after_results: Vec<Value> = Vec::new();
    for message in messages {
        if !matches!(message, Message::Tool { .. }) && !after_results.is_empty() {
            push_turn(&mut out, "user", std::mem::take(&mut after_results));
        }
        let (role, parts) = match message {
            Message::User { content, parts } => {
                let mut wire: Vec<Value> = text_part(content).into_iter().collect();
                wire.extend(parts.iter().filter_map(|part| user_part(part, blobs)));
                ("user", wire)
            }
            Message::Assistant { content, tool_calls, reasoning } => {
                ("model", model_parts(content, tool_calls, reasoning, foreign_signatures))
            }
            Message::Tool { call_id, name, content, is_error, parts } => {
                let key = if *is_error { "error" } else { "result" };
                let mut response = json!({"name": name, "response": {key: content}});
                let mut inline = Vec::new();
                let mut after = Vec::new();
                for part in parts {
                    match part {
                        Part::Image { media_type, data: Blob::Bytes(bytes) }
                        | Part::File { media_type, data: Blob::Bytes(bytes), .. }
                            if media_in_results && in_function_response(part) =>
                        {
                            inline.push(
                                json!({"inlineData": {"mimeType": media_type, "data": blobs.base64(bytes)}}),
                            );
                        }
                        other => after.extend(user_part(other, blobs)),
                    }
                }
                if !inline.is_empty() {
                    response["parts"] = Value::Array(inline);
                }
                if !after.is_empty() {
                    after_results.push(json!({"text": media::result_header(name, call_id, *is_error)}));
                    after_results.append(&mut after);
                }
                ("user", vec![json!({"functionResponse": response})])
            }
        };
        push_turn(&mut out, role, parts);
    }
    push_turn(&mut out, "user", after_results);
    out.into_iter().map(|(role, parts)| json!({"role": role, "parts": parts})).collect()
}

/// Adds `parts` to the conversation: to the last turn when it is `role`'s (turns
/// alternate: tool results and the user text after them share one), else as a new turn.
/// No parts, no turn: the API refuses a content without parts, and an empty turn says
/// nothing anyway.
fn push_turn(out: &mut Vec<(&'static str, Vec<Value>)>, role: &'static str, parts: Vec<Value>) {
    if parts.is_empty() {
        return;
    }
    match out.last_mut() {
        Some((last, last_parts)) if *last == role => last_parts.extend(parts),
        _ => out.push((role, parts)),
    }
}

/// Whether a result's part goes inside its function response (on the models that take
/// media there): an image, or a PDF. Google's `FunctionResponseBlob` is raw media and says
/// text is not to be sent as bytes there, so a text file follows the function response
/// as a user part instead, as audio does.
fn in_function_response(part: &Part) -> bool {
    match part {
        Part::Image { .. } => true,
        Part::File { media_type, .. } => media_type.eq_ignore_ascii_case("application/pdf"),
        Part::Text(_) | Part::Audio { .. } => false,
    }
}

/// A text part; none for an empty text.
fn text_part(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"text": text}))
}

/// A part of a user turn: text, or a medium of any kind as `inlineData` (its media type
/// and base64) or, given by URL, as `fileData` (its media type and `fileUri`).
fn user_part(part: &Part, blobs: &mut Blobs) -> Option<Value> {
    match part {
        Part::Text(text) => text_part(text),
        Part::Image { media_type, data }
        | Part::File { media_type, data, .. }
        | Part::Audio { media_type, data } => Some(match data {
            Blob::Bytes(bytes) => {
                json!({"inlineData": {"mimeType": media_type, "data": blobs.base64(bytes)}})
            }
            Blob::Url(url) => json!({"fileData": {"mimeType": media_type, "fileUri": url}}),
        }),
    }
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

#[cfg(test)]
mod tests {
    use super::super::response::signed;
    use super::*;
    use harnessx_core::Parts;

    // Gemini 3 takes images and PDFs inside a function response; a text file, audio and
    // a URL follow the turn's responses under the call's line, before the user's text.
    #[test]
    fn on_gemini_3_only_images_and_pdfs_go_inside_the_function_response() {
        let parts: Parts = vec![
            Part::image("image/png", vec![1u8]),
            Part::file("application/pdf", None, vec![2u8]),
            Part::file("text/csv", Some("a.csv".into()), vec![3u8]),
            Part::audio("audio/wav", vec![4u8]),
            Part::image_url("image/png", "https://e/a.png"),
        ]
        .into();
        let messages = vec![
            Message::assistant("", vec![ToolCall::new("c", "f", "{}")]),
            Message::Tool {
                call_id: "c".into(),
                name: "f".into(),
                content: "ok".into(),
                is_error: false,
                parts,
            },
            Message::user("and?"),
        ];
        let mut blobs = Blobs::new();
        let contents = Value::Array(wire_contents(&messages, false, true, &mut blobs));
        let contents = WireBody::new(contents, blobs).into_value();
        assert_eq!(
            contents[1],
            json!({"role": "user", "parts": [
                {"functionResponse": {"name": "f", "response": {"result": "ok"}, "parts": [
                    {"inlineData": {"mimeType": "image/png", "data": "AQ=="}},
                    {"inlineData": {"mimeType": "application/pdf", "data": "Ag=="}}
                ]}},
                {"text": "[f result, call c]"},
                {"inlineData": {"mimeType": "text/csv", "data": "Aw=="}},
                {"inlineData": {"mimeType": "audio/wav", "data": "BA=="}},
                {"fileData": {"mimeType": "image/png", "fileUri": "https://e/a.png"}},
                {"text": "and?"}
            ]})
        );
    }

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
                parts: Parts::new(),
            },
            Message::Tool {
                call_id: "call_1_1".into(),
                name: "g".into(),
                content: "ok".into(),
                is_error: false,
                parts: Parts::new(),
            },
            Message::user("and?"),
            Message::assistant("", vec![]),
            Message::user(""),
        ];
        assert_eq!(
            Value::Array(wire_contents(&messages, false, false, &mut Blobs::new())),
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
}
