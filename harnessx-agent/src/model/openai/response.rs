//! The response read: a Chat Completions answer, streamed chunk by chunk (text, reasoning
//! and tool-call deltas) or whole, assembled into events and a response.

use serde_json::Value;

use super::PROVIDER;
use crate::model::http::{self, Decoder, Step};
use crate::model::sse::SseEvent;
use crate::model::{FinishReason, ModelError, ModelEvent, ModelResponse, Reasoning, Usage};
use harnessx_core::ToolCall;

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
pub(super) struct OpenAiDecoder {
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
    use serde_json::json;

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
