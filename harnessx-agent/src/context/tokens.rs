//! Counting a request's tokens: a real tokenizer where one is at hand (tiktoken's
//! `o200k_base` / `cl100k_base` for OpenAI models, with the `tiktoken` feature), a
//! calibrated estimate otherwise; either one corrected by the size the provider reported
//! for the previous request ([`Tally::calibrate`]).
//!
//! A run counts each message once: [`Tally`] keeps every message's count and their
//! running sum, so a request costs the counting of its new messages plus a check of the
//! newest two counted ones (by a fingerprint of their lengths: the planning list is
//! appended to the newest message); a compaction says which messages it changed
//! ([`Tally::forget_from`]).
//!
//! A new message is first sized by its length alone, at the tokens per byte the
//! messages counted so far had ([`Tally::raw`]: no pass over its text). Only when that
//! rough size comes near the point of compacting are the messages counted with the
//! tokenizer ([`Tally::estimate`]), so a run far from its window spends nothing on
//! tokenizing, and the decision to compact is taken on real counts.

use crate::context::media::MediaCost;
use crate::model::{Message, ModelRequest};

/// Tokens every message costs beside its text (role, separators), as OpenAI's
/// guidance counts them.
const PER_MESSAGE: u64 = 4;
/// Tokens a request costs beside its messages (the reply's priming).
const PER_REQUEST: u64 = 3;
/// How many of the newest counted messages are counted again on each request (the
/// planning list is appended to the newest message).
const RECHECK: usize = 2;
/// Tokens per byte assumed for a message sized by its length before any message was
/// counted (the estimate's 3.5 bytes a token).
const FIRST_PER_BYTE: f64 = 2.0 / 7.0;

/// How the text of a request is turned into a token count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Encoding {
    /// tiktoken's `o200k_base` (GPT-4o, GPT-4.1, GPT-5, o-series).
    O200k,
    /// tiktoken's `cl100k_base` (GPT-4, GPT-3.5).
    Cl100k,
    /// No tokenizer for the model: an estimate from the text's bytes, calibrated on
    /// `o200k_base` over English prose, code and JSON (about 3.5 ASCII bytes a token; a
    /// token for each non-ASCII character).
    Estimate,
}

impl Encoding {
    /// The encoding of a model, by its name (with or without a `provider:` prefix):
    /// OpenAI's models get their tokenizer (with the `tiktoken` feature), the rest the
    /// estimate.
    pub fn for_model(model: &str) -> Self {
        let name = model.rsplit(':').next().unwrap_or(model).rsplit('/').next().unwrap_or(model);
        if !cfg!(feature = "tiktoken") {
            return Self::Estimate;
        }
        let o200k = ["gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o", "gpt-oss"];
        if o200k.iter().any(|p| name.starts_with(p)) {
            Self::O200k
        } else if name.starts_with("gpt-4") || name.starts_with("gpt-3.5") {
            Self::Cl100k
        } else {
            Self::Estimate
        }
    }

    /// The tokens of `text`.
    pub fn count(self, text: &str) -> u64 {
        if text.is_empty() {
            return 0;
        }
        match self {
            #[cfg(feature = "tiktoken")]
            Self::O200k => tiktoken_rs::o200k_base_singleton().encode_ordinary(text).len() as u64,
            #[cfg(feature = "tiktoken")]
            Self::Cl100k => tiktoken_rs::cl100k_base_singleton().encode_ordinary(text).len() as u64,
            _ => estimate(text),
        }
    }
}

/// The calibrated estimate: ASCII bytes / 3.5, plus one token per non-ASCII character.
pub fn estimate(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let ascii = bytes.iter().filter(|b| b.is_ascii()).count() as u64;
    // Every non-ASCII character has exactly one leading byte (0b11xx_xxxx).
    let wide = bytes.iter().filter(|&&b| b >= 0xC0).count() as u64;
    (ascii * 2).div_ceil(7) + wide
}

/// The token counts of one run's requests, message by message, and the correction the
/// provider's reported sizes give them.
#[derive(Debug)]
pub struct Tally {
    encoding: Encoding,
    /// Per message: (fingerprint, tokens, counted): `counted` false when the tokens are
    /// its length times [`per_byte`](Self::per_byte), not yet counted.
    messages: Vec<(u64, u64, bool)>,
    /// Text tokens and bytes of the messages counted so far: their tokens per byte size
    /// the messages not counted yet.
    learned: (u64, u64),
    /// `sums[i]`: the tokens of the first `i` messages (one longer than `messages`).
    sums: Vec<u64>,
    system: Option<(usize, u64)>,
    /// (address and length of the tool list, tokens): a new list is a new vector.
    tools: Option<((usize, usize), u64)>,
    /// Provider tokens per counted token, from the last request the provider measured.
    ratio: f64,
    /// Whose formula the messages' media are counted with.
    media: MediaCost,
}

