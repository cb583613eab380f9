//! Handlers: the code behind a tool, async or blocking.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ToolError;
use crate::tool::call::ToolOutput;
use crate::tool::decode::{decode_args, decode_json};
use crate::tool::encode::result_output;

/// A boxed, sendable future, as returned by [`AsyncToolHandler::call`].
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What a handler returns.
pub type HandlerResult = Result<ToolOutput, ToolError>;

/// Per-call information handed to a handler.
#[derive(Clone)]
pub struct ToolContext {
    call_id: Arc<str>,
    tool_name: Arc<str>,
    idempotency_key: Option<Arc<str>>,
    /// Where the call's progress is reported (the run's event sink), if anywhere.
    events: Option<Arc<dyn crate::engine::events::ToolEventSink>>,
    /// The person's answer to the question this call paused on.
    answer: Option<Arc<Value>>,
    /// Whether the call may pause for a person.
    pausable: bool,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id)
            .field("tool_name", &self.tool_name)
            .field("idempotency_key", &self.idempotency_key)
            .field("reports_progress", &self.events.is_some())
            .field("answer", &self.answer)
            .finish()
    }
}

impl ToolContext {
    /// A context for the call `call_id` of the tool `tool_name`.
    pub fn new(call_id: impl Into<Arc<str>>, tool_name: impl Into<Arc<str>>) -> Self {
        Self {
            call_id: call_id.into(),
            tool_name: tool_name.into(),
            idempotency_key: None,
            events: None,
            answer: None,
            pausable: false,
        }
    }

    /// The same context, in a run that can stop and wait for a person (see
    /// [`can_pause`](Self::can_pause)).
    pub fn pausable(mut self) -> Self {
        self.pausable = true;
        self
    }

    /// The same context, with the person's answer to the question the call paused on.
    pub fn with_answer(mut self, answer: Value) -> Self {
        self.answer = Some(Arc::new(answer));
        self
    }

    /// The person's answer to the question this call [paused](crate::ToolError::Paused)
    /// on, when a resumed durable run runs it again; `None` otherwise.
    pub fn answer(&self) -> Option<&Value> {
        self.answer.as_deref()
    }

    /// Whether the call may [pause](crate::ToolError::Paused) for a person: it runs in a
    /// durable run that journals its steps (its [`RunContext`](crate::RunContext) has a
    /// run id), which can stop, wait, and run it again. A direct run cannot, nor a call
    /// on a Restate worker: a handler fails the call instead, with a line saying what
    /// the person has to do.
    pub fn can_pause(&self) -> bool {
        self.pausable
    }

    /// The same context, reporting the call's progress to `sink`.
    pub fn with_events(mut self, sink: Arc<dyn crate::engine::events::ToolEventSink>) -> Self {
        self.events = Some(sink);
        self
    }

    /// Whether anyone follows the call's progress ([`progress`](Self::progress) reports
    /// nothing otherwise): a handler can skip working it out.
    pub fn reports_progress(&self) -> bool {
        self.events.is_some()
    }

    /// Reports how far the call got: `progress` (increasing with each report) of `total`
    /// when known, and what it is doing. A run streams it as a `tool_progress` event.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(sink) = &self.events {
            sink.on_event(&crate::engine::events::ToolEvent::Progress {
                call_id: &self.call_id,
                progress,
                total,
                message,
            });
        }
    }

    /// The same context with an idempotency key.
    pub fn with_idempotency_key(mut self, key: impl Into<Arc<str>>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// The key that stays the same when a durable runtime runs this call again after a
    /// crash (`None` in a direct run). An `idempotent` tool passes it to the system it
    /// changes (an `Idempotency-Key` header, a unique constraint) so the second run has
    /// no second effect.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    /// The provider's id of the call being executed.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The registered name of the tool being executed.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }
}

/// The call a handler runs for, borrowed: what [`ToolContext`] holds, without making one.
/// Given to [`AsyncToolHandler::call_json`], so that a handler that does not take the
/// context costs no allocation for it.
#[derive(Clone, Copy)]
pub struct CallInfo<'a> {
    call_id: &'a str,
    tool_name: &'a Arc<str>,
    idempotency_key: Option<&'a Arc<str>>,
    events: Option<&'a Arc<dyn crate::engine::events::ToolEventSink>>,
    answer: Option<&'a Arc<Value>>,
    pausable: bool,
}

impl fmt::Debug for CallInfo<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallInfo")
            .field("call_id", &self.call_id)
            .field("tool_name", &self.tool_name)
            .field("idempotency_key", &self.idempotency_key)
            .field("reports_progress", &self.events.is_some())
            .finish()
    }
}

impl<'a> CallInfo<'a> {
    /// The call `call_id` of the tool `tool_name`, with its idempotency key if it has one.
    pub fn new(call_id: &'a str, tool_name: &'a Arc<str>, idempotency_key: Option<&'a Arc<str>>) -> Self {
        Self { call_id, tool_name, idempotency_key, events: None, answer: None, pausable: false }
    }

