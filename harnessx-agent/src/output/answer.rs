//! The JSON of a text answer (modes `native` and `prompted`), parsed without trusting it:
//! a ```` ```json ```` fence (or a bare ```` ``` ```` one) is looked into, then the text
//! as a whole, then the span from its first `{` to its last `}` (a sentence around the
//! object). Text nested deeper than [`MAX_JSON_DEPTH`] is refused before it is parsed,
//! so nothing downstream walks a value deeper than that; serde_json refuses deeper text
//! anyway, and its errors are kept to one line.

use serde_json::Value;

use harnessx_core::{MAX_JSON_DEPTH, depth};

/// The JSON value of a text answer, or one line (after `invalid output: `) saying why
/// there is none.
///
/// ```
/// use harnessx_agent::output::answer_json;
/// use serde_json::json;
///
/// assert_eq!(answer_json("```json\n{\"a\": 1}\n```"), Ok(json!({"a": 1})));
/// assert_eq!(answer_json("Here it is: {\"a\": 1}."), Ok(json!({"a": 1})));
/// assert!(answer_json("no JSON here").unwrap_err().starts_with("the answer is not JSON"));
/// ```
pub fn answer_json(text: &str) -> Result<Value, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("the answer is empty: answer with the JSON value".into());
    }
    let candidates = [fenced(text), Some(text), braces(text)];
    let mut first_error = None;
    for candidate in candidates.into_iter().flatten() {
        if depth::text_too_deep(candidate, MAX_JSON_DEPTH) {
            return Err(format!("the answer nests more than {MAX_JSON_DEPTH} levels deep"));
        }
        match serde_json::from_str::<Value>(candidate) {
            Ok(value) => return Ok(value),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    let e = first_error.map(|e| e.to_string()).unwrap_or_default();
    Err(format!("the answer is not JSON ({e})"))
}

/// The content of the first fenced block (```` ```json ````, ```` ``` ````, any info
/// string), if there is one.
fn fenced(text: &str) -> Option<&str> {
    let start = text.find("```")?;
    let after = &text[start + 3..];
    // The info string runs to the end of the line.
    let body_start = after.find('\n')? + 1;
    let body = &after[body_start..];
    let end = body.find("```").unwrap_or(body.len());
    Some(body[..end].trim())
}

/// From the first `{` to the last `}`, when both are there and differ from the whole.
fn braces(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    (start < end && (start > 0 || end + 1 < text.len())).then(|| &text[start..=end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fenced_bare_and_embedded_answers() {
        assert_eq!(answer_json(" {\"a\": [1, 2]} "), Ok(json!({"a": [1, 2]})));
        assert_eq!(answer_json("```\n[1]\n```"), Ok(json!([1])));
        assert_eq!(answer_json("Sure!\n```JSON\n{\"a\": 1}\n```\nDone."), Ok(json!({"a": 1})));
        // A fence that never closes: the rest of the text.
        assert_eq!(answer_json("```json\n{\"a\": 1}"), Ok(json!({"a": 1})));
        assert_eq!(answer_json("\"just a string\""), Ok(json!("just a string")));
    }

    #[test]
    fn what_is_not_json_is_one_line() {
        for text in ["", "   ", "{\"a\": ", "```json\n{oops}\n```", "yes", "{\"a\": 1}}"] {
            let e = answer_json(text).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
        assert_eq!(answer_json("").unwrap_err(), "the answer is empty: answer with the JSON value");
    }

    #[test]
    fn deep_and_huge_answers_are_refused_or_parsed_without_recursing_far() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(answer_json(&deep).unwrap_err(), "the answer nests more than 100 levels deep");
        let open = "{\"a\":".repeat(50_000);
        assert_eq!(answer_json(&open).unwrap_err(), "the answer nests more than 100 levels deep");
        let huge = format!("{{\"text\": \"{}\"}}", "x".repeat(20_000_000));
        assert_eq!(answer_json(&huge).unwrap()["text"].as_str().map(str::len), Some(20_000_000));
    }
}
