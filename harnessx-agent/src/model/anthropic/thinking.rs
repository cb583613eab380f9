//! Extended thinking on the Messages API: the `thinking` request field, the `thinking` and
//! `redacted_thinking` blocks of an answer as [`Reasoning`], and those blocks sent back.
//!
//! The API checks what comes back: a `thinking` block must return with its text and
//! `signature` unchanged, a `redacted_thinking` block with its `data`, and with tool use
//! the assistant turn must start with them. So each block is kept whole (text,
//! signature, or the redacted block itself) with its place among the answer's blocks, and
//! rebuilt at that place, key for key as the API wrote it.

use serde_json::{Value, json};

use crate::model::{ModelError, Reasoning, ReasoningConfig, ReasoningEffort};

/// The provider name in [`Reasoning::provider`] for Anthropic's blocks.
pub const PROVIDER_NAME: &str = "anthropic";

/// The smallest thinking budget the API takes.
pub const MIN_THINKING_BUDGET: u32 = 1024;

/// The `thinking.budget_tokens` and `max_tokens` a request sends for `config`, given
/// the `max_tokens` it would send otherwise; `None` when `config` sets neither effort nor
/// budget (nothing sent).
///
/// The budget is [`ReasoningConfig::budget_or_from_effort`], at least
/// [`MIN_THINKING_BUDGET`]. The API wants `max_tokens` above the budget (thinking counts
/// toward it): when it is not, it becomes budget + `max_tokens`, so the answer keeps the
/// room it was given.
///
/// ```
/// use harnessx_agent::model::anthropic::thinking_budget;
/// use harnessx_agent::model::{ReasoningConfig, ReasoningEffort};
///
/// let low = ReasoningConfig { effort: Some(ReasoningEffort::Low), budget_tokens: None };
/// assert_eq!(thinking_budget(&low, 4096), Some((2048, 4096)));
/// let big = ReasoningConfig { effort: None, budget_tokens: Some(10_000) };
/// assert_eq!(thinking_budget(&big, 4096), Some((10_000, 14_096)));
/// let tiny = ReasoningConfig { effort: None, budget_tokens: Some(10) };
/// assert_eq!(thinking_budget(&tiny, 4096), Some((1024, 4096)));
/// assert_eq!(thinking_budget(&ReasoningConfig::default(), 4096), None);
/// ```
pub fn thinking_budget(config: &ReasoningConfig, max_tokens: u32) -> Option<(u32, u32)> {
    let budget = config.budget_or_from_effort()?.max(MIN_THINKING_BUDGET);
    let max = if max_tokens > budget { max_tokens } else { budget.saturating_add(max_tokens) };
    Some((budget, max))
}

/// The `output_config.effort` of adaptive thinking for `effort`: the API's levels are
/// `low`, `medium` and `high` (and `max` on some models); `minimal` goes as `low`.
pub(super) fn adaptive_effort(effort: ReasoningEffort) -> &'static str {
    match effort {
        ReasoningEffort::Minimal | ReasoningEffort::Low => "low",
        ReasoningEffort::Medium => "medium",
        ReasoningEffort::High => "high",
    }
}

/// A `thinking` or `redacted_thinking` block at `index` of an answer's content, as
/// [`Reasoning`]; `None` for other blocks. `data` keeps the block's type and index (and
/// a redacted block's `data`).
pub(super) fn reasoning_of(index: usize, block: &Value) -> Option<Reasoning> {
    let text = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    match block.get("type").and_then(Value::as_str)? {
        "thinking" => Some(thinking(index, text("thinking"), Some(text("signature")))),
        "redacted_thinking" => Some(redacted(index, block.get("data").cloned().unwrap_or_default())),
        _ => None,
    }
}

pub(super) fn thinking(index: usize, text: String, signature: Option<String>) -> Reasoning {
    Reasoning {
        provider: PROVIDER_NAME.into(),
        text,
        signature,
        data: json!({"type": "thinking", "index": index}),
    }
}

pub(super) fn redacted(index: usize, data: Value) -> Reasoning {
    Reasoning {
        provider: PROVIDER_NAME.into(),
        text: String::new(),
        signature: None,
        data: json!({"type": "redacted_thinking", "data": data, "index": index}),
    }
}

/// The blocks to send back for `reasoning` with their place in the answer: Anthropic's
/// only (another provider's cannot be checked here), and a `thinking` block only with
/// its signature (the API refuses one without). A piece without a recorded place goes
/// first.
fn wire_blocks(reasoning: &[Reasoning]) -> Vec<(usize, Value)> {
    reasoning
        .iter()
        .filter(|r| r.provider == PROVIDER_NAME)
        .filter_map(|r| {
            let index = r.data.get("index").and_then(Value::as_u64).map_or(0, |i| i as usize);
            let block = match r.data.get("type").and_then(Value::as_str) {
                Some("redacted_thinking") => {
                    json!({"type": "redacted_thinking", "data": r.data.get("data").cloned().unwrap_or_default()})
                }
                _ => json!({"type": "thinking", "thinking": r.text, "signature": r.signature.as_deref()?}),
            };
            Some((index, block))
        })
        .collect()
}

