//! The pure part of compaction: which messages stay, clearing old tool results, the
//! summarising request, and putting the summary in place of the turns it covers.
//!
//! A request's messages are a pinned head (everything up to and including the first user
//! message), the older turns, and the newest turns (each an assistant message and the
//! results of its calls). Only whole turns are compacted, so a call and its result are
//! always kept or replaced together: no request carries an orphan either way.

use harnessx_core::engine::cap::cap_text;

use crate::model::{Message, ModelRequest, ToolChoice};

/// The first line of a summary message (how a later compaction recognises one).
pub const SUMMARY_PREFIX: &str =
    "[Summary of the earlier part of this conversation, written to fit the context window]";

/// The system prompt of the summarising request.
pub const SUMMARY_INSTRUCTIONS: &str = "You compact the history of an AI agent's run so that it fits the model's context window. Summarise the transcript you are given for the agent that will continue the run: the task and the user's requirements, what was done (tools called and what they returned, with exact names, paths, identifiers, numbers and errors that may matter later), what was learned, decisions made, and what remains to be done. Be concise and factual, write in the language of the conversation, and answer with the summary only.";

/// The stub that replaces a cleared tool result.
pub fn cleared_stub(name: &str, call_id: &str) -> String {
    format!(
        "[The result of this {name} call ({call_id}) was cleared to fit the context window; call the tool again if it is needed.]"
    )
}

/// The end (exclusive) of the pinned head: up to and including the first user message.
pub fn head_end(messages: &[Message]) -> usize {
    messages.iter().position(|m| matches!(m, Message::User { .. })).map_or(0, |i| i + 1)
}

/// Where each turn after `head` starts (the index of its assistant message).
pub fn turn_starts(messages: &[Message], head: usize) -> Vec<usize> {
    (head..messages.len()).filter(|&i| matches!(messages[i], Message::Assistant { .. })).collect()
}

/// Replaces every tool result in `messages[from..to]` with its stub; how many changed.
/// A cleared result's media parts go with its text (the stub stands for both).
pub fn clear_results(messages: &mut [Message], from: usize, to: usize) -> usize {
    let mut cleared = 0;
    for message in &mut messages[from..to] {
        if let Message::Tool { content, name, call_id, parts, .. } = message {
            let stub = cleared_stub(name, call_id);
            if *content != stub || !parts.is_empty() {
                *content = stub;
                parts.clear();
                cleared += 1;
            }
        }
    }
    cleared
}

/// The line that stands for a medium dropped from the history: what it was, so the model
/// knows it saw one and can ask for it again.
pub fn dropped_medium(part: &harnessx_core::Part) -> String {
    let what = part.label();
    let what = what.trim_start_matches('[').trim_end_matches(']');
    format!("[{what}: removed from the history to fit the context window]")
}

/// Drops the media of the messages in `messages[from..to]` (old images go before old
/// text), each replaced by a line naming it ([`dropped_medium`]) at the end of its
/// message's text, or in place of the line that named it ([`Part::label`]); how many
/// messages changed. Text parts stay.
///
/// [`Part::label`]: harnessx_core::Part::label
pub fn drop_media(messages: &mut [Message], from: usize, to: usize) -> usize {
    let mut changed = 0;
    for message in &mut messages[from..to] {
        let (Message::User { content, parts } | Message::Tool { content, parts, .. }) = message else {
            continue;
        };
        if parts.iter().all(|p| matches!(p, harnessx_core::Part::Text(_))) {
            continue;
        }
        let mut kept = Vec::new();
        for part in parts.iter() {
            match part {
                harnessx_core::Part::Text(_) => kept.push(part.clone()),
                medium => {
                    // In place of the line that named it, when the text has one.
                    let label = medium.label();
                    if let Some(at) = content.find(&label) {
                        content.replace_range(at..at + label.len(), &dropped_medium(medium));
                    } else {
                        if !content.is_empty() {
                            content.push('\n');
                        }
                        content.push_str(&dropped_medium(medium));
                    }
                }
            }
        }
        *parts = kept.into();
        changed += 1;
    }
    changed
}

/// The index of the run's prompt in `messages[from..to]`, if it is there: the last user
/// message that is not a summary.
pub fn prompt_in(messages: &[Message], from: usize, to: usize) -> Option<usize> {
    (from..to).rev().find(
        |&i| matches!(&messages[i], Message::User { content, .. } if !content.starts_with(SUMMARY_PREFIX)),
    )
}

