//! `harnessx serve`: the agent's durable runs over HTTP (`harnessx_serve`), journaled in a
//! SQLite file; the runs that were going on when a server stopped go on when it starts.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use serde_json::json;

use crate::error::CliError;
use crate::setup::flags::AgentArgs;
use crate::setup::{Approvals, build_agent};
use crate::shutdown::Shutdown;

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on (port 0: any free port, printed).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8787")]
    listen: String,
    /// The SQLite journal of the runs (created if missing, with its folder).
    #[arg(long, value_name = "FILE", default_value = ".harnessx/runs.db")]
    durable: PathBuf,
    /// Serve runs on a Restate cluster instead, at its ingress URL (e.g.
    /// http://127.0.0.1:8080): the cluster's workers (`harnessx worker`) drive them; the
    /// agent flags given here say what the workers must have.
    #[arg(long, value_name = "URL", conflicts_with = "durable")]
    restate: Option<String>,
    /// With --restate: the cluster's admin API, for listing and cancelling runs (and
    /// saying why one is stuck).
    #[arg(long, value_name = "URL", requires = "restate")]
    restate_admin: Option<String>,
    /// Every API request must carry `Authorization: Bearer TOKEN` (default: the
    /// HARNESSX_TOKEN variable). Required when listening on another address than loopback.
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// The most bytes a request's body may have (413 past it).
    #[arg(long, value_name = "BYTES", default_value_t = harnessx::serve::DEFAULT_MAX_BODY_BYTES)]
    max_body_bytes: usize,
    /// Print one JSON line once serving: {"listen", "url", "journal", "recovered"}.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
}

/// `harnessx serve`: serves until SIGINT or SIGTERM.
pub(crate) async fn serve(args: ServeArgs) -> Result<ExitCode, CliError> {
    let addr: std::net::SocketAddr =
        tokio::net::lookup_host(&args.listen).await.ok().and_then(|mut a| a.next()).ok_or_else(|| {
            CliError::Usage(format!(
                "--listen {}: not an address to listen on (e.g. 127.0.0.1:8787)",
                args.listen
            ))
        })?;
    let token = args.token.clone().or_else(|| std::env::var("HARNESSX_TOKEN").ok()).filter(|t| !t.is_empty());
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(CliError::Usage(format!(
            "--listen {}: serving beyond this machine needs a token (--token TOKEN or HARNESSX_TOKEN), or listen on 127.0.0.1",
            args.listen
        )));
    }
    if let Some(ingress) = &args.restate {
        return serve_cluster(&args, ingress, addr, token).await;
    }
    if let Some(dir) = args.durable.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::Usage(format!("--durable {}: {e}", args.durable.display())))?;
    }
    // ASK calls wait for an approval through the API, never for this process's terminal.
    let agent = Arc::new(build_agent(&args.agent, false, Approvals::of(args.agent.yes, false)).await?);
    let options = harnessx::serve::ServeOptions { token, max_body_bytes: args.max_body_bytes };
    let server = match harnessx::serve::Server::new(agent.clone(), &args.durable, options) {
        Ok(server) => server,
        Err(e) => {
            agent.close().await;
            return Err(CliError::Failed(e.message));
        }
    };
    let where_ = format!("journal {}", args.durable.display());
    let journal = json!(args.durable);
    serve_on(&args, server, agent, addr, where_, ("journal", journal)).await
}

/// `harnessx serve --restate URL`: the API over the cluster's runs.
async fn serve_cluster(
    args: &ServeArgs,
    ingress: &str,
    addr: std::net::SocketAddr,
    token: Option<String>,
) -> Result<ExitCode, CliError> {
    // The workers build the agent; the flags say what it must be (and list its tools).
    let expect = crate::setup::expectation(&args.agent)?;
    let mut runtime = harnessx::durable::restate::RestateRuntime::new(ingress).map_err(CliError::usage)?;
    if let Some(dir) = &args.agent.blob_store {
        runtime = runtime
            .blob_store(dir)
            .map_err(|e| CliError::Usage(format!("--blob-store {}: {e}", dir.display())))?;
    }
    if let Some(admin) = &args.restate_admin {
        runtime = runtime.with_admin(admin).map_err(CliError::usage)?;
    }
    let agent = Arc::new(build_agent(&args.agent, false, Approvals::Nobody).await?);
    let options = harnessx::serve::ServeOptions { token, max_body_bytes: args.max_body_bytes };
    let server = harnessx::serve::Server::restate(agent.clone(), runtime, expect, options);
    serve_on(args, server, agent, addr, format!("Restate cluster {ingress}"), ("restate", json!(ingress)))
        .await
}

/// Serves `server` on `addr` until SIGINT or SIGTERM; `shown` is where its runs are, in
/// words and as the `--json` line's field.
async fn serve_on(
    args: &ServeArgs,
    server: harnessx::serve::Server,
    agent: Arc<harnessx::agent::Agent>,
    addr: std::net::SocketAddr,
    where_: String,
    shown: (&str, serde_json::Value),
) -> Result<ExitCode, CliError> {
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(e) => {
            agent.close().await;
            return Err(CliError::Usage(format!("--listen {}: {e}", args.listen)));
        }
    };
    let addr = listener.local_addr().map_err(CliError::failed)?;
    let recovered = server.recover().await.map_err(|e| CliError::Failed(e.message))?;
    let shutdown = Shutdown::listen();
    let url = format!("http://{addr}");
    if args.json {
        let mut line = serde_json::Map::new();
        line.insert("listen".into(), json!(addr.to_string()));
        line.insert("url".into(), json!(url));
        line.insert(shown.0.into(), shown.1);
        line.insert("recovered".into(), json!(recovered));
        outln!("{}", serde_json::Value::Object(line));
    }
    errln!(
        "harnessx: serving runs at {url} ({where_}{}); stop it with Ctrl-C or SIGTERM",
        match recovered.len() {
            0 => String::new(),
            n => format!("; {n} run(s) that were going on go on"),
        }
    );
    // Stopped at the signal, open event streams and all; the runs stay running in the
    // journal (or on the cluster), and the next start goes on with them.
    let served = harnessx::serve::serve(&server, listener, shutdown.wait()).await;
    server.stop();
    agent.close().await;
    served.map_err(CliError::failed)?;
    Ok(ExitCode::SUCCESS)
}
