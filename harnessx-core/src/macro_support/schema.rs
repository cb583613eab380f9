//! Building the canonical input schema of a `#[tool]` function, once per tool.
//!
//! The macro recognises the common types by their spelling and composes their schemas
//! from the builders of [`crate::schema::build`] (re-exported here for generated code);
//! any other type goes through [`ParamSchema`], implemented for every
//! `schemars::JsonSchema` type, and is put in canonical form by the one canonicaliser,
//! [`crate::schema::canonical_subschema`].

use serde_json::{Value, json};

pub use crate::schema::build::*;

/// A parameter type whose JSON Schema comes from `schemars`.
///
/// Generated code reaches it through a trait of each parameter's own (see
/// `harnessx-macros`' `expand::schema_traits`), whose "no JSON Schema" error names the
/// parameter; the message lives there.
pub trait ParamSchema {
    /// The canonical schema of the type.
    fn param_schema() -> Value;
}

impl<T: schemars::JsonSchema + ?Sized> ParamSchema for T {
    fn param_schema() -> Value {
        // References and `$defs` as schemars writes them: the canonicaliser inlines them,
        // so every type's recursion point is the first one met (see `schema::canonical`).
        let root = schemars::generate::SchemaSettings::draft2020_12()
            .with(|s| s.meta_schema = None)
            .into_generator()
            .into_root_schema_for::<T>();
        match crate::schema::canonical_subschema(&Value::from(root)) {
            // A boolean schema (`true` accepts anything, `false` nothing) as an object, so
            // the property can carry its description.
            Value::Bool(true) => json!({}),
            Value::Bool(false) => json!({"not": {}}),
            other => other,
        }
    }
}

/// The schema of `T` (see [`ParamSchema`]).
pub fn of<T: ParamSchema + ?Sized>() -> Value {
    T::param_schema()
}

/// A schema the macro wrote out as JSON text at compile time.
pub fn parse(text: &str) -> Value {
    serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("harnessx: generated schema is not JSON ({e}): {text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree.
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code, reason = "only its schema is used")]
    struct Tree {
        /// The subtrees.
        children: Vec<Tree>,
        /// Where.
        at: Point,
    }

    /// A point.
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code, reason = "only its schema is used")]
    struct Point {
        x: i64,
    }

    #[test]
    fn schemars_types_are_canonical_with_recursion_points_open() {
        let tree = json!({
            "type": "object",
            "properties": {
                "children": {"type": "array", "items": {}, "description": "The subtrees."},
                "at": {"type": "object", "properties": {"x": {"type": "integer", "format": "int64"}},
                       "required": ["x"], "description": "Where."}
            },
            "required": ["children", "at"],
            "description": "A tree."
        });
        assert_eq!(of::<Tree>(), tree);
        // The recursion point is the first one, whatever the type is nested in.
        assert_eq!(of::<Vec<Tree>>(), json!({"type": "array", "items": tree}));
        assert_eq!(of::<serde_json::Value>(), json!({}));
    }
}
