//! What the servers that are not OpenAI's own take, and the detours around what they do
//! not: which host a base URL is ([`Host`]), what a server was found to refuse
//! ([`Learned`], kept for the model's life), and the sending of one request through those
//! findings ([`OpenAiModel::negotiate`]). The wire format itself is the parent's.
//!
//! The detours, each taken only on what the server answered (never on which server it
//! seems to be): an empty stream after a 200 is asked again without streaming; a refused
//! `"required"` is asked again with the one tool named; and an answer to `"auto"` with
//! neither text nor tool calls is asked again with `"none"`, which asks for the text.
//! The last is what llama-cpp-python's `chatml-function-calling` needs: under `auto` its
//! model first picks between `functions.NAME:` and `message:`, and the text after
//! `message:` is sampled under the grammar meant for the next call's name (`functions.NAME:`
//! or `<|im_end|>`, its stop string), so its answer is empty or a call's name, never text.
//!
//! One finding changes the conversation itself: a server that names its tool calls as
//! llama-cpp-python's function-calling handlers do ([`llama_cpp_python_call_id`]) renders
//! its prompt with a template that has no branch for the `tool` role, so a `tool` message
//! reaches its model as an empty `<|im_start|>tool` block. From the first such answer on,
//! each turn's tool results go as one `user` message ([`results_as_user`]), the one role
//! that template renders with its content.

use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::{Value, json};

use super::{OpenAiDecoder, OpenAiModel, PROVIDER, request};
use crate::model::http::{self, Failure};
use crate::model::media::{self, Blobs};
use crate::model::{
    FinishReason, Message, ModelError, ModelEvent, ModelRequest, ModelResponse, ToolChoice, Usage,
};

/// Whose API a base URL points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Host {
    /// OpenAI's own (`api.openai.com`): bodies exactly as its API documents them.
    OpenAi,
    /// Any other server that speaks the API (vLLM, llama.cpp, llama-cpp-python, Ollama,
    /// gateways, ...).
    Compatible,
}

impl Host {
    pub(super) fn of(base_url: &str) -> Self {
        let host = reqwest::Url::parse(base_url).ok().and_then(|u| u.host_str().map(str::to_ascii_lowercase));
        if host.as_deref() == Some("api.openai.com") { Self::OpenAi } else { Self::Compatible }
    }
}

/// What a compatible server was found not to take, kept so that the detour is taken
/// once, not on every request.
#[derive(Debug, Default)]
pub(super) struct Learned {
    /// It refused a request whose `tool_choice` was `"required"`.
    required_refused: AtomicBool,
    /// A streamed request with tools came back as an empty stream.
    empty_stream_with_tools: AtomicBool,
    /// A streamed request without tools came back as an empty stream.
    empty_stream_without_tools: AtomicBool,
    /// An answer to `"auto"` had neither text nor tool calls (said once; every such
    /// answer is asked again, as `"auto"` may call a tool next time).
    auto_answered_nothing: AtomicBool,
    /// It named a tool call as llama-cpp-python's function-calling handlers do, whose
    /// template leaves `tool` messages out of the prompt.
    tool_messages_left_out: AtomicBool,
}

impl Learned {
    pub(super) fn empty_stream(&self, tools: bool) -> &AtomicBool {
        if tools { &self.empty_stream_with_tools } else { &self.empty_stream_without_tools }
    }

    /// How tool results are to go to this server.
    pub(super) fn tool_results(&self) -> ToolResults {
        if self.tool_messages_left_out.load(Ordering::Relaxed) {
            ToolResults::AsUserText
        } else {
            ToolResults::AsToolMessages
        }
    }
}

/// How the results of a turn's tool calls go on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ToolResults {
    /// One `tool` message per result, as the API documents (every server, unless found
    /// otherwise).
    AsToolMessages,
    /// The results of one turn together in one `user` message ([`results_as_user`]).
    AsUserText,
}

/// Whether `id` is the id llama-cpp-python gives a call to `name` in its function-calling
/// handlers (`chatml-function-calling`, and a named tool choice under the other chat
/// formats; `llama_chat_format.py`): `"call_" + f"_{i}_" + name + "_" + completion_id`,
/// where the completion id is `f"cmpl-{uuid.uuid4()}"`. So `call__0_read_file_cmpl-`
/// followed by a UUID in its 36-character form, and nothing else: an index that is not
/// digits, another name, or anything beside the UUID is some other server's id. The
/// templates of those handlers have no branch for the `tool` role.
pub(super) fn llama_cpp_python_call_id(id: &str, name: &str) -> bool {
    /// More digits than any answer has calls: not an index.
    const MAX_INDEX_DIGITS: usize = 6;
    let Some(rest) = id.strip_prefix("call__") else { return false };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if name.is_empty() || !(1..=MAX_INDEX_DIGITS).contains(&digits) {
        return false;
    }
    // ASCII digits: `digits` is a character boundary.
    rest[digits..]
        .strip_prefix('_')
        .and_then(|rest| rest.strip_prefix(name))
        .and_then(|rest| rest.strip_prefix("_cmpl-"))
        .is_some_and(is_uuid)
}

