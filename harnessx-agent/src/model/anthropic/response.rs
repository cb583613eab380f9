//! The response read: a non-streamed Messages API answer, its stop reason and its token
//! counts.

use serde_json::{Value, json};

use super::thinking;
use crate::model::{FinishReason, ModelError, ModelResponse, Usage};
use harnessx_core::ToolCall;

pub(super) fn stop_reason(reason: &str) -> FinishReason {
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
pub(super) struct AnthropicUsage {
    input: u64,
    cache_read: u64,
    cache_write: u64,
    output: u64,
}

impl AnthropicUsage {
    pub(super) fn add(&mut self, value: &Value) {
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
    pub(super) fn usage(self) -> Usage {
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
pub(super) fn parse_message(body: &Value) -> Result<ModelResponse, ModelError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_streamed_tool_use_cut_off_by_max_tokens_is_not_valid_json() {
        let body = json!({"content": [{"type": "tool_use", "id": "t", "name": "w", "input": {"a": 1}}], "stop_reason": "max_tokens"});
        let r = parse_message(&body).unwrap();
        assert_eq!(r.finish_reason, FinishReason::Length);
        assert_eq!(r.tool_calls[0].arguments, r#"{"a":1"#);
    }
}
