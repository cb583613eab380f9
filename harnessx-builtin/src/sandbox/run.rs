//! Running one command to its end, shared by both sandboxes: spawn, read the output up to
//! the limit, wait for the end (exit, timeout or limit), kill the whole tree, drain.

use std::time::{Duration, Instant};

use harnessx_core::{CommandEnd, CommandOutput, SandboxCommand, SandboxError};
use tokio::io::AsyncReadExt;
use tokio::net::UnixStream;
use tokio::process::{Child, Command};

use super::capture::{Capture, Pump};
use super::spawn::{ProcessLimits, prepare_child};
use super::sweep::{Epoch, kill_namespace, kill_tree};

/// After the end, how long to keep reading what is left in the pipes.
const DRAIN: Duration = Duration::from_secs(2);

/// How the end of the command is learnt.
pub(crate) enum Ending {
    /// The spawned process exits when the command does (bubblewrap: its PID namespace
    /// takes every other process down with it).
    ChildExit,
    /// The spawned process is a wrapper that runs the command, writes its exit status as
    /// one line to its stdin (this socket) and then waits to be killed, so that it stays
    /// alive, and the subreaper of what the command left behind, until the sweep.
    StatusLine(UnixStream),
}

impl Ending {
    /// How everything the command started is killed: through its PID namespace, or by
    /// sweeping the tree under the wrapper.
    fn killer(&self) -> fn(i32, Epoch) {
        match self {
            Self::ChildExit => kill_namespace,
            Self::StatusLine(_) => kill_tree,
        }
    }
}

/// Kills everything if the run is dropped before it finished (a tool timeout).
struct TreeGuard {
    pid: i32,
    epoch: Epoch,
    kill: fn(i32, Epoch),
    armed: bool,
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        if self.armed {
            (self.kill)(self.pid, self.epoch);
        }
    }
}

/// How the wait ended, before the sweep.
enum Outcome {
    Finished(CommandEnd),
    TimedOut,
    Limit,
}

/// Spawns `command` (already holding its program, arguments, directory and environment),
/// and runs it to its end under `request`'s timeout and output limit. Afterwards no
/// process it started is left.
pub(crate) async fn run(
    mut command: Command,
    ending: Ending,
    limits: ProcessLimits,
    request: &SandboxCommand,
) -> Result<CommandOutput, SandboxError> {
    // The wrapper's socket lives until the end of this function: the wrapper waits on it,
    // and a write to a closed socket would kill it before the sweep. Declared before the
    // guard, so that a dropped run sweeps before it closes the socket.
    let kill = ending.killer();
    let mut status_line = match ending {
        Ending::ChildExit => None,
        Ending::StatusLine(socket) => Some(socket),
    };
    command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    prepare_child(&mut command, limits);
    let started = Instant::now();
    let epoch = Epoch::now();
    let mut child = command
        .spawn()
        .map_err(|e| SandboxError(format!("could not start {:?}: {e}", command.as_std().get_program())))?;
    // The command holds the other end of the status socket: drop it so that the socket
    // reports the end of stream if the wrapper dies.
    drop(command);
    let pid =
        child.id().and_then(|p| i32::try_from(p).ok()).expect("a child that was just spawned has a pid");
    let mut guard = TreeGuard { pid, epoch, kill, armed: true };
    let (stdout, stderr) = (child.stdout.take().expect("piped"), child.stderr.take().expect("piped"));
    let mut capture = Capture::new(stdout, stderr, request.output_limit);

    let (outcome, reaped) = {
        let end = wait_end(&mut child, status_line.as_mut());
        let deadline = tokio::time::sleep(request.timeout);
        tokio::pin!(end, deadline);
        loop {
            tokio::select! {
                biased;
                r = &mut end => {
                    let (end, reaped) =
                        r.map_err(|e| SandboxError(format!("waiting for the command failed: {e}")))?;
                    break (Outcome::Finished(end), reaped);
                }
                p = capture.pump(), if !capture.finished() => {
                    if p == Pump::Limit {
                        break (Outcome::Limit, false);
                    }
                }
                () = &mut deadline => break (Outcome::TimedOut, false),
            }
        }
    };
    if reaped {
        // The spawned process is gone and its pid may be reused: never signal it again.
        guard.armed = false;
    } else {
        tokio::task::spawn_blocking(move || kill(pid, epoch))
            .await
            .map_err(|e| SandboxError(format!("stopping the command failed: {e}")))?;
        guard.armed = false;
        let _ = child.wait().await;
    }
    let _ = tokio::time::timeout(DRAIN, async {
        while !capture.finished() {
            if capture.pump().await == Pump::Limit {
                break;
            }
        }
    })
    .await;
    let end = match outcome {
        Outcome::Finished(end) => end,
        Outcome::TimedOut => CommandEnd::TimedOut,
        Outcome::Limit => CommandEnd::OutputLimit,
    };
    Ok(CommandOutput {
        truncated: capture.truncated(),
        chunks: capture.into_chunks(),
        end,
        elapsed: started.elapsed(),
    })
}

/// Waits for the command's end; also says whether the spawned process was reaped.
async fn wait_end(
    child: &mut Child,
    status_line: Option<&mut UnixStream>,
) -> std::io::Result<(CommandEnd, bool)> {
    if let Some(socket) = status_line {
        let mut line = Vec::with_capacity(8);
        let mut byte = [0u8; 1];
        while socket.read(&mut byte).await? == 1 {
            if byte[0] == b'\n' {
                break;
            }
            line.push(byte[0]);
        }
        if let Some(code) = std::str::from_utf8(&line).ok().and_then(|s| s.trim().parse::<i32>().ok()) {
            return Ok((CommandEnd::Exited { code }, false));
        }
        // The wrapper died without reporting (something killed it): its own status is
        // all there is.
    }
    let status = child.wait().await?;
    let end = match (status.code(), std::os::unix::process::ExitStatusExt::signal(&status)) {
        (Some(code), _) => CommandEnd::Exited { code },
        (None, Some(signal)) => CommandEnd::Signaled { signal },
        (None, None) => CommandEnd::Exited { code: -1 },
    };
    Ok((end, true))
}
