//! [`TestModel`]: calls every tool with arguments generated from its schema, then
//! answers with a summary of the results. No network, no key: the CLI's default model.

use serde_json::{Map, Value};

use futures_util::stream::{self, BoxStream, StreamExt};

use crate::model::{
    Message, Model, ModelError, ModelEvent, ModelRequest, ModelResponse, ToolChoice, response_to_events,
};
use harnessx_core::ToolCall;

mod explore;

/// A deterministic model for tests and first runs.
///
/// First turn (no tool result since the last user message): it calls each offered tool
/// once (or those named with [`call_tools`](Self::call_tools)), with arguments generated
/// from the tool's schema: required properties only, the first `enum`/`const`/`default`
/// value where the schema gives one, otherwise `"a"`, `0`, `false`, `[]`, `{}`. Next turn:
/// it answers with one line per result. With no tools to call it answers with
/// [`final_text`](Self::final_text), by default `"success (no tool calls)"`.
///
/// A typed run's answer (`docs/output.md`) is a value made from its schema the same way:
/// in mode `tool` it calls `final_result` like any other tool, in modes `native` and
/// `prompted` its answer is the value as JSON (in a ```` ```json ```` fence for
/// `prompted`).
///
/// It follows the request's [`tool_choice`](ModelRequest::tool_choice): under
/// [`ToolChoice::None`] it calls nothing, under [`ToolChoice::Tool`] only that tool
/// (whatever [`call_tools`](Self::call_tools) says); `Auto` and `Required` change
/// nothing, since it always calls on a first turn.
///
/// [`exploring`](Self::exploring) makes another one: the `harnessx` command's default
/// model, which explores a folder the way a person would.
#[derive(Debug, Clone, Default)]
pub struct TestModel {
    call_tools: Option<Vec<String>>,
    final_text: Option<String>,
    exploring: bool,
    /// The text the exploring model gives where a schema asks for a string.
    scratch: Option<String>,
}

impl TestModel {
    /// Calls every offered tool.
    pub fn new() -> Self {
        Self::default()
    }

    /// The test model of the `harnessx` command: given the filesystem tools and a prompt
    /// such as `What is in this folder?`, it lists the folder (`list_directory` on `.`),
    /// globs and greps for the words of the prompt (`**/*WORD*`; `WORD|WORD`, ignoring
    /// case, files only), then reads the file the listing found (a README first). Any
    /// other tool it is given (but the agent's planning tools) it calls once, as
    /// [`new`](Self::new) does. Its answer shows the first lines of each result (`Ran N
    /// tool calls:` and one `- NAME: FIRST LINE` each, as `new` answers), names the prompt
    /// before this one when the conversation has several, and ends by saying plainly that
    /// it is the offline test model.
    ///
    /// Like [`new`](Self::new) it follows the request's tool choice, and decides from the
    /// messages since the last user message alone, so a replay gives the same calls.
    pub fn exploring() -> Self {
        Self { exploring: true, ..Self::default() }
    }

    /// The text the [`exploring`](Self::exploring) model gives where a tool's schema asks
    /// for a string (default `a`): a name that nothing has where it works, so the tools
    /// it calls the generic way (a write, an edit, a delete) touch only what it makes
    /// itself. Its answer names it. The `harnessx` command picks one nothing in the
    /// folder has when the run starts (`a`, else `a-2`, `a-3`, ...).
    pub fn scratch_name(mut self, name: impl Into<String>) -> Self {
        self.scratch = Some(name.into());
        self
    }

    /// Calls only these tools (those that are offered), in this order.
    pub fn call_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.call_tools = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// The answer when there is nothing to call.
    pub fn final_text(mut self, text: impl Into<String>) -> Self {
        self.final_text = Some(text.into());
        self
    }

    fn respond(&self, request: &ModelRequest) -> ModelResponse {
        let response = self.respond_text(request);
        // A typed run's answer (modes `native` and `prompted`): a value of the schema, in
        // a fence when the prompt asked for it.
        match &request.output {
            Some(format) if response.tool_calls.is_empty() => {
                let value = example_value(&format.schema);
                ModelResponse::text(if format.native {
                    value.to_string()
                } else {
                    format!("```json\n{value}\n```")
                })
            }
            _ => response,
        }
    }

