//! Preparing one call: the tool its name resolved to, its arguments parsed (or checked
//! straight from their text against a flat schema) and validated. Nothing here waits.

use std::sync::Arc;

use serde_json::Value;

use crate::depth::{MAX_JSON_DEPTH, text_too_deep, value_too_deep};
use crate::engine::serial::SerialQueue;
use crate::engine::span::ErrorType;
use crate::schema::kind_of;
use crate::tool::call::{ToolCall, ToolResult};
use crate::tool::policy::EffectivePolicy;
use crate::tool::registered::RegisteredTool;

/// What the registry hands the engine for one call: the tool the call's name resolved to
/// (or the error text for the model), the policy values in force, and, for a tool that
/// is not concurrent, the queue serial tools take turns on. The engine never looks inside
/// a registry.
pub(crate) struct CallTarget {
    tool: Result<Arc<RegisteredTool>, String>,
    policy: EffectivePolicy,
    serial: Option<SerialQueue>,
}

impl CallTarget {
    pub(crate) fn new(
        tool: Result<Arc<RegisteredTool>, String>,
        policy: EffectivePolicy,
        serial: &SerialQueue,
    ) -> Self {
        let serial = tool.as_ref().is_ok_and(|t| !t.definition().concurrent).then(|| serial.clone());
        Self { tool, policy, serial }
    }
}

/// A call that passed the checks that need no waiting (name, arguments, schema).
pub(super) struct ReadyCall {
    pub(super) tool: Arc<RegisteredTool>,
    /// The arguments as a value; `None` while they are only the call's own text, checked
    /// against the tool's flat schema ([`RegisteredTool::takes_text`]): its handler decodes
    /// them from there, and the value is parsed only if something asks for it.
    /// (Boxed, as a call's parts are handed on by value from stage to stage: each byte
    /// of them is copied each time.)
    pub(super) args: Option<Box<Value>>,
    pub(super) policy: EffectivePolicy,
    /// The queue to take turns on, for non-concurrent tools.
    pub(super) serial: Option<SerialQueue>,
    /// A person replaced the model's arguments with `args` (its result says so).
    pub(super) edited: bool,
    /// A hook replaced the model's arguments with `args`.
    pub(super) rewritten: bool,
    /// The call's text fits the tool's flat schema: while nobody replaced the arguments,
    /// its handler decodes them from the text, even once `args` was parsed for a hook.
    pub(super) from_text: bool,
}

impl ReadyCall {
    /// Replaces the arguments with ones a person edited: validated against the schema
    /// again first. The error is the result text for the model.
    pub(super) fn edit(&mut self, arguments: Value) -> Result<(), String> {
        self.replace(arguments, "the user")?;
        self.edited = true;
        Ok(())
    }

    /// Replaces the arguments with ones hook `by` rewrote: validated against the schema
    /// again first (the rules are checked on them by the permission stage that follows).
    /// The error is the result text for the model.
    pub(super) fn rewrite(&mut self, arguments: Value, by: &str) -> Result<(), String> {
        self.replace(arguments, &format!("hook {by}"))?;
        self.rewritten = true;
        Ok(())
    }

    /// Puts `arguments` in place of the call's once they are an object, not too deep, and
    /// pass the tool's schema; else the error naming `who` changed them.
    fn replace(&mut self, arguments: Value, who: &str) -> Result<(), String> {
        let problem = if !arguments.is_object() {
            Some(format!("expected a JSON object, got {}", kind_of(&arguments)))
        } else if value_too_deep(&arguments, MAX_JSON_DEPTH) {
            Some(format!("nested more than {MAX_JSON_DEPTH} levels deep"))
        } else {
            self.tool.check(&arguments)
        };
        if let Some(problem) = problem {
            let name = self.tool.name();
            return Err(format!(
                "{who} changed the arguments of this {name} call, and the new ones are invalid ({problem}); the call did not run"
            ));
        }
        self.args = Some(Box::new(arguments));
        Ok(())
    }

    /// The tool and the arguments as a value (parsed from the call's text, once, if they
    /// were not yet).
    pub(super) fn with_value(&mut self, call: &ToolCall) -> (&RegisteredTool, &Value) {
        let capacity = self.tool.argument_capacity();
        let args = self.args.get_or_insert_with(|| Box::new(parse_checked(&call.arguments, capacity)));
        (&self.tool, args)
    }

    /// The arguments as a value for someone to keep (the post hooks): moved out when the
    /// handler can decode them from the call's text instead (so they are not copied),
    /// copied otherwise.
    pub(super) fn value_to_keep(&mut self, call: &ToolCall) -> Box<Value> {
        if self.from_text && !self.edited && !self.rewritten {
            let capacity = self.tool.argument_capacity();
            self.args.take().unwrap_or_else(|| Box::new(parse_checked(&call.arguments, capacity)))
        } else {
            Box::new(self.with_value(call).1.clone())
        }
    }
}

/// Argument text the flat schema accepted, as a value (its map made room for `capacity`
/// keys at once): an object, which parses (the check read it with the same parser), so
/// the empty object is never reached.
pub(super) fn parse_checked(text: &str, capacity: usize) -> Value {
    parse_object(text, capacity).unwrap_or_else(|_| Value::Object(serde_json::Map::new()))
}

/// What the result of a call a person edited starts with.
pub(crate) fn edited_note(arguments: &Value) -> String {
    format!("[The user changed this call's arguments before it ran; it ran with {arguments}]\n")
}

