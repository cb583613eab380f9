//! How deep JSON may nest: the one limit for tool arguments and tool results, checked
//! without recursion.
//!
//! serde_json already refuses text nested 128 levels deep, but a [`Value`] can be deeper
//! than any text it was parsed from (a tool builds it), and every recursive walk of one
//! (`to_string`, `Drop`, a validator) then overflows the stack and aborts the process. A
//! value only a little under serde_json's limit is a trap too: wrapped in a journal entry
//! or a JSON-RPC message, it makes text the reader refuses. So the engine takes
//! [`MAX_JSON_DEPTH`] levels, with room below serde_json's 127 for every envelope, and
//! the checks here walk iteratively: they stop at the first level past the limit, and
//! [`drop_deep`] takes a value apart without the recursive drop.

use serde_json::Value;

/// The deepest nesting of arrays and objects the engine takes in a call's arguments or
/// in a result's structured content: `[]` and `{}` are 1 level, a scalar 0.
pub const MAX_JSON_DEPTH: usize = 100;

/// Whether JSON `text` opens more than `limit` arrays and objects inside one another
/// (brackets inside strings do not count). One pass over the bytes, no allocation; text
/// that is not JSON is measured the same way, so an unclosed `[[[[` counts too.
pub fn text_too_deep(text: &str, limit: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in text.as_bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Whether `value` nests arrays and objects more than `limit` levels deep. Walks without
/// recursion and stops at the first level past the limit, so a value a million levels
/// deep costs no more than one `limit + 1` deep. Only arrays and objects are visited, and
/// a scalar or a flat value allocates nothing (this runs on every result).
pub fn value_too_deep(value: &Value, limit: usize) -> bool {
    let nested = |child: &&Value| matches!(child, Value::Array(_) | Value::Object(_));
    // `[]` and `{}` are level 1. The stack holds only arrays and objects still to visit,
    // so it stays empty (unallocated) until a value nests.
    let mut stack: Vec<(&Value, usize)> = Vec::new();
    let mut next = Some((value, 1));
    while let Some((value, depth)) = next.take().or_else(|| stack.pop()) {
        match value {
            Value::Array(_) | Value::Object(_) if depth > limit => return true,
            Value::Array(items) => stack.extend(items.iter().filter(nested).map(|c| (c, depth + 1))),
            Value::Object(map) => stack.extend(map.values().filter(nested).map(|c| (c, depth + 1))),
            _ => {}
        }
    }
    false
}

/// Drops `value` without recursing (serde_json's own drop recurses once per level and
/// overflows the stack on a value some ten thousand levels deep).
pub fn drop_deep(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An array `depth` levels deep, built without recursion.
    fn nested_array(depth: usize) -> Value {
        let mut value = Value::Null;
        for _ in 0..depth {
            value = Value::Array(vec![value]);
        }
        value
    }

    #[test]
    fn text_depth_counts_brackets_outside_strings() {
        assert!(!text_too_deep("", 0));
        assert!(!text_too_deep(r#"{"a": 1}"#, 1));
        assert!(text_too_deep(r#"{"a": [1]}"#, 1));
        assert!(!text_too_deep(r#"{"a": "[[[[\"[[[["}"#, 1));
        assert!(!text_too_deep(r#"[[]] [[]]"#, 2));
        assert!(text_too_deep("[[[", 2));
        assert!(!text_too_deep("]]]]][", 1));
    }

    #[test]
    fn value_depth_matches_the_text_depth() {
        for depth in 0..5 {
            let value = nested_array(depth);
            for limit in 0..6 {
                assert_eq!(value_too_deep(&value, limit), depth > limit, "depth {depth} limit {limit}");
                assert_eq!(text_too_deep(&value.to_string(), limit), depth > limit);
            }
        }
        let wide = json!({"a": [1, {"b": [[]]}], "c": {}});
        assert!(!value_too_deep(&wide, 5));
        assert!(value_too_deep(&wide, 4));
    }

    #[test]
    fn a_million_levels_are_measured_and_dropped_without_recursion() {
        let value = nested_array(1_000_000);
        assert!(value_too_deep(&value, MAX_JSON_DEPTH));
        drop_deep(value);
    }
}
