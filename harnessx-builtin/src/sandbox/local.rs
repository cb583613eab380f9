//! [`LocalSandbox`]: commands on the host, under this process's user.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use harnessx_core::{BoxFuture, CommandOutput, Sandbox, SandboxCommand, SandboxError};
use tokio::process::Command;

use super::env::{base_env, merged};
use super::find_program;
use super::run::{Ending, run};
use super::spawn::ProcessLimits;

/// The first process of every command. It runs the script in a subshell with empty stdin
/// (`eval` after `set --`, so the script sees `$0` as `bash` and no positional
/// parameters, as under `bash -c`; a fork, not a second `bash` to start), writes the
/// exit status to the status socket (its own stdin), then waits there. It is the child
/// subreaper of everything the script leaves behind, and stays alive until the sweep has
/// killed all of it. It runs with `--norc`: Debian's bash otherwise reads `~/.bashrc` when
/// its stdin is a socket (taking itself to be started by sshd), and would pass what that
/// exports on to the command.
const WRAPPER: &str = r#"( eval "set --; $1" ) </dev/null; printf '%s\n' "$?" >&0; read -r _"#;

/// Commands run on the host as this process's user, in a working directory of your choice;
/// the file tools stay on the host, under their own `base_path`.
///
/// What it stops: a command outliving its call. Each command's first process is a child
/// subreaper in a new session, so on exit, timeout, output limit or a dropped call, every
/// process the command started (including `setsid` and double-fork daemons) is found
/// under it, frozen and killed. What it does not stop: anything the user could do — it
/// reads and writes what this process can, and reaches the network. Use
/// [`BubblewrapSandbox`](super::BubblewrapSandbox) to confine commands.
///
/// ```no_run
/// use harnessx_builtin::sandbox::LocalSandbox;
///
/// let sandbox = LocalSandbox::new().working_dir("/srv/project");
/// ```
#[derive(Debug, Clone)]
pub struct LocalSandbox {
    /// `None` when no `bash` was found: each command then fails, saying so.
    bash: Option<PathBuf>,
    working_dir: Option<PathBuf>,
    limits: ProcessLimits,
    env: Vec<(String, String)>,
}

impl LocalSandbox {
    /// A local sandbox running `bash` from `PATH` in this process's working directory.
    /// Without a `bash`, building still works (so that loading every bundle does) and each
    /// command fails, saying so.
    pub fn new() -> Self {
        Self {
            bash: find_program("bash"),
            working_dir: None,
            limits: ProcessLimits::default(),
            env: base_env(),
        }
    }

    /// Runs commands in `dir` instead of this process's working directory.
    pub fn working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.working_dir = Some(dir.into());
        self
    }

    /// Sets resource limits on every command (see [`ProcessLimits`] for what the kernel
    /// counts).
    pub fn limits(mut self, limits: ProcessLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The working directory, if one was set.
    pub fn working_directory(&self) -> Option<&Path> {
        self.working_dir.as_deref()
    }
}

impl Default for LocalSandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox for LocalSandbox {
    fn name(&self) -> &str {
        "local"
    }

    fn run(&self, request: SandboxCommand) -> BoxFuture<Result<CommandOutput, SandboxError>> {
        let inner = self.clone();
        Box::pin(async move {
            let Some(bash) = &inner.bash else {
                return Err(SandboxError(
                    "the local sandbox needs `bash`, which is not on PATH or in /usr/bin or /bin; install bash".into(),
                ));
            };
            let io = |e: std::io::Error| {
                SandboxError(format!("could not set up the command's status socket: {e}"))
            };
            let (ours, theirs) = std::os::unix::net::UnixStream::pair().map_err(io)?;
            ours.set_nonblocking(true).map_err(io)?;
            let ours = tokio::net::UnixStream::from_std(ours).map_err(io)?;
            let mut command = Command::new(bash);
            command
                .args(["--norc", "--noprofile", "-c", WRAPPER])
                .arg("bash")
                .arg(&request.script)
                .env_clear()
                .envs(merged(&inner.env, &request.env))
                .stdin(Stdio::from(OwnedFd::from(theirs)));
            if let Some(dir) = &inner.working_dir {
                command.current_dir(dir);
            }
            run(command, Ending::StatusLine(ours), inner.limits, &request).await
        })
    }
}
