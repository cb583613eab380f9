//! The client side of runs on a Restate cluster: start, follow, answer and inspect them
//! over the cluster's ingress (and, for why a run is stuck, its admin API); and register
//! a worker's endpoint with the admin API.

use std::sync::Arc;
use std::time::Duration;

use harnessx_infra::http_client::SharedClient;
use reqwest::{Method, StatusCode, Url};
use serde_json::{Value, json};

use harnessx_core::error::error_chain;
use harnessx_core::{ApprovalDecision, Backoff};

use harnessx_agent::budget::RunLimits;

use harnessx_core::content::store::BlobStore;

use super::service::blobs::externalize;
use super::service::{Answer, Approval, LimitStop, WorkerConfig};
use crate::journal::{JournalError, RunStatus};
use crate::runtime::DurableError;

/// Where a run on the cluster stands: the one run state of every backend. A status read
/// from the cluster has the status, the answer (or the error), what the run waits for,
/// and, while it runs, why its last attempt failed ([`RunState::error`]); its messages,
/// usage and turns stay with the workers.
pub use harnessx_agent::RunState;

/// What a run started with [`RestateRuntime::submit_run`] brings besides its prompt.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions<'a> {
    /// The configuration the workers must have ([`WorkerConfig::of`] an agent built from
    /// the same flags as theirs): a run that reaches workers with another one fails at
    /// once, naming both.
    pub expect: Option<&'a WorkerConfig>,
    /// The run's limits, those set replacing the workers' agent's.
    pub limits: Option<&'a RunLimits>,
    /// A typed run's output ([`Output::spec`](harnessx_agent::output::Output::spec): the
    /// schema, mode and retries).
    pub output: Option<&'a harnessx_agent::output::OutputSpec>,
    /// The model's price, in place of the workers' agent's (its cost, and a cost limit).
    pub price: Option<&'a harnessx_agent::budget::ModelPrice>,
    /// The media attached to the prompt, sent with it in the first user message.
    pub parts: Option<&'a harnessx_core::Parts>,
}

/// Durable runs on a Restate cluster, from any process: the runs execute on the workers
/// ([`serve`](super::serve), `harnessx worker`); this starts them, follows them and
/// answers what they wait for. The calls mirror [`AgentRuntime`](crate::AgentRuntime)'s.
#[derive(Debug, Clone)]
pub struct RestateRuntime {
    ingress: Url,
    admin: Option<Url>,
    /// What runs started through [`DurableRuns`](crate::DurableRuns) ask of the workers.
    pub(super) expect: Option<WorkerConfig>,
    /// Where a prompt's media larger than [`INLINE_MAX`](super::INLINE_MAX) are put.
    blobs: Option<Arc<dyn BlobStore>>,
    http: reqwest::Client,
}

/// The pauses between polls of a run that [`RestateRuntime::wait`] follows: 100 ms,
/// doubling up to half a second.
const POLL: Backoff = Backoff::doubling(Duration::from_millis(100), Duration::from_millis(500));

/// The process-wide HTTP client.
fn client() -> Result<reqwest::Client, DurableError> {
    static CLIENT: SharedClient = SharedClient::new(|builder| {
        builder.connect_timeout(Duration::from_secs(10)).timeout(Duration::from_secs(60))
    });
    CLIENT
        .get()
        .map_err(|e| DurableError::Cluster(format!("could not set up the HTTP client: {}", error_chain(e))))
}