impl Tally {
    /// A tally counting with `encoding`, uncorrected.
    pub fn new(encoding: Encoding) -> Self {
        Self {
            encoding,
            messages: Vec::new(),
            learned: (0, 0),
            sums: vec![0],
            system: None,
            tools: None,
            ratio: 1.0,
            media: MediaCost::OpenAi,
        }
    }

    /// This tally with the media of messages counted by `media`'s formula (OpenAI's by
    /// default).
    #[must_use]
    pub fn with_media(self, media: MediaCost) -> Self {
        Self { media, ..self }
    }

    /// The tokens of one message, counted: its text ([`count_message`]) and its media.
    pub fn count(&self, message: &Message) -> u64 {
        count_message(self.encoding, message) + media_tokens(self.media, message)
    }

    /// The encoding it counts with.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Tokens per byte of the text counted so far (before any: 3.5 bytes a token).
    fn per_byte(&self) -> f64 {
        match self.learned {
            (tokens, bytes) if bytes >= 256 => tokens as f64 / bytes as f64,
            _ => FIRST_PER_BYTE,
        }
    }

    /// The request's size as counted (before the correction), its new messages sized by
    /// their length ([`estimate`](Self::estimate) counts them). Looks only at what
    /// changed since the last call, and at no message's text.
    pub fn raw(&mut self, request: &ModelRequest) -> u64 {
        let encoding = self.encoding;
        let system = match (&request.system, self.system) {
            (None, _) => 0,
            (Some(s), Some((len, tokens))) if len == s.len() => tokens,
            (Some(s), _) => {
                let tokens = encoding.count(s) + PER_MESSAGE;
                self.system = Some((s.len(), tokens));
                tokens
            }
        };
        let key = (request.tools.as_ptr() as usize, request.tools.len());
        let tools = match self.tools {
            _ if request.tools.is_empty() => 0,
            Some((k, tokens)) if k == key => tokens,
            _ => {
                let text = serde_json::to_string(&request.tools).unwrap_or_default();
                let tokens = encoding.count(&text);
                self.tools = Some((key, tokens));
                tokens
            }
        };
        // The messages counted before are trusted but for the last few (the loop only
        // appends, and changes the newest messages before it sends them; a compaction
        // says what it changed with `forget_from`): a request costs its new messages.
        let n = request.messages.len();
        let trusted = self.messages.len().min(n).saturating_sub(RECHECK);
        let rechecked: Vec<(u64, u64, bool)> = self.messages.drain(trusted..).collect();
        self.sums.truncate(trusted + 1);
        let per_byte = self.per_byte();
        for (i, message) in request.messages[trusted..].iter().enumerate() {
            let print = fingerprint(message);
            let (tokens, counted) = match rechecked.get(i) {
                Some(&(p, tokens, counted)) if p == print => (tokens, counted),
                _ => {
                    let text = (message_bytes(message) as f64 * per_byte).ceil() as u64;
                    (PER_MESSAGE + text + media_tokens(self.media, message), false)
                }
            };
            self.messages.push((print, tokens, counted));
            self.sums.push(self.sums[self.sums.len() - 1] + tokens);
        }
        system + tools + PER_REQUEST + self.sums[n]
    }

    /// Counts the messages of `request` sized by their length so far with the tokenizer.
    fn count_all(&mut self, request: &ModelRequest) {
        let Some(first) = self.messages.iter().position(|m| !m.2) else { return };
        for i in first..self.messages.len() {
            if !self.messages[i].2 {
                let message = &request.messages[i];
                let tokens = count_message(self.encoding, message);
                self.learned.0 += tokens.saturating_sub(PER_MESSAGE);
                self.learned.1 += message_bytes(message) as u64;
                // (The text's rate only: media are counted by their own formula.)
                let tokens = tokens + media_tokens(self.media, message);
                self.messages[i] = (self.messages[i].0, tokens, true);
            }
            self.sums[i + 1] = self.sums[i] + self.messages[i].1;
        }
    }

