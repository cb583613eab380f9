//! Threads reserved before a command starts, for the blocking work after it (the kill,
//! the sweep, removing its cgroup).
//!
//! Why not `tokio::task::spawn_blocking`: it starts a thread when its pool has none free,
//! and panics when the kernel refuses one ("OS can't spawn worker thread"), which is what
//! a fork bomb that fills the harness's pids cgroup makes it do, at the very moment the
//! bomb has to be killed. A [`Helper`] is taken before the command starts (an idle thread,
//! or a new one: a failure then is an error result, before anything ran), so stopping a
//! command never needs a new thread. Finished helpers wait for the next command; at most
//! [`MAX_IDLE`] of them are kept.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::mpsc;

use harnessx_core::SandboxError;
use tokio::sync::oneshot;

/// Most idle helper threads kept for later commands.
const MAX_IDLE: usize = 4;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// A thread waiting for jobs.
struct Worker {
    jobs: mpsc::Sender<Job>,
}

static IDLE: Mutex<Vec<Worker>> = Mutex::new(Vec::new());

fn idle() -> std::sync::MutexGuard<'static, Vec<Worker>> {
    IDLE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A thread reserved for one command's blocking work. Dropped unused, it goes back idle.
pub(crate) struct Helper {
    worker: Option<Worker>,
}

impl std::fmt::Debug for Helper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Helper")
    }
}

/// Reserves a thread: an idle one, else a new one.
pub(crate) fn reserve() -> Result<Helper, SandboxError> {
    if let Some(worker) = idle().pop() {
        return Ok(Helper { worker: Some(worker) });
    }
    let (jobs, queue) = mpsc::channel::<Job>();
    let again = jobs.clone();
    std::thread::Builder::new()
        .name("harnessx-sandbox".into())
        .spawn(move || {
            // Each job is sent by the one holder of this worker; after it, the thread
            // offers itself again, or ends when enough are idle.
            while let Ok(job) = queue.recv() {
                job();
                let mut idle = idle();
                if idle.len() >= MAX_IDLE {
                    return;
                }
                idle.push(Worker { jobs: again.clone() });
            }
        })
        .map_err(|e| {
            SandboxError(format!(
                "could not start a thread to supervise the command (is the harness's pids or thread limit reached?): {e}"
            ))
        })?;
    Ok(Helper { worker: Some(Worker { jobs }) })
}

impl Helper {
    /// Runs `f` on the reserved thread and waits for it without blocking the runtime. If
    /// this future is dropped, `f` still runs to its end.
    pub(crate) async fn run<T: Send + 'static>(
        mut self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, SandboxError> {
        let Some(worker) = self.worker.take() else {
            return Err(SandboxError("the thread supervising the command ended".into()));
        };
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
        });
        if worker.jobs.send(job).is_err() {
            return Err(SandboxError("the thread supervising the command ended".into()));
        }
        match rx.await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(_)) => Err(SandboxError("stopping the command failed (a bug: it panicked)".into())),
            Err(_) => Err(SandboxError("the thread supervising the command ended".into())),
        }
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        // Unused: a no-op job sends the thread back to the idle list (or ends it).
        if let Some(worker) = self.worker.take() {
            let _ = worker.jobs.send(Box::new(|| {}));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_helper_runs_its_job_off_the_caller_and_is_reused() {
        let caller = std::thread::current().id();
        let first = reserve().unwrap().run(|| std::thread::current().id()).await.unwrap();
        assert_ne!(first, caller);
        // An unused helper goes back idle too; neither leaks a thread.
        drop(reserve().unwrap());
        let err = reserve().unwrap().run(|| -> u8 { panic!("boom") }).await.unwrap_err();
        assert!(err.0.contains("panicked"), "{err}");
        assert_eq!(reserve().unwrap().run(|| 7).await.unwrap(), 7);
    }
}