    /// The same call, in a run that can pause for a person when `pausable` (see
    /// [`ToolContext::can_pause`]), with the person's `answer` to the question it paused
    /// on before.
    pub fn with_pause(mut self, pausable: bool, answer: Option<&'a Arc<Value>>) -> Self {
        self.pausable = pausable;
        self.answer = answer;
        self
    }

    /// The same call, its progress reported to `events` (the run's event sink).
    pub fn with_events(mut self, events: Option<&'a Arc<dyn crate::engine::events::ToolEventSink>>) -> Self {
        self.events = events;
        self
    }

    /// The call's context, for a handler that takes one.
    pub fn to_context(&self) -> ToolContext {
        ToolContext {
            call_id: Arc::from(self.call_id),
            tool_name: self.tool_name.clone(),
            idempotency_key: self.idempotency_key.cloned(),
            events: self.events.cloned(),
            answer: self.answer.cloned(),
            pausable: self.pausable,
        }
    }

    /// The provider's id of the call.
    pub fn call_id(&self) -> &'a str {
        self.call_id
    }

    /// The registered name of the tool.
    pub fn tool_name(&self) -> &'a str {
        self.tool_name
    }
}

/// An async handler. Its future runs on the async runtime; it is dropped (cancelled) when
/// the call times out.
///
/// `Any` is a supertrait so that a crate can recognise its own handler type in a
/// registered definition (`&*arc as &dyn Any`, then `downcast_ref`), as the agent
/// recognises the built-in `write_todos`.
pub trait AsyncToolHandler: Any + Send + Sync {
    /// Runs the tool on validated arguments.
    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<HandlerResult>;

    /// Whether [`call_json`](Self::call_json) can run the tool (`false`, the default: the
    /// engine never asks it).
    fn takes_json(&self) -> bool {
        false
    }

    /// Runs the tool on argument text the engine already checked against the tool's input
    /// schema, decoding it straight from the text. The engine does so only for flat schemas
    /// (an object of scalar arguments, as `#[tool]` writes for numbers, strings and
    /// booleans), and saves the parse into a `Value`.
    ///
    /// `None` (the default) runs nothing: the engine then parses the text and calls
    /// [`call`](Self::call). A handler answers `None` as well when the text does not
    /// decode, so that the error the model reads is the one `call` gives. The typed
    /// constructors ([`ToolHandler::typed_async`]) implement it.
    fn call_json(&self, args: &str, call: CallInfo<'_>) -> Option<BoxFuture<HandlerResult>> {
        let _ = (args, call);
        None
    }
}

/// A blocking (synchronous) handler. It runs on a blocking thread, off the async runtime;
/// a timeout stops waiting for it but cannot stop the thread. `Any` is a supertrait for
/// the same reason as [`AsyncToolHandler`]'s.
pub trait BlockingToolHandler: Any + Send + Sync {
    /// Runs the tool on validated arguments.
    fn call(&self, args: Value, ctx: &ToolContext) -> HandlerResult;

    /// Whether [`call_json`](Self::call_json) can run the tool (see
    /// [`AsyncToolHandler::takes_json`]).
    fn takes_json(&self) -> bool {
        false
    }

    /// Runs the tool on checked argument text (see [`AsyncToolHandler::call_json`]);
    /// `None` (the default) without running anything, and the engine calls
    /// [`call`](Self::call) on the parsed text instead.
    fn call_json(&self, args: &str, ctx: &ToolContext) -> Option<HandlerResult> {
        let _ = (args, ctx);
        None
    }
}

/// The code behind a tool. Cloning shares the handler.
#[derive(Clone)]
pub enum ToolHandler {
    /// Runs as a future on the async runtime.
    Async(Arc<dyn AsyncToolHandler>),
    /// Runs on a blocking thread.
    Blocking(Arc<dyn BlockingToolHandler>),
}

impl fmt::Debug for ToolHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Async(_) => "ToolHandler::Async(..)",
            Self::Blocking(_) => "ToolHandler::Blocking(..)",
        })
    }
}

struct AsyncFn<F>(F);

impl<F, Fut> AsyncToolHandler for AsyncFn<F>
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = HandlerResult> + Send + 'static,
{
    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<HandlerResult> {
        Box::pin((self.0)(args, ctx))
    }
}

struct BlockingFn<F>(F);

impl<F> BlockingToolHandler for BlockingFn<F>
where
    F: Fn(Value, &ToolContext) -> HandlerResult + Send + Sync + 'static,
{
    fn call(&self, args: Value, ctx: &ToolContext) -> HandlerResult {
        (self.0)(args, ctx)
    }
}

/// [`ToolHandler::typed_async`]'s handler: `A` decoded from the value or, for a flat
/// schema, straight from the text.
struct TypedAsync<A, F>(F, PhantomData<fn() -> A>);