/// An assistant turn's content: its thinking blocks at their places among `others` (its
/// text and `tool_use` blocks, in order).
pub(super) fn with_reasoning(reasoning: &[Reasoning], others: Vec<Value>) -> Vec<Value> {
    let mut thinking = wire_blocks(reasoning);
    if thinking.is_empty() {
        return others;
    }
    thinking.sort_by_key(|(index, _)| *index);
    let mut thinking = thinking.into_iter().peekable();
    let mut others = others.into_iter().peekable();
    let mut out = Vec::new();
    loop {
        let position = out.len();
        match (thinking.peek(), others.peek()) {
            (Some((index, _)), Some(_)) if *index > position => out.extend(others.next()),
            (Some(_), _) => out.extend(thinking.next().map(|(_, b)| b)),
            (None, Some(_)) => out.extend(others.next()),
            (None, None) => return out,
        }
    }
}

/// One `thinking` or `redacted_thinking` block of a stream, being assembled.
#[derive(Debug)]
pub(super) struct StreamBlock {
    text: String,
    signature: String,
    /// A redacted block's `data`; `None` for a `thinking` block.
    redacted: Option<Value>,
    pub(super) stopped: bool,
}

impl StreamBlock {
    /// A block from its `content_block_start`, if it is a thinking block; its starting
    /// text (usually empty) is returned to be shown.
    pub(super) fn start(block: &Value) -> Option<(Self, String)> {
        let text = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        let redacted = match block.get("type").and_then(Value::as_str)? {
            "thinking" => None,
            "redacted_thinking" => Some(block.get("data").cloned().unwrap_or_default()),
            _ => return None,
        };
        let start = Self { text: text("thinking"), signature: text("signature"), redacted, stopped: false };
        let shown = start.text.clone();
        Some((start, shown))
    }

    pub(super) fn push_text(&mut self, index: u64, piece: &str) -> Result<(), ModelError> {
        self.expect_thinking(index, "thinking_delta")?;
        self.text.push_str(piece);
        Ok(())
    }

    pub(super) fn push_signature(&mut self, index: u64, piece: &str) -> Result<(), ModelError> {
        self.expect_thinking(index, "signature_delta")?;
        self.signature.push_str(piece);
        Ok(())
    }

    fn expect_thinking(&self, index: u64, delta: &str) -> Result<(), ModelError> {
        match self.redacted {
            None if !self.stopped => Ok(()),
            None => Err(ModelError::Protocol(format!("a {delta} came after thinking block {index} stopped"))),
            Some(_) => {
                Err(ModelError::Protocol(format!("a {delta} came for redacted thinking block {index}")))
            }
        }
    }

    pub(super) fn finish(self, index: usize) -> Reasoning {
        match self.redacted {
            Some(data) => redacted(index, data),
            None => thinking(index, self.text, Some(self.signature).filter(|s| !s.is_empty())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinking_goes_back_at_its_place_and_other_providers_reasoning_is_dropped() {
        let reasoning = vec![
            thinking(3, "later".into(), Some("s2".into())),
            Reasoning::new("openai", "not mine"),
            thinking(0, "first".into(), Some("s1".into())),
            thinking(5, "unsigned".into(), None),
        ];
        let others = vec![
            json!({"type": "text", "text": "a"}),
            json!({"type": "tool_use", "id": "1"}),
            json!({"type": "tool_use", "id": "2"}),
        ];
        let out = with_reasoning(&reasoning, others);
        let kinds: Vec<&str> = out.iter().map(|b| b["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["thinking", "text", "tool_use", "thinking", "tool_use"]);
        assert_eq!(out[0], json!({"type": "thinking", "thinking": "first", "signature": "s1"}));
        assert_eq!(
            serde_json::to_string(&out[3]).unwrap(),
            r#"{"type":"thinking","thinking":"later","signature":"s2"}"#
        );
    }

    #[test]
    fn reasoning_without_a_place_goes_first_and_an_index_past_the_end_goes_last() {
        let mut r = Reasoning::new(PROVIDER_NAME, "t");
        r.signature = Some("s".into());
        let out = with_reasoning(&[r, redacted(9, json!("xyz"))], vec![json!({"type": "text", "text": "a"})]);
        let kinds: Vec<&str> = out.iter().map(|b| b["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["thinking", "text", "redacted_thinking"]);
        assert_eq!(out[2], json!({"type": "redacted_thinking", "data": "xyz"}));
    }
}
