//! The `harnessx` command: run an agent, list, inspect and call tools.
//!
//! Exit status: 0 for a result, 1 for an error result (or a failed run), 2 for a usage
//! error.

mod approve;
mod run_cmd;
mod setup;
mod tools_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Safe, fast and predictable tools for LLM agents.
#[derive(Debug, Parser)]
#[command(name = "harnessx", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List, inspect and call built-in tools.
    Tools {
        #[command(subcommand)]
        command: tools_cmd::ToolsCommand,
    },
    /// Run an agent on a prompt.
    Run(run_cmd::RunArgs),
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

fn main() -> ExitCode {
    harnessx::builtin::link();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("harnessx: could not start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::Tools { command } => tools_cmd::run(command).await,
            Command::Run(args) => run_cmd::run(args).await,
        }
    });
    match outcome {
        Ok(code) => code,
        Err(CliError::Usage(message)) => {
            eprintln!("harnessx: {message}");
            ExitCode::from(2)
        }
        Err(CliError::Failed(message)) => {
            eprintln!("harnessx: {message}");
            ExitCode::FAILURE
        }
    }
}
