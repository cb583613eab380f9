//! [`AnthropicModel`]: the Anthropic Messages API.

use std::fmt;

use crate::model::http::{self, Provider};
use crate::model::media::WireBody;
use crate::model::{Model, ModelError, ModelEvent, ModelRequest, ModelResponse, collect_response};
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;

mod cache;
mod request;
mod response;
mod stream;
mod thinking;

pub use request::structured_schema;
use stream::AnthropicDecoder;
pub use thinking::{MIN_THINKING_BUDGET, PROVIDER_NAME, thinking_budget};

/// The default base URL.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The output token limit when the request sets none (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

const PROVIDER: Provider = Provider { name: "Anthropic API", key_env: "ANTHROPIC_API_KEY" };

/// A model behind the Anthropic Messages API (`POST {base_url}/v1/messages`).
///
/// [`stream`](Model::stream) uses the streaming API; [`complete`](Model::complete) the
/// non-streaming one. The key comes from [`api_key`](Self::api_key) or
/// `ANTHROPIC_API_KEY`, the base URL from [`base_url`](Self::base_url) or
/// `ANTHROPIC_BASE_URL`.
///
/// ```no_run
/// use harnessx_agent::model::{AnthropicModel, Message, Model, ModelRequest};
///
/// # async fn demo() -> Result<(), harnessx_agent::model::ModelError> {
/// let model = AnthropicModel::new("claude-sonnet-4-5").max_tokens(2048);
/// let request = ModelRequest { messages: vec![Message::user("Hi")], ..Default::default() };
/// println!("{}", model.complete(&request).await?.content);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct AnthropicModel {
    model: String,
    base_url: String,
    api_key: Option<String>,
    max_tokens: u32,
    prompt_cache: bool,
    adaptive_thinking: Option<bool>,
}

impl fmt::Debug for AnthropicModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicModel")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("max_tokens", &self.max_tokens)
            .field("prompt_cache", &self.prompt_cache)
            .field("adaptive_thinking", &self.adaptive_thinking)
            .finish()
    }
}

impl AnthropicModel {
    /// A model by name (e.g. `claude-sonnet-4-5`). Reads `ANTHROPIC_API_KEY` and
    /// `ANTHROPIC_BASE_URL` (default [`ANTHROPIC_BASE_URL`]) from the environment.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            base_url: http::trim_base(
                &http::env_setting("ANTHROPIC_BASE_URL").unwrap_or_else(|| ANTHROPIC_BASE_URL.to_owned()),
            ),
            api_key: http::env_setting("ANTHROPIC_API_KEY"),
            max_tokens: DEFAULT_MAX_TOKENS,
            prompt_cache: true,
            adaptive_thinking: None,
        }
    }

    /// The API base URL; requests go to `{base_url}/v1/messages` (or `{base_url}/messages`
    /// when it already ends in `/v1`).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = http::trim_base(&url.into());
        self
    }

    /// The API key, sent as `x-api-key` (overrides `ANTHROPIC_API_KEY`).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into()).filter(|k| !k.trim().is_empty());
        self
    }

    /// The output token limit used when a request sets none (default
    /// [`DEFAULT_MAX_TOKENS`]).
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Whether requests mark their stable prefix as cacheable (default on): a
    /// `cache_control: {"type": "ephemeral"}` breakpoint on the last tool, on the system
    /// prompt, and on the last block of the message before the newest turn, so each
    /// request reads the previous one's prefix from Anthropic's prompt cache (see
    /// `docs/models.md`, "Prompt caching"). Off sends no `cache_control` at all.
    pub fn prompt_cache(mut self, on: bool) -> Self {
        self.prompt_cache = on;
        self
    }

    /// Asks for adaptive thinking instead of a fixed budget when the request sets
    /// [`ModelRequest::reasoning`]: `thinking: {"type": "adaptive"}` and the effort as
    /// `output_config.effort` (`minimal` goes as `low`; a budget stands for an effort),
    /// `max_tokens` unchanged. The models from Claude Opus 4.7 on take only this form;
    /// Opus 4.6 and Sonnet 4.6 take both; older ones only a budget. By default it is
    /// chosen by the model's name: Claude 4.6 and later (and the Mythos and Fable models)
    /// think adaptively, older models with a budget.
    pub fn adaptive_thinking(mut self, on: bool) -> Self {
        self.adaptive_thinking = Some(on);
        self
    }

    /// The model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The endpoint requests go to.
    pub fn endpoint(&self) -> String {
        if self.base_url.ends_with("/v1/messages") {
            self.base_url.clone()
        } else if self.base_url.ends_with("/v1") {
            format!("{}/messages", self.base_url)
        } else {
            format!("{}/v1/messages", self.base_url)
        }
    }

    fn http_request(&self, body: &WireBody) -> Result<reqwest::RequestBuilder, ModelError> {
        let mut request = http::client()?
            .post(self.endpoint())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("anthropic-version", ANTHROPIC_VERSION)
            .body(body.to_bytes()?);
        match &self.api_key {
            Some(key) => request = request.header("x-api-key", key),
            None if self.base_url.starts_with(ANTHROPIC_BASE_URL) => return Err(http::missing_key(PROVIDER)),
            None => {}
        }
        Ok(request)
    }
}

impl Model for AnthropicModel {
    fn name(&self) -> String {
        format!("anthropic:{}", self.model)
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        let body = self.wire_body(request, true);
        http::drive(self.http_request(&body), PROVIDER, AnthropicDecoder::default())
    }

    /// One non-streaming request. A server that streams anyway is understood too.
    fn complete<'a>(&'a self, request: &'a ModelRequest) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let body = self.wire_body(request, false);
        Box::pin(collect_response(http::drive(
            self.http_request(&body),
            PROVIDER,
            AnthropicDecoder::default(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_from_base_urls() {
        let at = |base: &str| AnthropicModel::new("m").base_url(base).endpoint();
        assert_eq!(at("https://api.anthropic.com"), "https://api.anthropic.com/v1/messages");
        assert_eq!(at("http://h/v1/"), "http://h/v1/messages");
        assert_eq!(at("http://h/v1/messages"), "http://h/v1/messages");
    }
}