fn base_url(url: &str, what: &str) -> Result<Url, DurableError> {
    let parsed =
        Url::parse(url).map_err(|e| DurableError::Cluster(format!("the {what} URL {url:?}: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.cannot_be_a_base() {
        return Err(DurableError::Cluster(format!("the {what} URL {url:?} is not an http(s) URL")));
    }
    Ok(parsed)
}

/// `base` with `segments` appended, each percent-encoded (a run id may hold `/` or `?`).
fn join(base: &Url, segments: &[&str]) -> Url {
    let mut url = base.clone();
    url.path_segments_mut().expect("checked to be a base").pop_if_empty().extend(segments);
    url
}

/// The message of an error body: Restate answers `{"message": ...}`.
fn message(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| body.trim().to_owned())
}

impl RestateRuntime {
    /// A runtime talking to the cluster's ingress at `ingress_url` (e.g.
    /// `http://127.0.0.1:8080`).
    pub fn new(ingress_url: &str) -> Result<Self, DurableError> {
        Ok(Self {
            ingress: base_url(ingress_url, "Restate ingress")?,
            admin: None,
            expect: None,
            blobs: None,
            http: client()?,
        })
    }

    /// Also asks the admin API (e.g. `http://127.0.0.1:9070`) why a running run's last
    /// attempt failed ([`RunState::error`]).
    pub fn with_admin(mut self, admin_url: &str) -> Result<Self, DurableError> {
        self.admin = Some(base_url(admin_url, "Restate admin")?);
        Ok(self)
    }

    /// Puts a prompt's media larger than [`INLINE_MAX`](super::INLINE_MAX) in `blobs`, the
    /// store the workers read them from ([`serve_with_blobs`](super::serve_with_blobs)),
    /// and sends only references. Without one, such a prompt is refused with an error
    /// saying to configure one.
    pub fn with_blobs(mut self, blobs: Arc<dyn BlobStore>) -> Self {
        self.blobs = Some(blobs);
        self
    }

    /// [`with_blobs`](Self::with_blobs) with the [`FolderBlobStore`](crate::FolderBlobStore)
    /// in folder `path` (created if missing), which the workers must share.
    pub fn blob_store(self, path: impl AsRef<std::path::Path>) -> Result<Self, DurableError> {
        let store = crate::FolderBlobStore::open(path).map_err(|e| DurableError::Cluster(e.0))?;
        Ok(self.with_blobs(Arc::new(store)))
    }

    /// Runs started through [`DurableRuns::start`](crate::DurableRuns::start) ask for
    /// workers with the configuration `expect` (see [`submit_expecting`](Self::submit_expecting)).
    pub fn expecting(mut self, expect: Option<WorkerConfig>) -> Self {
        self.expect = expect;
        self
    }

    async fn send(
        &self,
        method: Method,
        url: Url,
        body: Option<Value>,
    ) -> Result<(StatusCode, String), DurableError> {
        self.send_for(method, url, body, None).await
    }

    /// [`send`](Self::send), waiting up to `timeout` for the answer instead of a minute.
    async fn send_for(
        &self,
        method: Method,
        url: Url,
        body: Option<Value>,
        timeout: Option<Duration>,
    ) -> Result<(StatusCode, String), DurableError> {
        // JSON answers (the admin API's query answers Arrow by default).
        let mut request = self.http.request(method, url.clone()).header("accept", "application/json");
        if let Some(timeout) = timeout {
            request = request.timeout(timeout);
        }
        if let Some(body) = body {
            request = request.header("content-type", "application/json").body(body.to_string());
        }
        let failed = |e: reqwest::Error| {
            DurableError::Cluster(format!("the Restate cluster at {url}: {}", error_chain(&e)))
        };
        let response = request.send().await.map_err(failed)?;
        let status = response.status();
        let text = response.text().await.map_err(failed)?;
        Ok((status, text))
    }

    /// Calls a handler of the run's workflow and returns its JSON answer.
    async fn call(&self, run_id: &str, handler: &str, body: Option<Value>) -> Result<Value, DurableError> {
        let url = join(&self.ingress, &["HarnessxRun", run_id, handler]);
        let (status, text) = self.send(Method::POST, url, body).await?;
        if !status.is_success() {
            return Err(DurableError::Cluster(message(&text)));
        }
        if text.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).map_err(|e| {
            DurableError::Cluster(format!("HarnessxRun/{handler} answered something that is not JSON: {e}"))
        })
    }

    /// Starts run `run_id` on the cluster and returns at once; [`wait`](Self::wait)
    /// follows it. An id already used on the cluster is refused.
    pub async fn submit(&self, run_id: &str, prompt: &str) -> Result<(), DurableError> {
        self.submit_expecting(run_id, prompt, None).await
    }

    /// [`submit`](Self::submit), for workers with the configuration `expect` (say,
    /// [`WorkerConfig::of`] an agent built from the same flags as theirs): a run that
    /// reaches workers with another one fails at once, naming both.
    pub async fn submit_expecting(
        &self,
        run_id: &str,
        prompt: &str,
        expect: Option<&WorkerConfig>,
    ) -> Result<(), DurableError> {
        self.submit_with(run_id, prompt, expect, None).await
    }

    /// [`submit_expecting`](Self::submit_expecting), with the run's own `limits` (those
    /// set replace the workers' agent's).
    pub async fn submit_with(
        &self,
        run_id: &str,
        prompt: &str,
        expect: Option<&WorkerConfig>,
        limits: Option<&RunLimits>,
    ) -> Result<(), DurableError> {
        self.submit_run(run_id, prompt, RunOptions { expect, limits, ..RunOptions::default() }).await
    }

    /// Starts run `run_id` on `prompt` with what [`RunOptions`] says besides: the workers
    /// expected, the run's own limits and price, and, for a typed run, the output its
    /// answer must fit (once it completes, [`status`](Self::status) gives the answer as
    /// `RunState::value`).
    pub async fn submit_run(
        &self,
        run_id: &str,
        prompt: &str,
        options: RunOptions<'_>,
    ) -> Result<(), DurableError> {
        let RunOptions { expect, limits, output, price, parts } = options;
        if run_id.is_empty() {
            return Err(DurableError::Cluster("a run id must not be empty".into()));
        }
        let url = join(&self.ingress, &["HarnessxRun", run_id, "run", "send"]);
        let mut body =
            json!({ "prompt": prompt, "expect": expect, "limits": limits, "output": output, "price": price });
        if let Some(parts) = parts.filter(|p| !p.is_empty()) {
            body["parts"] = externalize(self.blobs.as_ref(), parts, &format!("the prompt of run {run_id:?}"))
                .map_err(DurableError::Cluster)?;
        }
        let (status, text) = self.send(Method::POST, url, Some(body)).await?;
        if !status.is_success() {
            return Err(DurableError::Cluster(message(&text)));
        }
        let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if answer.get("status").and_then(Value::as_str) == Some("PreviouslyAccepted") {
            return Err(JournalError::RunExists(run_id.to_owned()).into());
        }
        Ok(())
    }

    /// Starts run `run_id` and waits until it completes, fails or stops for input.
    pub async fn start(&self, run_id: &str, prompt: &str) -> Result<RunState, DurableError> {
        self.submit(run_id, prompt).await?;
        self.wait(run_id, |_| {}).await
    }

    /// Waits until the run completes, fails or stops for input; `on_event` sees each of
    /// its events (`turn 1: calls read (c1)`, ...) once, in order, and, with an admin
    /// URL, each new reason its last attempt failed (`retrying: ...`). The run goes on
    /// without anyone waiting: this only follows it.
    pub async fn wait(&self, run_id: &str, mut on_event: impl FnMut(&str)) -> Result<RunState, DurableError> {
        let mut seen = 0;
        let mut failure: Option<String> = None;
        let mut polls = 0;
        // The ingress answers `attach` the moment the run finishes; the polls between
        // catch a run that stops for input, its events and why it is stuck.
        let attach_url = join(&self.ingress, &["restate", "workflow", "HarnessxRun", run_id, "attach"]);
        let mut attach =
            std::pin::pin!(self.send_for(Method::GET, attach_url, None, Some(Duration::from_secs(3600))));
        let mut attached = false;
        loop {
            let state = self.status(run_id).await?;
            let events = self.events(run_id).await?;
            for event in events.iter().skip(seen) {
                on_event(event);
            }
            seen = seen.max(events.len());
            if state.error.is_some() && state.error != failure {
                failure.clone_from(&state.error);
                on_event(&format!("retrying: {}", failure.as_deref().unwrap_or_default()));
            }
            if state.status != RunStatus::Running {
                return Ok(state);
            }
            tokio::select! {
                // Finished (or the attach failed: then polling alone goes on).
                _ = &mut attach, if !attached => attached = true,
                () = tokio::time::sleep(POLL.delay(polls)) => polls = polls.saturating_add(1),
            }
        }
    }

    /// Waits for a run that was answered (or that a worker's death interrupted) to get
    /// on: on Restate it continues by itself; this follows it like [`wait`](Self::wait).
    pub async fn resume(&self, run_id: &str) -> Result<RunState, DurableError> {
        self.wait(run_id, |_| {}).await
    }

    /// Where the run stands now.
    pub async fn status(&self, run_id: &str) -> Result<RunState, DurableError> {
        let url = join(&self.ingress, &["restate", "workflow", "HarnessxRun", run_id, "output"]);
        let (status, text) = self.send(Method::GET, url, None).await?;
        let mut state = RunState { run_id: Some(run_id.to_owned()), ..RunState::default() };
        match status.as_u16() {
            200 => {
                state.status = RunStatus::Completed;
                state.output = serde_json::from_str::<String>(&text).unwrap_or(text);
                // A run a hook ended finished too: it says which hook, and why.
                let blocked = self.call(run_id, "blocked", None).await?;
                if let Ok(Some(blocked)) =
                    serde_json::from_value::<Option<harnessx_core::hooks::Blocked>>(blocked)
                {
                    state.status = RunStatus::Blocked;
                    state.blocked = Some(blocked);
                    return Ok(state);
                }
                // A typed run's answer, as a JSON value (`null` for free text).
                state.value = Some(self.call(run_id, "value", None).await?).filter(|v| !v.is_null());
            }
            // Not finished yet.
            470 => {
                let waiting = self.call(run_id, "waiting", None).await?;
                state.needs_input = serde_json::from_value(waiting).map_err(|e| {
                    DurableError::Cluster(format!("HarnessxRun/waiting answered an unexpected shape: {e}"))
                })?;
                if !state.needs_input.is_empty() {
                    state.status = RunStatus::NeedsInput;
                } else if let Some(stop) = self.limit(run_id).await? {
                    state.status = RunStatus::LimitReached;
                    state.limit = Some(stop.limit);
                    state.usage = stop.usage;
                } else {
                    state.error = self.last_failure(run_id).await?;
                }
            }
            404 => {
                return Err(DurableError::NoClusterRun {
                    run_id: run_id.to_owned(),
                    cluster: self.ingress.to_string(),
                });
            }
            _ => {
                state.status = RunStatus::Failed;
                state.error = Some(message(&text));
            }
        }
        Ok(state)
    }

    /// The limit the run stopped at and waits to have raised, if any.
    pub async fn limit(&self, run_id: &str) -> Result<Option<LimitStop>, DurableError> {
        let stop = self.call(run_id, "limit", None).await?;
        serde_json::from_value(stop).map_err(|e| {
            DurableError::Cluster(format!("HarnessxRun/limit answered an unexpected shape: {e}"))
        })
    }

    /// Raises the limits of a run stopped at one: the fields set in `changes` replace the
    /// run's. The run goes on by itself (and stops again at a limit still reached).
    pub async fn raise(&self, run_id: &str, changes: &RunLimits) -> Result<(), DurableError> {
        let body = serde_json::to_value(changes).expect("limits serialise");
        self.call(run_id, "raise", Some(body)).await.map(drop)
    }

    /// The run's events so far, one line per step.
    pub async fn events(&self, run_id: &str) -> Result<Vec<String>, DurableError> {
        let events = self.call(run_id, "events", None).await?;
        Ok(serde_json::from_value(events).unwrap_or_default())
    }

    /// The run's `--json` events from number `from` on (0 is the first), each a JSON
    /// object as text: the [`AgentEvent`](harnessx_agent::AgentEvent)s of its steps, a
    /// `needs_input` event where it paused, a `run_end` where it stopped at a limit. At
    /// most 1,000 at once; empty past the end. (`harnessx serve` streams them.)
    pub async fn feed(&self, run_id: &str, from: u64) -> Result<Vec<String>, DurableError> {
        let events = self.call(run_id, "feed", Some(json!(from))).await?;
        serde_json::from_value(events)
            .map_err(|e| DurableError::Cluster(format!("HarnessxRun/feed answered an unexpected shape: {e}")))
    }

    /// Cancels the run (through the admin API): a run waiting for input or going on stops
    /// and fails with `cancelled`; a finished run is left as it is. Needs
    /// [`with_admin`](Self::with_admin).
    pub async fn cancel(&self, run_id: &str) -> Result<(), DurableError> {
        let Some(admin) = &self.admin else {
            return Err(DurableError::Cluster(
                "cancelling a run on a cluster needs its admin API: give RestateRuntime::with_admin (--restate-admin URL)"
                    .into(),
            ));
        };
        let quoted = run_id.replace('\'', "''");
        let query = format!(
            "SELECT id FROM sys_invocation WHERE target_service_name = 'HarnessxRun' AND \
             target_service_key = '{quoted}' AND target_handler_name = 'run' AND status != 'completed'"
        );
        for row in self.query(admin, &query).await? {
            let Some(id) = row["id"].as_str() else { continue };
            let url = join(admin, &["invocations", id, "cancel"]);
            let (status, text) = self.send(Method::PATCH, url, None).await?;
            // 409: it completed meanwhile.
            if !status.is_success() && status != StatusCode::CONFLICT {
                return Err(DurableError::Cluster(format!("cancelling run {run_id:?}: {}", message(&text))));
            }
        }
        Ok(())
    }

    /// Decides on an ASK call the run waits on; the run continues by itself.
    pub async fn approve(
        &self,
        run_id: &str,
        call_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), DurableError> {
        let body = Approval { call_id: call_id.to_owned(), decision };
        self.call(run_id, "approve", Some(serde_json::to_value(body).expect("serialises"))).await.map(drop)
    }

    /// Answers whether a `manual` call whose outcome was unknown took effect; the text
    /// becomes the call's result for the model, and the run continues by itself.
    pub async fn answer(&self, run_id: &str, call_id: &str, text: &str) -> Result<(), DurableError> {
        let body = Answer { call_id: call_id.to_owned(), text: text.to_owned() };
        self.call(run_id, "answer", Some(serde_json::to_value(body).expect("serialises"))).await.map(drop)
    }

    /// Why the run's (or one of its calls') last attempt failed, from the admin API.
    async fn last_failure(&self, run_id: &str) -> Result<Option<String>, DurableError> {
        let Some(admin) = &self.admin else { return Ok(None) };
        let quoted = run_id.replace('\'', "''");
        let like = quoted.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
        let query = format!(
            "SELECT last_failure FROM sys_invocation WHERE last_failure IS NOT NULL AND \
             ((target_service_name = 'HarnessxRun' AND target_service_key = '{quoted}') OR \
              (target_service_name = 'HarnessxTool' AND target_service_key LIKE '{like}/%' ESCAPE '\\')) \
             ORDER BY modified_at DESC LIMIT 1"
        );
        let rows = self.query(admin, &query).await?;
        Ok(rows.first().and_then(|row| row["last_failure"].as_str()).map(failure_message))
    }

    /// The ids of the runs the cluster knows (those whose workflow it still keeps),
    /// newest first, from the admin API.
    pub async fn run_ids(&self) -> Result<Vec<String>, DurableError> {
        let Some(admin) = &self.admin else {
            return Err(DurableError::Cluster(
                "listing a cluster's runs needs its admin API: give RestateRuntime::with_admin (--restate-admin URL)"
                    .into(),
            ));
        };
        let query = "SELECT target_service_key FROM sys_invocation WHERE target_service_name = 'HarnessxRun' \
                     AND target_handler_name = 'run' ORDER BY created_at DESC";
        let rows = self.query(admin, query).await?;
        Ok(rows.iter().filter_map(|row| row["target_service_key"].as_str().map(str::to_owned)).collect())
    }

    /// The rows the admin API's SQL `query` answers.
    async fn query(&self, admin: &Url, query: &str) -> Result<Vec<Value>, DurableError> {
        let (status, text) =
            self.send(Method::POST, join(admin, &["query"]), Some(json!({ "query": query }))).await?;
        if !status.is_success() {
            return Err(DurableError::Cluster(format!("the Restate admin API's query: {}", message(&text))));
        }
        let rows: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(rows["rows"].as_array().cloned().unwrap_or_default())
    }
}

