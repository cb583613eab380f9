//! [`OpenAiModel`]: the OpenAI Chat Completions API and the servers that speak it (vLLM,
//! llama.cpp's `llama-server`, Ollama, Groq, DeepSeek, ...); [`OpenAiResponsesModel`]: the
//! Responses API ([`responses`]).

use std::fmt;
use std::sync::Arc;

use crate::model::http::{self, Provider};
use crate::model::media::WireBody;
use crate::model::{Model, ModelError, ModelEvent, ModelRequest, ModelResponse, collect_response};
use futures_util::future::BoxFuture;
use futures_util::stream::{self, BoxStream, StreamExt};

mod compatible;
mod request;
mod response;
pub mod responses;
mod schema;

use compatible::{Host, Learned, ToolResults};
use response::OpenAiDecoder;
pub use response::REASONING_PROVIDER;
pub use responses::OpenAiResponsesModel;
pub use schema::strict_schema;

/// The default base URL.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

const PROVIDER: Provider = Provider { name: "OpenAI-compatible server", key_env: "OPENAI_API_KEY" };

/// A model behind an OpenAI-compatible Chat Completions endpoint
/// (`POST {base_url}/chat/completions`), streamed.
///
/// The key comes from [`api_key`](Self::api_key) or `OPENAI_API_KEY`, the base URL from
/// [`base_url`](Self::base_url) or `OPENAI_BASE_URL`. A key is required only for the
/// default base URL; local servers usually take none.
///
/// Whether the base URL is OpenAI's own API (`api.openai.com`) is decided when it is set.
/// OpenAI gets its bodies exactly as its API documents them. Every other server gets the
/// forms all of them accept where OpenAI takes either (`"content": ""` beside tool calls,
/// `"tool_choice": "auto"` spelled out), and what the server turns out not to take is
/// worked around for the rest of the model's life: a refused `"required"` is retried
/// with the one tool named, a stream that comes back empty is asked for again without
/// streaming, an answer to `"auto"` with neither text nor tool calls is asked for
/// again with `"none"`, and a server whose call ids show a prompt template without the
/// `tool` role (llama-cpp-python's function-calling chat formats) gets each turn's tool
/// results as one `user` message (see `docs/models.md`). Each such finding is said once,
/// through [`on_warning`](Self::on_warning) and `tracing`.
///
/// ```no_run
/// use harnessx_agent::model::{Model, ModelRequest, Message, OpenAiModel};
///
/// # async fn demo() -> Result<(), harnessx_agent::model::ModelError> {
/// // Ollama; vLLM is http://localhost:8000/v1, llama-server http://localhost:8080/v1.
/// let model = OpenAiModel::new("qwen3:8b").base_url("http://localhost:11434/v1");
/// let request = ModelRequest { messages: vec![Message::user("Hi")], ..Default::default() };
/// let response = model.complete(&request).await?;
/// println!("{}", response.content);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct OpenAiModel {
    model: String,
    base_url: String,
    host: Host,
    api_key: Option<String>,
    strict: bool,
    stream_usage: bool,
    /// What this server was found not to take; shared by clones, new with a new base URL.
    learned: Arc<Learned>,
    on_warning: Option<Notice>,
    required_fallback: Option<String>,
    prompt_cache_key: Option<String>,
}

/// Where [`OpenAiModel::on_warning`] sends its lines.
type Notice = Arc<dyn Fn(&str) + Send + Sync>;

impl fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("host", &self.host)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("strict", &self.strict)
            .field("stream_usage", &self.stream_usage)
            .field("learned", &self.learned)
            .field("on_warning", &self.on_warning.as_ref().map(|_| "<set>"))
            .field("required_fallback", &self.required_fallback)
            .field("prompt_cache_key", &self.prompt_cache_key)
            .finish()
    }
}