/// Whether `text` is a UUID as Python's `str(uuid)` writes it: 8-4-4-4-12 hex digits.
fn is_uuid(text: &str) -> bool {
    text.len() == 36
        && text.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// The `tool` messages of one turn (`results`) as the one `user` message that stands in
/// for them: each result under a line naming its tool and call, `[read_file result, call
/// ID]` (`error` for a failed call), the results a blank line apart. Anything in
/// `results` that is not a tool result is not there: the caller passes a run of them.
///
/// When a result has media, the message is an array of content parts instead: each
/// result's text under its line, then its media as the parent's `content_part` writes
/// them.
pub(super) fn results_as_user(results: &[Message], host: Host, blobs: &mut Blobs) -> Value {
    let text = |call_id: &str, name: &str, content: &str, is_error: bool| {
        format!("{}\n{content}", media::result_header(name, call_id, is_error))
    };
    if results.iter().all(|m| m.parts().is_empty()) {
        let parts: Vec<String> = results
            .iter()
            .filter_map(|m| match m {
                Message::Tool { call_id, name, content, is_error, .. } => {
                    Some(text(call_id, name, content, *is_error))
                }
                _ => None,
            })
            .collect();
        return json!({"role": "user", "content": parts.join("\n\n")});
    }
    let mut items = Vec::new();
    for message in results {
        if let Message::Tool { call_id, name, content, is_error, parts } = message {
            items.push(request::text_part(&text(call_id, name, content, *is_error)));
            items.extend(parts.iter().map(|part| request::content_part(part, host, blobs)));
        }
    }
    json!({"role": "user", "content": items})
}

/// Whether `error` is a server refusing `"required"`: a request that asked for it (with
/// tools: nothing else in the body is unusual) answered 400, 422 or 500.
fn refuses_required(error: &Failure, choice: &ToolChoice) -> bool {
    matches!(error, Failure::Model(ModelError::Http { status: 400 | 422 | 500, .. }))
        && *choice == ToolChoice::Required
}

/// Whether `response` is no answer at all: it stopped normally with neither text nor
/// tool calls. (Cut off or filtered answers say why they are empty.)
fn says_nothing(response: &ModelResponse) -> bool {
    response.content.is_empty()
        && response.tool_calls.is_empty()
        && response.finish_reason == FinishReason::Stop
}

impl OpenAiModel {
    /// The tool to name in place of a refused `"required"`: the request's only tool, else
    /// the [`required_fallback`](Self::required_fallback) when the request offers it.
    fn stand_in<'r>(&'r self, request: &'r ModelRequest) -> Option<&'r str> {
        match request.tools.as_slice() {
            [only] => Some(&only.name),
            tools => self.required_fallback.as_deref().filter(|f| tools.iter().any(|t| t.name == *f)),
        }
    }

    /// Says a finding about the server once: to `tracing`, and to [`on_warning`](Self::on_warning).
    fn warn(&self, line: &str) {
        tracing::warn!(model = %self.model, base_url = %self.base_url, "{line}");
        if let Some(notice) = &self.on_warning {
            notice(line);
        }
    }

    /// Learns from the calls of an answer whether this server leaves `tool` messages out of
    /// its prompt (see [`llama_cpp_python_call_id`]); says so the first time.
    fn learn_from_calls(&self, response: &ModelResponse) {
        let named_so = response.tool_calls.iter().any(|c| llama_cpp_python_call_id(&c.id, &c.name));
        if named_so && !self.learned.tool_messages_left_out.swap(true, Ordering::Relaxed) {
            self.warn(&format!(
                "the server at {} names its tool calls as llama-cpp-python's function-calling chat formats do (call__N_NAME_cmpl-UUID), whose prompt template leaves tool results out; sending each turn's tool results as one user message from now on (llama.cpp's llama-server --jinja takes tool messages as they are)",
                self.base_url
            ));
        }
    }

    /// The error for a `"required"` the server does not take when no single tool can
    /// stand in for it. `refusal` is the server's answer, when this request got it.
    fn required_unsupported(&self, request: &ModelRequest, refusal: Option<&ModelError>) -> ModelError {
        let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        let answered = match refusal {
            Some(ModelError::Http { status, message }) => format!(" (it answered HTTP {status}: {message})"),
            _ => " (it refused it earlier in this run)".to_owned(),
        };
        ModelError::Protocol(format!(
            "the server at {} does not support tool_choice \"required\"{answered}, and with {} tools offered ({}) there is no single one to name in its place: force one with --tool-choice NAME (ToolChoice::Tool), or let the model choose (auto)",
            self.base_url,
            names.len(),
            names.join(", ")
        ))
    }

    /// The tool choice to send, after what the server was found not to take.
    fn choice_for(&self, request: &ModelRequest) -> Result<ToolChoice, ModelError> {
        if request.tool_choice == ToolChoice::Required
            && !request.tools.is_empty()
            && self.learned.required_refused.load(Ordering::Relaxed)
        {
            return match self.stand_in(request) {
                Some(name) => Ok(ToolChoice::Tool(name.to_owned())),
                None => Err(self.required_unsupported(request, None)),
            };
        }
        Ok(request.tool_choice.clone())
    }

    /// A request to a server other than OpenAI: sent as the server is known to take it,
    /// then, if it is refused in a way the server was not yet known for, once more as it
    /// will take it (at most three sends: a stream, without streaming, then with the
    /// tool named or with `"none"`). Only the first answer item decides, so nothing is
    /// shown twice; an answer that says nothing has no item before its end. The calls of
    /// the answer kept are learned from for the requests after it.
    pub(super) async fn negotiate(
        &self,
        request: &ModelRequest,
        streaming: bool,
    ) -> BoxStream<'_, Result<ModelEvent, ModelError>> {
        let tools = !request.tools.is_empty();
        let mut choice = match self.choice_for(request) {
            Ok(choice) => choice,
            Err(e) => return stream::once(async move { Err(e) }).boxed(),
        };
        let mut streaming = streaming && !self.learned.empty_stream(tools).load(Ordering::Relaxed);
        // The tokens of answers that were asked again, counted into the one kept.
        let mut spent = Usage::default();
        loop {
            let body = self.body(request, &choice, streaming, self.learned.tool_results());
            let mut answer =
                http::drive_events(self.http_request(&body), PROVIDER, OpenAiDecoder::default(), streaming);
            let first = answer.next().await;
            match first {
                Some(Err(Failure::EmptyStream)) if streaming => {
                    streaming = false;
                    if !self.learned.empty_stream(tools).swap(true, Ordering::Relaxed) {
                        let with = if tools { "with tools" } else { "without tools" };
                        self.warn(&format!(
                            "the server at {} answered a streamed request {with} with an empty stream (HTTP 200, no events); asking again without streaming, and sending such requests unstreamed from now on",
                            self.base_url
                        ));
                    }
                }
                Some(Err(refusal)) if tools && refuses_required(&refusal, &choice) => {
                    let refusal = refusal.into_model_error();
                    let first_time = !self.learned.required_refused.swap(true, Ordering::Relaxed);
                    let Some(name) = self.stand_in(request) else {
                        let e = self.required_unsupported(request, Some(&refusal));
                        return stream::once(async move { Err(e) }).boxed();
                    };
                    if first_time {
                        self.warn(&format!(
                            "the server at {} does not support tool_choice \"required\" ({refusal}); naming the tool {name} in its place from now on",
                            self.base_url
                        ));
                    }
                    choice = ToolChoice::Tool(name.to_owned());
                }
                Some(Ok(ModelEvent::Done(nothing)))
                    if tools && choice == ToolChoice::Auto && says_nothing(&nothing) =>
                {
                    if !self.learned.auto_answered_nothing.swap(true, Ordering::Relaxed) {
                        self.warn(&format!(
                            "the server at {} answered a request with tool_choice \"auto\" with neither text nor tool calls; asking again with tool_choice \"none\" for the text, each time it does",
                            self.base_url
                        ));
                    }
                    spent += nothing.usage;
                    choice = ToolChoice::None;
                }
                first => {
                    return stream::iter(first)
                        .chain(answer)
                        .map(move |item| match item {
                            Ok(ModelEvent::Done(mut response)) => {
                                self.learn_from_calls(&response);
                                response.usage += spent;
                                Ok(ModelEvent::Done(response))
                            }
                            other => other.map_err(Failure::into_model_error),
                        })
                        .boxed();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harnessx_core::Parts;

    const UUID: &str = "0f8e2a4c-93b1-4d7e-a5c6-1b2d3e4f5a6b";

    #[test]
    fn llama_cpp_python_call_ids_are_known_by_their_whole_shape() {
        let id = |index: &str, name: &str, uuid: &str| format!("call__{index}_{name}_cmpl-{uuid}");
        for (index, name) in
            [("0", "read_file"), ("12", "read_file"), ("3", "x"), ("0", "a_b_c"), ("0", "näme")]
        {
            assert!(llama_cpp_python_call_id(&id(index, name, UUID), name), "{index} {name}");
        }
        assert!(llama_cpp_python_call_id(&id("0", "f", &UUID.to_ascii_uppercase()), "f"));
        let near = [
            // Not an index, no index, too long an index.
            ("call__x_read_file_cmpl-".to_owned() + UUID, "read_file"),
            ("call___read_file_cmpl-".to_owned() + UUID, "read_file"),
            (id("1234567", "read_file", UUID), "read_file"),
            // Another call's name, a longer or shorter one, none.
            (id("0", "read_file", UUID), "write_file"),
            (id("0", "read_file", UUID), "read"),
            (id("0", "read", UUID), "read_file"),
            (id("0", "", UUID), ""),
            // Nothing, or something else, after `cmpl-`.
            ("call__0_read_file_cmpl-".to_owned(), "read_file"),
            (id("0", "read_file", "1"), "read_file"),
            (id("0", "read_file", &format!("{UUID}0")), "read_file"),
            (id("0", "read_file", &UUID.replace('-', "_")), "read_file"),
            (id("0", "read_file", &UUID.replace('a', "g")), "read_file"),
            (id("0", "read_file", &UUID.replacen('0', "é", 1)), "read_file"),
            // Other servers' ids, and llama-cpp-python's other handlers'.
            ("call_abc".to_owned(), "read_file"),
            ("call_0_read_file_cmpl-".to_owned() + UUID, "read_file"),
            ("Xq3mGJ0rHhmCdTa2cB3Xo0LN0ZYBg6fL".to_owned(), "read_file"),
            ("chatcmpl-tool-4f1c0c3e9b2a4d5e8f6a7b8c9d0e1f2a".to_owned(), "read_file"),
            (String::new(), ""),
            ("call__".to_owned(), "read_file"),
            ("call__0".to_owned(), "read_file"),
            // Huge: a name that matches, then a megabyte; a megabyte of digits.
            (id("0", "read_file", &"a".repeat(1 << 20)), "read_file"),
            (id(&"9".repeat(1 << 20), "read_file", UUID), "read_file"),
        ];
        for (id, name) in near {
            assert!(!llama_cpp_python_call_id(&id, name), "{} {name}", http::truncate(&id, 80));
        }
    }

    #[test]
    fn one_turns_results_are_one_user_message_each_under_its_header() {
        let result = |id: &str, content: &str, is_error: bool| Message::Tool {
            call_id: id.into(),
            name: "read_file".into(),
            content: content.into(),
            is_error,
            parts: Parts::new(),
        };
        let results_as_user =
            |results: &[Message]| results_as_user(results, Host::Compatible, &mut Blobs::new());
        assert_eq!(
            results_as_user(&[result("c1", "plum\n", false), result("c2", "no such file", true)]),
            json!({"role": "user", "content": "[read_file result, call c1]\nplum\n\n\n[read_file error, call c2]\nno such file"})
        );
        assert_eq!(
            results_as_user(&[result("c1", "", false)]),
            json!({"role": "user", "content": "[read_file result, call c1]\n"})
        );
    }

    // A result with media makes the stand-in message an array: each result's text under
    // its line, then its media, in order.
    #[test]
    fn results_with_media_are_content_parts_each_after_its_text() {
        let shot = Message::Tool {
            call_id: "c1".into(),
            name: "screenshot".into(),
            content: "a chart".into(),
            is_error: false,
            parts: vec![harnessx_core::Part::image_url("image/png", "https://e/a.png")].into(),
        };
        let plain = Message::Tool {
            call_id: "c2".into(),
            name: "read_file".into(),
            content: "plum".into(),
            is_error: false,
            parts: Parts::new(),
        };
        assert_eq!(
            results_as_user(&[shot, plain], Host::Compatible, &mut Blobs::new()),
            json!({"role": "user", "content": [
                {"type": "text", "text": "[screenshot result, call c1]\na chart"},
                {"type": "image_url", "image_url": {"url": "https://e/a.png"}},
                {"type": "text", "text": "[read_file result, call c2]\nplum"}
            ]})
        );
    }
}
