//! A reasoning model's thinking: what it returns beside its answer, kept in the
//! transcript and sent back to the same provider unchanged, and how much of it to ask for.

use serde::{Deserialize, Serialize};

/// One piece of a model's reasoning, as its provider returned it: Anthropic's `thinking`
/// block (its text and `signature`) or `redacted_thinking` (its opaque `data`), an OpenAI
/// Responses `reasoning` item (its summary, id and `encrypted_content`), a Gemini
/// `thought_signature`.
///
/// A run keeps it in the assistant message ([`Message::Assistant`](crate::model::Message))
/// and an adapter sends back, byte for byte, the pieces its own provider wrote
/// ([`provider`](Self::provider)); another provider's pieces are left out, as they cannot
/// be checked there. The text is never sent back as plain text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reasoning {
    /// The provider that wrote it (`anthropic`, `openai-responses`, `gemini`): only that
    /// provider's adapter sends it back.
    pub provider: String,
    /// What the model's thinking says, where the provider shows it (a summary for OpenAI);
    /// empty when it is hidden or encrypted.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// The provider's signature over it (Anthropic's `signature`, Gemini's
    /// `thought_signature`), sent back unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Anything else the provider needs back, as it sent it (an OpenAI reasoning item,
    /// Anthropic's redacted `data`); `null` when nothing.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub data: serde_json::Value,
}

impl Reasoning {
    /// A piece of reasoning text from `provider`, without a signature or other data.
    pub fn new(provider: impl Into<String>, text: impl Into<String>) -> Self {
        Self { provider: provider.into(), text: text.into(), signature: None, data: serde_json::Value::Null }
    }
}

/// How hard a reasoning model thinks before it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    /// As little as the model allows.
    Minimal,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
}

impl ReasoningEffort {
    /// The effort's name as OpenAI writes it: `minimal`, `low`, `medium`, `high`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// How much reasoning a run asks for ([`AgentConfig::reasoning`](crate::AgentConfig)), mapped
/// per provider: OpenAI's `reasoning_effort` / Responses `reasoning.effort`, Anthropic's
/// `thinking.budget_tokens`, Gemini's `thinkingConfig`. A provider that takes only one
/// of the two derives it from the other (see `docs/models.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ReasoningConfig {
    /// The effort, for providers that take one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<ReasoningEffort>,
    /// The most tokens to spend thinking, for providers that take a budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u32>,
}

impl ReasoningConfig {
    /// The effort, or the one a budget stands for (up to 2,048 tokens low, up to 8,192
    /// medium, above that high); `None` when neither is set.
    pub fn effort_or_from_budget(&self) -> Option<ReasoningEffort> {
        self.effort.or(self.budget_tokens.map(|b| match b {
            0..=2048 => ReasoningEffort::Low,
            2049..=8192 => ReasoningEffort::Medium,
            _ => ReasoningEffort::High,
        }))
    }

    /// The budget, or the one an effort stands for (minimal 1,024, low 2,048, medium
    /// 8,192, high 24,576 tokens); `None` when neither is set.
    pub fn budget_or_from_effort(&self) -> Option<u32> {
        self.budget_tokens.or(self.effort.map(|e| match e {
            ReasoningEffort::Minimal => 1024,
            ReasoningEffort::Low => 2048,
            ReasoningEffort::Medium => 8192,
            ReasoningEffort::High => 24_576,
        }))
    }
}
