//! The canonical form of a schema: self-contained and provider-neutral. The one set of
//! rules for every schema a model sees: [`canonical_schema`] for the input schemas
//! `get_tool_params` returns (any registered schema), [`canonical_subschema`] for the
//! schema of one `#[tool]` parameter whose type is known only through `schemars`.
//!
//! At every schema position (the values of `properties`, `items`, `anyOf`, ..., never
//! inside `enum`, `const`, `default` or `examples`, and never a property merely *named*
//! `title`):
//!
//! - a local `$ref` (`#/$defs/..`, `#/definitions/..`, any JSON pointer into the same
//!   document) is replaced by its target, the keywords beside it kept over the target's;
//! - a `$ref` that cannot be inlined (a recursive type's recursion point, or one that
//!   leaves the document) is dropped: that point accepts any value (`{}`), keeping the
//!   keywords beside it (a description);
//! - `$defs`/`definitions` and the keywords that only serve references or tooling
//!   (`$schema`, `$id`, `$anchor`, `$dynamicAnchor`, `$dynamicRef`, `$recursiveAnchor`,
//!   `$recursiveRef`, `$vocabulary`, `$comment`) go, and so does `title`;
//! - everything else is kept, in its order.
//!
//! Why a recursion point becomes `{}` rather than keeping its `$ref` and `$defs`: the
//! design asks for schemas without `$ref` or `$defs` (several providers reject them or
//! support them partly), and a self-contained schema cannot describe a recursive type
//! exactly. Nothing is lost for checking: a registered schema is validated as it was
//! written (the canonical form is only what the model sees), and a `#[tool]` parameter's
//! value is still checked by decoding it, whose error names the argument in the same
//! one-line form as a validation error (`tool::decode`). Unrolling the recursion to some
//! depth instead would make schemas larger without making them exact.

use serde_json::{Map, Value, json};

/// Keywords removed wherever a schema is: definitions, and what only serves references
/// or tooling.
const DROPPED: [&str; 12] = [
    "$schema",
    "$id",
    "$anchor",
    "$dynamicAnchor",
    "$dynamicRef",
    "$recursiveAnchor",
    "$recursiveRef",
    "$vocabulary",
    "$comment",
    "$defs",
    "definitions",
    "title",
];
/// Keywords whose value is one schema (`items` also takes a list, in older drafts).
const ONE: [&str; 12] = [
    "items",
    "additionalItems",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "contentSchema",
];
/// Keywords whose value is a list of schemas.
const LIST: [&str; 5] = ["anyOf", "oneOf", "allOf", "prefixItems", "items"];
/// Keywords whose value maps names to schemas.
const MAP: [&str; 3] = ["properties", "patternProperties", "dependentSchemas"];

/// The canonical form of a tool's input schema: [`canonical_subschema`]'s rules, and an
/// object schema with `"type": "object"` first and `properties` present (an empty object
/// when the schema had none). Deterministic, and idempotent: a canonical schema is its
/// own canonical form.
pub fn canonical_schema(schema: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), Value::String("object".into()));
    if let Value::Object(body) = canonical_subschema(schema) {
        // A `type` of its own (checked at registration) replaces "object" in place.
        out.extend(body);
    }
    out.entry("properties").or_insert_with(|| Value::Object(Map::new()));
    Value::Object(out)
}

/// The canonical form of a schema at any position (see the module doc): references
/// inlined against `schema` itself as the document, recursion points accepting any value,
/// no `$defs`, `title` or `$`-keywords left. A boolean schema stays a boolean.
pub fn canonical_subschema(schema: &Value) -> Value {
    // The document itself is being expanded: `"$ref": "#"` is a recursion point.
    Inliner { root: schema, expanding: vec!["#"] }.schema(schema)
}

struct Inliner<'a> {
    root: &'a Value,
    /// The references being expanded, outermost first: meeting one again is recursion.
    expanding: Vec<&'a str>,
}

impl<'a> Inliner<'a> {
    fn schema(&mut self, schema: &'a Value) -> Value {
        let Value::Object(obj) = schema else { return schema.clone() };
        let mut out = match obj.get("$ref") {
            Some(Value::String(reference)) => self.target(reference),
            _ => Map::new(),
        };
        for (key, value) in obj {
            if key != "$ref" && !DROPPED.contains(&key.as_str()) {
                out.insert(key.clone(), self.keyword(key, value));
            }
        }
        Value::Object(out)
    }

    /// The canonical target of a reference, for the keywords beside it to go over; empty
    /// (any value) when it cannot be inlined: recursion, or outside the document.
    fn target(&mut self, reference: &'a str) -> Map<String, Value> {
        if self.expanding.contains(&reference) {
            return Map::new();
        }
        let Some(target) = reference.strip_prefix('#').and_then(|pointer| self.root.pointer(pointer)) else {
            return Map::new();
        };
        self.expanding.push(reference);
        let resolved = self.schema(target);
        self.expanding.pop();
        match resolved {
            Value::Object(map) => map,
            Value::Bool(false) => Map::from_iter([("not".to_owned(), json!({}))]),
            _ => Map::new(),
        }
    }

