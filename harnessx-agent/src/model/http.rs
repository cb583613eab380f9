//! What both provider adapters share: the HTTP client, status and error mapping, and the
//! loop that turns a response body into [`ModelEvent`]s.

use harnessx_core::MAX_JSON_DEPTH;
use harnessx_core::depth::text_too_deep;
use harnessx_core::error::error_chain;
use std::collections::VecDeque;
use std::time::Duration;

use futures_util::stream::{self, BoxStream, StreamExt};
use harnessx_infra::http_client::SharedClient;
use serde_json::Value;

use crate::model::sse::{SseEvent, SseParser};
use crate::model::{ModelError, ModelEvent, ModelResponse, response_to_events};

/// Who is being talked to, for error messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Provider {
    /// e.g. `OpenAI-compatible server`.
    pub(crate) name: &'static str,
    /// The environment variable the key comes from.
    pub(crate) key_env: &'static str,
}

/// The process-wide client (one connection pool for every model).
pub(crate) fn client() -> Result<reqwest::Client, ModelError> {
    static CLIENT: SharedClient = SharedClient::new(|builder| {
        builder
            .connect_timeout(Duration::from_secs(30))
            // Between two reads of a body; a non-streamed answer can take minutes.
            .read_timeout(Duration::from_secs(600))
    });
    CLIENT
        .get()
        .map_err(|e| ModelError::Transport(format!("could not set up the HTTP client: {}", error_chain(e))))
}

/// The error for a request that needs a key and has none.
pub(crate) fn missing_key(provider: Provider) -> ModelError {
    ModelError::Auth(format!(
        "no API key for the {}: set {} or pass one with `.api_key(...)`",
        provider.name, provider.key_env
    ))
}

fn transport(error: &reqwest::Error) -> ModelError {
    ModelError::Transport(error_chain(error))
}

/// Sends a request; a non-success status becomes the matching [`ModelError`].
pub(crate) async fn send(
    request: reqwest::RequestBuilder,
    provider: Provider,
) -> Result<reqwest::Response, ModelError> {
    let response = request.send().await.map_err(|e| transport(&e))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let body = error_body(response).await;
    Err(status_error(status.as_u16(), &body, provider))
}

/// The most of an error body that is read: an operator's error line is no place for
/// more, and a server that answers an error with an endless body must not take the
/// memory with it.
pub(crate) const MAX_ERROR_BODY: usize = 64 * 1024;

/// The body of an error answer as text (invalid UTF-8 replaced), read up to
/// [`MAX_ERROR_BODY`] bytes and marked when cut there. A body cut by the connection is
/// what arrived of it.
async fn error_body(mut response: reqwest::Response) -> String {
    let mut bytes = Vec::new();
    let mut cut = false;
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = MAX_ERROR_BODY - bytes.len();
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            cut = true;
            break;
        }
        bytes.extend_from_slice(&chunk);
    }
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if cut {
        text.push_str(&format!(" … (cut: only the first {MAX_ERROR_BODY} bytes were read)"));
    }
    text
}

/// The error for an HTTP error status and its body. 401/403 are [`ModelError::Auth`]
/// with a hint about the key; everything else is [`ModelError::Http`] (retryable for
/// 408, 429 and 5xx). The message is [`error_text`]: all the server said, on one line.
pub(crate) fn status_error(status: u16, body: &str, provider: Provider) -> ModelError {
    let message = error_text(body);
    if status == 401 || status == 403 || (status == 400 && google_key_refused(body)) {
        return auth_error(status, &message, provider);
    }
    if let Some(overflow) = crate::model::overflow::context_window_error(status, body, &message) {
        return overflow;
    }
    ModelError::Http { status, message }
}

/// Whether a Google API error says the key was refused: Gemini answers a bad key with
/// HTTP 400 `INVALID_ARGUMENT` and a `google.rpc.ErrorInfo` detail of reason
/// `API_KEY_INVALID`.
fn google_key_refused(body: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Body {
        error: Error,
    }
    #[derive(serde::Deserialize)]
    struct Error {
        #[serde(default)]
        details: Vec<Detail>,
    }
    #[derive(serde::Deserialize)]
    struct Detail {
        #[serde(default)]
        reason: Option<String>,
    }
    serde_json::from_str::<Body>(body)
        .is_ok_and(|b| b.error.details.iter().any(|d| d.reason.as_deref() == Some("API_KEY_INVALID")))
}