    /// The request's size as [`raw`](Self::raw) sizes it, corrected: what tells whether it
    /// may be near a limit, without counting any text.
    pub fn rough(&mut self, request: &ModelRequest) -> u64 {
        let raw = self.raw(request);
        self.corrected(raw)
    }

    /// The messages from `index` on changed (a compaction): they are counted again.
    pub fn forget_from(&mut self, index: usize) {
        self.messages.truncate(index);
        self.sums.truncate(index + 1);
    }

    /// The request's estimated size in the provider's tokens: every message counted with
    /// the tokenizer (each once), corrected.
    pub fn estimate(&mut self, request: &ModelRequest) -> u64 {
        let raw = self.raw(request);
        let before = self.sums[request.messages.len()];
        self.count_all(request);
        let raw = raw - before + self.sums[request.messages.len()];
        self.corrected(raw)
    }

    /// A raw count in the provider's tokens.
    pub fn corrected(&self, raw: u64) -> u64 {
        (raw as f64 * self.ratio).ceil() as u64
    }

    /// The provider measured a request this tally counted `raw`: `reported` tokens.
    /// Later estimates are scaled by their ratio (bounded to 0.25..4, so one odd report
    /// cannot make the estimate absurd). A report of 0 (a provider or test model that
    /// reports nothing) changes nothing.
    pub fn calibrate(&mut self, raw: u64, reported: u64) {
        if raw == 0 || reported == 0 {
            return;
        }
        self.ratio = (reported as f64 / raw as f64).clamp(0.25, 4.0);
    }

    /// Like [`calibrate`](Self::calibrate), only ever raising the ratio: for a provider
    /// that refused a request as too large and said how large it was.
    pub fn calibrate_up(&mut self, raw: u64, reported: u64) {
        if raw == 0 || reported == 0 {
            return;
        }
        self.ratio = self.ratio.max((reported as f64 / raw as f64).clamp(0.25, 4.0));
    }

    /// The current correction (provider tokens per counted token).
    pub fn ratio(&self) -> f64 {
        self.ratio
    }
}

/// What changes when a message does: its role, and the lengths of its text and calls.
fn fingerprint(message: &Message) -> u64 {
    match message {
        Message::User { content, parts } => ((content.len() as u64) << 2) ^ ((parts.len() as u64) << 48),
        Message::Assistant { content, tool_calls, .. } => {
            let calls = tool_calls.iter().fold(0u64, |acc, c| {
                acc.wrapping_mul(31).wrapping_add((c.arguments.len() + c.name.len() + c.id.len()) as u64)
            });
            ((content.len() as u64) << 2 | 1) ^ calls.wrapping_shl(20)
        }
        Message::Tool { content, call_id, parts, .. } => {
            (((content.len() + call_id.len()) as u64) << 2 | 2) ^ ((parts.len() as u64) << 48)
        }
    }
}

/// The bytes of one message's text: what [`count_message`] counts.
fn message_bytes(message: &Message) -> usize {
    match message {
        Message::User { content, .. } => content.len(),
        Message::Assistant { content, tool_calls, .. } => {
            content.len() + tool_calls.iter().map(|c| c.name.len() + c.arguments.len() + 24).sum::<usize>()
        }
        Message::Tool { content, name, .. } => content.len() + name.len() + 24,
    }
}

/// The tokens of a message's media (none for most): each part by `media`'s formula, a
/// text part as text would be.
fn media_tokens(media: MediaCost, message: &Message) -> u64 {
    message.parts().iter().map(|part| media.tokens(part) + part_text_tokens(part)).sum()
}

/// A text part's tokens, by the estimate (text parts are rare: attached text files).
fn part_text_tokens(part: &harnessx_core::Part) -> u64 {
    match part {
        harnessx_core::Part::Text(text) => estimate(text),
        _ => 0,
    }
}

