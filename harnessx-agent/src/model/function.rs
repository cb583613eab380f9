//! [`FunctionModel`]: a model driven by a closure, for tests and benchmarks.

use std::fmt;

use futures_util::stream::{self, BoxStream, StreamExt};

use crate::model::{Model, ModelError, ModelEvent, ModelRequest, ModelResponse, response_to_events};

type Respond = dyn Fn(&ModelRequest) -> Result<ModelResponse, ModelError> + Send + Sync;

/// A model whose every response comes from a closure over the request.
///
/// ```
/// use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
/// use harnessx_core::ToolCall;
///
/// let model = FunctionModel::new(|request| {
///     Ok(match request.messages.last() {
///         Some(Message::Tool { content, .. }) => ModelResponse::text(format!("The tool said {content}")),
///         _ => ModelResponse::tool_calls(vec![ToolCall::new("c1", "add", r#"{"a":1,"b":2}"#)]),
///     })
/// });
/// ```
pub struct FunctionModel {
    name: String,
    respond: Box<Respond>,
}

impl fmt::Debug for FunctionModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FunctionModel").field("name", &self.name).finish_non_exhaustive()
    }
}

impl FunctionModel {
    /// A model that answers each request with `respond(request)`.
    pub fn new(
        respond: impl Fn(&ModelRequest) -> Result<ModelResponse, ModelError> + Send + Sync + 'static,
    ) -> Self {
        Self { name: "function".into(), respond: Box::new(respond) }
    }

    /// Sets the name shown in events and logs.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

impl Model for FunctionModel {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        match (self.respond)(request) {
            Ok(response) => stream::iter(response_to_events(response).into_iter().map(Ok)).boxed(),
            Err(e) => stream::once(async move { Err(e) }).boxed(),
        }
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> futures_util::future::BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(std::future::ready((self.respond)(request)))
    }
}
