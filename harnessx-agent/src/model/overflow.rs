//! Recognising a provider's refusal of a request larger than the model's context window,
//! so a run can compact and retry instead of failing ([`ModelError::ContextWindow`]).
//!
//! The decision is made on a field where the provider has one: OpenAI's `code:
//! "context_length_exceeded"`, llama.cpp's `type: "exceed_context_size_error"` (with
//! `n_prompt_tokens` and `n_ctx`). Anthropic, Gemini and vLLM say it only in words
//! (Anthropic's `invalid_request_error` and Gemini's `INVALID_ARGUMENT` cover every bad
//! request; vLLM's type is `BadRequestError`), so for them, and only inside a 400/413
//! answer, the message is matched against their wording: `prompt is too long: N tokens >
//! M maximum`, `The input token count (N) exceeds the maximum number of tokens allowed
//! (M).` and `This model's maximum context length is M tokens. However, you requested N
//! tokens …` (also `… your request has N input tokens`, `… your messages resulted in N
//! tokens`).

use serde::Deserialize;
use serde_json::Value;

use crate::model::ModelError;

#[derive(Deserialize)]
struct Body {
    #[serde(default)]
    error: Option<ErrorField>,
    /// Older vLLM: the message at the top level.
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ErrorField {
    Object(ErrorObject),
    Text(String),
}

#[derive(Deserialize, Default)]
struct ErrorObject {
    #[serde(default)]
    message: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    n_prompt_tokens: Option<u64>,
    #[serde(default)]
    n_ctx: Option<u64>,
}

/// The [`ModelError::ContextWindow`] an error answer (HTTP `status`, `body`) stands for,
/// if it is a context-length refusal; `message` is the operator's line for it.
pub(crate) fn context_window_error(status: u16, body: &str, message: &str) -> Option<ModelError> {
    if status != 400 && status != 413 {
        return None;
    }
    let parsed: Body = serde_json::from_str(body).ok()?;
    let (error, text) = match parsed.error {
        Some(ErrorField::Object(o)) => {
            let text = o.message.clone().unwrap_or_default();
            (o, text)
        }
        Some(ErrorField::Text(t)) => (ErrorObject::default(), t),
        None => (ErrorObject::default(), parsed.message.unwrap_or_default()),
    };
    let code = error.code.as_ref().and_then(Value::as_str).unwrap_or_default();
    let kind = error.kind.as_deref().unwrap_or_default();
    let (limit, requested) = if code == "context_length_exceeded" {
        openai_numbers(&text)
    } else if kind == "exceed_context_size_error" {
        (error.n_ctx, error.n_prompt_tokens)
    } else if let Some(rest) = text.strip_prefix("prompt is too long") {
        anthropic_numbers(rest)
    } else if let Some(rest) = text.strip_prefix(GEMINI_WORDING).filter(|r| r.contains(GEMINI_EXCEEDS)) {
        gemini_numbers(rest)
    } else if text.contains("maximum context length is") {
        openai_numbers(&text)
    } else {
        return None;
    };
    Some(ModelError::ContextWindow { message: message.to_owned(), limit, requested })
}

/// How Gemini's refusal begins (`INVALID_ARGUMENT`, HTTP 400).
const GEMINI_WORDING: &str = "The input token count";
const GEMINI_EXCEEDS: &str = "exceeds the maximum number of tokens allowed";

/// ` (1200293) exceeds the maximum number of tokens allowed (1048576).` -> (limit,
/// requested).
fn gemini_numbers(rest: &str) -> (Option<u64>, Option<u64>) {
    match numbers(rest).as_slice() {
        [requested, limit, ..] => (Some(*limit), Some(*requested)),
        _ => (None, None),
    }
}

/// `: 210000 tokens > 200000 maximum` -> (limit, requested).
fn anthropic_numbers(rest: &str) -> (Option<u64>, Option<u64>) {
    let numbers = numbers(rest);
    match numbers.as_slice() {
        [requested, limit, ..] => (Some(*limit), Some(*requested)),
        _ => (None, None),
    }
}

/// `maximum context length is M tokens. However, you requested N tokens (…)` and its
/// variants -> (M, N).
fn openai_numbers(text: &str) -> (Option<u64>, Option<u64>) {
    let Some((_, after)) = text.split_once("maximum context length is") else { return (None, None) };
    let numbers = numbers(after);
    (numbers.first().copied(), numbers.get(1).copied())
}

/// The whole numbers in `text`, in order.
fn numbers(text: &str) -> Vec<u64> {
    text.split(|c: char| !c.is_ascii_digit()).filter_map(|w| w.parse().ok()).take(4).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify(status: u16, body: &str) -> Option<(Option<u64>, Option<u64>)> {
        match context_window_error(status, body, "m")? {
            ModelError::ContextWindow { limit, requested, .. } => Some((limit, requested)),
            _ => None,
        }
    }

    #[test]
    fn openai_context_length_exceeded() {
        let body = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        assert_eq!(classify(400, body), Some((Some(128000), Some(130532))));
    }

    #[test]
    fn anthropic_prompt_is_too_long() {
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208326 tokens > 200000 maximum"}}"#;
        assert_eq!(classify(400, body), Some((Some(200000), Some(208326))));
    }

    #[test]
    fn gemini_input_token_count_exceeds() {
        // As google-gemini/gemini-cli issue 6678 quotes it (gemini-2.5-pro).
        let body = r#"{"error":{"code":400,"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","errors":[{"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","domain":"global","reason":"badRequest"}],"status":"INVALID_ARGUMENT"}}"#;
        assert_eq!(classify(400, body), Some((Some(1048576), Some(1200293))));
        let bare = r#"{"error":{"code":400,"message":"The input token count (81881) exceeds the maximum number of tokens allowed (65536).","status":"INVALID_ARGUMENT"}}"#;
        assert_eq!(classify(400, bare), Some((Some(65536), Some(81881))));
        // Another INVALID_ARGUMENT is not an overflow.
        let other = r#"{"error":{"code":400,"message":"The input token count is not a number","status":"INVALID_ARGUMENT"}}"#;
        assert_eq!(classify(400, other), None);
    }

    #[test]
    fn llama_cpp_exceed_context_size() {
        let body = r#"{"error":{"code":400,"message":"request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4476,"n_ctx":4096}}"#;
        assert_eq!(classify(400, body), Some((Some(4096), Some(4476))));
    }

    #[test]
    fn vllm_wordings() {
        let old = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#;
        assert_eq!(classify(400, old), Some((Some(4096), Some(5000))));
        let new = r#"{"error":{"message":"This model's maximum context length is 32768 tokens. However, your request has 40000 input tokens. Please reduce the length of the input messages. None","type":"BadRequestError","param":null,"code":400}}"#;
        assert_eq!(classify(400, new), Some((Some(32768), Some(40000))));
    }

    #[test]
    fn other_errors_are_not_overflows() {
        assert_eq!(
            classify(400, r#"{"error":{"message":"bad tool schema","type":"invalid_request_error"}}"#),
            None
        );
        assert_eq!(classify(400, "not json"), None);
        // A 500 that mentions the window is a server fault, not a refusal of this request.
        let body =
            r#"{"error":{"message":"maximum context length is 5 tokens","code":"context_length_exceeded"}}"#;
        assert_eq!(classify(500, body), None);
        assert_eq!(classify(400, body), Some((Some(5), None)));
    }
}
