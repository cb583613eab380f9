#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod api;
#[cfg(feature = "restate")]
mod cluster;
mod error;
mod events;
mod page;
mod runs;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{get, post};
use harnessx_agent::Agent;
use harnessx_durable::{AgentRuntime, SqliteJournal};

pub use error::ApiError;

/// The default limit on a request's body: 32 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 32 << 20;

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Every `/v1` request must carry `Authorization: Bearer TOKEN` (else 401); `None`:
    /// no token is asked (only sensible on a loopback address).
    pub token: Option<String>,
    /// The most bytes a request's body may have (413 past it).
    pub max_body_bytes: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self { token: None, max_body_bytes: DEFAULT_MAX_BODY_BYTES }
    }
}

/// Where the runs are.
pub(crate) enum Backend {
    /// In a SQLite journal, driven by this server.
    Journal(Arc<runs::Runs>),
    /// On a Restate cluster, driven by its workers.
    #[cfg(feature = "restate")]
    Cluster(Arc<cluster::Cluster>),
}

/// What the handlers share: the runs, the agent and the options.
pub(crate) struct Served {
    pub(crate) backend: Backend,
    pub(crate) agent: Arc<Agent>,
    pub(crate) options: ServeOptions,
}

/// A server of one agent's durable runs: in one SQLite journal ([`Server::new`]), or on
/// a Restate cluster ([`Server::restate`], feature `restate`).
pub struct Server {
    served: Arc<Served>,
    /// Held while the server lives: no other server serves the same journal.
    _lock: Option<ServeLock>,
}

impl Server {
    /// A server of `agent`'s runs journaled in `journal` (the file `path`). Fails when
    /// another server holds the journal (one line naming it).
    pub fn new(agent: impl Into<Arc<Agent>>, path: &Path, options: ServeOptions) -> Result<Self, ApiError> {
        let lock = ServeLock::take(path)?;
        let journal = Arc::new(
            SqliteJournal::open(path)
                .map_err(|e| ApiError::internal(format!("the journal {}: {e}", path.display())))?,
        );
        let agent = agent.into();
        let runtime = AgentRuntime::new(agent.clone(), journal.clone());
        let runs = runs::Runs::new(runtime, journal);
        Ok(Self {
            served: Arc::new(Served { backend: Backend::Journal(runs), agent, options }),
            _lock: Some(lock),
        })
    }

    /// A server of runs on the Restate cluster `runtime` talks to: the cluster's workers
    /// (`harnessx worker`) drive them; `agent` is what the workers must have (its tools
    /// are what `GET /v1/tools` lists), and `expect` its configuration, sent with each
    /// run so that workers with another one refuse it ([`WorkerConfig::of`] the agent).
    /// Holds nothing of its own: many servers can serve one cluster. Listing and
    /// cancelling runs need the cluster's admin API
    /// ([`RestateRuntime::with_admin`](harnessx_durable::restate::RestateRuntime::with_admin)).
    ///
    /// [`WorkerConfig::of`]: harnessx_durable::restate::WorkerConfig::of
    #[cfg(feature = "restate")]
    pub fn restate(
        agent: impl Into<Arc<Agent>>,
        runtime: harnessx_durable::restate::RestateRuntime,
        expect: Option<harnessx_durable::restate::WorkerConfig>,
        options: ServeOptions,
    ) -> Self {
        let cluster = Arc::new(cluster::Cluster { runtime, expect });
        let served = Served { backend: Backend::Cluster(cluster), agent: agent.into(), options };
        Self { served: Arc::new(served), _lock: None }
    }

    /// Goes on with the runs the journal says were going on (their server was stopped or
    /// killed); returns their ids. (A cluster's runs go on by themselves: none.)
    pub async fn recover(&self) -> Result<Vec<String>, ApiError> {
        match &self.served.backend {
            Backend::Journal(runs) => Ok(runs.recover().await?),
            #[cfg(feature = "restate")]
            Backend::Cluster(_) => Ok(Vec::new()),
        }
    }

    /// The API as an axum [`Router`] (see [`router`]).
    pub fn router(&self) -> Router {
        routes(self.served.clone())
    }

    /// Stops the runs' tasks (they stay running in the journal; the next server goes on
    /// with them).
    pub fn stop(&self) {
        if let Backend::Journal(runs) = &self.served.backend {
            runs.stop_all();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The API (and its page) as an axum [`Router`], to serve as it is or to mount in an
/// application of your own (`Router::nest("/agents", ..)`).
pub fn router(server: &Server) -> Router {
    server.router()
}

/// The API's routes over `served`.
fn routes(served: Arc<Served>) -> Router {
    let v1 = Router::new()
        .route("/v1/runs", post(api::start).get(api::list))
        .route("/v1/runs/{id}", get(api::show))
        .route("/v1/runs/{id}/events", get(api::events))
        .route("/v1/runs/{id}/approvals/{call_id}", post(api::approve))
        .route("/v1/runs/{id}/answers/{call_id}", post(api::answer))
        .route("/v1/runs/{id}/resume", post(api::resume))
        .route("/v1/runs/{id}/cancel", post(api::cancel))
        .route("/v1/sessions/{id}/messages", post(api::message))
        .route("/v1/tools", get(api::tools))
        .fallback(|| async { ApiError::not_found("no such endpoint; see docs/serve.md for the API") })
        .layer(axum::middleware::from_fn_with_state(served.clone(), authorized));
    v1.with_state(served).merge(page::routes())
}

/// 401 for a `/v1` request without the server's token.
async fn authorized(
    State(served): State<Arc<Served>>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    if let Some(token) = &served.options.token {
        let given = request
            .headers()
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        // Compared in constant time: how long a wrong token took says nothing of the right one.
        if !given.is_some_and(|g| same(g.as_bytes(), token.as_bytes())) {
            return Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "this server needs `Authorization: Bearer TOKEN` (the --token it was started with)",
            ));
        }
    }
    Ok(next.run(request).await)
}

/// Whether `a` and `b` are equal, looking at every byte whatever they hold.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Serves `server` on `listener` until `stop` resolves, then closes every connection
/// (open event streams too: a graceful shutdown would wait for them forever). The runs
/// stay running in the journal; call [`Server::recover`] first to go on with those a
/// stopped server left.
pub async fn serve(
    server: &Server,
    listener: tokio::net::TcpListener,
    stop: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    tokio::select! {
        served = axum::serve(listener, server.router()) => served,
        () = stop => Ok(()),
    }
}

/// The lock file beside a journal a server holds (`JOURNAL.serve-lock`): an advisory lock
/// the system drops with the process, holding the server's pid for the error another one
/// gets.
struct ServeLock {
    _file: std::fs::File,
}

impl ServeLock {
    fn take(journal: &Path) -> Result<Self, ApiError> {
        let path = lock_path(journal);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| ApiError::internal(format!("{}: {e}", path.display())))?;
        if rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
            let pid = std::fs::read_to_string(&path).unwrap_or_default();
            let by = match pid.trim() {
                "" => String::new(),
                pid => format!(" (pid {pid})"),
            };
            return Err(ApiError::conflict(format!(
                "another harnessx serve{by} serves the journal {}; stop it, or give this one another --durable FILE",
                journal.display()
            )));
        }
        file.set_len(0).ok();
        use std::io::Write as _;
        (&file).write_all(std::process::id().to_string().as_bytes()).ok();
        Ok(Self { _file: file })
    }
}

fn lock_path(journal: &Path) -> PathBuf {
    let mut name = journal.file_name().unwrap_or_default().to_owned();
    name.push(".serve-lock");
    journal.with_file_name(name)
}
