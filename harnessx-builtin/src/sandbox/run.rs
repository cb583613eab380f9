//! Running one command to its end, the parts both sandboxes share: read the output up to
//! the limit while waiting for the end (exit, timeout or limit), kill what is left, drain
//! the pipes. [`run_child`] is the whole of it for a command that is its own child process
//! (bubblewrap); the local sandbox drives its long-lived shell with the same pieces.

use std::future::Future;
use std::time::{Duration, Instant};

use harnessx_core::{CommandEnd, CommandOutput, SandboxCommand, SandboxError};
use tokio::process::Command;

use super::capture::{Capture, Pump};
use super::cgroup::{CgroupLimits, CommandCgroup};
use super::helper::{self, Helper};
use super::spawn::{ProcessLimits, prepare_child};
use super::sweep::{Epoch, kill_namespace};

/// After the end, how long to keep reading what is left in the pipes.
const DRAIN: Duration = Duration::from_secs(2);

/// Stops what a command left: its cgroup killed (`cgroup.kill`, when it has a v2 one),
/// then its processes swept (`kill`, while `armed`), then its cgroup removed. Through
/// [`TreeGuard::finish`] on the command's reserved helper thread; if its run is dropped
/// before that (a tool timeout), on drop.
pub(crate) struct TreeGuard {
    pub(crate) pid: i32,
    pub(crate) epoch: Epoch,
    pub(crate) kill: fn(i32, Epoch),
    /// Whether `pid` may still be signalled (not reaped).
    pub(crate) armed: bool,
    pub(crate) cgroup: Option<CommandCgroup>,
}

impl TreeGuard {
    /// Blocking.
    fn stop(&mut self) {
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill();
        }
        if self.armed {
            self.armed = false;
            (self.kill)(self.pid, self.epoch);
        }
        if let Some(cgroup) = self.cgroup.take() {
            cgroup.remove();
        }
    }

    /// Stops the command on `helper`, a thread reserved before it started.
    pub(crate) async fn finish(self, helper: Helper) -> Result<(), SandboxError> {
        helper.run(move || drop(self)).await
    }
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What a command needs before it starts: its helper thread and its cgroup (`None` when
/// cgroups are off for the sandbox or this process has no writable one).
pub(crate) fn prepare(
    cgroup: Option<&CgroupLimits>,
) -> Result<(Helper, Option<CommandCgroup>), SandboxError> {
    let helper = helper::reserve()?;
    Ok((helper, cgroup.and_then(CommandCgroup::create)))
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

/// An outcome that is not `Finished`, retyped.
fn other_end<T, U>(outcome: Outcome<T>) -> Outcome<U> {
    match outcome {
        Outcome::TimedOut => Outcome::TimedOut,
        _ => Outcome::Limit,
    }
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
    cgroup: Option<&CgroupLimits>,
    request: &SandboxCommand,
) -> Result<CommandOutput, SandboxError> {
    let (helper, cgroup) = prepare(cgroup)?;
    command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let join = cgroup.as_ref().map(|c| c.procs_files().to_vec()).unwrap_or_default();
    prepare_child(command.as_std_mut(), limits, true, join, None);
    let started = Instant::now();
    let epoch = Epoch::now();
    let spawned = command.spawn();
    // From here on, the guard removes the cgroup however the run ends.
    let mut guard = TreeGuard { pid: 0, epoch, kill: kill_namespace, armed: false, cgroup };
    let mut child = spawned.map_err(|e| {
        SandboxError(format!(
            "could not start {:?} (if the harness's pids limit is reached, wait or raise it): {e}",
            command.as_std().get_program()
        ))
    })?;
    let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) else {
        return Err(SandboxError("the command's process has no pid".into()));
    };
    (guard.pid, guard.armed) = (pid, true);
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(SandboxError("the command's output pipes are missing".into()));
    };
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
        other => other_end(other),
    };
    // The guard signals the child only while it is unreaped: `finish` completes before
    // the wait below reaps it.
    guard.finish(helper).await?;
    let _ = child.wait().await;
    drain(&mut capture).await;
    Ok(output(outcome, capture, started))
}
