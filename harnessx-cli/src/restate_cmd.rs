//! Durable runs on a Restate cluster from the command line: `harnessx worker` serves the
//! agent to the cluster; `run`, `resume`, `approve` and `answer` with `--restate URL`
//! start, follow and answer runs on it, over `harnessx::durable::restate`.
//!
//! The exit statuses and the `--json` object are those of `--durable` runs: 0 completed,
//! 1 failed, 3 waiting for input; `{"run_id", "status", "output", "needs_input"}`.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use harnessx::ApprovalDecision;
use harnessx::agent::NeedsInputKind;
use harnessx::durable::RunStatus;
use harnessx::durable::restate::{RestateRuntime, RunState, WorkerConfig, register, serve};
use serde_json::json;

use crate::CliError;
use crate::durable_cmd::{NEEDS_INPUT, awaited, shell_word};
use crate::run_cmd::{AgentArgs, build_agent_for};

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
    agent: AgentArgs,
}

/// `harnessx worker`: serves the agent the flags make until SIGINT or SIGTERM.
pub(crate) async fn worker(args: WorkerArgs) -> Result<ExitCode, CliError> {
    // ASK calls wait for `harnessx approve`, never for this process's terminal.
    let agent = Arc::new(build_agent_for(&args.agent, false, false).await?);
    let config = WorkerConfig::of(&agent);
    let kept = agent.clone();
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| CliError::Usage(format!("--listen {}: {e}", args.listen)))?;
    let addr = listener.local_addr().map_err(CliError::failed)?;
    let uri = args.advertise.clone().unwrap_or_else(|| format!("http://{addr}"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(agent, listener, async {
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
    shutdown_signal().await;
    let _ = stop.send(());
    let _ = server.await;
    // Stops its MCP servers.
    kept.close().await;
    Ok(ExitCode::SUCCESS)
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(term) => term,
            Err(_) => {
                let _ = interrupt.await;
                return;
            }
        };
        tokio::select! {
            _ = interrupt => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
}

/// A cluster the client commands talk to.
pub(crate) struct Cluster {
    runtime: RestateRuntime,
    ingress: String,
    /// What the run's agent flags make, when some were given: the workers must match.
    expect: Option<WorkerConfig>,
}

/// How agent flags given with `--restate` are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flags {
    /// `run`: they say which tools, model and system prompt the workers must have.
    Expected,
    /// `resume`: the run has its workers already; flags are refused.
    Refused,
}

impl Cluster {
    /// The cluster at `ingress` (and `admin`).
    pub(crate) async fn new(
        ingress: &str,
        admin: Option<&str>,
        agent: Option<&AgentArgs>,
        flags: Flags,
    ) -> Result<Self, CliError> {
        let given = agent.map(AgentArgs::to_flags).unwrap_or_default();
        let expect = match (given.iter().find(|f| f.starts_with("--")), agent) {
            (None, _) | (_, None) => None,
            (Some(flag), Some(_)) if flags == Flags::Refused => {
                return Err(CliError::Usage(format!(
                    "{flag} has no effect with --restate: the run goes on on the cluster's workers, with their agent flags"
                )));
            }
            // The workers build the agent; this one is built only to compare with theirs.
            (Some(_), Some(args)) => {
                let agent = build_agent_for(args, false, false).await?;
                let config = WorkerConfig::of(&agent);
                agent.close().await;
                Some(config)
            }
        };
        let mut runtime = RestateRuntime::new(ingress).map_err(CliError::usage)?;
        if let Some(admin) = admin {
            runtime = runtime.with_admin(admin).map_err(CliError::usage)?;
        }
        Ok(Self { runtime, ingress: ingress.to_owned(), expect })
    }

    /// `run --restate URL`: starts the run and follows it.
    pub(crate) async fn start(
        &self,
        run_id: Option<String>,
        prompt: &str,
        json: bool,
    ) -> Result<ExitCode, CliError> {
        let run_id = run_id.unwrap_or_else(crate::durable_cmd::new_run_id);
        if run_id.trim().is_empty() {
            return Err(CliError::Usage("--run-id must not be empty".into()));
        }
        self.runtime
            .submit_expecting(&run_id, prompt, self.expect.as_ref())
            .await
            .map_err(CliError::failed)?;
        errln!("harnessx: run id {run_id} on {}", self.ingress);
        self.follow(&run_id, json).await
    }

    /// `resume ID --restate URL`: the run goes on by itself; this follows it until it
    /// completes, fails or waits.
    pub(crate) async fn resume(&self, run_id: &str, json: bool) -> Result<ExitCode, CliError> {
        self.follow(run_id, json).await
    }

    async fn follow(&self, run_id: &str, json: bool) -> Result<ExitCode, CliError> {
        let state = self
            .runtime
            .wait(run_id, |event| {
                if !json {
                    errln!("  {event}");
                }
            })
            .await
            .map_err(CliError::failed)?;
        self.report(&state, json)
    }

    /// `approve RUN CALL --restate URL`.
    pub(crate) async fn approve(
        &self,
        run_id: &str,
        call_id: &str,
        decision: ApprovalDecision,
    ) -> Result<ExitCode, CliError> {
        self.runtime.approve(run_id, call_id, decision).await.map_err(CliError::failed)?;
        errln!(
            "harnessx: recorded the decision for call {call_id} of run {run_id}; it goes on by itself. Follow it with: harnessx resume {} --restate {}",
            shell_word(run_id),
            shell_word(&self.ingress)
        );
        Ok(ExitCode::SUCCESS)
    }

    /// `answer RUN CALL TEXT --restate URL`.
    pub(crate) async fn answer(&self, run_id: &str, call_id: &str, text: &str) -> Result<ExitCode, CliError> {
        self.runtime.answer(run_id, call_id, text).await.map_err(CliError::failed)?;
        errln!(
            "harnessx: recorded the answer for call {call_id} of run {run_id}; it goes on by itself. Follow it with: harnessx resume {} --restate {}",
            shell_word(run_id),
            shell_word(&self.ingress)
        );
        Ok(ExitCode::SUCCESS)
    }

    fn report(&self, state: &RunState, json: bool) -> Result<ExitCode, CliError> {
        if json {
            let object = json!({
                "run_id": state.run_id,
                "status": state.status,
                "output": state.outcome(),
                "needs_input": state.needs_input,
            });
            outln!("{object}");
        } else {
            let (run, url) =
                (shell_word(state.run_id.as_deref().unwrap_or_default()), shell_word(&self.ingress));
            let output = state.outcome().unwrap_or("");
            match state.status {
                RunStatus::Completed => outln!("{output}"),
                RunStatus::Failed => errln!("harnessx: the run failed: {output}"),
                RunStatus::Running => errln!("harnessx: run {run} is still running"),
                RunStatus::NeedsInput => {
                    errln!("harnessx: run {run} is waiting for input:");
                    for n in &state.needs_input {
                        errln!("  {}", awaited(n));
                        errln!("    {}", n.reason);
                    }
                    errln!(
                        "Answer it (it then goes on by itself; `harnessx resume {run} --restate {url}` follows it):"
                    );
                    for n in &state.needs_input {
                        let call = shell_word(&n.call_id);
                        match n.kind {
                            NeedsInputKind::Approval => errln!(
                                "  harnessx approve {run} {call} --restate {url} [--decision approve|session|deny]"
                            ),
                            NeedsInputKind::Outcome => {
                                errln!("  harnessx answer {run} {call} 'WHAT HAPPENED' --restate {url}")
                            }
                        }
                    }
                }
            }
        }
        Ok(match state.status {
            RunStatus::Completed => ExitCode::SUCCESS,
            RunStatus::NeedsInput => ExitCode::from(NEEDS_INPUT),
            RunStatus::Failed | RunStatus::Running => ExitCode::FAILURE,
        })
    }
}