fn auth_error(status: u16, message: &str, provider: Provider) -> ModelError {
    ModelError::Auth(format!(
        "the {} refused the API key (HTTP {status}: {message}); check {} (or the key passed with `.api_key(...)`) and the base URL",
        provider.name, provider.key_env
    ))
}

/// An error body as one line for the operator, nothing of it cut: the provider's message
/// (with its code or type) when the body is one of the usual shapes and says nothing
/// more; the message followed by the whole body when the body says more (a `param`, a
/// `failed_generation`, a request id); the whole body when there is no message, or an
/// empty one, or the body is not JSON. Runs of whitespace (newlines included) become
/// one space.
pub(crate) fn error_text(body: &str) -> String {
    let whole = || one_line(body);
    let text = match serde_json::from_str::<Value>(body) {
        Ok(value) => match error_message(&value) {
            Some(message) if says_more(&value) => format!("{message} — {}", whole()),
            Some(message) => message,
            None => whole(),
        },
        Err(_) => whole(),
    };
    if text.is_empty() { "(empty body)".to_owned() } else { text }
}

/// `text` on one line: runs of whitespace become one space, ends trimmed.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The fields [`error_message`] shows (or that only restate the status).
const SHOWN: [&str; 5] = ["message", "type", "code", "object", "status_code"];

/// Whether an error body holds more than its message, code and type: any other field
/// with a value, beside the error or inside it.
fn says_more(body: &Value) -> bool {
    let more = |object: &serde_json::Map<String, Value>, skip: &str| {
        object.iter().any(|(k, v)| {
            let quiet = SHOWN.contains(&k.as_str())
                || k == skip
                || (k == "detail" && v.is_string())
                || v.is_null()
                || v.as_str() == Some("");
            !quiet
        })
    };
    let Some(object) = body.as_object() else { return false };
    match body.get("error") {
        Some(Value::Object(error)) => more(object, "error") || more(error, ""),
        Some(Value::String(_)) => more(object, "error"),
        _ => more(object, ""),
    }
}

/// The message of an error body in any of the shapes servers use: `{"error":
/// {"message"}}` (OpenAI, Anthropic, llama.cpp, llama-cpp-python, newer vLLM),
/// `{"error": "..."}`, `{"message"}` (older vLLM), `{"detail": "..."}` (FastAPI), with the
/// error's `code` or `type` after it. `None` when there is no message or it is empty.
fn error_message(body: &Value) -> Option<String> {
    let error = body.get("error").unwrap_or(body);
    let text = match error {
        Value::String(s) => s.clone(),
        Value::Object(o) => {
            let message = o.get("message").or_else(|| o.get("detail")).and_then(Value::as_str)?;
            let message = one_line(message);
            if message.is_empty() {
                return None;
            }
            let kind = ["code", "type"]
                .iter()
                .find_map(|k| o.get(*k).and_then(Value::as_str).filter(|s| !s.is_empty()));
            match kind {
                Some(kind) if !message.contains(kind) => format!("{message} ({kind})"),
                _ => message,
            }
        }
        _ => return None,
    };
    Some(one_line(&text)).filter(|t| !t.is_empty())
}

pub(crate) fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// An error reported inside a response (an SSE `error` event, or `{"error": ...}` in a
/// 200 body), mapped to the error its HTTP status or type would give.
pub(crate) fn body_error(body: &Value, provider: Provider) -> ModelError {
    let message = error_text(&body.to_string());
    let error = body.get("error").unwrap_or(body);
    let status = error.get("status_code").or_else(|| body.get("status_code")).and_then(Value::as_u64);
    let kind = error.get("type").and_then(Value::as_str).unwrap_or_default();
    let status = status.map(|s| s as u16).or(match kind {
        "authentication_error" => Some(401),
        "permission_error" => Some(403),
        "invalid_request_error" => Some(400),
        "not_found_error" => Some(404),
        "request_too_large" => Some(413),
        "rate_limit_error" | "rate_limit_exceeded" | "tokens" | "requests" => Some(429),
        "api_error" | "server_error" => Some(500),
        "overloaded_error" => Some(529),
        "timeout_error" => Some(504),
        _ => None,
    });
    match status {
        Some(s @ (401 | 403)) => auth_error(s, &message, provider),
        Some(status) => crate::model::overflow::context_window_error(status, &body.to_string(), &message)
            .unwrap_or(ModelError::Http { status, message }),
        None => {
            ModelError::Protocol(format!("the {} reported an error in its answer: {message}", provider.name))
        }
    }
}

