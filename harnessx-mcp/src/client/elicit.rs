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

/// A call in flight, as its server's questions see it: its context (whether its run can
/// pause; the answers a person gave to its questions before), how many of those answers
/// its questions took so far, and the question it paused on.
pub(crate) struct Asked {
    ctx: harnessx_core::ToolContext,
    used: std::sync::atomic::AtomicUsize,
    paused: std::sync::Mutex<Option<harnessx_core::Pause>>,
}

impl Asked {
    pub(super) fn new(ctx: harnessx_core::ToolContext) -> Self {
        Self { ctx, used: Default::default(), paused: Default::default() }
    }

    /// The question the call paused on, if it did.
    pub(super) fn take_pause(&self) -> Option<harnessx_core::Pause> {
        self.paused.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// The answer a person gave before to the next question of the call (a resumed run's),
    /// when it fits `schema`.
    fn recorded(&self, schema: &Value) -> Option<rmcp::model::ElicitResult> {
        use rmcp::model::{ElicitResult, ElicitationAction};
        let answers = self.ctx.answer()?.as_array()?;
        let given = answers.get(self.used.fetch_add(1, std::sync::atomic::Ordering::SeqCst))?;
        match given.get("action").and_then(Value::as_str)? {
            "decline" => Some(ElicitResult::new(ElicitationAction::Decline)),
            "cancel" => Some(ElicitResult::new(ElicitationAction::Cancel)),
            "accept" => {
                let content = given.get("content")?.clone();
                // Checked against this question's schema: a server asking something else
                // on the second run asks again.
                fits(schema, &content)
                    .is_ok()
                    .then(|| ElicitResult::new(ElicitationAction::Accept).with_content(content))
            }
            _ => None,
        }
    }
}

/// `Ok` when `content` fits the requested `schema`; else one line naming the field (or
/// saying why the schema cannot be used).
fn fits(schema: &Value, content: &Value) -> Result<(), String> {
    let checked = harnessx_core::schema::ValueSchema::compile(schema)
        .map_err(|e| format!("the requested schema: {e}"))?;
    checked.check("the answer", content).map_or(Ok(()), Err)
}

/// The most levels an answer's schema may nest: MCP's form asks for an object of
/// primitive fields (two levels, three with an enum's list).
const MAX_SCHEMA_DEPTH: usize = 8;

/// The answer to send for `request`: from `elicitor` when there is one; else, for a
/// call whose run can pause (`call`), the answer a person gave to it before, or a pause
/// (the call ends, and the run waits for the answer); else a decline.
pub(super) async fn answer(
    elicitor: Option<&Elicitor>,
    server: &str,
    request: rmcp::model::ElicitRequestParams,
    call: Option<&Asked>,
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
    if harnessx_core::depth::value_too_deep(&schema, MAX_SCHEMA_DEPTH) {
        tracing::warn!(
            server,
            "an elicitation was declined: its schema nests more than {MAX_SCHEMA_DEPTH} levels"
        );
        return Err(rmcp::ErrorData::invalid_params(
            format!(
                "the requested schema nests more than {MAX_SCHEMA_DEPTH} levels; MCP asks for an object of primitive fields"
            ),
            None,
        ));
    }
    let Some(elicitor) = elicitor else {
        if let Some(call) = call.filter(|c| c.ctx.can_pause()) {
            if let Some(given) = call.recorded(&schema) {
                return Ok(given);
            }
            // The run waits for a person: the call ends here (the server told the
            // operation was cancelled) and runs again once they answered.
            let reason = format!("the MCP server `{server}` asks: {message}");
            let pause =
                harnessx_core::Pause::new(harnessx_core::PauseKind::Elicitation, reason).with_schema(schema);
            *call.paused.lock().unwrap_or_else(|e| e.into_inner()) = Some(pause);
            return Ok(rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Cancel));
        }
        tracing::debug!(server, "an elicitation was declined: nobody to ask");
        return decline();
    };
    let question = Elicitation { server: server.to_owned(), message, schema: schema.clone() };
    match elicitor.ask(question).await {
        ElicitAnswer::Accept(content) => {
            fits(&schema, &content).map_err(|e| rmcp::ErrorData::invalid_params(e, None))?;
            Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
        }
        ElicitAnswer::Decline => decline(),
        ElicitAnswer::Cancel => Ok(ElicitResult::new(ElicitationAction::Cancel)),
    }
}
