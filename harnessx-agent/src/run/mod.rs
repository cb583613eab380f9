//! Running an agent: [`Agent::run`], [`Agent::run_stream`], and the one loop every
//! backend drives ([`engine`]), with its step seam ([`steps`]), the recovery rules of
//! durable runs ([`recovery`]) and the state a run reports ([`state`]).

mod batch;
pub mod engine;
mod hook_points;
pub mod recovery;
pub mod state;
pub mod steps;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use futures_util::{Stream, StreamExt};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tracing::Instrument;

use crate::model::{Message, ModelError, ModelEvent, ModelRequest, ModelResponse};
use crate::output::Output;
use crate::{Agent, AgentError, AgentEvent, Prompt, RunResult, spans};
use harnessx_core::ToolCall;
use harnessx_core::ToolEvent;

/// Where a run sends its [`AgentEvent`]s.
pub type Events = UnboundedSender<AgentEvent>;

impl Agent {
    /// Runs the agent on a prompt until the model gives a final answer.
    pub async fn run(&self, prompt: impl Into<Prompt>) -> Result<RunResult, AgentError> {
        self.run_with_history(Vec::new(), prompt).await
    }

    /// Continues a conversation (e.g. `RunResult::messages` of an earlier run).
    pub async fn run_with_history(
        &self,
        history: Vec<Message>,
        prompt: impl Into<Prompt>,
    ) -> Result<RunResult, AgentError> {
        self.run_inner(history, prompt.into(), None, None).await
    }

    /// Runs the agent until it answers with a `T`: its answer must fit `T`'s JSON
    /// Schema (from `schemars`) and decode into `T`, and a refused answer is asked again
    /// with the error, up to [`AgentConfig::output_retries`](crate::AgentConfig::output_retries)
    /// times (in [`AgentConfig::output_mode`](crate::AgentConfig::output_mode)). See
    /// `docs/output.md`.
    ///
    /// ```
    /// use harnessx_agent::Agent;
    /// use harnessx_agent::model::TestModel;
    /// use harnessx_core::schemars::{self, JsonSchema};
    ///
    /// #[derive(serde::Deserialize, JsonSchema)]
    /// struct City {
    ///     name: String,
    ///     population: u64,
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let agent = Agent::builder().model(TestModel::new()).build().unwrap();
    /// // The test model calls `final_result` with a value made from the schema.
    /// let city: City = agent.run_typed("The largest city of France?").await.unwrap();
    /// assert_eq!((city.name.as_str(), city.population), ("a", 0));
    /// # }
    /// ```
    pub async fn run_typed<T>(&self, prompt: impl Into<Prompt>) -> Result<T, AgentError>
    where
        T: harnessx_core::schemars::JsonSchema + serde::de::DeserializeOwned + 'static,
    {
        let result = self.run_with_output(prompt, Output::of::<T>()).await?;
        Ok(result.value_as::<T>()?)
    }

    /// Runs the agent until it answers with a value `output`'s schema admits (the untyped
    /// form of [`run_typed`](Self::run_typed), or a typed one with its own mode and
    /// retries): the result's [`value`](RunResult::value) is the answer.
    pub async fn run_with_output(
        &self,
        prompt: impl Into<Prompt>,
        output: Output,
    ) -> Result<RunResult, AgentError> {
        self.run_inner(Vec::new(), prompt.into(), None, Some(output)).await
    }

