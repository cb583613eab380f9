//! The stream's events: a streamed Messages API answer (`message_start`, content blocks,
//! `message_delta`, `message_stop`) assembled into events and a response.

use std::collections::HashMap;

use serde_json::Value;

use super::response::{AnthropicUsage, parse_message, stop_reason};
use super::{PROVIDER, thinking};
use crate::model::http::{self, Decoder, Step};
use crate::model::sse::SseEvent;
use crate::model::{FinishReason, ModelError, ModelEvent, ModelResponse};
use harnessx_core::ToolCall;

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
pub(super) struct AnthropicDecoder {
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
    use serde_json::json;

    use super::*;

    fn feed(events: &[Value]) -> Result<(Vec<ModelEvent>, ModelResponse), ModelError> {
        let mut decoder = AnthropicDecoder::default();
        let mut out = Vec::new();
        let mut complete = false;
        for e in events {
            let step =
                decoder.event(SseEvent { event: String::new(), data: e.to_string(), id: None }, &mut out)?;
            complete = step == Step::Complete;
        }
        Ok((out, decoder.finish(complete)?))
    }

    #[test]
    fn text_and_a_tool_call_are_assembled_with_their_usage() {
        let (events, response) = feed(&[
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 10, "cache_read_input_tokens": 4}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t", "name": "w", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"a\":"}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "1}"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 7}}),
            json!({"type": "message_stop"}),
        ])
        .unwrap();
        assert_eq!(events.len(), 4, "{events:?}");
        assert_eq!(response.content, "Hi");
        assert_eq!(response.tool_calls, [ToolCall::new("t", "w", r#"{"a":1}"#)]);
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
        assert_eq!(
            (response.usage.input_tokens, response.usage.cached_input_tokens, response.usage.output_tokens),
            (14, 4, 7)
        );
    }

    #[test]
    fn a_stream_cut_off_never_reads_as_a_whole_answer() {
        let start = json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}});
        let e = feed(std::slice::from_ref(&start)).unwrap_err();
        assert!(matches!(e, ModelError::Transport(_)), "{e:?}");
        let tool = json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "w"}});
        let (_, response) = feed(&[start, tool]).unwrap();
        assert_eq!(response.tool_calls[0].arguments, http::CUT_OFF_EMPTY_ARGUMENTS);
        assert_eq!(response.finish_reason, FinishReason::Other("incomplete".into()));
    }
}