pub(super) enum Prepared {
    /// Answered without running: refused by a check (with why, for the span), or given
    /// a result by [`PlannedBatch::settle`]; with the tool the call resolved to, if any.
    Done(ToolResult, Option<ErrorType>, Option<Arc<str>>),
    Ready(ReadyCall),
}

impl Prepared {
    /// The registered tool the call resolved to (whether or not it will run).
    pub(super) fn tool_name(&self) -> Option<&str> {
        match self {
            Prepared::Done(_, _, tool) => tool.as_deref(),
            Prepared::Ready(c) => Some(c.tool.name()),
        }
    }
}

/// Parses raw argument text: empty text and `null` count as `{}`; text nested more than
/// [`MAX_JSON_DEPTH`] levels deep is refused before it is parsed (whether or not it is
/// JSON: the advice to resend the complete object would not help); anything else that is
/// not a JSON object is refused with the parse error.
fn parse_arguments(tool: &str, raw: &str, capacity: usize) -> Result<Value, String> {
    let trimmed = raw.trim();
    if trimmed.is_empty() || trimmed == "null" {
        return Ok(Value::Object(Default::default()));
    }
    if text_too_deep(raw, MAX_JSON_DEPTH) {
        return Err(format!(
            "invalid arguments for {tool}: the arguments are nested too deeply (more than {MAX_JSON_DEPTH} levels of arrays and objects); the tool did not run. Send the call again with flatter arguments."
        ));
    }
    // An object, parsed into a map made big enough at once (the common case).
    if let Ok(object) = parse_object(raw, capacity) {
        return Ok(object);
    }
    // Anything else is parsed again as any JSON, for the error: the text as sent, so the
    // error's line and column point into it.
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(other) => Err(format!(
            "invalid arguments for {tool}: expected a JSON object, got {}; the tool did not run. Send the call again with the arguments as a JSON object.",
            kind_of(&other)
        )),
        Err(e) => {
            let cut_off = e.is_eof();
            Err(format!(
                "invalid arguments for {tool}: the arguments are not valid JSON ({e}){}; the tool did not run. Send the call again with the complete JSON object.",
                if cut_off { ", they look cut off" } else { "" }
            ))
        }
    }
}

/// `raw` as a JSON object whose map starts with room for `capacity` keys (as
/// `serde_json::from_str::<Value>`, which grows the map key by key); an error for
/// anything else, including trailing text.
fn parse_object(raw: &str, capacity: usize) -> serde_json::Result<Value> {
    struct Object(usize);
    impl<'de> serde::de::Visitor<'de> for Object {
        type Value = serde_json::Map<String, Value>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
            let mut map = serde_json::Map::with_capacity(self.0);
            // A repeated key keeps its last value, as `Value` does.
            while let Some((key, value)) = access.next_entry::<String, Value>()? {
                map.insert(key, value);
            }
            Ok(map)
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw);
    let map = serde::Deserializer::deserialize_map(&mut de, Object(capacity))?;
    de.end()?;
    Ok(Value::Object(map))
}

/// Resolves and checks one call. With `from_text`, a call whose text fits the tool's flat
/// schema is not parsed into a value (see [`ReadyCall::args`]).
pub(super) fn prepare(target: CallTarget, call: &ToolCall, from_text: bool) -> Prepared {
    let CallTarget { tool, policy, serial } = target;
    let tool = match tool {
        Ok(t) => t,
        Err(unknown) => {
            return Prepared::Done(
                ToolResult::error(&call.id, &call.name, unknown),
                Some(ErrorType::UnknownTool),
                None,
            );
        }
    };
    if from_text && tool.takes_text(&call.arguments) {
        return Prepared::Ready(ReadyCall {
            tool,
            args: None,
            policy,
            serial,
            edited: false,
            rewritten: false,
            from_text: true,
        });
    }
    let invalid = Some(ErrorType::InvalidArguments);
    let args = match parse_arguments(tool.name(), &call.arguments, tool.argument_capacity()) {
        Ok(a) => a,
        Err(msg) => {
            let result = ToolResult::error(&call.id, &**tool.name(), msg);
            return Prepared::Done(result, invalid, Some(tool.name().clone()));
        }
    };
    if let Some(msg) = tool.check(&args) {
        let result = ToolResult::error(&call.id, &**tool.name(), msg);
        return Prepared::Done(result, invalid, Some(tool.name().clone()));
    }
    Prepared::Ready(ReadyCall {
        tool,
        args: Some(Box::new(args)),
        policy,
        serial,
        edited: false,
        rewritten: false,
        from_text: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_null_arguments_are_an_empty_object() {
        for raw in ["", "  ", "null", " null "] {
            assert_eq!(parse_arguments("t", raw, 0).unwrap(), serde_json::json!({}));
        }
    }

    #[test]
    fn cut_off_arguments_carry_the_parse_error() {
        let err =
            parse_arguments("write_file", r#"{"path": "a.txt", "content": "line one\nli"#, 2).unwrap_err();
        assert!(err.starts_with("invalid arguments for write_file: the arguments are not valid JSON (EOF while parsing a string"), "{err}");
        assert!(err.contains("cut off"), "{err}");
    }

    #[test]
    fn non_objects_are_refused() {
        let err = parse_arguments("t", "[1,2]", 0).unwrap_err();
        assert!(err.contains("expected a JSON object, got an array"), "{err}");
        assert!(parse_arguments("t", "\"{}\"", 0).unwrap_err().contains("got a string"));
    }
}
