//! The `harnessx` command: run an agent, list, inspect and call tools.
//!
//! Exit status: 0 for a result, 1 for an error result (or a failed run), 2 for a usage
//! error, 3 when a durable run stopped to wait for input ([`durable_cmd::NEEDS_INPUT`]).

/// `println!` to standard output through [`emit`].
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::emit(::std::io::stdout(), format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` to standard error through [`emit`].
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::emit(::std::io::stderr(), format_args!("{}\n", format_args!($($arg)*)))
    };
}

mod approve;
mod durable_cmd;
mod mcp_cmd;
mod restate_cmd;
mod run_cmd;
mod runs_cmd;
mod setup;
mod tools_cmd;
mod trace;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

const EXIT_STATUS: &str = "Exit status: 0 done; 1 failed (an error result, a failed run, a journal error); 2 usage error; 3 a durable run waits for input (`harnessx approve` or `harnessx answer`, then `harnessx resume`).";

/// Safe, fast and predictable tools for LLM agents.
#[derive(Debug, Parser)]
#[command(name = "harnessx", version, about, after_help = EXIT_STATUS)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Export the spans of runs and tool calls: `otlp` (to the collector the
    /// OTEL_EXPORTER_OTLP_* variables name; default http://localhost:4318) or a FILE of
    /// JSON lines, one per span. Contents are left out unless
    /// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
    #[arg(long, global = true, value_name = "otlp|FILE", value_parser = trace::parse_target)]
    trace: Option<harnessx::telemetry::TraceTarget>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List, inspect and call built-in tools.
    Tools {
        #[command(subcommand)]
        command: tools_cmd::ToolsCommand,
    },
    /// Run an agent on a prompt (with --durable FILE: journaled, resumable).
    #[command(after_help = EXIT_STATUS)]
    Run(run_cmd::RunArgs),
    /// Continue a durable run from its journal (after a pause, a crash or a failure).
    ///
    /// Give the same --tools, --model and other agent flags as the run, from the same
    /// directory: the agent is built from them again. A run started with other tools or
    /// another model is refused (exit status 1). With --restate URL, the run goes on by
    /// itself on the cluster's workers; this follows it until it finishes or waits.
    #[command(after_help = EXIT_STATUS)]
    Resume(durable_cmd::ResumeArgs),
    /// Decide on a call a paused durable run waits to have approved; then `resume` it
    /// (a run on a Restate cluster goes on by itself).
    Approve(durable_cmd::ApproveArgs),
    /// Say whether a call whose outcome is unknown took effect; then `resume` the run.
    ///
    /// The text becomes the call's result for the model; the call is not run again.
    Answer(durable_cmd::AnswerArgs),
    /// Serve the agent to a Restate cluster, so that its runs (`run --restate URL`)
    /// execute here, and move to another worker if this one dies.
    ///
    /// Every worker of a cluster must be started with the same --tools, --model and
    /// other agent flags: a run started with other tools is refused by this worker, and
    /// waits for one that has them.
    Worker(restate_cmd::WorkerArgs),
    /// Serve built-in tools over MCP (`mcp serve`).
    Mcp {
        #[command(subcommand)]
        command: mcp_cmd::McpCommand,
    },
    /// List and inspect the runs in a journal.
    Runs {
        #[command(subcommand)]
        command: runs_cmd::RunsCommand,
    },
}

/// Why a command could not give a result. Each variant has its exit status; there is no
/// blanket conversion, so every error site says which kind it is.
#[derive(Debug)]
pub(crate) enum CliError {
    /// The command line or the setup it names is wrong (unknown tool, bad flag value,
    /// a `--base-path` that cannot be used): exit status 2.
    Usage(String),
    /// The command was right but could not finish (its output could not be written, the
    /// runtime could not start): exit status 1.
    Failed(String),
}

impl CliError {
    /// A usage error from anything displayable.
    pub(crate) fn usage(e: impl std::fmt::Display) -> Self {
        Self::Usage(e.to_string())
    }

    /// A failure from anything displayable.
    pub(crate) fn failed(e: impl std::fmt::Display) -> Self {
        Self::Failed(e.to_string())
    }
}

/// Writes `args` to `out` (standard output or error). A reader that went away
/// (`harnessx run ... 2>&1 | head`) is not an error: the command goes on (a run is not
/// cut off half-way through a tool call) and the text is dropped, where `println!` would
/// panic. Any other write error (a full disk) ends the process with status 74
/// (`EX_IOERR`), after saying so on standard error if it can.
pub(crate) fn emit(out: impl std::io::Write, args: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    if let Err(e) = write_out(out, args) {
        let _ = writeln!(std::io::stderr(), "harnessx: cannot write the output: {e}");
        std::process::exit(74);
    }
}

/// Writes `args` to `out`; a reader that went away is not an error (the text is dropped).
pub(crate) fn write_out(mut out: impl std::io::Write, args: std::fmt::Arguments<'_>) -> std::io::Result<()> {
    match out.write_fmt(args) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

fn main() -> ExitCode {
    harnessx::builtin::link();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            errln!("harnessx: could not start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Before any span; flushed before the runtime goes, so a short command loses none.
    let telemetry = match cli.trace.map(trace::start).transpose() {
        Ok(guard) => guard,
        Err(CliError::Usage(message) | CliError::Failed(message)) => {
            errln!("harnessx: {message}");
            return ExitCode::from(2);
        }
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::Tools { command } => tools_cmd::run(command).await,
            Command::Run(args) => run_cmd::run(args).await,
            Command::Resume(args) => durable_cmd::resume(args).await,
            Command::Approve(args) => durable_cmd::approve(args).await,
            Command::Answer(args) => durable_cmd::answer(args).await,
            Command::Worker(args) => restate_cmd::worker(args).await,
            Command::Mcp { command } => mcp_cmd::run(command).await,
            Command::Runs { command } => runs_cmd::run(command),
        }
    });
    if let Some(guard) = telemetry {
        trace::finish(guard);
    }
    // A task still blocked on standard input (`mcp serve` stopped by a signal while its
    // client keeps stdin open) would hold a plain drop of the runtime forever.
    runtime.shutdown_timeout(std::time::Duration::from_millis(250));
    match outcome {
        Ok(code) => code,
        Err(CliError::Usage(message)) => {
            errln!("harnessx: {message}");
            ExitCode::from(2)
        }
        Err(CliError::Failed(message)) => {
            errln!("harnessx: {message}");
            ExitCode::FAILURE
        }
    }
}
