//! The handlers of `/v1`: JSON in and out, errors as `{"error": "one line"}`.

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use harnessx_agent::{Prompt, RunLimits, RunState};
use harnessx_core::ApprovalDecision;
use harnessx_core::content::{Part, sniff, sniff_audio};
use harnessx_durable::{JournalStore, RunRecord};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::runs::{Drive, Runs};
use crate::{Backend, Served};

/// Reads a request's body as `T`, within the server's limit: 413 past it, 400 for JSON
/// that is not a `T` (naming the field).
async fn body<T: DeserializeOwned>(served: &Served, body: Body) -> Result<T, ApiError> {
    let bytes = axum::body::to_bytes(body, served.options.max_body_bytes).await.map_err(|_| {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is over the limit of {} bytes", served.options.max_body_bytes),
        )
    })?;
    if bytes.is_empty() {
        return serde_json::from_str("{}").map_err(|e| {
            ApiError::bad_request(format!("the request body is not what this endpoint takes: {e}"))
        });
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::bad_request(format!("the request body is not what this endpoint takes: {e}")))
}

/// An attachment: a file's name and its bytes in standard base64.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Attachment {
    name: String,
    data: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewRun {
    prompt: String,
    #[serde(default)]
    run_id: Option<String>,
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    attachments: Vec<Attachment>,
    #[serde(default)]
    limits: Option<RunLimits>,
}

/// The prompt with its attachments, each recognised by its content (an image, a PDF,
/// audio, or UTF-8 text), as `harnessx run --attach` takes them.
fn prompt(text: String, attachments: Vec<Attachment>) -> Result<Prompt, ApiError> {
    let mut prompt = Prompt::new(text);
    for (i, Attachment { name, data }) in attachments.into_iter().enumerate() {
        let bytes = base64::engine::general_purpose::STANDARD.decode(data.as_bytes()).map_err(|e| {
            ApiError::bad_request(format!("attachments[{i}] ({name}): `data` is not base64: {e}"))
        })?;
        let part = if let Some(media_type) = sniff(&bytes) {
            match media_type {
                "application/pdf" => Part::file(media_type, Some(name), bytes),
                _ => Part::image(media_type, bytes),
            }
        } else if let Some(media_type) = sniff_audio(&bytes) {
            Part::audio(media_type, bytes)
        } else {
            match String::from_utf8(bytes) {
                Ok(text) if !text.contains('\0') => Part::text(format!("[file: {name}]\n{text}")),
                _ => {
                    return Err(ApiError::bad_request(format!(
                        "attachments[{i}] ({name}): not a type that can be attached (an image: PNG, JPEG, GIF, WebP; a PDF; audio: WAV, MP3; or UTF-8 text)"
                    )));
                }
            }
        };
        prompt = prompt.with_part(part);
    }
    Ok(prompt)
}

/// A run id a client may choose: not empty, no slash or control character, at most 200
/// bytes.
fn check_id(what: &str, id: &str) -> Result<(), ApiError> {
    if id.is_empty() || id.len() > 200 || id.chars().any(|c| c == '/' || c.is_control()) {
        return Err(ApiError::bad_request(format!(
            "{what} {id:?} must be 1 to 200 bytes with no `/` or control character"
        )));
    }
    Ok(())
}

