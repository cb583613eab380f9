//! An MCP server's question mid-call (elicitation), asked on the terminal: the server's
//! message, then each field of the form it asks for, typed one line at a time (`decline`
//! or `cancel` at any prompt answers the whole question so).

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use harnessx::mcp::{ElicitAnswer, Elicitation, Elicitor};
use serde_json::{Map, Value};

use crate::terminal::{CancelOnDrop, next_line};

/// Who answers a server's questions in `run` and `chat` at a terminal.
pub(crate) fn on_terminal() -> Elicitor {
    // One question at a time, as approvals are.
    let one_at_a_time = Arc::new(tokio::sync::Mutex::new(()));
    Elicitor::new(move |question: Elicitation| {
        let lock = one_at_a_time.clone();
        async move {
            let _turn = lock.lock().await;
            let cancelled = Arc::new(AtomicBool::new(false));
            let _cancel = CancelOnDrop(cancelled.clone());
            tokio::task::spawn_blocking(move || ask(&question, &cancelled))
                .await
                .unwrap_or(ElicitAnswer::Cancel)
        }
    })
}

/// What one prompt gave.
enum Typed {
    Value(Value),
    Skip,
    Decline,
    Cancel,
}

fn ask(question: &Elicitation, cancelled: &AtomicBool) -> ElicitAnswer {
    let _terminal = crate::terminal::hold();
    let mut stderr = std::io::stderr();
    let message = one_line(&question.message);
    let _ = writeln!(stderr, "? The MCP server `{}` asks: {message}", question.server);
    let _ = writeln!(
        stderr,
        "  (one line per field; an empty line leaves an optional field out; `decline` or `cancel` answers the whole question)"
    );
    let required: Vec<&str> = question
        .schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = Map::new();
    let fields = question.schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    for (name, field) in &fields {
        let needed = required.contains(&name.as_str());
        loop {
            let _ = write!(stderr, "  {} > ", describe(name, field, needed));
            let _ = stderr.flush();
            let Some(line) = next_line(cancelled) else { return ElicitAnswer::Cancel };
            match typed(&line, field, needed) {
                Ok(Typed::Value(value)) => {
                    content.insert(name.clone(), value);
                    break;
                }
                Ok(Typed::Skip) => break,
                Ok(Typed::Decline) => return ElicitAnswer::Decline,
                Ok(Typed::Cancel) => return ElicitAnswer::Cancel,
                Err(why) => {
                    let _ = writeln!(stderr, "  {why}");
                }
            }
        }
    }
    ElicitAnswer::Accept(Value::Object(content))
}

/// `name (type, required): description [choices]`.
fn describe(name: &str, field: &Value, needed: bool) -> String {
    let kind = field.get("type").and_then(Value::as_str).unwrap_or("string");
    let mut text = format!("{name} ({kind}{})", if needed { ", required" } else { "" });
    if let Some(about) = field.get("description").or_else(|| field.get("title")).and_then(Value::as_str) {
        text.push_str(": ");
        text.push_str(&one_line(about));
    }
    if let Some(choices) = choices(field).or_else(|| field.get("items").and_then(choices)) {
        text.push_str(&format!(" [{}]", choices.join(" / ")));
    }
    text
}

/// An enum field's choices (`enum`, or `oneOf`/`anyOf` of `const`s).
fn choices(field: &Value) -> Option<Vec<String>> {
    let listed = field.get("enum").and_then(Value::as_array).cloned().or_else(|| {
        let one_of = field.get("oneOf").or_else(|| field.get("anyOf")).and_then(Value::as_array)?;
        Some(one_of.iter().filter_map(|c| c.get("const").cloned()).collect())
    })?;
    Some(listed.iter().map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_owned)).collect())
}