/// The summarising request for `messages[from..to]`: the transcript as one user message,
/// at most `budget_chars` characters (each message cut to its share first, then the whole
/// transcript, head and tail kept), no tools.
pub fn summary_request(
    messages: &[Message],
    from: usize,
    to: usize,
    budget_chars: usize,
    max_tokens: u32,
) -> ModelRequest {
    let region = &messages[from..to];
    let share = (budget_chars / region.len().max(1)).max(400);
    let mut transcript = String::new();
    for message in region {
        let (label, text) = match message {
            Message::User { content, .. } => ("user".to_owned(), content.as_str()),
            Message::Assistant { content, tool_calls, .. } => {
                let mut line = String::from("assistant");
                for call in tool_calls {
                    line.push_str(&format!("\n[calls {} ({}) with {}]", call.name, call.id, call.arguments));
                }
                (line, content.as_str())
            }
            Message::Tool { name, call_id, is_error, content, .. } => {
                let kind = if *is_error { "error result" } else { "result" };
                (format!("{kind} of {name} ({call_id})"), content.as_str())
            }
        };
        let mut text = cap_text(text, share, None).unwrap_or_else(|| text.to_owned());
        // The summariser reads text: each medium is named where it was.
        for part in message.parts() {
            text.push('\n');
            text.push_str(&part.label());
        }
        transcript.push_str(&format!("[{label}]\n{text}\n\n"));
    }
    let transcript = cap_text(&transcript, budget_chars.max(400), None).unwrap_or(transcript);
    ModelRequest {
        system: Some(SUMMARY_INSTRUCTIONS.to_owned()),
        messages: vec![Message::user(format!("The transcript to summarise:\n\n{transcript}"))],
        tools: Vec::new(),
        max_tokens: Some(max_tokens),
        tool_choice: ToolChoice::Auto,
        parallel_tool_calls: None,
        output: None,
        reasoning: None,
        prompt_cache_key: None,
    }
}

/// The text of a summary message.
pub fn summary_message(summary: &str) -> Message {
    Message::user(format!("{SUMMARY_PREFIX}\n{}", summary.trim()))
}

/// What stands for `messages[from..to]` when the summariser gave no text: the calls the
/// turns made, by name and id.
pub fn fallback_summary(messages: &[Message], from: usize, to: usize) -> String {
    let calls: Vec<String> = messages[from..to]
        .iter()
        .flat_map(|m| match m {
            Message::Assistant { tool_calls, .. } => {
                tool_calls.iter().map(|c| format!("{} ({})", c.name, c.id)).collect()
            }
            _ => Vec::new(),
        })
        .collect();
    format!("{} earlier messages were removed; the calls they made: {}.", to - from, calls.join(", "))
}

/// Puts `summary` in place of `messages[from..to]`; the run's prompt, when it was there,
/// follows the summary.
pub fn apply_summary(messages: &mut Vec<Message>, from: usize, to: usize, summary: &str) {
    let prompt = prompt_in(messages, from, to).map(|i| messages[i].clone());
    let mut replacement = vec![summary_message(summary)];
    replacement.extend(prompt);
    messages.splice(from..to, replacement);
}

