//! [`OpenAiResponsesModel`]: OpenAI's Responses API (`POST {base_url}/responses`), run
//! stateless (`store: false`): every request carries the whole conversation, and the
//! model's reasoning travels in it as the encrypted `reasoning` items the API returned.
//!
//! The wire format is read into `#[derive(Deserialize)]` structs, not indexed by hand.
//! A stream event is one flat struct (`WireEvent`) whose `type` is an enum with a
//! catch-all, so an event type added later is skipped; an event of a known type that
//! does not have the shape it should is a [`ModelError::Protocol`] naming it. serde_json
//! bounds the nesting of what it parses (128 levels), so no answer recurses without end.

use std::fmt;

use super::OPENAI_BASE_URL;
use super::compatible::Host;
use crate::model::http::{self, Provider};
use crate::model::media::WireBody;
use crate::model::{Model, ModelError, ModelEvent, ModelRequest, ModelResponse, collect_response};
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;

mod request;
mod response;
mod stream;

pub use request::wire_input;
use stream::ResponsesDecoder;

/// The [`Reasoning::provider`](crate::model::Reasoning::provider) of the reasoning items
/// this adapter returns and sends back.
pub const RESPONSES_PROVIDER: &str = "openai-responses";

const PROVIDER: Provider = Provider { name: "OpenAI Responses API", key_env: "OPENAI_API_KEY" };

/// A model behind OpenAI's Responses API (`POST {base_url}/responses`), streamed.
///
/// Requests are stateless (`"store": false`): the conversation is sent whole each time,
/// as with [`OpenAiModel`](super::OpenAiModel). A reasoning model's `reasoning` items
/// come back in [`ModelResponse::reasoning`] (provider `openai-responses`, the item as
/// received in [`data`](crate::model::Reasoning::data), its summary as the text) and are
/// sent back unchanged before that turn's calls, so the model keeps its chain of thought
/// across tool calls. For that the request asks for `"include": ["reasoning.encrypted_content"]`
/// when the model reasons: a request with [`ModelRequest::reasoning`] set, or a model
/// whose name says it reasons (`o1`, `o3`, `o4-*`, `gpt-5*`, `*codex*`). Models that do
/// not reason (`gpt-4o`, `gpt-4.1`) refuse it; [`encrypted_reasoning`](Self::encrypted_reasoning)
/// decides for a model the names do not tell.
///
/// The key comes from [`api_key`](Self::api_key) or `OPENAI_API_KEY`, the base URL from
/// [`base_url`](Self::base_url) or `OPENAI_BASE_URL`; a key is required only for OpenAI's
/// own API. [`name`](Model::name) is `openai-responses:MODEL`.
///
/// ```no_run
/// use harnessx_agent::model::{Message, Model, ModelRequest, OpenAiResponsesModel};
/// use harnessx_agent::model::{ReasoningConfig, ReasoningEffort};
///
/// # async fn demo() -> Result<(), harnessx_agent::model::ModelError> {
/// let model = OpenAiResponsesModel::new("gpt-5-mini");
/// let request = ModelRequest {
///     messages: vec![Message::user("What is 12 * 7?")],
///     reasoning: Some(ReasoningConfig { effort: Some(ReasoningEffort::Low), budget_tokens: None }),
///     ..Default::default()
/// };
/// let response = model.complete(&request).await?;
/// println!("{}", response.content);
/// for piece in &response.reasoning {
///     println!("(thought: {})", piece.text);
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct OpenAiResponsesModel {
    model: String,
    base_url: String,
    host: Host,
    api_key: Option<String>,
    strict: bool,
    encrypted_reasoning: Option<bool>,
}

impl fmt::Debug for OpenAiResponsesModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiResponsesModel")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("strict", &self.strict)
            .field("encrypted_reasoning", &self.encrypted_reasoning)
            .finish()
    }
}