impl OpenAiModel {
    /// A model by name (e.g. `gpt-4o`, `qwen3:8b`). Reads `OPENAI_API_KEY` and
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
            stream_usage: true,
            learned: Arc::default(),
            on_warning: None,
            required_fallback: None,
            prompt_cache_key: None,
        }
    }

    /// The API base URL, e.g. `http://localhost:8000/v1`; requests go to
    /// `{base_url}/chat/completions` (a URL that already ends in `/chat/completions` is
    /// used as it is). Anything learned about the previous server is forgotten.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = http::trim_base(&url.into());
        self.host = Host::of(&self.base_url);
        self.learned = Arc::default();
        self
    }

    /// Where the one-line notices go when a server is found not to take something and
    /// the model works around it for the rest of its life (an empty stream asked again
    /// without streaming, a refused `"required"` replaced by the tool's name, an answer
    /// of nothing to `"auto"` asked again with `"none"`, tool results sent as user
    /// messages to a template that drops `tool` ones). They go to
    /// `tracing` at WARN level in any case; the `harnessx` command prints them on stderr.
    pub fn on_warning(mut self, notice: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_warning = Some(Arc::new(notice));
        self
    }

    /// The tool to name in place of `"required"` when the server refuses it and the
    /// request offers several tools, if this one is among them. With exactly one tool
    /// that tool is named anyway; this is for the tools a harness adds beside the
    /// user's own (the planning tools): the `harnessx` command sets it when its flags
    /// loaded exactly one tool.
    pub fn required_fallback(mut self, tool: impl Into<String>) -> Self {
        self.required_fallback = Some(tool.into());
        self
    }

    /// OpenAI's `prompt_cache_key`: requests with the same key and prefix are routed to
    /// the same prompt cache. Sent only to `api.openai.com` (compatible servers may refuse
    /// an unknown field), and there in place of the run's own key
    /// ([`ModelRequest::prompt_cache_key`], a durable run's id); without either nothing is
    /// sent and the body is as before.
    pub fn prompt_cache_key(mut self, key: impl Into<String>) -> Self {
        self.prompt_cache_key = Some(key.into()).filter(|k| !k.is_empty());
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
    /// their schemas transformed as strict mode requires (see [`strict_schema`]).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Whether to ask for token usage in the stream (`stream_options.include_usage`,
    /// on by default). Turn it off for a server that rejects the option.
    pub fn stream_usage(mut self, on: bool) -> Self {
        self.stream_usage = on;
        self
    }

    /// The model name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The endpoint requests go to: `{base_url}/chat/completions`. A base URL with no path
    /// at all (`http://localhost:8000`) gets the `/v1` every OpenAI-compatible server
    /// (OpenAI, vLLM, llama.cpp, Ollama) serves the API under.
    pub fn endpoint(&self) -> String {
        if self.base_url.ends_with("/chat/completions") {
            return self.base_url.clone();
        }
        let after_scheme = self.base_url.split_once("://").map_or(self.base_url.as_str(), |(_, rest)| rest);
        if after_scheme.contains('/') {
            format!("{}/chat/completions", self.base_url)
        } else {
            format!("{}/v1/chat/completions", self.base_url)
        }
    }

    fn is_openai(&self) -> bool {
        self.host == Host::OpenAi
    }

    fn http_request(&self, body: &WireBody) -> Result<reqwest::RequestBuilder, ModelError> {
        if self.api_key.is_none() && self.is_openai() {
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

    /// One response, streamed or not: as it always was for OpenAI, through
    /// [`negotiate`](Self::negotiate) for every other server.
    fn respond<'a>(
        &'a self,
        request: &'a ModelRequest,
        streaming: bool,
    ) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        match self.host {
            Host::OpenAi => {
                let body = self.body(request, &request.tool_choice, streaming, ToolResults::AsToolMessages);
                http::drive(self.http_request(&body), PROVIDER, OpenAiDecoder::default())
            }
            Host::Compatible => stream::once(self.negotiate(request, streaming)).flatten().boxed(),
        }
    }
}

impl Model for OpenAiModel {
    fn name(&self) -> String {
        format!("openai:{}", self.model)
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        self.respond(request, true)
    }

    /// One non-streaming request (`"stream": false`). A server that streams anyway is
    /// understood too.
    fn complete<'a>(&'a self, request: &'a ModelRequest) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(collect_response(self.respond(request, false)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_from_base_urls() {
        let at = |base: &str| OpenAiModel::new("m").base_url(base).endpoint();
        assert_eq!(at("http://127.0.0.1:8000/v1"), "http://127.0.0.1:8000/v1/chat/completions");
        assert_eq!(at("http://127.0.0.1:8000/v1/"), "http://127.0.0.1:8000/v1/chat/completions");
        assert_eq!(at("http://127.0.0.1:8000"), "http://127.0.0.1:8000/v1/chat/completions");
        assert_eq!(at("http://localhost:11434/"), "http://localhost:11434/v1/chat/completions");
        assert_eq!(at("https://gw.example/openai/v1"), "https://gw.example/openai/v1/chat/completions");
        assert_eq!(at("http://h/x/chat/completions"), "http://h/x/chat/completions");
    }
}