/// A `last_failure` without the wrapping of a handler's retryable error
/// (`[500 Internal] Handler failed with retryable error: MESSAGE'`): the message.
fn failure_message(failure: &str) -> String {
    failure
        .strip_prefix("[500 Internal] Handler failed with retryable error: ")
        .map_or(failure, |message| message.strip_suffix('\'').unwrap_or(message))
        .to_owned()
}

/// Registers the worker endpoint reachable at `uri` with the Restate admin API at
/// `admin_url`, and returns the deployment's id. Registering the same endpoint again is
/// harmless. The endpoint must be serving already: Restate asks it which services it has.
pub async fn register(admin_url: &str, uri: &str) -> Result<String, DurableError> {
    let admin = base_url(admin_url, "Restate admin")?;
    base_url(uri, "worker")?;
    let url = join(&admin, &["deployments"]);
    let response = client()?
        .post(url.clone())
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(json!({ "uri": uri }).to_string())
        .send()
        .await
        .map_err(|e| DurableError::Cluster(format!("registering {uri} at {url}: {}", error_chain(&e))))?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !status.is_success() {
        return Err(DurableError::Cluster(format!(
            "registering {uri} at {url}: {status}: {}",
            message(&text)
        )));
    }
    let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    Ok(answer["id"].as_str().unwrap_or_default().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handlers_retryable_error_reads_as_its_message_and_others_as_they_are() {
        assert_eq!(
            failure_message(
                "[500 Internal] Handler failed with retryable error: run \"r1\" was started with x'"
            ),
            "run \"r1\" was started with x"
        );
        let transport = "[500 Internal] unexpected error while reading the response body: broken pipe";
        assert_eq!(failure_message(transport), transport);
    }

    #[test]
    fn run_ids_are_one_path_segment_each() {
        let base = Url::parse("http://127.0.0.1:8080/").unwrap();
        let url = join(&base, &["HarnessxRun", "a/b?c d", "run", "send"]);
        assert_eq!(url.as_str(), "http://127.0.0.1:8080/HarnessxRun/a%2Fb%3Fc%20d/run/send");
        let prefixed = Url::parse("https://cluster.example/restate").unwrap();
        assert_eq!(join(&prefixed, &["x"]).as_str(), "https://cluster.example/restate/x");
    }

    #[test]
    fn restates_error_bodies_give_their_message() {
        assert_eq!(message(r#"{"code": 500, "message": "no such run"}"#), "no such run");
        assert_eq!(message("plain text\n"), "plain text");
    }
}