impl<A, T, E, F, Fut> TypedAsync<A, F>
where
    T: crate::content::IntoToolOutput,
    E: fmt::Display + 'static,
    F: Fn(A) -> Fut,
    Fut: Future<Output = Result<T, E>> + Send + 'static,
{
    fn run(&self, args: A) -> BoxFuture<HandlerResult> {
        let fut = (self.0)(args);
        Box::pin(async move { result_output(fut.await) })
    }
}

impl<A, T, E, F, Fut> AsyncToolHandler for TypedAsync<A, F>
where
    A: DeserializeOwned + Send + 'static,
    T: crate::content::IntoToolOutput,
    E: fmt::Display + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, E>> + Send + 'static,
{
    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<HandlerResult> {
        match decode_args::<A>(args, &ctx) {
            Ok(args) => self.run(args),
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }

    fn takes_json(&self) -> bool {
        true
    }

    fn call_json(&self, args: &str, _call: CallInfo<'_>) -> Option<BoxFuture<HandlerResult>> {
        match decode_json::<A>(args) {
            Some(args) => Some(self.run(args)),
            None => None,
        }
    }
}

/// [`ToolHandler::typed_blocking`]'s handler (see [`TypedAsync`]).
struct TypedBlocking<A, F>(F, PhantomData<fn() -> A>);

impl<A, T, E, F> BlockingToolHandler for TypedBlocking<A, F>
where
    A: DeserializeOwned + 'static,
    T: crate::content::IntoToolOutput,
    E: fmt::Display + 'static,
    F: Fn(A) -> Result<T, E> + Send + Sync + 'static,
{
    fn call(&self, args: Value, ctx: &ToolContext) -> HandlerResult {
        match decode_args::<A>(args, ctx) {
            Ok(args) => result_output((self.0)(args)),
            Err(e) => Err(e),
        }
    }

    fn takes_json(&self) -> bool {
        true
    }

    fn call_json(&self, args: &str, _ctx: &ToolContext) -> Option<HandlerResult> {
        decode_json::<A>(args).map(|args| result_output((self.0)(args)))
    }
}

impl ToolHandler {
    /// An async handler over raw JSON arguments.
    pub fn from_async<F, Fut>(f: F) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult> + Send + 'static,
    {
        Self::Async(Arc::new(AsyncFn(f)))
    }

    /// A blocking handler over raw JSON arguments.
    pub fn from_blocking<F>(f: F) -> Self
    where
        F: Fn(Value, &ToolContext) -> HandlerResult + Send + Sync + 'static,
    {
        Self::Blocking(Arc::new(BlockingFn(f)))
    }

    /// An async handler whose arguments deserialize into `A` and whose result serializes
    /// (strings pass through as text; errors go to the model). Decoding and the result
    /// are those of `#[tool]` functions ([`decode_args`], [`result_output`]): the same
    /// mistake in the arguments gives the same text, and a
    /// [`TransientToolError`](crate::TransientToolError) asks for a retry.
    ///
    /// ```
    /// # use harnessx_core::ToolHandler;
    /// #[derive(serde::Deserialize)]
    /// struct Add { a: i64, b: i64 }
    /// let handler = ToolHandler::typed_async(|Add { a, b }| async move { Ok::<_, String>(a + b) });
    /// ```
    pub fn typed_async<A, T, E, F, Fut>(f: F) -> Self
    where
        A: DeserializeOwned + Send + 'static,
        T: crate::content::IntoToolOutput,
        E: fmt::Display + 'static,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
    {
        Self::Async(Arc::new(TypedAsync(f, PhantomData)))
    }

    /// A blocking handler whose arguments deserialize into `A` (see [`typed_async`](Self::typed_async)).
    pub fn typed_blocking<A, T, E, F>(f: F) -> Self
    where
        A: DeserializeOwned + 'static,
        T: crate::content::IntoToolOutput,
        E: fmt::Display + 'static,
        F: Fn(A) -> Result<T, E> + Send + Sync + 'static,
    {
        Self::Blocking(Arc::new(TypedBlocking(f, PhantomData)))
    }

    /// Whether two handles share one handler (the same `Arc`).
    pub fn same_handler(&self, other: &ToolHandler) -> bool {
        match (self, other) {
            (Self::Async(a), Self::Async(b)) => Arc::ptr_eq(a, b),
            (Self::Blocking(a), Self::Blocking(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// The handler as `Any`, to recognise a handler type of one's own
    /// (`handler.as_any().downcast_ref::<MyHandler>()`).
    pub fn as_any(&self) -> &dyn Any {
        match self {
            Self::Async(h) => &**h as &dyn Any,
            Self::Blocking(h) => &**h as &dyn Any,
        }
    }

    /// Whether the handler can take checked argument text ([`AsyncToolHandler::call_json`]).
    pub(crate) fn takes_json(&self) -> bool {
        match self {
            Self::Async(h) => h.takes_json(),
            Self::Blocking(h) => h.takes_json(),
        }
    }

    /// Whether the handler runs on a blocking thread.
    pub fn is_blocking(&self) -> bool {
        matches!(self, Self::Blocking(_))
    }
}