/// Whether the body is an event stream (servers may answer a streaming request with
/// plain JSON).
fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"))
}

/// Reads a whole JSON body.
pub(crate) async fn json_body(response: reqwest::Response, provider: Provider) -> Result<Value, ModelError> {
    let bytes = response.bytes().await.map_err(|e| transport(&e))?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        ModelError::Protocol(format!(
            "the {} answered with something other than JSON ({e}): {}",
            provider.name,
            truncate(&String::from_utf8_lossy(&bytes), 200)
        ))
    })?;
    if value.get("error").is_some_and(|e| !e.is_null()) {
        return Err(body_error(&value, provider));
    }
    Ok(value)
}

/// Whether a decoder wants more events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Keep reading.
    More,
    /// The response is complete (`[DONE]`, `message_stop`).
    #[cfg_attr(
        not(any(feature = "openai", feature = "anthropic")),
        allow(dead_code, reason = "Gemini streams have no end marker; only the other adapters say it")
    )]
    Complete,
}

/// Turns one provider's stream events into [`ModelEvent`]s and a final response.
pub(crate) trait Decoder: Send + 'static {
    /// Handles one event, pushing what it yields onto `out`.
    fn event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<Step, ModelError>;

    /// The stream is over: the response. `complete` is false when the body ended before
    /// the provider's end marker.
    fn finish(self, complete: bool) -> Result<ModelResponse, ModelError>;

    /// The response of a non-streaming body.
    fn parse_full(&self, body: &Value) -> Result<ModelResponse, ModelError>;
}

/// Why a response could not be had: the error, or (only when the caller asked to hear
/// of it) an empty event stream.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The provider refused the request, or its answer could not be used.
    Model(ModelError),
    /// HTTP 200 with an event stream that ended before its first event: a server that
    /// failed after sending its headers (llama-cpp-python when it cannot stream a
    /// request). Nothing was received, so the request can be sent again.
    EmptyStream,
}

impl From<ModelError> for Failure {
    fn from(e: ModelError) -> Self {
        Self::Model(e)
    }
}

impl Failure {
    /// The error a caller that does not handle an empty stream sees for it: the one a
    /// stream cut before its end gives.
    pub(crate) fn into_model_error(self) -> ModelError {
        match self {
            Self::Model(e) => e,
            Self::EmptyStream => {
                ModelError::Transport("the response stream ended before the answer was complete".into())
            }
        }
    }
}

struct Drive<D> {
    start: Option<reqwest::RequestBuilder>,
    body: Option<reqwest::Response>,
    parser: SseParser,
    decoder: Option<D>,
    queue: VecDeque<Result<ModelEvent, Failure>>,
    provider: Provider,
    /// Whether an event stream that ends before its first event is [`Failure::EmptyStream`]
    /// (else it goes to the decoder, as a stream cut early does).
    report_empty: bool,
    /// Whether the event stream had an event yet.
    had_event: bool,
}

impl<D: Decoder> Drive<D> {
    fn handle(&mut self, events: Vec<SseEvent>) {
        self.had_event |= !events.is_empty();
        let mut out = Vec::new();
        for event in events {
            let Some(decoder) = self.decoder.as_mut() else { return };
            let step = decoder.event(event, &mut out);
            self.queue.extend(out.drain(..).map(Ok));
            match step {
                Ok(Step::More) => {}
                Ok(Step::Complete) => {
                    self.body = None;
                    self.finish(true);
                }
                Err(e) => {
                    self.body = None;
                    self.decoder = None;
                    self.queue.push_back(Err(e.into()));
                }
            }
        }
    }

