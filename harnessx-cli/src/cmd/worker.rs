//! `harnessx worker`: serves the agent its flags make to a Restate cluster, so that the
//! cluster's runs (`run --restate URL`) execute here, and move to another worker if this
//! one dies.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use harnessx::durable::restate::{WorkerConfig, register, serve_with_blobs};
use serde_json::json;

use crate::error::CliError;
use crate::setup::flags::AgentArgs;
use crate::setup::{Approvals, build_agent};
use crate::shutdown::Shutdown;

#[derive(Debug, Args)]
pub(crate) struct WorkerArgs {
    /// The cluster's admin API, where the worker registers (e.g. http://127.0.0.1:9070).
    #[arg(long, value_name = "URL")]
    restate_admin: String,
    /// Serve the worker's endpoint on this address (port 0: any free port, printed).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9080")]
    listen: String,
    /// The URL the cluster reaches this worker at, when it is not http://LISTEN (a load
    /// balancer or proxy in front of several workers, another host name).
    #[arg(long, value_name = "URL")]
    advertise: Option<String>,
    /// Serve without registering (the --advertise URL is registered already).
    #[arg(long)]
    no_register: bool,
    /// Print one JSON line once serving: {"listen", "uri", "deployment", "config"}.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
}

/// `harnessx worker`: serves the agent the flags make until SIGINT or SIGTERM.
pub(crate) async fn worker(args: WorkerArgs) -> Result<ExitCode, CliError> {
    // ASK calls wait for `harnessx approve`, never for this process's terminal.
    // Opened first: a folder that cannot be used is a usage error before anything starts.
    let blobs = match &args.agent.blob_store {
        Some(dir) => Some(Arc::new(
            harnessx::durable::FolderBlobStore::open(dir)
                .map_err(|e| CliError::Usage(format!("--blob-store {}: {}", dir.display(), e.0)))?,
        ) as Arc<dyn harnessx::content::store::BlobStore>),
        None => None,
    };
    let agent = Arc::new(build_agent(&args.agent, false, Approvals::of(args.agent.yes, false)).await?);
    let config = WorkerConfig::of(&agent);
    let kept = agent.clone();
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| CliError::Usage(format!("--listen {}: {e}", args.listen)))?;
    let addr = listener.local_addr().map_err(CliError::failed)?;
    let uri = args.advertise.clone().unwrap_or_else(|| format!("http://{addr}"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_with_blobs(agent, blobs, listener, async {
        let _ = stopped.await;
    }));
    let deployment = if args.no_register {
        None
    } else {
        match register(&args.restate_admin, &uri).await {
            Ok(id) => Some(id),
            Err(e) => {
                let _ = stop.send(());
                let _ = server.await;
                kept.close().await;
                return Err(CliError::failed(e));
            }
        }
    };
    // Before it says it serves: a signal from then on stops it cleanly.
    let shutdown = Shutdown::listen();
    if args.json {
        let line =
            json!({"listen": addr.to_string(), "uri": uri, "deployment": deployment, "config": config});
        outln!("{line}");
    }
    errln!(
        "harnessx: worker serving {} at {uri}{}; stop it with Ctrl-C or SIGTERM",
        config.summary,
        deployment.as_deref().map(|id| format!(" (deployment {id})")).unwrap_or_default()
    );
    shutdown.wait().await;
    let _ = stop.send(());
    let _ = server.await;
    // Stops its MCP servers.
    kept.close().await;
    Ok(ExitCode::SUCCESS)
}
