//! [`Sandbox`]: where the `bash` built-in runs shell commands, and optionally a filesystem
//! of its own that the file tools then act on.
//!
//! The trait is the seam; `harnessx-builtin` implements it (`LocalSandbox` on the host,
//! `BubblewrapSandbox` in Linux namespaces). A registry holds at most one bound sandbox
//! ([`ToolRegistry::bind_sandbox`](crate::ToolRegistry::bind_sandbox)), which is what
//! `Agent::builder().sandbox(..)` sets and `agent.tools().sandbox()` reads.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::tool::handler::BoxFuture;

/// One shell command for a sandbox to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxCommand {
    /// The script, run as `bash -c SCRIPT` in the sandbox's working directory, with empty
    /// stdin and no controlling terminal.
    pub script: String,
    /// When to stop it, with every process it started.
    pub timeout: Duration,
    /// Most bytes of stdout and stderr together to keep. Reaching it stops the command,
    /// with every process it started.
    pub output_limit: usize,
    /// Variables added to the sandbox's allow-listed environment (they win over it).
    pub env: Vec<(String, String)>,
}

/// Which stream a piece of output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// A run of consecutive output from one stream, in the order it was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutputChunk {
    /// The stream.
    pub stream: OutputStream,
    /// The bytes, decoded lossily as UTF-8.
    pub text: String,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "ended", rename_all = "snake_case")]
pub enum CommandEnd {
    /// It exited with this code.
    Exited {
        /// The exit code.
        code: i32,
    },
    /// A signal ended it (one it did not catch).
    Signaled {
        /// The signal number.
        signal: i32,
    },
    /// Its timeout passed; it and every process it started were stopped.
    TimedOut,
    /// It wrote more than the output limit; it and every process it started were stopped.
    OutputLimit,
}

/// What a command did: its output in read order, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandOutput {
    /// stdout and stderr, consecutive reads from one stream merged, in the order read.
    pub chunks: Vec<OutputChunk>,
    /// How it ended.
    pub end: CommandEnd,
    /// Whether output past the limit was dropped (the limit also stops a command that is
    /// still running: [`CommandEnd::OutputLimit`]).
    pub truncated: bool,
    /// How long it ran.
    #[serde(serialize_with = "millis")]
    pub elapsed: Duration,
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl CommandOutput {
    /// All the text of one stream, concatenated.
    pub fn stream(&self, stream: OutputStream) -> String {
        self.chunks.iter().filter(|c| c.stream == stream).map(|c| c.text.as_str()).collect()
    }
}

/// A filesystem a sandbox owns: the directory its commands see as their workspace. When a
/// registry's bound sandbox has one, the filesystem tools act there (contained under
/// `root`) instead of under their own `base_path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxFilesystem {
    /// Where the workspace is on the host.
    pub root: PathBuf,
    /// Where commands inside the sandbox see it (their working directory). Paths the model
    /// writes under it are taken relative to `root`.
    pub mount: PathBuf,
}

/// Why a sandbox could not run a command (as opposed to the command failing, which is a
/// [`CommandOutput`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SandboxError(pub String);

/// Where shell commands run.
///
/// The contract, which the built-in sandboxes' tests pin: when the future [`run`](Self::run)
/// returns completes, or is dropped before that (a tool timeout), no process the command
/// started is still running, including ones that left its session or process group.
pub trait Sandbox: Send + Sync + fmt::Debug + 'static {
    /// A short name for messages and the CLI, such as `local` or `bubblewrap`.
    fn name(&self) -> &str;

    /// Runs one command to its end (exit, timeout or output limit).
    fn run(&self, command: SandboxCommand) -> BoxFuture<Result<CommandOutput, SandboxError>>;

    /// The filesystem the sandbox owns, if any. `None` (the default) leaves the file tools
    /// on the host, under their own `base_path`.
    fn filesystem(&self) -> Option<SandboxFilesystem> {
        None
    }
}
