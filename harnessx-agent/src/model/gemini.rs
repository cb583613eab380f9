//! [`GeminiModel`]: the Gemini API (`generateContent` / `streamGenerateContent`).
//!
//! Hand-mapped rather than generated from Google's discovery document: the adapter sends
//! a handful of fields and reads fewer, and what it defends against is what matters —
//! a stream cut off before its `finishReason`, chunks that are not JSON (or nested past
//! serde_json's limit of 128), part kinds it cannot represent (`executableCode`,
//! `inlineData`, streamed `partialArgs`): each ends in a [`ModelError`], never a panic.
//!
//! Function calls have no ids on the Gemini API: a call keeps the id Gemini gave it, if
//! any, and is otherwise left without one (the run gives it `call_{turn}_{i}`). Results
//! go back as `functionResponse` parts paired by name and order, in call order, never by
//! id.
//!
//! Thought signatures (`thoughtSignature`) are kept as
//! [`Reasoning`](crate::model::Reasoning) with provider `gemini` and sent back, byte for
//! byte, on the part they came on: the function call
//! (`data: {"part": "call", "call": i}`), the span of the answer text
//! (`data: {"part": "text", "start": s, "end": e}`, byte offsets into the content), or
//! the thought (`data: {"part": "thought"}`). Thought text (`thought: true` parts)
//! streams as [`ModelEvent::ReasoningDelta`] and is sent back only as a signed thought
//! part, never as answer text.

use std::fmt;

use crate::model::http::{self, Provider};
use crate::model::media::WireBody;
use crate::model::{Model, ModelError, ModelEvent, ModelRequest, ModelResponse, collect_response};
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;

mod request;
mod response;
mod schema;

pub use request::FOREIGN_SIGNATURE;
use response::GeminiDecoder;
pub use response::parse_sse;
pub use schema::{GEMINI_SCHEMA_KEYWORDS, gemini_schema};

/// The default base URL.
pub const GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// The [`Reasoning::provider`](crate::model::Reasoning::provider) of what Gemini returns;
/// only such pieces are sent back.
pub const REASONING_PROVIDER: &str = "gemini";

const PROVIDER: Provider = Provider { name: "Gemini API", key_env: "GEMINI_API_KEY" };

/// A model behind the Gemini API (`POST {base_url}/v1beta/models/{model}:generateContent`,
/// streamed through `:streamGenerateContent?alt=sse`).
///
/// [`stream`](Model::stream) uses the streaming method; [`complete`](Model::complete) the
/// non-streaming one. The key comes from [`api_key`](Self::api_key) or `GEMINI_API_KEY`
/// and is sent as `x-goog-api-key`; the base URL from [`base_url`](Self::base_url) or
/// `GEMINI_BASE_URL`. Tool schemas are sent as `parameters` in Gemini's OpenAPI subset
/// ([`gemini_schema`]).
///
/// ```no_run
/// use harnessx_agent::model::{GeminiModel, Message, Model, ModelRequest};
///
/// # async fn demo() -> Result<(), harnessx_agent::model::ModelError> {
/// let model = GeminiModel::new("gemini-2.5-flash");
/// let request = ModelRequest { messages: vec![Message::user("Hi")], ..Default::default() };
/// println!("{}", model.complete(&request).await?.content);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct GeminiModel {
    model: String,
    base_url: String,
    api_key: Option<String>,
}

impl fmt::Debug for GeminiModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeminiModel")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .finish()
    }
}

impl GeminiModel {
    /// A model by name (e.g. `gemini-2.5-flash`; a leading `models/` is dropped). Reads
    /// `GEMINI_API_KEY` and `GEMINI_BASE_URL` (default [`GEMINI_BASE_URL`]).
    pub fn new(model: impl Into<String>) -> Self {
        let model = model.into();
        Self {
            model: model.strip_prefix("models/").map(str::to_owned).unwrap_or(model),
            base_url: http::trim_base(
                &http::env_setting("GEMINI_BASE_URL").unwrap_or_else(|| GEMINI_BASE_URL.to_owned()),
            ),
            api_key: http::env_setting("GEMINI_API_KEY"),
        }
    }

    /// The API base URL; requests go to `{base_url}/v1beta/models/...` (or
    /// `{base_url}/models/...` when it already ends in a version, `/v1beta` or `/v1`).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = http::trim_base(&url.into());
        self
    }

    /// The API key, sent as `x-goog-api-key` (overrides `GEMINI_API_KEY`).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into()).filter(|k| !k.trim().is_empty());
        self
    }

    /// The model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The endpoint requests go to, streamed (`:streamGenerateContent?alt=sse`) or not.
    pub fn endpoint(&self, stream: bool) -> String {
        let versioned = self.base_url.ends_with("/v1beta") || self.base_url.ends_with("/v1");
        let base = if versioned { self.base_url.clone() } else { format!("{}/v1beta", self.base_url) };
        let method = if stream { "streamGenerateContent?alt=sse" } else { "generateContent" };
        format!("{base}/models/{}:{method}", self.model)
    }

    fn http_request(&self, body: &WireBody, stream: bool) -> Result<reqwest::RequestBuilder, ModelError> {
        let mut request = http::client()?
            .post(self.endpoint(stream))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_bytes()?);
        match &self.api_key {
            Some(key) => request = request.header("x-goog-api-key", key),
            None if self.base_url.starts_with(GEMINI_BASE_URL) => return Err(http::missing_key(PROVIDER)),
            None => {}
        }
        Ok(request)
    }
}

impl Model for GeminiModel {
    fn name(&self) -> String {
        format!("gemini:{}", self.model)
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        let body = self.wire_body(request);
        http::drive(self.http_request(&body, true), PROVIDER, GeminiDecoder::default())
    }

    /// One non-streaming request (`:generateContent`).
    fn complete<'a>(&'a self, request: &'a ModelRequest) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let body = self.wire_body(request);
        Box::pin(collect_response(http::drive(
            self.http_request(&body, false),
            PROVIDER,
            GeminiDecoder::default(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_from_base_urls_and_model_names() {
        let model = GeminiModel::new("models/gemini-2.5-flash").base_url("http://h/v1beta/");
        assert_eq!(model.model(), "gemini-2.5-flash");
        assert_eq!(
            model.endpoint(true),
            "http://h/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            GeminiModel::new("m").base_url("http://h").endpoint(false),
            "http://h/v1beta/models/m:generateContent"
        );
        assert_eq!(
            GeminiModel::new("m").base_url("http://h/v1").endpoint(false),
            "http://h/v1/models/m:generateContent"
        );
    }
}
