//! Prompt-cache breakpoints for the Messages API: where `cache_control` goes so that each
//! request of a run reads the previous request's prefix from Anthropic's cache.
//!
//! Anthropic caches the prompt in the order tools, system, messages, up to a block marked
//! `cache_control` (at most four such breakpoints). [`AnthropicModel`](super::AnthropicModel)
//! places three where the prefix stays put: the last tool, the system prompt, and the
//! last block of the message before the newest turn. The newest turn (the user's message
//! or the tool results) is where a run attaches what changes each request (the planning
//! list, the budget note), so everything before the third breakpoint is the bytes the
//! previous request sent, and the cache is read up to it. The marker itself is not part
//! of the cached text: it moves on with the conversation and the earlier prefix is still
//! found.

use serde_json::{Value, json};

/// The breakpoint marker, `{"type": "ephemeral"}`: the five-minute cache, the API's
/// default.
pub(super) fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// Marks the last block of the wire message before the newest one (the newest turn). A
/// content given as a string becomes one text block, the form that carries a marker (the
/// API reads both alike). Thinking blocks cannot be marked: the last other block is, and
/// a message of thinking alone gets none.
pub(super) fn mark_before_newest_turn(messages: &mut [Value]) {
    let Some(index) = messages.len().checked_sub(2) else { return };
    let content = &mut messages[index]["content"];
    if let Value::String(text) = content {
        *content = json!([{"type": "text", "text": std::mem::take(text)}]);
    }
    let Some(blocks) = content.as_array_mut() else { return };
    let markable = blocks
        .iter_mut()
        .rev()
        .find(|b| !matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")));
    if let Some(Value::Object(block)) = markable {
        block.insert("cache_control".into(), ephemeral());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_before_the_newest_turn_is_marked_on_its_last_block_not_on_thinking() {
        let mut messages = vec![
            json!({"role": "user", "content": "go"}),
            json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "t", "signature": "s"},
                {"type": "tool_use", "id": "a", "name": "f", "input": {}}
            ]}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "ok"}]}),
        ];
        mark_before_newest_turn(&mut messages);
        assert_eq!(messages[1]["content"][1]["cache_control"], json!({"type": "ephemeral"}));
        assert_eq!(messages[1]["content"][0].get("cache_control"), None);
        assert_eq!(messages[2]["content"][0].get("cache_control"), None);
    }

    #[test]
    fn a_string_content_becomes_a_marked_text_block_and_one_message_gets_none() {
        let mut messages = vec![
            json!({"role": "assistant", "content": "Done."}),
            json!({"role": "user", "content": "more"}),
        ];
        mark_before_newest_turn(&mut messages);
        assert_eq!(
            messages[0]["content"],
            json!([{"type": "text", "text": "Done.", "cache_control": {"type": "ephemeral"}}])
        );
        let mut one = vec![json!({"role": "user", "content": "hi"})];
        mark_before_newest_turn(&mut one);
        assert_eq!(one[0]["content"], "hi");
        let mut thinking_only = vec![
            json!({"role": "assistant", "content": [{"type": "redacted_thinking", "data": "x"}]}),
            json!({"role": "user", "content": "more"}),
        ];
        mark_before_newest_turn(&mut thinking_only);
        assert_eq!(thinking_only[0]["content"][0].get("cache_control"), None);
    }
}