    /// [`run_with_output`](Self::run_with_output), streaming the run's events as
    /// [`run_stream`](Self::run_stream) does; `run_end` carries the answer as its `value`.
    pub fn run_stream_with_output(&self, prompt: impl Into<Prompt>, output: Output) -> RunStream<'_> {
        self.stream_inner(prompt.into(), Some(output))
    }

    /// Runs the agent and streams its events: `model_request`, text deltas,
    /// `tool_call_start` (in call order), `tool_call_end`, and finally `run_end` (or
    /// `error`).
    pub fn run_stream(&self, prompt: impl Into<Prompt>) -> RunStream<'_> {
        self.stream_inner(prompt.into(), None)
    }

    fn stream_inner(&self, prompt: Prompt, output: Option<Output>) -> RunStream<'_> {
        let (tx, rx) = unbounded_channel();
        RunStream {
            run: Some(Box::pin(self.run_inner(Vec::new(), prompt, Some(tx), output))),
            events: rx,
            result: None,
            tail: None,
        }
    }

    async fn run_inner(
        &self,
        history: Vec<Message>,
        prompt: Prompt,
        events: Option<Events>,
        output: Option<Output>,
    ) -> Result<RunResult, AgentError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(AgentError::Closed);
        }
        self.model.clone().ok_or(AgentError::NoModel)?;
        self.check_tool_choice()?;
        let span = spans::invoke_agent(self);
        let Prompt { text: prompt, parts } = prompt;
        let start = engine::Start { history, prompt, parts, limits: None, output, price: None };
        let outcome = engine::drive(self, &mut steps::Direct, start, &self.permissions, events.as_ref())
            .instrument(span.clone())
            .await;
        spans::record_run(&span, &outcome);
        // The loop told the hooks of every state it returned; a failure is told here.
        if let Err(e) = &outcome {
            self.run_failed_hooks(None, &e.to_string()).await;
        }
        outcome
    }

    /// The model's name, for events (empty without a model).
    pub(crate) fn model_name(&self) -> String {
        self.model.as_ref().map(|m| m.name()).unwrap_or_default()
    }

    /// One model request of turn `turn` with the agent's retry policy, streamed to
    /// `events` when the agent streams. For a [`Steps`](steps::Steps) backend's
    /// [`response`](steps::Steps::response).
    pub async fn request_turn(
        &self,
        request: &ModelRequest,
        events: Option<&Events>,
        turn: u32,
    ) -> Result<ModelResponse, AgentError> {
        if self.is_closed() {
            return Err(AgentError::Closed);
        }
        let model = self.model.clone().ok_or(AgentError::NoModel)?;
        Ok(self.request_with_retry(&*model, request, events, turn).await?)
    }

    /// The summarising request of a compaction before turn `turn`, to the
    /// [`Summarizer`](crate::Summarizer) of [`AgentConfig::context`](crate::AgentConfig::context)
    /// (the agent's model by default), with the agent's retry policy. For a
    /// [`Steps`](steps::Steps) backend's [`summary`](steps::Steps::summary).
    pub async fn summarize(&self, request: &ModelRequest, turn: u32) -> Result<ModelResponse, AgentError> {
        if self.is_closed() {
            return Err(AgentError::Closed);
        }
        let model = match &self.config.context.summarizer {
            crate::Summarizer::Model(model) => model.clone(),
            crate::Summarizer::Agent => self.model.clone().ok_or(AgentError::NoModel)?,
        };
        Ok(self.request_with_retry(&*model, request, None, turn).await?)
    }

    /// One model request of turn `turn`, retried per the agent's policy; each attempt
    /// has its own `chat {model}` span.
    pub(crate) async fn request_with_retry(
        &self,
        model: &dyn crate::model::Model,
        request: &ModelRequest,
        events: Option<&Events>,
        turn: u32,
    ) -> Result<ModelResponse, ModelError> {
        let retry = self.config.model_retry;
        // A model that retries itself (a fallback model, per model) is asked once.
        let max_attempts = if model.retries_itself() { 1 } else { retry.max_attempts };
        let mut attempt = 1;
        loop {
            let span = spans::chat(model, request, turn);
            let attempt_once = async {
                match events {
                    Some(tx) if self.config.stream => stream_once(model, request, tx).await,
                    _ => (model.complete(request).await, false),
                }
            };
            let attempt_once = async {
                match events {
                    // A fallback model's switches are events of the run.
                    Some(tx) => {
                        let tx = tx.clone();
                        let notice = move |f: crate::model::Fallback| {
                            let _ = tx.send(AgentEvent::ModelFallback {
                                from: f.from,
                                to: f.to,
                                reason: f.reason,
                            });
                        };
                        crate::model::fallback::scope(std::sync::Arc::new(notice), attempt_once).await
                    }
                    None => attempt_once.await,
                }
            };
            let (outcome, streamed) = attempt_once.instrument(span.clone()).await;
            match &outcome {
                Ok(response) => spans::record_response(&span, response),
                Err(e) => spans::record_model_error(&span, e),
            }
            drop(span);
            match outcome {
                Err(e) if e.is_retryable() && !streamed && attempt < max_attempts => {
                    attempt += 1;
                    tracing::warn!(error = %e, attempt, "retrying model request");
                    tokio::time::sleep(retry.delay_before(attempt)).await;
                }
                other => return other,
            }
        }
    }
}

/// Streams one response, forwarding text deltas. Returns whether any text was forwarded
/// (a request that already showed text is not retried).
async fn stream_once(
    model: &dyn crate::model::Model,
    request: &ModelRequest,
    tx: &Events,
) -> (Result<ModelResponse, ModelError>, bool) {
    let mut stream = model.stream(request);
    let mut streamed = false;
    while let Some(event) = stream.next().await {
        match event {
            Ok(ModelEvent::TextDelta(text)) => {
                streamed = true;
                let _ = tx.send(AgentEvent::TextDelta { text });
            }
            Ok(ModelEvent::ReasoningDelta(text)) => {
                let _ = tx.send(AgentEvent::ReasoningDelta { text });
            }
            Ok(ModelEvent::Done(response)) => return (Ok(response), streamed),
            Ok(_) => {}
            Err(e) => return (Err(e), streamed),
        }
    }
    (Err(crate::model::incomplete_stream()), streamed)
}