/// The tokens of one message: its text, its calls (name, id, arguments) or its call id.
pub fn count_message(encoding: Encoding, message: &Message) -> u64 {
    PER_MESSAGE
        + match message {
            Message::User { content, .. } => encoding.count(content),
            Message::Assistant { content, tool_calls, .. } => {
                encoding.count(content)
                    + tool_calls
                        .iter()
                        .map(|c| encoding.count(&c.name) + encoding.count(&c.arguments) + 8)
                        .sum::<u64>()
            }
            Message::Tool { content, name, .. } => encoding.count(content) + encoding.count(name) + 8,
        }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harnessx_core::ToolCall;

    #[test]
    fn openai_models_get_their_encoding() {
        if cfg!(feature = "tiktoken") {
            assert_eq!(Encoding::for_model("openai:gpt-4o-mini"), Encoding::O200k);
            assert_eq!(Encoding::for_model("gpt-4.1"), Encoding::O200k);
            assert_eq!(Encoding::for_model("openai:gpt-4-turbo"), Encoding::Cl100k);
            assert_eq!(Encoding::for_model("openai:gpt-5"), Encoding::O200k);
        } else {
            // Without the tokenizers (as in the `harnessx` command) they get the estimate.
            assert_eq!(Encoding::for_model("openai:gpt-4o-mini"), Encoding::Estimate);
            assert_eq!(Encoding::for_model("openai:gpt-4-turbo"), Encoding::Estimate);
        }
        assert_eq!(Encoding::for_model("anthropic:claude-sonnet-4-5"), Encoding::Estimate);
        assert_eq!(Encoding::for_model("openai:qwen2.5-7b-instruct"), Encoding::Estimate);
    }

    #[cfg(feature = "tiktoken")]
    #[test]
    fn the_estimate_is_near_the_tokenizer_on_prose_and_code() {
        let prose = "The quick brown fox jumps over the lazy dog. Compaction keeps the newest turns as they were, and the system prompt. ".repeat(40);
        let code = "fn main() {\n    let x: Vec<u32> = (0..10).map(|i| i * 2).collect();\n    println!(\"{x:?}\");\n}\n".repeat(40);
        let json = serde_json::json!({"rows": (0..200).map(|i| serde_json::json!({"id": i, "name": format!("item {i}")})).collect::<Vec<_>>()}).to_string();
        for text in [prose, code, json] {
            let real = Encoding::O200k.count(&text) as f64;
            let guess = estimate(&text) as f64;
            assert!((0.6..1.6).contains(&(guess / real)), "estimate {guess} vs o200k {real}");
        }
    }

    #[test]
    fn messages_are_counted_once_and_again_when_they_change() {
        let mut tally = Tally::new(Encoding::Estimate);
        let mut request = ModelRequest {
            system: Some("sys".into()),
            messages: vec![Message::user("hello there")],
            ..ModelRequest::default()
        };
        let first = tally.raw(&request);
        assert_eq!(tally.raw(&request), first);
        request.messages.push(Message::assistant("", vec![ToolCall::new("c1", "read", "{\"a\":1}")]));
        let second = tally.raw(&request);
        assert!(second > first);
        // The planning list appended to the newest message is counted.
        if let Message::Assistant { content, .. } = &mut request.messages[1] {
            content.push_str(&"todo ".repeat(100));
        }
        assert!(tally.raw(&request) > second + 100);
        // Fewer messages (a compaction) count less.
        request.messages.truncate(1);
        assert_eq!(tally.raw(&request), first);
    }

    #[test]
    fn new_messages_are_sized_by_length_until_counted() {
        let mut tally = Tally::new(Encoding::Estimate);
        let request =
            ModelRequest { messages: vec![Message::user("word ".repeat(400))], ..ModelRequest::default() };
        let rough = tally.raw(&request);
        let exact = tally.estimate(&request);
        assert_eq!(exact, PER_REQUEST + count_message(Encoding::Estimate, &request.messages[0]));
        assert!((rough as f64 / exact as f64 - 1.0).abs() < 0.3, "{rough} vs {exact}");
        // Counted once: from now on raw gives the count, and later messages are sized at
        // the tokens per byte learned from it.
        assert_eq!(tally.raw(&request), exact);
        let mut more = request.clone();
        more.messages.push(Message::user("word ".repeat(400)));
        assert_eq!(tally.raw(&more), 2 * exact - PER_REQUEST);
    }

    #[test]
    fn the_reported_size_corrects_the_estimate() {
        let mut tally = Tally::new(Encoding::Estimate);
        assert_eq!(tally.corrected(1000), 1000);
        tally.calibrate(1000, 1500);
        assert_eq!(tally.corrected(1000), 1500);
        tally.calibrate(1000, 0);
        assert_eq!(tally.corrected(1000), 1500, "nothing reported changes nothing");
        tally.calibrate(10, 1_000_000);
        assert_eq!(tally.ratio(), 4.0, "bounded");
        tally.calibrate_up(1000, 1000);
        assert_eq!(tally.ratio(), 4.0, "only up");
    }
}
