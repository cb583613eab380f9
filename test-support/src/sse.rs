//! Server-sent event bodies as the providers frame them.

use serde_json::Value;

/// An OpenAI-compatible stream: one `data:` line per event, then `data: [DONE]`.
pub fn openai(events: &[Value]) -> String {
    let mut out: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    out.push_str("data: [DONE]\n\n");
    out
}

/// An Anthropic stream: `event: <type>` before each `data:` line.
pub fn anthropic(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("message")))
        .collect()
}

/// A Gemini stream (`streamGenerateContent?alt=sse`): one `data:` line per chunk, each
/// ended by a blank line, `\r\n` as Google frames them; no end marker.
pub fn gemini(chunks: &[Value]) -> String {
    chunks.iter().map(|c| format!("data: {c}\r\n\r\n")).collect()
}
