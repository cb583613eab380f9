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

    /// Whether the engine may retry the call.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Transient(_))
    }

    /// The message for the model.
    pub fn message(&self) -> &str {
        match self {
            Self::Transient(t) => t.message(),
            Self::Failed(m) => m,
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