    fn finish(&mut self, complete: bool) {
        if let Some(decoder) = self.decoder.take() {
            self.queue.push_back(decoder.finish(complete).map(ModelEvent::Done).map_err(Failure::Model));
        }
    }

    async fn next(&mut self) -> Option<Result<ModelEvent, Failure>> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                return Some(item);
            }
            if let Some(request) = self.start.take() {
                match send(request, self.provider).await {
                    Ok(response) if is_event_stream(&response) => self.body = Some(response),
                    Ok(response) => {
                        let decoder = self.decoder.take()?;
                        let parsed =
                            json_body(response, self.provider).await.and_then(|v| decoder.parse_full(&v));
                        match parsed {
                            Ok(response) => {
                                self.queue.extend(response_to_events(response).into_iter().map(Ok))
                            }
                            Err(e) => self.queue.push_back(Err(e.into())),
                        }
                    }
                    Err(e) => {
                        self.decoder = None;
                        self.queue.push_back(Err(e.into()));
                    }
                }
                continue;
            }
            let body = self.body.as_mut()?;
            match body.chunk().await {
                Ok(Some(bytes)) => {
                    let events = self.parser.feed(&bytes);
                    self.handle(events);
                }
                Ok(None) => {
                    self.body = None;
                    // An unterminated last event is used when it is whole (some servers
                    // end that way) and dropped when the body was cut inside it.
                    let tail = self.parser.finish().filter(|e| {
                        let data = e.data.trim();
                        data == "[DONE]" || serde_json::from_str::<serde::de::IgnoredAny>(data).is_ok()
                    });
                    self.handle(tail.into_iter().collect());
                    if self.report_empty && !self.had_event && self.decoder.take().is_some() {
                        self.queue.push_back(Err(Failure::EmptyStream));
                    }
                    self.finish(false);
                }
                Err(e) => {
                    self.body = None;
                    self.decoder = None;
                    self.queue.push_back(Err(transport(&e).into()));
                }
            }
        }
    }
}

/// Sends `request` and streams its answer through `decoder`: an event stream event by
/// event, a plain JSON body through [`Decoder::parse_full`].
pub(crate) fn drive<D: Decoder>(
    request: Result<reqwest::RequestBuilder, ModelError>,
    provider: Provider,
    decoder: D,
) -> BoxStream<'static, Result<ModelEvent, ModelError>> {
    drive_events(request, provider, decoder, false)
        .map(|item| item.map_err(Failure::into_model_error))
        .boxed()
}

/// [`drive`], telling an event stream that ended before its first event
/// ([`Failure::EmptyStream`], always the first and only item) when `report_empty`.
pub(crate) fn drive_events<D: Decoder>(
    request: Result<reqwest::RequestBuilder, ModelError>,
    provider: Provider,
    decoder: D,
    report_empty: bool,
) -> BoxStream<'static, Result<ModelEvent, Failure>> {
    let request = match request {
        Ok(request) => request,
        Err(e) => return stream::once(async move { Err(Failure::Model(e)) }).boxed(),
    };
    let drive = Drive {
        start: Some(request),
        body: None,
        parser: SseParser::new(),
        decoder: Some(decoder),
        queue: VecDeque::new(),
        provider,
        report_empty,
        had_event: false,
    };
    stream::unfold(drive, |mut drive| async move { drive.next().await.map(|item| (item, drive)) }).boxed()
}