    fn respond_text(&self, request: &ModelRequest) -> ModelResponse {
        if self.exploring {
            return explore::respond(request, self.scratch.as_deref());
        }
        let since_user: Vec<&Message> =
            request.messages.iter().rev().take_while(|m| !matches!(m, Message::User { .. })).collect();
        let results: Vec<&Message> =
            since_user.iter().rev().copied().filter(|m| matches!(m, Message::Tool { .. })).collect();
        if !results.is_empty() {
            let mut text =
                format!("Ran {} tool call{}:", results.len(), if results.len() == 1 { "" } else { "s" });
            for m in results {
                if let Message::Tool { name, content, is_error, .. } = m {
                    let first = content.lines().next().unwrap_or("");
                    let short: String = first.chars().take(160).collect();
                    let more = if short.len() < content.trim_end().len() { " …" } else { "" };
                    text.push_str(&format!(
                        "\n- {name}{}: {short}{more}",
                        if *is_error { " (error)" } else { "" }
                    ));
                }
            }
            return ModelResponse::text(text);
        }
        let tools: Vec<_> = match (&request.tool_choice, &self.call_tools) {
            (ToolChoice::None, _) => Vec::new(),
            (ToolChoice::Tool(name), _) => request.tools.iter().filter(|t| &t.name == name).collect(),
            (_, None) => request.tools.iter().collect(),
            (_, Some(names)) => {
                names.iter().filter_map(|n| request.tools.iter().find(|t| &t.name == n)).collect()
            }
        };
        if tools.is_empty() {
            return ModelResponse::text(
                self.final_text.clone().unwrap_or_else(|| "success (no tool calls)".into()),
            );
        }
        let turn = request.messages.iter().filter(|m| matches!(m, Message::Assistant { .. })).count();
        let calls = tools
            .iter()
            .enumerate()
            .map(|(i, t)| {
                ToolCall::new(format!("test_{turn}_{i}"), &t.name, example_value(&t.input_schema).to_string())
            })
            .collect();
        ModelResponse::tool_calls(calls)
    }
}

/// The text of a string [`example_value`] makes.
pub(crate) const PLACEHOLDER: &str = "a";

/// A value that satisfies simple schemas: required properties only, first enum/const/
/// default, minimal lengths and bounds.
pub fn example_value(schema: &Value) -> Value {
    example_with(schema, PLACEHOLDER)
}

/// [`example_value`] with `text` for strings (made as long as a `minLength` asks, with
/// `a`s).
pub(crate) fn example_with(schema: &Value, text: &str) -> Value {
    let example_value = |schema: &Value| example_with(schema, text);
    let Some(obj) = schema.as_object() else { return Value::Null };
    if let Some(v) = obj.get("const") {
        return v.clone();
    }
    if let Some(v) = obj.get("default") {
        return v.clone();
    }
    if let Some(Value::Array(choices)) = obj.get("enum")
        && let Some(first) = choices.first()
    {
        return first.clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(options)) = obj.get(key)
            && let Some(first) =
                options.iter().find(|o| o.get("type").and_then(Value::as_str) != Some("null"))
        {
            return example_value(first);
        }
    }
    let ty = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => {
            types.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("null")
        }
        _ if obj.contains_key("properties") => "object",
        _ => "string",
    };
    let num = |k: &str| obj.get(k).and_then(Value::as_f64);
    match ty {
        "object" => {
            let mut out = Map::new();
            let props = obj.get("properties").and_then(Value::as_object);
            for name in
                obj.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
            {
                let sub = props.and_then(|p| p.get(name)).cloned().unwrap_or(Value::Bool(true));
                out.insert(name.to_owned(), example_value(&sub));
            }
            Value::Object(out)
        }
        "array" => {
            let n = obj.get("minItems").and_then(Value::as_u64).unwrap_or(0).min(16) as usize;
            let item = obj.get("items").map(example_value).unwrap_or(Value::String("a".into()));
            Value::Array(vec![item; n])
        }
        "integer" => Value::from(num("minimum").map(|m| m.ceil() as i64).unwrap_or(0)),
        "number" => Value::from(num("minimum").unwrap_or(0.0)),
        "boolean" => Value::Bool(false),
        "null" => Value::Null,
        _ => {
            let n = obj.get("minLength").and_then(Value::as_u64).unwrap_or(1).clamp(1, 256) as usize;
            let mut value = text.to_owned();
            let short = n.saturating_sub(value.chars().count());
            value.extend(std::iter::repeat_n('a', short));
            Value::String(value)
        }
    }
}

impl Model for TestModel {
    fn name(&self) -> String {
        "test".into()
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        stream::iter(response_to_events(self.respond(request)).into_iter().map(Ok)).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn example_values_satisfy_their_schemas() {
        let schemas = [
            json!({"type":"object","properties":{"a":{"type":"integer","minimum":3},"b":{"type":"string","minLength":2},"c":{"type":"boolean"}},"required":["a","b"]}),
            json!({"type":"object","properties":{"s":{"enum":["x","y"]},"l":{"type":"array","items":{"type":"number"},"minItems":2},"n":{"type":["string","null"]}},"required":["s","l","n"]}),
            json!({"type":"object","properties":{"o":{"type":"object","properties":{"k":{"const":5}},"required":["k"]}},"required":["o"]}),
        ];
        for s in schemas {
            let v = example_value(&s);
            assert!(jsonschema::is_valid(&s, &v), "{v} for {s}");
        }
        assert_eq!(
            example_value(&json!({"type":"object","properties":{"opt":{"type":"string"}}})),
            json!({})
        );
    }
}
