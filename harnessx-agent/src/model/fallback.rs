//! [`FallbackModel`]: a [`Model`] over a list of models, tried in order when one is down.

use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use serde::Serialize;

use super::{Model, ModelError, ModelEvent, ModelRequest, ModelResponse, ModelRetry, incomplete_stream};

/// A model over a list: a request goes to the first; when that model is down (a
/// connection failure, HTTP 5xx, 429 or 529) once its own retries are spent, the same
/// request goes to the next, and so on. A request the provider refused for what it is
/// (400, 401, 403, 404, a context window passed, an answer that cannot be understood)
/// fails as it is: another provider would refuse it too, or the key needs fixing.
///
/// The conversation is provider-neutral, so each model's adapter writes it in its own
/// format: a run may start on OpenAI and finish on Anthropic. Reasoning a provider
/// signed goes back only to that provider. A streamed response that has already shown
/// text is not sent elsewhere (the text would show twice).
///
/// Each switch is an [`AgentEvent::ModelFallback`](crate::AgentEvent::ModelFallback) of
/// the run (`--json`: `{"type":"model_fallback","from":..,"to":..,"reason":..}`) and a
/// `tracing` warning, and the response names the model that answered
/// ([`ModelResponse::model`]): a durable run journals it with the response, and a
/// resume replays the response without asking any model again.
///
/// A switch holds for the rest of the run (a circuit per run, not per request): the
/// run's later requests start at the model that answered, so a dead primary costs its
/// retries once, and the switch is one event. A new run starts at the first model again.
/// A resumed durable run starts where its journal says the last answer came from.
///
/// It retries each model itself ([`retry`](Self::retry), by default as
/// [`AgentConfig::model_retry`](crate::AgentConfig::model_retry)'s default), so the agent
/// does not retry it again.
///
/// ```
/// use std::sync::Arc;
/// use harnessx_agent::model::{FallbackModel, Model, ModelError, ModelResponse, FunctionModel};
///
/// let down = FunctionModel::new(|_| Err(ModelError::Http { status: 503, message: "overloaded".into() }));
/// let up = FunctionModel::new(|_| Ok(ModelResponse::text("hello")));
/// let model = FallbackModel::new(vec![Arc::new(down) as Arc<dyn Model>, Arc::new(up)]).unwrap();
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let response = model.complete(&Default::default()).await.unwrap();
/// assert_eq!(response.content, "hello");
/// # });
/// ```
#[derive(Clone)]
pub struct FallbackModel {
    models: Vec<Arc<dyn Model>>,
    retry: ModelRetry,
}

impl std::fmt::Debug for FallbackModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.models.iter().map(|m| m.name()).collect();
        f.debug_struct("FallbackModel").field("models", &names).field("retry", &self.retry).finish()
    }
}

/// One switch from a model that is down to the next one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fallback {
    /// The model that failed (`openai:gpt-4o`).
    pub from: String,
    /// The model the request goes to now.
    pub to: String,
    /// Why, in one line: the failure of `from`'s last attempt.
    pub reason: String,
}

tokio::task_local! {
    static NOTICE: Arc<dyn Fn(Fallback) + Send + Sync>;
    static CIRCUIT: Circuit;
}

/// Which model a run's requests start at: the one that last answered it. One per run
/// ([`run_scope`]); a [`FallbackModel`] reads it before a request and moves it on a
/// switch, and the run loop sets it from each response, replayed ones included.
#[derive(Debug, Clone, Default)]
pub(crate) struct Circuit(Arc<std::sync::Mutex<Option<String>>>);

impl Circuit {
    /// The run's last answer came from `model` (a [`ModelResponse::model`]).
    pub(crate) fn answered(&self, model: Option<&str>) {
        if let Some(model) = model {
            *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(model.to_owned());
        }
    }

    fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Runs `work` (one run) with `circuit` as its fallback circuit.
pub(crate) async fn run_scope<F: std::future::Future>(circuit: Circuit, work: F) -> F::Output {
    CIRCUIT.scope(circuit, work).await
}

/// Runs `work` (one model request) with `notice` told of each switch a
/// [`FallbackModel`] makes in it.
pub(crate) async fn scope<F: std::future::Future>(
    notice: Arc<dyn Fn(Fallback) + Send + Sync>,
    work: F,
) -> F::Output {
    NOTICE.scope(notice, work).await
}

fn tell(fallback: Fallback) {
    tracing::warn!(from = %fallback.from, to = %fallback.to, reason = %fallback.reason, "model fallback");
    let _ = NOTICE.try_with(|notice| notice(fallback));
}

/// What to do after a failed attempt.
enum Next {
    /// Ask the same model again after this long.
    Retry(std::time::Duration),
    /// Ask the next model.
    Fall,
    /// Fail with the error.
    Fail,
}

/// Whether `error` means the model is down rather than the request wrong.
fn is_down(error: &ModelError) -> bool {
    match error {
        ModelError::Transport(_) => true,
        ModelError::Http { status, .. } => *status == 429 || *status >= 500,
        _ => false,
    }
}

impl FallbackModel {
    /// A model over `models`, tried in order. Refuses an empty list.
    pub fn new(models: Vec<Arc<dyn Model>>) -> Result<Self, ModelError> {
        if models.is_empty() {
            return Err(ModelError::Other("a fallback model needs at least one model".into()));
        }
        Ok(Self { models, retry: ModelRetry::default() })
    }

