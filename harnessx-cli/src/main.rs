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

/// A setup or usage problem: printed on stderr, exit status 2.
#[derive(Debug)]
pub(crate) struct UsageError(pub(crate) String);

impl<E: std::fmt::Display> From<E> for UsageError {
    fn from(e: E) -> Self {
        Self(e.to_string())
    }
}

fn main() -> ExitCode {
    harnessx_builtin::link();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("harnessx: could not start the async runtime: {e}");
            return ExitCode::from(2);
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
        Err(UsageError(message)) => {
            eprintln!("harnessx: {message}");
            ExitCode::from(2)
        }
    }
}