/// Whether every call in `messages` has exactly one result and every result a call
/// before it (what providers require).
pub fn well_paired(messages: &[Message]) -> bool {
    let mut open: Vec<&str> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for message in messages {
        match message {
            Message::Assistant { tool_calls, .. } => {
                if !open.is_empty() {
                    return false;
                }
                open = tool_calls.iter().map(|c| c.id.as_str()).collect();
            }
            Message::Tool { call_id, .. } => {
                let Some(i) = open.iter().position(|id| id == call_id) else { return false };
                open.remove(i);
                if !seen.insert(call_id.clone()) {
                    return false;
                }
            }
            Message::User { .. } => {}
        }
    }
    open.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use harnessx_core::{Parts, ToolCall};

    fn history(turns: usize) -> Vec<Message> {
        let mut m = vec![Message::user("the task")];
        for t in 0..turns {
            let calls = vec![
                ToolCall::new(format!("a{t}"), "read", "{}"),
                ToolCall::new(format!("b{t}"), "grep", "{}"),
            ];
            m.push(Message::assistant(format!("turn {t}"), calls));
            m.push(Message::Tool {
                call_id: format!("a{t}"),
                name: "read".into(),
                content: "x".repeat(100),
                is_error: false,
                parts: Parts::new(),
            });
            m.push(Message::Tool {
                call_id: format!("b{t}"),
                name: "grep".into(),
                content: "y".repeat(100),
                is_error: false,
                parts: Parts::new(),
            });
        }
        m
    }

    #[test]
    fn summarising_whole_turns_leaves_no_orphan() {
        let mut m = history(6);
        assert!(well_paired(&m));
        let head = head_end(&m);
        let starts = turn_starts(&m, head);
        assert_eq!(starts.len(), 6);
        apply_summary(&mut m, head, starts[4], "it read things");
        assert!(well_paired(&m));
        assert_eq!(m[0], Message::user("the task"));
        assert!(m[1].content().starts_with(SUMMARY_PREFIX) && m[1].content().ends_with("it read things"));
        assert_eq!(m.len(), 2 + 2 * 3);
        // A second compaction folds the first summary in, and keeps the prompt first.
        let starts = turn_starts(&m, head_end(&m));
        let head = head_end(&m);
        apply_summary(&mut m, head, starts[1], "again");
        assert!(well_paired(&m));
        assert_eq!(m[0], Message::user("the task"));
        assert_eq!(m.iter().filter(|x| x.content().starts_with(SUMMARY_PREFIX)).count(), 1);
    }

    #[test]
    fn a_continued_conversation_keeps_its_prompt_after_the_summary() {
        let mut m = history(2);
        m.push(Message::user("the new prompt"));
        m.extend(history(3).into_iter().skip(1));
        let head = head_end(&m);
        let starts = turn_starts(&m, head);
        apply_summary(&mut m, head, starts[4], "earlier");
        assert!(well_paired(&m));
        assert_eq!(m[2], Message::user("the new prompt"));
    }

    #[test]
    fn clearing_keeps_every_pair() {
        let mut m = history(3);
        let starts = turn_starts(&m, 1);
        assert_eq!(clear_results(&mut m, 1, starts[2]), 4);
        assert!(well_paired(&m));
        assert_eq!(m[2].content(), cleared_stub("read", "a0"));
        assert_eq!(clear_results(&mut m, 1, starts[2]), 0, "already cleared");
    }

    // A cleared result's image went on being sent after its text was cleared.
    #[test]
    fn clearing_a_result_drops_its_media_too() {
        let mut m = history(3);
        if let Message::Tool { parts, .. } = &mut m[2] {
            parts.push(harnessx_core::Part::image("image/png", vec![0u8; 64]));
        }
        let starts = turn_starts(&m, 1);
        assert_eq!(clear_results(&mut m, 1, starts[2]), 4);
        assert!(m[2].parts().is_empty());
    }

    #[test]
    fn old_media_are_dropped_for_a_line_that_names_them() {
        let mut m = history(2);
        m[0] = Message::user_with_parts(
            "the task",
            vec![harnessx_core::Part::image("image/png", vec![1u8; 10])],
        );
        if let Message::Tool { parts, .. } = &mut m[2] {
            parts.push(harnessx_core::Part::image("image/jpeg", vec![0u8; 64]));
            parts.push(harnessx_core::Part::text("a caption"));
        }
        let starts = turn_starts(&m, 1);
        assert_eq!(drop_media(&mut m, 1, starts[1]), 1);
        assert_eq!(
            m[2].content(),
            format!(
                "{}\n[image: image/jpeg, 64 bytes: removed from the history to fit the context window]",
                "x".repeat(100)
            )
        );
        assert_eq!(m[2].parts(), [harnessx_core::Part::text("a caption")]);
        assert_eq!(m[0].parts().len(), 1, "the prompt is pinned");
        assert_eq!(drop_media(&mut m, 1, starts[1]), 0, "already dropped");
        assert!(well_paired(&m));
        let request = summary_request(&m, 0, 1, 20_000, 500);
        assert!(request.messages[0].content().contains("[image: image/png, 10 bytes]"));
    }

    #[test]
    fn the_summary_request_fits_its_budget() {
        let mut m = history(50);
        if let Message::Tool { content, .. } = &mut m[2] {
            *content = "z".repeat(1_000_000);
        }
        let request = summary_request(&m, 1, m.len(), 20_000, 500);
        assert!(request.messages[0].content().chars().count() < 21_000);
        assert!(request.tools.is_empty());
        assert!(request.messages[0].content().contains("[calls read (a0) with {}]"));
    }

    #[test]
    fn orphans_are_detected() {
        let mut m = history(2);
        m.remove(2);
        assert!(!well_paired(&m));
        let mut m = history(2);
        m.remove(1);
        assert!(!well_paired(&m));
    }
}
