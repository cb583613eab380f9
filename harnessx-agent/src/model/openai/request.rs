//! The request sent: the JSON body of a Chat Completions call (messages, tools, tool
//! choice, answer format, token limit), in the forms OpenAI and other servers take.

use serde_json::{Map, Value, json};

use super::compatible::{self, Host, ToolResults};
use super::{OpenAiModel, strict_schema};
use crate::model::http;
use crate::model::{Message, ModelRequest, ToolChoice};
use harnessx_core::ToolSpec;

impl OpenAiModel {
    /// The JSON body sent for `request`, streamed or not (before any detour the server
    /// was found to need: tool results are `tool` messages here).
    pub fn request_body(&self, request: &ModelRequest, stream: bool) -> Value {
        self.body(request, &request.tool_choice, stream, ToolResults::AsToolMessages)
    }

    pub(super) fn body(
        &self,
        request: &ModelRequest,
        tool_choice: &ToolChoice,
        stream: bool,
        results: ToolResults,
    ) -> Value {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.extend(wire_messages(&request.messages, self.host, results));
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            body.insert("tools".into(), request.tools.iter().map(|t| self.wire_tool(t)).collect());
            // Only with tools: OpenAI refuses `tool_choice` without them.
            if let Some(choice) = wire_tool_choice(tool_choice, self.host) {
                body.insert("tool_choice".into(), choice);
            }
            if let Some(parallel) = request.parallel_tool_calls {
                body.insert("parallel_tool_calls".into(), json!(parallel));
            }
        }
        if let Some(format) = request.output.as_ref().filter(|f| f.native) {
            // Structured outputs: the strict dialect, as strict tools get it.
            let json_schema =
                json!({"name": format.name, "schema": strict_schema(&format.schema), "strict": true});
            body.insert("response_format".into(), json!({"type": "json_schema", "json_schema": json_schema}));
        }
        if let Some(max) = request.max_tokens {
            // OpenAI's reasoning models refuse `max_tokens`; other servers know only it.
            let field = if self.is_openai() { "max_completion_tokens" } else { "max_tokens" };
            body.insert(field.into(), json!(max));
        }
        if let Some(effort) = request.reasoning.and_then(|r| r.effort_or_from_budget()) {
            // Only when asked: a body without it is what it always was.
            body.insert("reasoning_effort".into(), json!(effort.as_str()));
        }
        if self.is_openai()
            && let Some(key) = self.prompt_cache_key.as_ref().or(request.prompt_cache_key.as_ref())
        {
            body.insert("prompt_cache_key".into(), json!(key));
        }
        if stream {
            body.insert("stream".into(), json!(true));
            if self.stream_usage {
                body.insert("stream_options".into(), json!({"include_usage": true}));
            }
        }
        Value::Object(body)
    }

    fn wire_tool(&self, tool: &ToolSpec) -> Value {
        let mut function = Map::new();
        function.insert("name".into(), json!(tool.name));
        function.insert("description".into(), json!(tool.description));
        if self.strict {
            function.insert("parameters".into(), strict_schema(&tool.input_schema));
            function.insert("strict".into(), json!(true));
        } else {
            function.insert("parameters".into(), tool.input_schema.clone());
        }
        json!({"type": "function", "function": function})
    }
}

/// `tool_choice` on the wire. `Auto` is OpenAI's default with tools, so OpenAI gets
/// nothing for it (its requests stay as they were); other servers get `"auto"` spelled
/// out: llama-cpp-python takes a missing `tool_choice` as `none` and leaves the tools out
/// of the prompt, and for vLLM and llama-server the two are the same.
fn wire_tool_choice(choice: &ToolChoice, host: Host) -> Option<Value> {
    Some(match choice {
        ToolChoice::Auto if host == Host::OpenAi => return None,
        ToolChoice::Auto => json!("auto"),
        ToolChoice::Required => json!("required"),
        ToolChoice::None => json!("none"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
    })
}

/// The conversation in the Chat Completions format: each message as [`wire_message`]
/// writes it, except that with [`ToolResults::AsUserText`] each run of tool results (one
/// turn's) becomes one `user` message.
fn wire_messages(messages: &[Message], host: Host, results: ToolResults) -> Vec<Value> {
    let is_result = |m: &Message| matches!(m, Message::Tool { .. });
    let mut wire = Vec::with_capacity(messages.len());
    for turn in messages.chunk_by(|a, b| is_result(a) && is_result(b)) {
        match turn {
            [first, ..] if results == ToolResults::AsUserText && is_result(first) => {
                wire.push(compatible::results_as_user(turn));
            }
            _ => wire.extend(turn.iter().map(|m| wire_message(m, host))),
        }
    }
    wire
}

/// A message in the Chat Completions format. Arguments that are not a JSON object
/// (garbled or cut off) are sent as `{}`, so the server accepts the conversation. An
/// assistant message with tool calls and no text has `"content": null` for OpenAI (as
/// always) and `""` for other servers: llama-cpp-python refuses `null` and a missing
/// `content`, llama-server a missing one, and all of them take `""`.
fn wire_message(message: &Message, host: Host) -> Value {
    match message {
        // Media parts (`Message::parts`) are not sent yet: mapping them into this provider's
        // shape is the next step of issue 43. Until then a request carries the text only.
        Message::User { content, .. } => json!({"role": "user", "content": content}),
        Message::Assistant { content, tool_calls, .. } if tool_calls.is_empty() => {
            json!({"role": "assistant", "content": content})
        }
        Message::Assistant { content, tool_calls, .. } => {
            let calls: Vec<Value> = tool_calls
                .iter()
                .map(|call| {
                    let arguments = match http::arguments_object(&call.arguments) {
                        Some(_) => call.arguments.clone(),
                        None => "{}".to_owned(),
                    };
                    json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}})
                })
                .collect();
            let content = match host {
                Host::OpenAi if content.is_empty() => Value::Null,
                _ => json!(content),
            };
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
        Message::Tool { call_id, content, .. } => {
            json!({"role": "tool", "tool_call_id": call_id, "content": content})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harnessx_core::ToolCall;

    #[test]
    fn auto_and_empty_content_are_spelled_out_for_servers_other_than_openai() {
        assert_eq!(wire_tool_choice(&ToolChoice::Auto, Host::OpenAi), None);
        assert_eq!(wire_tool_choice(&ToolChoice::Auto, Host::Compatible), Some(json!("auto")));
        let call = Message::assistant("", vec![ToolCall::new("c", "f", "[1]")]);
        assert_eq!(wire_message(&call, Host::OpenAi)["content"], Value::Null);
        assert_eq!(wire_message(&call, Host::Compatible)["content"], json!(""));
        assert_eq!(wire_message(&call, Host::OpenAi)["tool_calls"][0]["function"]["arguments"], "{}");
    }
}
