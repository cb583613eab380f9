//! Errors of the core crate.
//!
//! Two audiences: a [`RegistryError`] is for the developer wiring tools up (it fails
//! registration); a [`ToolError`] is what a handler returns, and its text is sent to the
//! model as an error result.

use std::fmt;

/// A registration or configuration mistake. Messages say what was wrong and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// A tool with this name is already registered and `replace` was not set.
    #[error("a tool named \"{name}\" is already registered; pass `replace(true)` to replace it deliberately")]
    DuplicateTool {
        /// The clashing name.
        name: String,
    },
    /// The name does not match `^[a-zA-Z0-9_-]{1,64}$`.
    #[error(
        "invalid tool name \"{name}\": use 1 to 64 ASCII letters, digits, '_' or '-' (the form every model provider accepts)"
    )]
    InvalidName {
        /// The rejected name.
        name: String,
    },
    /// The input schema is not a valid JSON Schema, or does not describe an object.
    #[error("invalid input schema for tool \"{name}\": {reason}")]
    InvalidSchema {
        /// The tool whose schema was rejected.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A named item (a built-in, a bundle, a tool) does not exist.
    #[error("unknown {kind} \"{name}\"; known: {known}")]
    Unknown {
        /// What was looked up ("tool", "built-in or bundle", ...).
        kind: &'static str,
        /// The name asked for.
        name: String,
        /// The names that do exist, comma-separated.
        known: String,
    },
    /// An option given to a registration helper is invalid.
    #[error("{0}")]
    InvalidOption(String),
}

/// A string that is not one of a fixed set of values (a permission level, a replay policy).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} \"{value}\": expected one of {expected}")]
pub struct ParsePolicyError {
    what: &'static str,
    value: String,
    expected: &'static str,
}

impl ParsePolicyError {
    pub(crate) fn new(what: &'static str, value: &str, expected: &'static str) -> Self {
        Self { what, value: value.to_owned(), expected }
    }
}

/// A failure a handler reports as repeatable. For `safe` and `idempotent` tools the
/// engine retries the call under its [`ToolRetry`](crate::ToolRetry); otherwise, or once
/// attempts run out, the message goes to the model as an error result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransientToolError {
    message: String,
}

impl TransientToolError {
    /// A transient failure with a message meant for the model.
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into() }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for TransientToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TransientToolError {}

/// What a handler returns when it fails. The text is sent to the model as an error result.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolError {
    /// A failure that is worth retrying (see [`TransientToolError`]).
    Transient(TransientToolError),
    /// A failure that is not: bad input the schema could not express, a refused operation.
    Failed(String),
    /// The call cannot go on until a person acts: logs in to a server, answers a
    /// server's question (see [`Pause`]). A handler returns it only when its context
    /// [can pause](crate::ToolContext::can_pause); elsewhere the text goes to the model
    /// as any failure's does.
    Paused(Box<Pause>),
}

/// What a call waits for when it [pauses](ToolError::Paused): a durable run stops with a
/// `needs_input` of this kind, journals no result for the call, and runs it again on
/// resume (whatever its replay policy: it did not get past the point it stopped at),
/// with the person's answer in [`ToolContext::answer`](crate::ToolContext::answer).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Pause {
    /// What the person does.
    pub kind: PauseKind,
    /// One line for the person (and the model, where the run cannot pause), naming the
    /// server and the command to run.
    pub reason: String,
    /// For a question, the JSON schema of the answer; `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<serde_json::Value>,
}

/// What a [`Pause`] waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PauseKind {
    /// A login: the server refused the credentials and they could not be refreshed. A
    /// `resume` after the login runs the call again.
    Auth,
    /// A server's question mid-call (MCP's elicitation): the answer, an object fitting
    /// [`Pause::schema`], is given with `answer`; the call runs again with it.
    Elicitation,
}

impl Pause {
    /// A pause of `kind`, told in `reason`.
    pub fn new(kind: PauseKind, reason: impl Into<String>) -> Self {
        Self { kind, reason: reason.into(), schema: None }
    }

    /// The same pause, its answer described by `schema`.
    pub fn with_schema(mut self, schema: serde_json::Value) -> Self {
        self.schema = Some(schema);
        self
    }
}

impl ToolError {
    /// A permanent failure with a message for the model.
    pub fn new(message: impl Into<String>) -> Self {
        Self::Failed(message.into())
    }

    /// A repeatable failure (see [`TransientToolError`]).
    pub fn transient(message: impl Into<String>) -> Self {
        Self::Transient(TransientToolError::new(message))
    }

    /// A call that waits for a person (see [`Pause`]).
    pub fn paused(pause: Pause) -> Self {
        Self::Paused(Box::new(pause))
    }

    /// Whether the engine may retry the call.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Transient(_))
    }

    /// The message for the model.
    pub fn message(&self) -> &str {
        match self {
            Self::Transient(t) => t.message(),
            Self::Failed(m) => m,
            Self::Paused(p) => &p.reason,
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for ToolError {}

impl From<TransientToolError> for ToolError {
    fn from(e: TransientToolError) -> Self {
        Self::Transient(e)
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        Self::Failed(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        Self::Failed(message.to_owned())
    }
}

impl From<serde_json::Error> for ToolError {
    fn from(e: serde_json::Error) -> Self {
        Self::Failed(e.to_string())
    }
}

/// An error and its sources, joined with `: `, leaving out a source whose text the chain
/// already holds: one line for a message, from errors (an HTTP client's, an I/O one)
/// whose `Display` shows only the outermost layer.
///
/// ```
/// let io = std::io::Error::new(std::io::ErrorKind::Other, "connection reset");
/// assert_eq!(harnessx_core::error::error_chain(&io), "connection reset");
/// ```
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let next = e.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = e.source();
    }
    text
}
