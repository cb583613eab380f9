//! Compile-time JSON: the schema of a tool whose parameter types are all recognised is
//! written out as text by the macro, so the generated code only parses one string
//! (once). A proc macro cannot call the runtime, so this is a twin of the runtime builders
//! in `harnessx_core::schema::build` for the types recognised by spelling (`ty::known`):
//! the text written here must equal what the runtime builds for the same parameters.
//! The facade's `tests/macro_schema_rules.rs` checks that for every recognised type, with
//! `nullable`, `one_of`, defaults and descriptions, by comparing each tool's compile-time
//! schema with the same tool's schema built at run time.

use std::fmt::Write;

use syn::{Expr, Lit, Type};

use crate::ty::{Known, known};

/// A JSON value with object keys in insertion order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    /// A number, as its JSON text.
    Num(String),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn obj(pairs: &[(&str, Json)]) -> Json {
        Json::Obj(pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect())
    }

    fn ty(t: &str) -> Json {
        Json::obj(&[("type", Json::Str(t.into()))])
    }

    fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        match self {
            Json::Obj(pairs) => pairs.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Inserts or replaces `key`, keeping the position of an existing key.
    pub(crate) fn insert(&mut self, key: &str, value: Json) {
        if let Some(v) = self.get_mut(key) {
            *v = value;
        } else if let Json::Obj(pairs) = self {
            pairs.push((key.to_owned(), value));
        }
    }

    pub(crate) fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Num(n) => out.push_str(n),
            Json::Str(s) => write_str(s, out),
            Json::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Json::Obj(pairs) => {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(k, out);
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }
}

fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The schema of a recognised type, or `None` when any part needs `schemars`.
pub(crate) fn schema(ty: &Type) -> Option<Json> {
    Some(match known(ty)? {
        Known::Bool => Json::ty("boolean"),
        Known::Integer => Json::ty("integer"),
        Known::Range(min, max) => Json::obj(&[
            ("type", Json::Str("integer".into())),
            ("minimum", Json::Num(min.to_string())),
            ("maximum", Json::Num(max.to_string())),
        ]),
        Known::Unsigned => {
            Json::obj(&[("type", Json::Str("integer".into())), ("minimum", Json::Num("0".into()))])
        }
        Known::Number => Json::ty("number"),
        Known::String => Json::ty("string"),
        Known::Char => Json::obj(&[
            ("type", Json::Str("string".into())),
            ("minLength", Json::Num("1".into())),
            ("maxLength", Json::Num("1".into())),
        ]),
        Known::Option(inner) => nullable(schema(inner)?),
        Known::Array(inner) => Json::obj(&[("type", Json::Str("array".into())), ("items", schema(inner)?)]),
        Known::Map(inner) => {
            Json::obj(&[("type", Json::Str("object".into())), ("additionalProperties", schema(inner)?)])
        }
    })
}

/// The compile-time twin of the runtime `harnessx_core::schema::build::nullable`, rule for
/// rule: `{}` and `"type": "null"` stay; a `type` name or list gains `"null"` (and an
/// `enum` beside it `null`); anything else (a `const`, no `type`) becomes `anyOf` with
/// `{"type": "null"}`. `tests/macro_schema_rules.rs` (in the facade) checks both give the
/// same text for every type [`schema`] recognises.
pub(crate) fn nullable(mut inner: Json) -> Json {
    match &inner {
        Json::Obj(pairs) if pairs.is_empty() => return inner,
        Json::Obj(_) => {}
        _ => return inner,
    }
    if inner.get_mut("const").is_some() {
        return any_of_null(inner);
    }
    match inner.get_mut("type") {
        Some(Json::Str(t)) if t == "null" => return inner,
        Some(ty @ Json::Str(_)) => {
            let name = std::mem::replace(ty, Json::Null);
            *ty = Json::Arr(vec![name, Json::Str("null".into())]);
        }
        Some(Json::Arr(types)) if types.iter().all(|t| matches!(t, Json::Str(_))) => {
            if !types.contains(&Json::Str("null".into())) {
                types.push(Json::Str("null".into()));
            }
        }
        _ => return any_of_null(inner),
    }
    if let Some(Json::Arr(choices)) = inner.get_mut("enum")
        && !choices.contains(&Json::Null)
    {
        choices.push(Json::Null);
    }
    inner
}

fn any_of_null(inner: Json) -> Json {
    Json::Obj(vec![("anyOf".into(), Json::Arr(vec![inner, Json::ty("null")]))])
}

/// The `enum` of `#[arg(one_of = [..])]` on `schema`: the choices, plus `null` when the
/// schema is nullable (an `Option` parameter). The twin of the runtime
/// `harnessx_core::schema::build::one_of`.
pub(crate) fn one_of(schema: &Json, mut choices: Vec<Json>) -> Vec<Json> {
    let nullable = match schema {
        Json::Obj(pairs) => pairs.iter().any(|(k, v)| {
            k == "type" && matches!(v, Json::Arr(types) if types.contains(&Json::Str("null".into())))
        }),
        _ => false,
    };
    if nullable && !choices.contains(&Json::Null) {
        choices.push(Json::Null);
    }
    choices
}

/// The JSON value of a literal expression (`"a"`, `3`, `-2.5`, `true`).
pub(crate) fn literal(e: &Expr) -> Option<Json> {
    match e {
        Expr::Lit(l) => match &l.lit {
            Lit::Str(s) => Some(Json::Str(s.value())),
            Lit::Int(i) => Some(Json::Num(i.base10_digits().to_owned())),
            Lit::Float(f) => Some(Json::Num(float_text(f.base10_digits()))),
            Lit::Bool(b) => Some(Json::Bool(b.value)),
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => match literal(&u.expr)? {
            Json::Num(n) => Some(Json::Num(format!("-{n}"))),
            _ => None,
        },
        Expr::Group(g) => literal(&g.expr),
        _ => None,
    }
}

/// serde_json's rendering of an f64 literal (`1e3` -> `1000.0`).
fn float_text(digits: &str) -> String {
    match digits.parse::<f64>() {
        Ok(v) if v.is_finite() => {
            let s = format!("{v:?}");
            if s.contains('e') { digits.to_owned() } else { s }
        }
        _ => digits.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(j: &Json) -> String {
        let mut s = String::new();
        j.write(&mut s);
        s
    }

    #[test]
    fn known_schemas_as_text() {
        let ty = |s: &str| syn::parse_str::<Type>(s).unwrap();
        assert_eq!(
            text(&schema(&ty("Option<Vec<u8>>")).unwrap()),
            r#"{"type":["array","null"],"items":{"type":"integer","minimum":0,"maximum":255}}"#
        );
        assert_eq!(text(&schema(&ty("Option<Option<bool>>")).unwrap()), r#"{"type":["boolean","null"]}"#);
        assert!(schema(&ty("Vec<Point>")).is_none());
        assert_eq!(text(&Json::Str("a\"b\n\u{1}".into())), r#""a\"b\n\u0001""#);
        let e = |s: &str| literal(&syn::parse_str::<Expr>(s).unwrap()).map(|j| text(&j));
        assert_eq!(e("-2.50"), Some("-2.5".into()));
        assert_eq!(e("10u32"), Some("10".into()));
        assert_eq!(e("x"), None);
    }
}