/// The value typed for `field`, by its type; an error says what it takes.
fn typed(line: &str, field: &Value, needed: bool) -> Result<Typed, String> {
    let text = line.trim();
    match text {
        "decline" => return Ok(Typed::Decline),
        "cancel" => return Ok(Typed::Cancel),
        "" if needed => return Err("this field is required".to_owned()),
        "" => return Ok(Typed::Skip),
        _ => {}
    }
    let kind = field.get("type").and_then(Value::as_str).unwrap_or("string");
    if kind == "array" {
        // A multiple choice: the items, comma-separated.
        let items: Vec<&str> = text.split(',').map(str::trim).filter(|i| !i.is_empty()).collect();
        if let Some(choices) = field.get("items").and_then(choices)
            && let Some(wrong) = items.iter().find(|i| !choices.iter().any(|c| c == *i))
        {
            return Err(format!("{wrong} is not one of: {}", choices.join(", ")));
        }
        return Ok(Typed::Value(Value::from(items)));
    }
    if let Some(choices) = choices(field)
        && !choices.iter().any(|c| c == text)
    {
        return Err(format!("one of: {}", choices.join(", ")));
    }
    let value = match kind {
        "integer" => text.parse::<i64>().map(Value::from).map_err(|_| "a whole number".to_owned())?,
        "number" => text
            .parse::<f64>()
            .ok()
            .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number))
            .ok_or_else(|| "a number".to_owned())?,
        "boolean" => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Value::Bool(true),
            "n" | "no" | "false" => Value::Bool(false),
            _ => return Err("yes or no".to_owned()),
        },
        _ => Value::String(text.to_owned()),
    };
    Ok(Typed::Value(value))
}

/// `text` on one line, at most 500 characters (a server may send anything).
fn one_line(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut short: String = line.chars().filter(|c| !c.is_control()).take(500).collect();
    if line.chars().count() > 500 {
        short.push('…');
    }
    short
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn value(line: &str, field: Value, needed: bool) -> Result<Option<Value>, String> {
        typed(line, &field, needed).map(|t| match t {
            Typed::Value(v) => Some(v),
            Typed::Skip => None,
            Typed::Decline => Some(json!("DECLINE")),
            Typed::Cancel => Some(json!("CANCEL")),
        })
    }

    #[test]
    fn each_field_is_read_by_its_type() {
        assert_eq!(value("Alice", json!({"type": "string"}), true), Ok(Some(json!("Alice"))));
        assert_eq!(value(" 42 ", json!({"type": "integer"}), true), Ok(Some(json!(42))));
        assert_eq!(value("4.5", json!({"type": "number"}), false), Ok(Some(json!(4.5))));
        assert_eq!(value("yes", json!({"type": "boolean"}), false), Ok(Some(json!(true))));
        assert_eq!(value("", json!({"type": "string"}), false), Ok(None));
        assert_eq!(value("decline", json!({"type": "integer"}), true), Ok(Some(json!("DECLINE"))));
        assert_eq!(value("cancel", json!({"type": "integer"}), true), Ok(Some(json!("CANCEL"))));
        assert_eq!(value("", json!({"type": "string"}), true), Err("this field is required".to_owned()));
        assert_eq!(value("many", json!({"type": "integer"}), true), Err("a whole number".to_owned()));
        assert_eq!(value("perhaps", json!({"type": "boolean"}), true), Err("yes or no".to_owned()));
        assert_eq!(value("NaN", json!({"type": "number"}), true), Err("a number".to_owned()));
        let colour = json!({"type": "string", "enum": ["red", "green"]});
        assert_eq!(value("blue", colour.clone(), true), Err("one of: red, green".to_owned()));
        assert_eq!(value("red", colour, true), Ok(Some(json!("red"))));
        let colours = json!({"type": "array", "items": {"type": "string", "enum": ["red", "green"]}});
        assert_eq!(value("red, green", colours.clone(), false), Ok(Some(json!(["red", "green"]))));
        assert_eq!(value("red, blue", colours, false), Err("blue is not one of: red, green".to_owned()));
    }

    #[test]
    fn a_server_message_is_one_short_line() {
        let long = format!("a\nb\u{1b}[2J {}", "x".repeat(600));
        let line = one_line(&long);
        assert!(!line.contains('\n') && !line.contains('\u{1b}'), "{line}");
        assert!(line.chars().count() <= 501);
    }
}
