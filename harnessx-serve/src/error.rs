//! [`ApiError`]: an answer of 400, 401, 404, 409, 413 or 500 with `{"error": "one line"}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use harnessx_durable::{DurableError, JournalError};

/// An error answer: its status and one line saying what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, in one line.
    pub message: String,
}

impl ApiError {
    /// An error of `status` saying `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self { status, message: one_line(&message.into()) }
    }

    /// 400: the request is wrong.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// 404: no such thing.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    /// 409: not now (the run is not where the request needs it).
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, message)
    }

    /// 500: the server could not do it (a journal it cannot write).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }
}

impl From<DurableError> for ApiError {
    fn from(error: DurableError) -> Self {
        match &error {
            DurableError::Journal(JournalError::NoSuchRun(_)) | DurableError::NoClusterRun { .. } => {
                Self::not_found(error.to_string())
            }
            DurableError::Journal(JournalError::RunExists(_) | JournalError::Busy(_)) => {
                Self::conflict(error.to_string())
            }
            DurableError::NotAwaited { .. }
            | DurableError::Mismatch { .. }
            | DurableError::Completed(_)
            | DurableError::Conversation(_) => Self::conflict(error.to_string()),
            DurableError::BadAnswer(_) => Self::bad_request(error.to_string()),
            _ => Self::internal(error.to_string()),
        }
    }
}

impl From<JournalError> for ApiError {
    fn from(error: JournalError) -> Self {
        DurableError::Journal(error).into()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(serde_json::json!({ "error": self.message }))).into_response()
    }
}

/// `text` on one line: runs of whitespace (newlines included) become one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
