//! A server's questions mid-call (MCP's `elicitation/create`, form mode): put to whoever
//! the server's [`McpOptions::elicit`](crate::McpOptions) names; with nobody to ask, the
//! answer is a decline, never a wait. An accepted answer is checked against the schema
//! the server asked for before it is sent.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use harnessx_core::BoxFuture;
use serde_json::Value;

/// A server's question.
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    /// The server's command line or URL.
    pub server: String,
    /// What it asks, for a person.
    pub message: String,
    /// The answer's JSON schema (MCP's restricted form: an object of primitive fields).
    pub schema: Value,
}

/// The answer to an [`Elicitation`].
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitAnswer {
    /// The person answered: an object fitting the schema.
    Accept(Value),
    /// The person would rather not answer; the call goes on without it.
    Decline,
    /// The person stopped the whole operation.
    Cancel,
}

/// Who answers a server's questions: an async function from the question to the answer.
#[derive(Clone)]
pub struct Elicitor(Arc<dyn Fn(Elicitation) -> BoxFuture<ElicitAnswer> + Send + Sync>);

impl Elicitor {
    /// Answers with `ask` (put the question to a person: a terminal, a web page).
    pub fn new<F, Fut>(ask: F) -> Self
    where
        F: Fn(Elicitation) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ElicitAnswer> + Send + 'static,
    {
        Self(Arc::new(move |question| Box::pin(ask(question))))
    }

    pub(super) async fn ask(&self, question: Elicitation) -> ElicitAnswer {
        (self.0)(question).await
    }
}

impl fmt::Debug for Elicitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Elicitor(..)")
    }
}

/// The answer to send for `request`, from `elicitor` (a decline without one).
pub(super) async fn answer(
    elicitor: Option<&Elicitor>,
    server: &str,
    request: rmcp::model::ElicitRequestParams,
) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
    use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
    let decline = || Ok(ElicitResult::new(ElicitationAction::Decline));
    let (message, schema) = match request {
        ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } => {
            (message, serde_json::to_value(&requested_schema).unwrap_or(Value::Null))
        }
        // A URL to open: not asked here.
        _ => {
            tracing::debug!(server, "a URL elicitation was declined");
            return decline();
        }
    };
    let Some(elicitor) = elicitor else {
        tracing::debug!(server, "an elicitation was declined: nobody to ask");
        return decline();
    };
    let question = Elicitation { server: server.to_owned(), message, schema: schema.clone() };
    match elicitor.ask(question).await {
        ElicitAnswer::Accept(content) => {
            let checked = harnessx_core::schema::ValueSchema::compile(&schema)
                .map_err(|e| rmcp::ErrorData::invalid_params(format!("the requested schema: {e}"), None))?;
            if let Some(error) = checked.check("the answer", &content) {
                return Err(rmcp::ErrorData::invalid_params(error, None));
            }
            Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
        }
        ElicitAnswer::Decline => decline(),
        ElicitAnswer::Cancel => Ok(ElicitResult::new(ElicitationAction::Cancel)),
    }
}
