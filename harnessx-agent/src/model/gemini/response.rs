//! The response read: Gemini's answer on the wire (`GenerateContentResponse`, whole or one
//! streamed chunk at a time) and the decoder that turns it into events and a response.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{PROVIDER, REASONING_PROVIDER};
use crate::model::http::{self, Decoder, Step};
use crate::model::sse::SseEvent;
use crate::model::{FinishReason, ModelError, ModelEvent, ModelResponse, Reasoning, Usage};
use harnessx_core::ToolCall;

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
pub(super) struct GeminiDecoder {
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

pub(super) fn signed(text: String, signature: String, data: Value) -> Reasoning {
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
    fn thoughts_text_and_calls_keep_their_signatures_and_a_call_finishes_as_tool_calls() {
        let body = concat!(
            "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"why\",\"thought\":true},",
            "{\"text\":\"Hi \",\"thoughtSignature\":\"T\"}]}}]}\r\n\r\n",
            "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":{\"a\":1}},",
            "\"thoughtSignature\":\"C\"}]},\"finishReason\":\"STOP\"}],",
            "\"usageMetadata\":{\"promptTokenCount\":5,\"candidatesTokenCount\":2,\"thoughtsTokenCount\":3}}\r\n\r\n",
        );
        let (events, response) = parse_sse(body.as_bytes()).unwrap();
        assert_eq!(
            events,
            [
                ModelEvent::ReasoningDelta("why".into()),
                ModelEvent::TextDelta("Hi ".into()),
                ModelEvent::ToolCallStart { index: 0, id: String::new(), name: "f".into() },
                ModelEvent::ToolCallDelta { index: 0, delta: r#"{"a":1}"#.into() },
            ]
        );
        assert_eq!(response.content, "Hi ");
        assert_eq!(response.tool_calls, [ToolCall::new("", "f", r#"{"a":1}"#)]);
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
        assert_eq!((response.usage.input_tokens, response.usage.output_tokens), (5, 5));
        assert_eq!(response.usage.reasoning_tokens, 3);
        assert_eq!(
            response.reasoning,
            [
                Reasoning {
                    provider: REASONING_PROVIDER.into(),
                    text: "why".into(),
                    signature: None,
                    data: json!({"part": "thought"}),
                },
                signed(String::new(), "T".into(), json!({"part": "text", "start": 0, "end": 3})),
                signed(String::new(), "C".into(), json!({"part": "call", "call": 0})),
            ]
        );
    }

    #[test]
    fn parts_it_cannot_represent_and_errors_in_the_answer_are_errors() {
        let chunk = |json: &str| parse_sse(format!("data: {json}\r\n\r\n").as_bytes());
        let e = chunk(r#"{"candidates":[{"content":{"parts":[{"inlineData":{"data":""}}]}}]}"#).unwrap_err();
        assert!(matches!(&e, ModelError::Protocol(m) if m.contains("inlineData")), "{e:?}");
        let e = chunk(
            r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","partialArgs":[]}}]}}]}"#,
        )
        .unwrap_err();
        assert!(matches!(&e, ModelError::Protocol(m) if m.contains("partialArgs")), "{e:?}");
        let e = chunk(r#"{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED"}}"#)
            .unwrap_err();
        assert!(matches!(e, ModelError::Http { status: 429, .. }), "{e:?}");
        let e = chunk(r#"{"promptFeedback":{"blockReason":"SAFETY"}}"#).unwrap();
        assert_eq!(e.1.finish_reason, FinishReason::ContentFilter);
    }
}
