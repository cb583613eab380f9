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

use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::stream::{self, BoxStream, StreamExt};

use super::{OpenAiDecoder, OpenAiModel, PROVIDER};
use crate::model::http::{self, Failure};
use crate::model::{FinishReason, ModelError, ModelEvent, ModelRequest, ModelResponse, ToolChoice, Usage};

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
}

impl Learned {
    pub(super) fn empty_stream(&self, tools: bool) -> &AtomicBool {
        if tools { &self.empty_stream_with_tools } else { &self.empty_stream_without_tools }
    }
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
    /// shown twice; an answer that says nothing has no item before its end.
    pub(super) async fn negotiate(
        &self,
        request: &ModelRequest,
        streaming: bool,
    ) -> BoxStream<'static, Result<ModelEvent, ModelError>> {
        let tools = !request.tools.is_empty();
        let mut choice = match self.choice_for(request) {
            Ok(choice) => choice,
            Err(e) => return stream::once(async move { Err(e) }).boxed(),
        };
        let mut streaming = streaming && !self.learned.empty_stream(tools).load(Ordering::Relaxed);
        // The tokens of answers that were asked again, counted into the one kept.
        let mut spent = Usage::default();
        loop {
            let body = self.body(request, &choice, streaming);
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
