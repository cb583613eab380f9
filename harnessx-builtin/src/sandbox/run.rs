//! Running one command to its end, the parts both sandboxes share: read the output up to
//! the limit while waiting for the end (exit, timeout or limit), kill what is left, drain
//! the pipes. [`run_child`] is the whole of it for a command that is its own child process
//! (bubblewrap); the local sandbox drives its long-lived shell with the same pieces.

use std::future::Future;
use std::time::{Duration, Instant};

use harnessx_core::{CommandEnd, CommandOutput, SandboxCommand, SandboxError};
use tokio::process::Command;

use super::capture::{Capture, Pump};
use super::spawn::{ProcessLimits, prepare_child};
use super::sweep::{Epoch, kill_namespace};

/// After the end, how long to keep reading what is left in the pipes.
const DRAIN: Duration = Duration::from_secs(2);

/// Kills what a command left if its run is dropped before it finished (a tool timeout).
pub(crate) struct TreeGuard {
    pub(crate) pid: i32,
    pub(crate) epoch: Epoch,
    pub(crate) kill: fn(i32, Epoch),
    pub(crate) armed: bool,
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        if self.armed {
            (self.kill)(self.pid, self.epoch);
        }
    }
}

/// How the wait ended, before the sweep.
pub(crate) enum Outcome<T> {
    /// The command ended by itself; `T` says how.
    Finished(T),
    TimedOut,
    Limit,
}

/// Reads output while waiting for `end`, until it completes, the output limit is reached,
/// or `timeout` passes.
pub(crate) async fn drive<T, E>(
    capture: &mut Capture,
    end: impl Future<Output = Result<T, E>>,
    timeout: Duration,
) -> Result<Outcome<T>, E> {
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(end, deadline);
    loop {
        tokio::select! {
            biased;
            r = &mut end => return r.map(Outcome::Finished),
            p = capture.pump(), if !capture.finished() => {
                if p == Pump::Limit {
                    return Ok(Outcome::Limit);
                }
            }
            () = &mut deadline => return Ok(Outcome::TimedOut),
        }
    }
}

/// Reads what is left in the pipes once every writer is gone (or for [`DRAIN`] at most).
pub(crate) async fn drain(capture: &mut Capture) {
    let _ = tokio::time::timeout(DRAIN, async {
        while !capture.finished() {
            if capture.pump().await == Pump::Limit {
                break;
            }
        }
    })
    .await;
}

/// The result, from how the command ended and what was read.
pub(crate) fn output(outcome: Outcome<CommandEnd>, capture: Capture, started: Instant) -> CommandOutput {
    let end = match outcome {
        Outcome::Finished(end) => end,
        Outcome::TimedOut => CommandEnd::TimedOut,
        Outcome::Limit => CommandEnd::OutputLimit,
    };
    CommandOutput {
        truncated: capture.truncated(),
        chunks: capture.into_chunks(),
        end,
        elapsed: started.elapsed(),
    }
}

/// Spawns `command` (already holding its program, arguments, directory and environment),
/// whose exit is the command's end and takes every process it started with it (a PID
/// namespace), and runs it under `request`'s timeout and output limit.
pub(crate) async fn run_child(
    mut command: Command,
    limits: ProcessLimits,
    request: &SandboxCommand,
) -> Result<CommandOutput, SandboxError> {
    command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    prepare_child(command.as_std_mut(), limits, true);
    let started = Instant::now();
    let epoch = Epoch::now();
    let mut child = command
        .spawn()
        .map_err(|e| SandboxError(format!("could not start {:?}: {e}", command.as_std().get_program())))?;
    let pid =
        child.id().and_then(|p| i32::try_from(p).ok()).expect("a child that was just spawned has a pid");
    let mut guard = TreeGuard { pid, epoch, kill: kill_namespace, armed: true };
    let (stdout, stderr) = (child.stdout.take().expect("piped"), child.stderr.take().expect("piped"));
    let mut capture = Capture::new(Box::new(stdout), Box::new(stderr), request.output_limit);

    let outcome = drive(&mut capture, child.wait(), request.timeout)
        .await
        .map_err(|e| SandboxError(format!("waiting for the command failed: {e}")))?;
    let outcome = match outcome {
        Outcome::Finished(status) => {
            // Reaped: the pid may be reused, so it is never signalled again.
            guard.armed = false;
            Outcome::Finished(match (status.code(), std::os::unix::process::ExitStatusExt::signal(&status)) {
                (Some(code), _) => CommandEnd::Exited { code },
                (None, Some(signal)) => CommandEnd::Signaled { signal },
                (None, None) => CommandEnd::Exited { code: -1 },
            })
        }
        other => {
            tokio::task::spawn_blocking(move || kill_namespace(pid, epoch))
                .await
                .map_err(|e| SandboxError(format!("stopping the command failed: {e}")))?;
            guard.armed = false;
            let _ = child.wait().await;
            match other {
                Outcome::TimedOut => Outcome::TimedOut,
                _ => Outcome::Limit,
            }
        }
    };
    drain(&mut capture).await;
    Ok(output(outcome, capture, started))
}
