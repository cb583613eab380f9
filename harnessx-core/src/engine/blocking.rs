//! The thread pool that runs blocking (sync) handlers off the async runtime.
//!
//! Why not `tokio::task::spawn_blocking`: a round trip through it costs two futex
//! wake-ups (the pool thread, then the awaiting task), about 30 µs on the project's
//! machines, which is 30 times the cost of everything else in the pipeline. This pool
//! keeps a recently busy thread spinning for a short while before it parks, and the
//! awaiting side spins briefly when a hot thread took the job, so a quick sync tool costs
//! a few microseconds. Long tools pay nothing extra: spinning is bounded on both sides,
//! and the awaiting side then parks on an ordinary channel. Idle threads exit after
//! [`KEEP_ALIVE`].

use std::any::Any;
use std::collections::VecDeque;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, LazyLock, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// How long a thread that just finished a job spins for the next one before parking.
const WORKER_SPIN: Duration = Duration::from_micros(100);
/// How long the awaiting task spins for a result when a spinning thread took its job.
const CALLER_SPIN: Duration = Duration::from_micros(25);
/// How long a parked thread waits for work before it exits.
const KEEP_ALIVE: Duration = Duration::from_secs(10);
/// Most threads the pool starts; further jobs wait in the queue.
const MAX_THREADS: usize = 256;

type Job = Box<dyn FnOnce() + Send + 'static>;

struct Queue {
    jobs: VecDeque<Job>,
    threads: usize,
    /// Threads waiting on the condition variable.
    parked: usize,
    /// Notifications sent and not yet consumed by a waking thread: a parked thread is only
    /// counted as available when it has no pending wake-up (two quick jobs must not both
    /// count on the same parked thread).
    wakeups: usize,
}

struct Pool {
    queue: Mutex<Queue>,
    available: Condvar,
    /// Jobs in the queue, readable without the lock (for spinning threads).
    pending: AtomicUsize,
    /// Threads currently spinning for work.
    spinning: AtomicUsize,
}

static POOL: LazyLock<Pool> = LazyLock::new(|| Pool {
    queue: Mutex::new(Queue { jobs: VecDeque::new(), threads: 0, parked: 0, wakeups: 0 }),
    available: Condvar::new(),
    pending: AtomicUsize::new(0),
    spinning: AtomicUsize::new(0),
});

impl Pool {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a job; returns whether a spinning thread is likely to take it at once.
    fn submit(&'static self, job: Job) -> bool {
        let mut q = self.lock();
        q.jobs.push_back(job);
        let pending = self.pending.fetch_add(1, Ordering::SeqCst) + 1;
        // Every queued job needs a thread of its own: only when there are at least as many
        // spinning threads as queued jobs is this one covered without waking or starting
        // another (otherwise a batch of sync calls would queue up behind one spinner).
        if self.spinning.load(Ordering::SeqCst) >= pending {
            return true;
        }
        if q.parked > q.wakeups {
            q.wakeups += 1;
            self.available.notify_one();
        } else if q.threads < MAX_THREADS {
            q.threads += 1;
            let spawned = thread::Builder::new().name("harnessx-tool".into()).spawn(move || self.work());
            if let Err(e) = spawned {
                q.threads -= 1;
                tracing::error!(error = %e, "could not start a tool thread; the job waits for a free one");
            }
        }
        false
    }

    fn take(&self, q: &mut Queue) -> Option<Job> {
        let job = q.jobs.pop_front()?;
        self.pending.fetch_sub(1, Ordering::SeqCst);
        Some(job)
    }

    fn work(&'static self) {
        loop {
            let job = self.take(&mut self.lock());
            if let Some(job) = job {
                job();
                continue;
            }
            if let Some(job) = self.spin_for_job() {
                job();
                continue;
            }
            let mut q = self.lock();
            loop {
                if let Some(job) = self.take(&mut q) {
                    drop(q);
                    job();
                    break;
                }
                q.parked += 1;
                let (guard, timeout) =
                    self.available.wait_timeout(q, KEEP_ALIVE).unwrap_or_else(|e| e.into_inner());
                q = guard;
                q.parked -= 1;
                q.wakeups = q.wakeups.saturating_sub(1);
                if timeout.timed_out() && q.jobs.is_empty() {
                    q.threads -= 1;
                    return;
                }
            }
        }
    }