impl OpenAiResponsesModel {
    /// A model by name (e.g. `gpt-5-mini`, `o4-mini`). Reads `OPENAI_API_KEY` and
    /// `OPENAI_BASE_URL` (default [`OPENAI_BASE_URL`]) from the environment.
    pub fn new(model: impl Into<String>) -> Self {
        let base_url = http::trim_base(
            &http::env_setting("OPENAI_BASE_URL").unwrap_or_else(|| OPENAI_BASE_URL.to_owned()),
        );
        Self {
            model: model.into(),
            host: Host::of(&base_url),
            base_url,
            api_key: http::env_setting("OPENAI_API_KEY"),
            strict: false,
            encrypted_reasoning: None,
        }
    }

    /// The API base URL, e.g. `https://api.openai.com/v1`; requests go to
    /// `{base_url}/responses` (a URL that already ends in `/responses` is used as it is).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = http::trim_base(&url.into());
        self.host = Host::of(&self.base_url);
        self
    }

    /// The API key, sent as `Authorization: Bearer ...` (overrides `OPENAI_API_KEY`).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into()).filter(|k| !k.trim().is_empty());
        self
    }

    /// Sends no key even if `OPENAI_API_KEY` is set (for local servers).
    pub fn without_api_key(mut self) -> Self {
        self.api_key = None;
        self
    }

    /// OpenAI strict mode (off by default): tools are sent with `"strict": true` and
    /// their schemas transformed as strict mode requires (see [`strict_schema`](super::strict_schema)).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Whether to ask for the reasoning items' encrypted content
    /// (`"include": ["reasoning.encrypted_content"]`), without which a stateless request
    /// cannot send the model's reasoning back. By default it is asked for when the
    /// request sets [`ModelRequest::reasoning`] or the model's name is a reasoning
    /// model's (`o1`, `o3`, `o4-*`, `gpt-5*`, `*codex*`): models that do not reason
    /// (`gpt-4o`, `gpt-4.1`) refuse the request with it.
    pub fn encrypted_reasoning(mut self, on: bool) -> Self {
        self.encrypted_reasoning = Some(on);
        self
    }

    /// The model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The endpoint requests go to: `{base_url}/responses`. A base URL with no path at
    /// all (`http://localhost:8000`) gets the `/v1` OpenAI-compatible servers serve under.
    pub fn endpoint(&self) -> String {
        if self.base_url.ends_with("/responses") {
            return self.base_url.clone();
        }
        let after_scheme = self.base_url.split_once("://").map_or(self.base_url.as_str(), |(_, rest)| rest);
        if after_scheme.contains('/') {
            format!("{}/responses", self.base_url)
        } else {
            format!("{}/v1/responses", self.base_url)
        }
    }

    fn http_request(&self, body: &WireBody) -> Result<reqwest::RequestBuilder, ModelError> {
        if self.api_key.is_none() && self.host == Host::OpenAi {
            return Err(http::missing_key(PROVIDER));
        }
        let mut request = http::client()?
            .post(self.endpoint())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_bytes()?);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        Ok(request)
    }
}

impl Model for OpenAiResponsesModel {
    fn name(&self) -> String {
        format!("openai-responses:{}", self.model)
    }

    /// `openai`: the same provider as the Chat Completions adapter, by another API.
    fn provider_name(&self) -> String {
        "openai".to_owned()
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        let body = self.wire_body(request, true);
        http::drive(self.http_request(&body), PROVIDER, ResponsesDecoder::default())
    }

    /// One non-streaming request. A server that streams anyway is understood too.
    fn complete<'a>(&'a self, request: &'a ModelRequest) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let body = self.wire_body(request, false);
        Box::pin(collect_response(http::drive(
            self.http_request(&body),
            PROVIDER,
            ResponsesDecoder::default(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_from_base_urls() {
        let at = |base: &str| OpenAiResponsesModel::new("m").base_url(base).endpoint();
        assert_eq!(at("https://api.openai.com/v1"), "https://api.openai.com/v1/responses");
        assert_eq!(at("http://127.0.0.1:8000/v1/"), "http://127.0.0.1:8000/v1/responses");
        assert_eq!(at("http://127.0.0.1:8000"), "http://127.0.0.1:8000/v1/responses");
        assert_eq!(at("http://h/x/responses"), "http://h/x/responses");
    }
}
