//! Hostile nesting for the parsers of outside input: JSON (and JSON-like) text nested to
//! each of [`DEPTHS`], in several [`Shape`]s, and deep [`Value`]s built and dropped
//! without recursion (serde_json's own drop recurses once per level).

use serde_json::Value;

/// The depths every parser of outside input is tried at.
pub const DEPTHS: [usize; 7] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000];

/// How text nests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `[[[...]]]`
    Arrays,
    /// `{"a":{"a":...{}}}`
    Objects,
    /// `{"a":[{"a":[...]}]}`, objects and arrays taking turns.
    Mixed,
    /// `[{"a":[{"a":` with nothing closed (a stream cut off, or garbage).
    Unclosed,
}

impl Shape {
    /// Every shape.
    pub const ALL: [Shape; 4] = [Shape::Arrays, Shape::Objects, Shape::Mixed, Shape::Unclosed];
}

/// JSON text that opens `depth` arrays/objects inside one another around the scalar `1`
/// its outermost level an object, so it is a valid
/// tool-argument shape (except [`Shape::Unclosed`], which never closes).
pub fn nested_json(shape: Shape, depth: usize) -> String {
    let mut open = String::with_capacity(depth * 6);
    let mut close = String::with_capacity(depth * 2);
    for level in 0..depth {
        let object = match shape {
            Shape::Arrays => level == 0,
            Shape::Objects => true,
            Shape::Mixed | Shape::Unclosed => level % 2 == 0,
        };
        if object {
            open.push_str(r#"{"a":"#);
            close.push('}');
        } else {
            open.push('[');
            close.push(']');
        }
    }
    if shape == Shape::Unclosed {
        return open;
    }
    // The innermost value: a number inside the last container.
    open.push('1');
    open.extend(close.chars().rev());
    open
}

/// An array `depth` levels deep around `null`, built without recursion.
pub fn nested_value(depth: usize) -> Value {
    let mut value = Value::Null;
    for _ in 0..depth {
        value = Value::Array(vec![value]);
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_nest_as_named() {
        assert_eq!(nested_json(Shape::Arrays, 3), r#"{"a":[[1]]}"#);
        assert_eq!(nested_json(Shape::Objects, 2), r#"{"a":{"a":1}}"#);
        assert_eq!(nested_json(Shape::Mixed, 3), r#"{"a":[{"a":1}]}"#);
        assert_eq!(nested_json(Shape::Unclosed, 3), r#"{"a":[{"a":"#);
        for shape in [Shape::Arrays, Shape::Objects, Shape::Mixed] {
            for depth in 1..20 {
                let text = nested_json(shape, depth);
                let value: Value = serde_json::from_str(&text).unwrap();
                assert!(value.is_object(), "{text}");
                assert_eq!(text.matches(['[', '{']).count(), depth, "{text}");
            }
        }
    }
}