    /// How each model is retried before the next is asked (default
    /// [`ModelRetry::default`]: 3 attempts).
    pub fn retry(mut self, retry: ModelRetry) -> Self {
        self.retry = retry;
        self
    }

    /// The models, in the order they are asked.
    pub fn models(&self) -> &[Arc<dyn Model>] {
        &self.models
    }

    fn next(&self, error: &ModelError, index: usize, attempt: u32) -> Next {
        if error.is_retryable() && attempt < self.retry.max_attempts {
            return Next::Retry(self.retry.delay_before(attempt + 1));
        }
        if is_down(error) && index + 1 < self.models.len() {
            return Next::Fall;
        }
        Next::Fail
    }

    /// The model a request starts at: the one that last answered the run, if it is one
    /// of these (else the first).
    fn first(&self) -> usize {
        CIRCUIT
            .try_with(Circuit::get)
            .ok()
            .flatten()
            .and_then(|name| self.models.iter().position(|m| m.name() == name))
            .unwrap_or(0)
    }

    fn fall(&self, index: usize, error: &ModelError) {
        let _ = CIRCUIT.try_with(|c| c.answered(Some(&self.models[index + 1].name())));
        tell(Fallback {
            from: self.models[index].name(),
            to: self.models[index + 1].name(),
            reason: error.for_model(),
        });
    }

    fn answered(&self, index: usize, mut response: ModelResponse) -> ModelResponse {
        response.model = Some(self.models[index].name());
        response
    }
}

/// Where a [`FallbackModel`]'s stream is.
struct Streaming<'a> {
    me: &'a FallbackModel,
    request: &'a ModelRequest,
    index: usize,
    attempt: u32,
    current: Option<BoxStream<'a, Result<ModelEvent, ModelError>>>,
    /// Whether the current stream has shown anything (then it is not sent elsewhere).
    shown: bool,
    done: bool,
}

impl Model for FallbackModel {
    /// The first model's name: the run is the same run whichever model answers.
    fn name(&self) -> String {
        self.models[0].name()
    }

    fn provider_name(&self) -> String {
        self.models[0].provider_name()
    }

    fn model_name(&self) -> String {
        self.models[0].model_name()
    }

    fn retries_itself(&self) -> bool {
        true
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        let index = self.first();
        let state =
            Streaming { me: self, request, index, attempt: 1, current: None, shown: false, done: false };
        Box::pin(futures_util::stream::unfold(state, |mut s| async move {
            loop {
                if s.done {
                    return None;
                }
                let me = s.me;
                let stream = s.current.get_or_insert_with(|| me.models[s.index].stream(s.request));
                let error = match stream.next().await {
                    Some(Ok(ModelEvent::Done(response))) => {
                        s.done = true;
                        let response = me.answered(s.index, response);
                        return Some((Ok(ModelEvent::Done(response)), s));
                    }
                    Some(Ok(event)) => {
                        s.shown = true;
                        return Some((Ok(event), s));
                    }
                    Some(Err(e)) => e,
                    None => incomplete_stream(),
                };
                s.current = None;
                let next = if s.shown { Next::Fail } else { me.next(&error, s.index, s.attempt) };
                match next {
                    Next::Retry(delay) => {
                        s.attempt += 1;
                        tokio::time::sleep(delay).await;
                    }
                    Next::Fall => {
                        me.fall(s.index, &error);
                        s.index += 1;
                        s.attempt = 1;
                    }
                    Next::Fail => {
                        s.done = true;
                        return Some((Err(error), s));
                    }
                }
            }
        }))
    }

    fn complete<'a>(&'a self, request: &'a ModelRequest) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let (mut index, mut attempt) = (self.first(), 1);
            loop {
                let error = match self.models[index].complete(request).await {
                    Ok(response) => return Ok(self.answered(index, response)),
                    Err(e) => e,
                };
                match self.next(&error, index, attempt) {
                    Next::Retry(delay) => {
                        attempt += 1;
                        tokio::time::sleep(delay).await;
                    }
                    Next::Fall => {
                        self.fall(index, &error);
                        index += 1;
                        attempt = 1;
                    }
                    Next::Fail => return Err(error),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn down_means_connection_5xx_429_529_and_nothing_else() {
        let http = |status| ModelError::Http { status, message: String::new() };
        for status in [429, 500, 502, 503, 529] {
            assert!(is_down(&http(status)), "{status}");
        }
        for status in [400, 401, 403, 404, 408, 422] {
            assert!(!is_down(&http(status)), "{status}");
        }
        assert!(is_down(&ModelError::Transport("reset".into())));
        assert!(!is_down(&ModelError::Auth("bad key".into())));
        assert!(!is_down(&ModelError::Protocol("junk".into())));
        let window = ModelError::ContextWindow { message: "too long".into(), limit: None, requested: None };
        assert!(!is_down(&window));
    }
}
