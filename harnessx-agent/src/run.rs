//! The loop: request, stream, run the tools, repeat until a final answer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use futures_util::{Stream, StreamExt};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tracing::Instrument;

use crate::model::{Message, Model, ModelError, ModelEvent, ModelRequest, ModelResponse, Usage};
use crate::{Agent, AgentError, AgentEvent, RunResult, spans};
use harnessx_core::RunContext;
use harnessx_core::ToolCall;
use harnessx_core::ToolEvent;

type Events = UnboundedSender<AgentEvent>;

impl Agent {
    /// Runs the agent on a prompt until the model gives a final answer.
    pub async fn run(&self, prompt: impl Into<String>) -> Result<RunResult, AgentError> {
        self.run_with_history(Vec::new(), prompt).await
    }

    /// Continues a conversation (e.g. `RunResult::messages` of an earlier run).
    pub async fn run_with_history(
        &self,
        history: Vec<Message>,
        prompt: impl Into<String>,
    ) -> Result<RunResult, AgentError> {
        self.run_inner(history, prompt.into(), None).await
    }

    /// Runs the agent and streams its events: `model_request`, text deltas,
    /// `tool_call_start` (in call order), `tool_call_end`, and finally `run_end` (or
    /// `error`).
    pub fn run_stream(&self, prompt: impl Into<String>) -> RunStream<'_> {
        let (tx, rx) = unbounded_channel();
        let prompt = prompt.into();
        RunStream {
            run: Some(Box::pin(self.run_inner(Vec::new(), prompt, Some(tx)))),
            events: rx,
            result: None,
            tail: None,
        }
    }

    async fn run_inner(
        &self,
        history: Vec<Message>,
        prompt: String,
        events: Option<Events>,
    ) -> Result<RunResult, AgentError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(AgentError::Closed);
        }
        let model = self.model.clone().ok_or(AgentError::NoModel)?;
        self.check_tool_choice()?;
        let span = spans::invoke_agent(self);
        let outcome = self.run_loop(model, history, prompt, events).instrument(span.clone()).await;
        spans::record_run(&span, &outcome);
        outcome
    }

    /// The loop of [`run_inner`](Self::run_inner), inside the run's `invoke_agent` span.
    async fn run_loop(
        &self,
        model: Arc<dyn Model>,
        history: Vec<Message>,
        prompt: String,
        events: Option<Events>,
    ) -> Result<RunResult, AgentError> {
        let planning = self.planning();
        if let Some(p) = &planning
            && history.is_empty()
        {
            p.clear();
        }
        let mut revision = self.registry.revision();
        let mut request = self.first_request(history, prompt);
        let mut ctx = RunContext::new().with_permissions(self.permissions.clone());
        if let Some(tx) = &events {
            let tx = tx.clone();
            ctx = ctx.with_events(Arc::new(move |event: &ToolEvent<'_>| {
                if let Some(event) = agent_event(event) {
                    let _ = tx.send(event);
                }
            }));
        }
        let mut usage = Usage::default();
        for turn in 1..=self.config.max_turns {
            if let Some(p) = &planning {
                crate::planning::attach(p, &mut request.messages);
            }
            // Tools registered or removed since the last request (an MCP server's
            // `tools/list_changed`): the model sees the new set from this turn on.
            let now = self.registry.revision();
            if now != revision {
                revision = now;
                request.tools = self.registry.get_tool_params();
            }
            if let Some(tx) = &events {
                let _ = tx.send(AgentEvent::ModelRequest { turn, model: model.name() });
            }
            let response = self.request_with_retry(&*model, &request, events.as_ref(), turn).await?;
            usage += response.usage;
            usage.requests += 1;
            let calls = call_ids_for_turn(response.tool_calls, turn);
            if calls.is_empty() {
                request.messages.push(Message::assistant(response.content.clone(), Vec::new()));
                if let Some(tx) = &events {
                    let _ =
                        tx.send(AgentEvent::RunEnd { output: response.content.clone(), usage, turns: turn });
                }
                return Ok(RunResult {
                    output: response.content,
                    messages: request.messages,
                    usage,
                    turns: turn,
                    finish_reason: response.finish_reason,
                    needs_input: None,
                });
            }
            request
                .messages
                .push(Message::assistant(response.content, calls.iter().map(history_safe).collect()));
            let results = self.registry.execute_batch(&calls, &ctx).await;
            request.messages.extend(results.iter().map(Message::tool));
            self.after_tool_calls(&mut request);
        }
        Err(AgentError::MaxTurns(self.config.max_turns))
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
        let mut attempt = 1;
        loop {
            let span = spans::chat(model, request, turn);
            let attempt_once = async {
                match events {
                    Some(tx) if self.config.stream => stream_once(model, request, tx).await,
                    _ => (model.complete(request).await, false),
                }
            };
            let (outcome, streamed) = attempt_once.instrument(span.clone()).await;
            match &outcome {
                Ok(response) => spans::record_response(&span, response),
                Err(e) => spans::record_model_error(&span, e),
            }
            drop(span);
            match outcome {
                Err(e) if e.is_retryable() && !streamed && attempt < retry.max_attempts => {
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

fn agent_event(event: &ToolEvent<'_>) -> Option<AgentEvent> {
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