    fn spin_for_job(&self) -> Option<Job> {
        self.spinning.fetch_add(1, Ordering::SeqCst);
        let start = Instant::now();
        let mut job = None;
        while start.elapsed() < WORKER_SPIN {
            if self.pending.load(Ordering::SeqCst) > 0 {
                job = self.take(&mut self.lock());
                if job.is_some() {
                    break;
                }
            }
            std::hint::spin_loop();
        }
        self.spinning.fetch_sub(1, Ordering::SeqCst);
        job
    }
}

/// Runs `f` on a pool thread and waits for it without blocking the async runtime.
/// A panic in `f` comes back as `Err(payload)`. Dropping the future stops waiting; the
/// thread finishes `f` regardless.
pub(crate) fn run_blocking<T, F>(f: F) -> impl Future<Output = thread::Result<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    // Queued now, not at the first poll: the future keeps the receiver, not `f`.
    let (tx, mut rx) = oneshot::channel();
    let hot = POOL.submit(Box::new(move || {
        let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
    }));
    async move {
        if hot {
            // Spin for a short while: a quick job is back before a wake-up could be. A
            // slow job costs the batch at most CALLER_SPIN before its next call is
            // submitted, and that call then gets a thread of its own (this one's thread
            // is busy).
            let start = Instant::now();
            loop {
                match rx.try_recv() {
                    Ok(result) => return result,
                    Err(oneshot::error::TryRecvError::Empty) if start.elapsed() < CALLER_SPIN => {
                        std::hint::spin_loop()
                    }
                    Err(_) => break,
                }
            }
        }
        match rx.await {
            Ok(result) => result,
            // The job was dropped without running: only possible if the thread died.
            Err(_) => Err(Box::new("tool thread ended before running the handler") as Box<dyn Any + Send>),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_off_the_calling_thread_and_returns() {
        let caller = thread::current().id();
        let (id, v) = run_blocking(|| (thread::current().id(), 41 + 1)).await.unwrap();
        assert_eq!(v, 42);
        assert_ne!(id, caller);
    }

    #[tokio::test]
    async fn panics_come_back_as_errors() {
        let err = run_blocking(|| -> u8 { panic!("boom") }).await.unwrap_err();
        assert_eq!(err.downcast_ref::<&str>(), Some(&"boom"));
        // The pool still works afterwards.
        assert_eq!(run_blocking(|| 7).await.unwrap(), 7);
    }

    // A batch of jobs that must all run at once still does after a quick job warmed a thread.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn jobs_submitted_while_a_thread_spins_still_run_in_parallel() {
        for _ in 0..20 {
            run_blocking(|| ()).await.unwrap(); // leaves a thread spinning
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
            let jobs = (0..4).map(|_| {
                let b = barrier.clone();
                run_blocking(move || {
                    b.wait();
                })
            });
            let all = futures_util::future::join_all(jobs);
            tokio::time::timeout(Duration::from_secs(10), all).await.expect("jobs ran one at a time");
        }
    }

    // Regression: jobs queued while one thread was spinning all waited behind that thread.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn jobs_queued_while_a_thread_spins_each_get_a_thread() {
        for _ in 0..20 {
            run_blocking(|| ()).await.unwrap(); // leaves a thread spinning for a while
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
            let (done, finished) = std::sync::mpsc::channel();
            for _ in 0..4 {
                let (b, done) = (barrier.clone(), done.clone());
                POOL.submit(Box::new(move || {
                    b.wait();
                    let _ = done.send(());
                }));
            }
            for _ in 0..4 {
                finished.recv_timeout(Duration::from_secs(10)).expect("a queued job never got a thread");
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_jobs_run_in_parallel() {
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
        let jobs = (0..8).map(|i| {
            let b = barrier.clone();
            run_blocking(move || {
                b.wait();
                i
            })
        });
        let out: Vec<_> =
            futures_util::future::join_all(jobs).await.into_iter().map(Result::unwrap).collect();
        assert_eq!(out, (0..8).collect::<Vec<_>>());
    }
}