/// Gives calls without an id one (`call_{turn}_{index}`), so every result pairs with
/// its call. Deterministic, so a durable runtime replaying a response gets the same ids.
pub fn call_ids_for_turn(mut calls: Vec<ToolCall>, turn: u32) -> Vec<ToolCall> {
    for (i, call) in calls.iter_mut().enumerate() {
        if call.id.is_empty() {
            call.id = format!("call_{turn}_{i}");
        }
    }
    calls
}

/// The form of a call kept in history: arguments that are not a JSON object (garbled, cut
/// off, or nested more than [`MAX_JSON_DEPTH`](harnessx_core::MAX_JSON_DEPTH) levels deep)
/// become `{}`, so the next request is one the provider accepts; the call's error result
/// still pairs with its id.
pub fn history_safe(call: &ToolCall) -> ToolCall {
    if harnessx_core::depth::text_too_deep(&call.arguments, harnessx_core::MAX_JSON_DEPTH) {
        return ToolCall::new(&call.id, &call.name, "{}");
    }
    let valid = matches!(
        serde_json::from_str::<serde_json::Value>(&call.arguments),
        Ok(serde_json::Value::Object(_))
    );
    if valid { call.clone() } else { ToolCall::new(&call.id, &call.name, "{}") }
}

pub(crate) fn agent_event(event: &ToolEvent<'_>) -> Option<AgentEvent> {
    Some(match *event {
        ToolEvent::CallStart { index, call, tool } => AgentEvent::ToolCallStart {
            index,
            call_id: call.id.clone(),
            name: call.name.clone(),
            tool: tool.map(str::to_owned),
            arguments: call.arguments.clone(),
        },
        ToolEvent::CallEnd { index, result } => AgentEvent::ToolCallEnd {
            index,
            call_id: result.call_id.clone(),
            name: result.name.clone(),
            is_error: result.is_error,
            content: result.content.clone(),
            parts: result.parts.clone(),
        },
        ToolEvent::Progress { call_id, progress, total, message } => AgentEvent::ToolProgress {
            call_id: call_id.to_owned(),
            progress,
            total,
            message: message.map(str::to_owned),
        },
        ToolEvent::Hook { call_id, hook, decision } => AgentEvent::Hook {
            hook: hook.to_owned(),
            call_id: Some(call_id.to_owned()),
            decision: decision.to_owned(),
        },
        // Engine events the agent does not stream (yet).
        _ => return None,
    })
}

type RunFuture<'a> = Pin<Box<dyn Future<Output = Result<RunResult, AgentError>> + Send + 'a>>;

/// The stream of [`AgentEvent`]s of one run. Ends after `run_end` or `error`; the
/// [`RunResult`] is then available from [`into_result`](RunStream::into_result).
pub struct RunStream<'a> {
    run: Option<RunFuture<'a>>,
    events: UnboundedReceiver<AgentEvent>,
    result: Option<Result<RunResult, AgentError>>,
    tail: Option<AgentEvent>,
}

impl std::fmt::Debug for RunStream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunStream").field("running", &self.run.is_some()).finish_non_exhaustive()
    }
}

impl RunStream<'_> {
    /// The run's result, once the stream has ended.
    pub fn into_result(self) -> Option<Result<RunResult, AgentError>> {
        self.result
    }
}

impl Stream for RunStream<'_> {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        let this = &mut *self;
        loop {
            // Every event is sent from inside the run future's poll, so checking the
            // channel around each poll sees them all, in order.
            if let Ok(event) = this.events.try_recv() {
                return Poll::Ready(Some(event));
            }
            let Some(run) = this.run.as_mut() else {
                return Poll::Ready(this.tail.take());
            };
            match run.as_mut().poll(cx) {
                Poll::Pending => return Poll::Ready(this.events.try_recv().ok()).filter_pending(),
                Poll::Ready(result) => {
                    this.run = None;
                    this.tail = result.as_ref().err().map(|e| AgentEvent::Error { message: e.to_string() });
                    this.result = Some(result);
                }
            }
        }
    }
}

trait FilterPending {
    fn filter_pending(self) -> Self;
}

impl FilterPending for Poll<Option<AgentEvent>> {
    /// `Ready(None)` from an empty channel while the run goes on means "not yet".
    fn filter_pending(self) -> Self {
        match self {
            Poll::Ready(None) => Poll::Pending,
            other => other,
        }
    }
}