    /// A keyword's value: schemas in canonical form, anything else (`enum`, `const`,
    /// `default`, `examples`, `required`, ..) as it is.
    fn keyword(&mut self, key: &str, value: &'a Value) -> Value {
        match value {
            Value::Array(list) if LIST.contains(&key) => {
                Value::Array(list.iter().map(|s| self.schema(s)).collect())
            }
            Value::Object(map) if MAP.contains(&key) => {
                Value::Object(map.iter().map(|(name, s)| (name.clone(), self.schema(s))).collect())
            }
            // Draft 7's `dependencies`: a schema, or a list of property names.
            Value::Object(map) if key == "dependencies" => Value::Object(
                map.iter()
                    .map(|(name, dep)| {
                        let dep = if dep.is_array() { dep.clone() } else { self.schema(dep) };
                        (name.clone(), dep)
                    })
                    .collect(),
            ),
            _ if ONE.contains(&key) => self.schema(value),
            _ => value.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_references_are_inlined_and_recursion_points_accept_anything() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Args",
            "type": "object",
            "properties": {
                "point": {"$ref": "#/$defs/Point", "description": "Where."},
                "old": {"$ref": "#/definitions/Unit"},
                "tree": {"$ref": "#/$defs/Tree"}
            },
            "$defs": {
                "Point": {"title": "Point", "type": "object", "description": "A point.",
                          "properties": {"x": {"type": "integer", "title": "X"}}},
                "Tree": {"type": "object", "properties": {
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Tree", "description": "Subtrees."}}
                }}
            },
            "definitions": {"Unit": {"enum": ["c", "f"]}}
        });
        let canon = canonical_schema(&schema);
        assert_eq!(
            canon,
            json!({
                "type": "object",
                "properties": {
                    // The keywords beside a reference win over the target's, in the target's order.
                    "point": {"type": "object", "description": "Where.", "properties": {"x": {"type": "integer"}}},
                    "old": {"enum": ["c", "f"]},
                    "tree": {"type": "object", "properties": {
                        "children": {"type": "array", "items": {"description": "Subtrees."}}
                    }}
                }
            })
        );
        assert_eq!(
            canon["properties"]["point"].to_string(),
            r#"{"type":"object","description":"Where.","properties":{"x":{"type":"integer"}}}"#
        );
        // What the original admits, the canonical form admits.
        let v = json!({"point": {"x": 1}, "old": "c", "tree": {"children": [{"children": []}]}});
        assert!(jsonschema::is_valid(&schema, &v) && jsonschema::is_valid(&canon, &v));
        assert_eq!(canonical_schema(&canon), canon, "idempotent");
    }

    #[test]
    fn the_document_itself_and_foreign_references() {
        // `#` is the document: a recursion point at once.
        let list =
            json!({"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}}});
        assert_eq!(
            canonical_subschema(&list),
            json!({"type": "object", "properties": {"next": {"anyOf": [{}, {"type": "null"}]}}})
        );
        // Outside the document, or an unknown definition: any value.
        let far = json!({"properties": {"a": {"$ref": "https://example.com/a.json"}, "b": {"$ref": "#/$defs/Nope"}}});
        assert_eq!(canonical_subschema(&far), json!({"properties": {"a": {}, "b": {}}}));
        // Boolean targets.
        let b = json!({"properties": {"t": {"$ref": "#/$defs/T"}, "f": {"$ref": "#/$defs/F"}},
                       "$defs": {"T": true, "F": false}});
        assert_eq!(canonical_subschema(&b), json!({"properties": {"t": {}, "f": {"not": {}}}}));
    }

    #[test]
    fn only_schema_positions_are_rewritten() {
        let schema = json!({
            "$id": "urn:x", "$comment": "tooling", "title": "T", "type": "object",
            "properties": {
                "title": {"type": "string", "title": "Title", "default": "title"},
                "definitions": {"type": "object", "additionalProperties": {"title": "V", "type": "integer"}},
                "kind": {"enum": [{"title": "kept", "$ref": "#/kept"}], "examples": [{"title": "kept"}]}
            },
            "items": [{"title": "I"}],
            "dependencies": {"title": ["definitions"], "kind": {"title": "D"}},
            "x-extension": {"title": "kept", "$ref": "#/kept"},
            "additionalProperties": false,
            "default": {"title": "kept", "$defs": {}}
        });
        assert_eq!(
            canonical_schema(&schema),
            json!({
                "type": "object",
                "properties": {
                    "title": {"type": "string", "default": "title"},
                    "definitions": {"type": "object", "additionalProperties": {"type": "integer"}},
                    "kind": {"enum": [{"title": "kept", "$ref": "#/kept"}], "examples": [{"title": "kept"}]}
                },
                "items": [{}],
                "dependencies": {"title": ["definitions"], "kind": {}},
                "x-extension": {"title": "kept", "$ref": "#/kept"},
                "additionalProperties": false,
                "default": {"title": "kept", "$defs": {}}
            })
        );
    }

    #[test]
    fn input_schemas_are_objects_with_properties() {
        assert_eq!(
            canonical_schema(&json!({"$schema": "x", "title": "T"})),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(canonical_schema(&json!(true)), json!({"type": "object", "properties": {}}));
        assert_eq!(
            canonical_schema(&json!({"required": [], "type": "object"})).to_string(),
            r#"{"type":"object","required":[],"properties":{}}"#
        );
    }
}