/// A new run id: `run-MILLIS-N`.
fn new_run_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    format!("run-{now}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// `POST /v1/runs`: 201 `{"run_id"}`, the run going on in the background.
pub(crate) async fn start(State(served): State<Arc<Served>>, request: Body) -> Result<Response, ApiError> {
    let NewRun { prompt: text, run_id, session, attachments, limits } = body(&served, request).await?;
    if let Some(session) = session {
        check_id("session", &session)?;
        if run_id.is_some() || limits.is_some() {
            return Err(ApiError::bad_request(
                "a run of a session is named by the session; leave out `run_id` and `limits`",
            ));
        }
        return turn(&served, &session, prompt(text, attachments)?).await;
    }
    let run_id = run_id.unwrap_or_else(new_run_id);
    check_id("run_id", &run_id)?;
    let prompt = prompt(text, attachments)?;
    match &served.backend {
        Backend::Journal(runs) => {
            if runs.journal.load_run(&run_id)?.is_some() {
                return Err(ApiError::conflict(format!(
                    "a run with id {run_id:?} already exists; resume it, or start one with another id"
                )));
            }
            runs.spawn(run_id.clone(), Drive::Start { prompt, limits }).await?;
        }
        #[cfg(feature = "restate")]
        Backend::Cluster(cluster) => cluster.start(&run_id, &prompt, limits.as_ref()).await?,
    }
    Ok((StatusCode::CREATED, Json(json!({ "run_id": run_id }))).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Message {
    prompt: String,
    #[serde(default)]
    attachments: Vec<Attachment>,
}

/// `POST /v1/sessions/{id}/messages`: the next turn of conversation `id` (run `ID.N`,
/// continuing the last completed turn), 201 `{"run_id"}`.
pub(crate) async fn message(
    State(served): State<Arc<Served>>,
    Path(session): Path<String>,
    request: Body,
) -> Result<Response, ApiError> {
    check_id("session", &session)?;
    let Message { prompt: text, attachments } = body(&served, request).await?;
    turn(&served, &session, prompt(text, attachments)?).await
}

async fn turn(served: &Arc<Served>, session: &str, prompt: Prompt) -> Result<Response, ApiError> {
    let runs = match &served.backend {
        Backend::Journal(runs) => runs,
        #[cfg(feature = "restate")]
        Backend::Cluster(_) => {
            return Err(ApiError::bad_request(
                "chat sessions are kept in a journal: serve with --durable FILE (not --restate) for them",
            ));
        }
    };
    let records = runs.journal.list_runs()?;
    let mut turns: Vec<(u32, &RunRecord)> = records
        .iter()
        .filter_map(|r| r.run_id.strip_prefix(session)?.strip_prefix('.')?.parse().ok().map(|n| (n, r)))
        .collect();
    turns.sort_by_key(|(n, _)| *n);
    if let Some((_, last)) = turns.last()
        && runs.driving(&last.run_id)
    {
        return Err(ApiError::conflict(format!(
            "session {session:?} has a turn going on ({}); send the next message once it ends",
            last.run_id
        )));
    }
    let next = turns.last().map_or(1, |(n, _)| n + 1);
    let run_id = format!("{session}.{next}");
    let previous = turns.iter().rev().find(|(_, r)| r.status == harnessx_agent::RunStatus::Completed);
    let drive = match previous {
        Some((_, previous)) => Drive::Continue { previous: previous.run_id.clone(), prompt },
        None => Drive::Start { prompt, limits: None },
    };
    runs.spawn(run_id.clone(), drive).await?;
    Ok((StatusCode::CREATED, Json(json!({ "run_id": run_id }))).into_response())
}

/// A run as the API shows it: its state without the conversation (the events carry
/// it), with its prompt and times.
fn summary(record: &RunRecord, state: &RunState) -> Value {
    let mut shown = serde_json::to_value(state).unwrap_or_else(|_| json!({}));
    if let Some(object) = shown.as_object_mut() {
        object.remove("messages");
        object.insert("run_id".into(), json!(record.run_id));
        object.insert("prompt".into(), json!(record.prompt));
        if !record.prompt_parts.is_empty() {
            let parts: Vec<Value> = record.prompt_parts.iter().map(Part::describe).collect();
            object.insert("attachments".into(), json!(parts));
        }
        object.insert("created_at_ms".into(), json!(record.created_at_ms));
        object.insert("updated_at_ms".into(), json!(record.updated_at_ms));
    }
    shown
}

/// `GET /v1/runs`: every run, newest first.
pub(crate) async fn list(State(served): State<Arc<Served>>) -> Result<Json<Value>, ApiError> {
    let runs = match &served.backend {
        Backend::Journal(runs) => runs,
        #[cfg(feature = "restate")]
        Backend::Cluster(cluster) => return Ok(Json(cluster.list().await?)),
    };
    let records = runs.journal.list_runs()?;
    let mut shown = Vec::with_capacity(records.len());
    for record in &records {
        match runs.runtime.status(&record.run_id) {
            Ok(report) => shown.push(summary(record, &report.state)),
            Err(e) => tracing::warn!(run_id = record.run_id, error = %e, "a run could not be read"),
        }
    }
    Ok(Json(json!({ "runs": shown })))
}

/// `GET /v1/runs/{id}`.
pub(crate) async fn show(
    State(served): State<Arc<Served>>,
    Path(run_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    match &served.backend {
        Backend::Journal(runs) => {
            let report = runs.runtime.status(&run_id)?;
            Ok(Json(summary(&report.run, &report.state)))
        }
        #[cfg(feature = "restate")]
        Backend::Cluster(cluster) => Ok(Json(cluster.show(&run_id).await?)),
    }
}

/// `GET /v1/runs/{id}/events`: server-sent events from the start, or after
/// `Last-Event-ID`.
pub(crate) async fn events(
    State(served): State<Arc<Served>>,
    Path(run_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let from = match headers.get("last-event-id") {
        None => 0,
        Some(value) => {
            let text = value.to_str().unwrap_or_default().trim();
            let last: u64 = text.parse().map_err(|_| {
                ApiError::bad_request(format!("Last-Event-ID {text:?} is not an event number"))
            })?;
            last.saturating_add(1)
        }
    };
    match &served.backend {
        Backend::Journal(runs) => {
            runs.runtime.status(&run_id)?;
            Ok(runs.log.stream(run_id, from).into_response())
        }
        #[cfg(feature = "restate")]
        Backend::Cluster(cluster) => cluster.events(run_id, from).await,
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Approval {
    decision: String,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    message: Option<String>,
}

/// `POST /v1/runs/{id}/approvals/{call_id}`: the decision is journaled and the run goes
/// on in the background; 202.
pub(crate) async fn approve(
    State(served): State<Arc<Served>>,
    Path((run_id, call_id)): Path<(String, String)>,
    request: Body,
) -> Result<Response, ApiError> {
    let Approval { decision, arguments, message } = body(&served, request).await?;
    let decision = match (decision.as_str(), arguments, message) {
        ("approve", None, None) => ApprovalDecision::Approve,
        ("session", None, None) => ApprovalDecision::ApproveForSession,
        ("approve" | "session", Some(arguments), None) => {
            if !arguments.is_object() {
                return Err(ApiError::bad_request("`arguments` must be a JSON object: the call's arguments"));
            }
            ApprovalDecision::ApproveEdited { arguments, for_session: decision == "session" }
        }
        ("deny", None, None) => ApprovalDecision::Deny,
        ("deny", None, Some(message)) => ApprovalDecision::DenyWithMessage { message },
        ("approve" | "session", _, Some(_)) => {
            return Err(ApiError::bad_request("`message` goes with `\"decision\": \"deny\"` only"));
        }
        ("deny", Some(_), _) => return Err(ApiError::bad_request("`arguments` go with an approval only")),
        (other, _, _) => {
            return Err(ApiError::bad_request(format!(
                "`decision` {other:?} is not one of \"approve\", \"session\", \"deny\""
            )));
        }
    };
    match &served.backend {
        Backend::Journal(runs) => {
            runs.runtime.approve(&run_id, &call_id, decision)?;
            go_on(runs, run_id, RunLimits::default()).await
        }
        #[cfg(feature = "restate")]
        Backend::Cluster(cluster) => {
            Ok((StatusCode::ACCEPTED, Json(cluster.approve(&run_id, &call_id, decision).await?))
                .into_response())
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    text: String,
}

/// `POST /v1/runs/{id}/answers/{call_id}`: whether a call took effect, in words; 202.
pub(crate) async fn answer(
    State(served): State<Arc<Served>>,
    Path((run_id, call_id)): Path<(String, String)>,
    request: Body,
) -> Result<Response, ApiError> {
    let Answer { text } = body(&served, request).await?;
    match &served.backend {
        Backend::Journal(runs) => {
            runs.runtime.answer(&run_id, &call_id, &text)?;
            go_on(runs, run_id, RunLimits::default()).await
        }
        #[cfg(feature = "restate")]
        Backend::Cluster(cluster) => {
            Ok((StatusCode::ACCEPTED, Json(cluster.answer(&run_id, &call_id, &text).await?)).into_response())
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Resume {
    #[serde(default)]
    limits: Option<RunLimits>,
}

/// `POST /v1/runs/{id}/resume`: the run goes on (with higher limits); 202.
pub(crate) async fn resume(
    State(served): State<Arc<Served>>,
    Path(run_id): Path<String>,
    request: Body,
) -> Result<Response, ApiError> {
    let Resume { limits } = body(&served, request).await?;
    match &served.backend {
        Backend::Journal(runs) => {
            runs.runtime.status(&run_id)?;
            go_on(runs, run_id, limits.unwrap_or_default()).await
        }
        #[cfg(feature = "restate")]
        Backend::Cluster(cluster) => {
            let went_on = cluster.resume(&run_id, limits.unwrap_or_default()).await?;
            Ok((StatusCode::ACCEPTED, Json(went_on)).into_response())
        }
    }
}

/// Resumes run `run_id` once no more input is awaited (after the last approval of a
/// batch); 202 `{"run_id", "status"}`.
async fn go_on(runs: &Arc<Runs>, run_id: String, limits: RunLimits) -> Result<Response, ApiError> {
    let report = runs.runtime.status(&run_id)?;
    let waiting = waiting_still(runs, &run_id)?;
    if !waiting {
        if runs.driving(&run_id) {
            return Err(ApiError::conflict(format!("run {run_id:?} is going on already")));
        }
        if report.state.status == harnessx_agent::RunStatus::Completed {
            return Err(ApiError::conflict(format!("run {run_id:?} has completed; start a new run")));
        }
        runs.spawn(run_id.clone(), Drive::Resume { limits }).await?;
    }
    let status = if waiting { "needs_input" } else { "running" };
    Ok((StatusCode::ACCEPTED, Json(json!({ "run_id": run_id, "status": status }))).into_response())
}

/// Whether run `run_id` still waits for an approval or answer not given yet.
fn waiting_still(runs: &Runs, run_id: &str) -> Result<bool, ApiError> {
    let Some((_, entries)) = runs.journal.load_run(run_id)? else { return Ok(false) };
    let report = runs.runtime.status(run_id)?;
    let given: std::collections::HashSet<&str> = entries
        .iter()
        .filter_map(|e| match &e.entry {
            harnessx_durable::Entry::Approval { call_id, .. }
            | harnessx_durable::Entry::Answer { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    Ok(report.state.needs_input.iter().any(|n| !given.contains(n.call_id.as_str())))
}

/// `POST /v1/runs/{id}/cancel`: the run's task is stopped and the run marked failed
/// (`cancelled`); 200 with the run.
pub(crate) async fn cancel(
    State(served): State<Arc<Served>>,
    Path(run_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    match &served.backend {
        Backend::Journal(runs) => {
            runs.runtime.status(&run_id)?;
            runs.cancel(&run_id).await?;
            let report = runs.runtime.status(&run_id)?;
            Ok(Json(summary(&report.run, &report.state)))
        }
        #[cfg(feature = "restate")]
        Backend::Cluster(cluster) => Ok(Json(cluster.cancel(&run_id).await?)),
    }
}

/// `GET /v1/tools`: the agent's tools, with their schemas (for the page's argument editor).
pub(crate) async fn tools(State(served): State<Arc<Served>>) -> Json<Value> {
    let tools: Vec<Value> = served
        .agent
        .tools()
        .get_tool_params()
        .into_iter()
        .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
        .collect();
    Json(json!({ "tools": tools }))
}