/// The base URL without trailing slashes.
/// An environment variable's value, unless unset or blank.
pub(crate) fn env_setting(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

pub(crate) fn trim_base(url: &str) -> String {
    url.trim().trim_end_matches('/').to_owned()
}

/// Parses a call's argument text as a JSON object: `Some` for an object, `None` for
/// anything else (garbled, cut off, an array, nested deeper than the engine takes: the
/// engine refused such a call, and the provider need not parse it again).
pub(crate) fn arguments_object(arguments: &str) -> Option<serde_json::Map<String, Value>> {
    if text_too_deep(arguments, MAX_JSON_DEPTH) {
        return None;
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// What makes the engine refuse a call whose arguments were cut off before any text
/// arrived: an empty argument text would otherwise count as `{}` and the tool would run.
#[cfg_attr(
    not(any(feature = "openai", feature = "anthropic")),
    allow(dead_code, reason = "Gemini sends a call's arguments whole, never cut off")
)]
pub(crate) const CUT_OFF_EMPTY_ARGUMENTS: &str = "{";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const P: Provider = Provider { name: "test server", key_env: "TEST_KEY" };

    #[test]
    fn statuses_map_to_errors() {
        let e = status_error(
            401,
            r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
            P,
        );
        assert!(
            matches!(&e, ModelError::Auth(m) if m.contains("TEST_KEY") && m.contains("Incorrect API key")),
            "{e}"
        );
        assert!(!e.is_retryable());
        let e = status_error(429, r#"{"error":"slow down"}"#, P);
        assert_eq!(e, ModelError::Http { status: 429, message: "slow down".into() });
        assert!(e.is_retryable());
        let e = status_error(503, "", P);
        assert!(e.is_retryable());
        assert_eq!(
            status_error(400, r#"{"object":"error","message":"bad"}"#, P),
            ModelError::Http { status: 400, message: "bad".into() }
        );
    }

    #[test]
    fn error_text_is_everything_the_server_said_on_one_line() {
        // The usual shapes: the message and its code or type.
        assert_eq!(
            error_text(
                r#"{"error":{"message":"Rate limit","type":"requests","code":"rate_limit_exceeded"}}"#
            ),
            "Rate limit (rate_limit_exceeded)"
        );
        assert_eq!(error_text(r#"{"error":"model 'x' not found"}"#), "model 'x' not found");
        assert_eq!(
            error_text(
                r#"{"object":"error","message":"bad","type":"BadRequestError","param":null,"code":400}"#
            ),
            "bad (BadRequestError)"
        );
        assert_eq!(error_text(r#"{"detail":"Not Found"}"#), "Not Found");
        // A multi-line message, uncut.
        let long = format!(
            "{{\"error\":{{\"message\":\"3 errors:\\n  {}\\n  b\\n\",\"type\":\"t\"}}}}",
            "a".repeat(5000)
        );
        let text = error_text(&long);
        assert!(
            text.starts_with("3 errors: aaaa") && text.ends_with("a b (t)") && text.len() > 5000,
            "{text}"
        );
        // An empty message, no message, another field, not JSON, nothing: the body too.
        let empty = r#"{"error":{"message":"","type":"internal_server_error","param":null,"code":null}}"#;
        assert_eq!(error_text(empty), empty);
        assert_eq!(
            error_text(r#"{"detail":[{"loc":["body"],"msg":"Field required"}]}"#),
            r#"{"detail":[{"loc":["body"],"msg":"Field required"}]}"#
        );
        assert_eq!(
            error_text(r#"{"error":{"message":"bad","param":"messages.[1].content"}}"#),
            r#"bad — {"error":{"message":"bad","param":"messages.[1].content"}}"#
        );
        assert_eq!(error_text("<html>\n  <b>502</b>\r\n</html>"), "<html> <b>502</b> </html>");
        assert_eq!(error_text(" \n "), "(empty body)");
        // Nested past serde_json's limit: not JSON to it, shown as text.
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(error_text(&deep), deep);
    }

    #[test]
    fn in_body_errors_map_by_status_or_type() {
        let e = body_error(
            &json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
            P,
        );
        assert!(matches!(e, ModelError::Http { status: 529, .. }) && e.is_retryable());
        let e = body_error(&json!({"error":{"message":"m","code":"tool_use_failed","status_code":400}}), P);
        assert_eq!(e, ModelError::Http { status: 400, message: "m (tool_use_failed)".into() });
        assert!(matches!(body_error(&json!({"error":{"message":"?"}}), P), ModelError::Protocol(_)));
    }

    #[test]
    fn arguments_object_accepts_only_objects() {
        assert!(arguments_object(r#"{"a":1}"#).is_some());
        assert!(arguments_object("").is_none());
        assert!(arguments_object("[1]").is_none());
        assert!(arguments_object(r#"{"a":"#).is_none());
        let deep = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert!(arguments_object(&format!(r#"{{"a":{}}}"#, deep(MAX_JSON_DEPTH - 1))).is_some());
        assert!(arguments_object(&format!(r#"{{"a":{}}}"#, deep(MAX_JSON_DEPTH))).is_none());
    }
}
