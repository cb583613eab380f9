//! [`SerialQueue`]: the turn-taking of non-concurrent tools, shareable across registries.

use std::fmt;
use std::sync::Arc;

use tokio::sync::{Mutex, MutexGuard};

/// The queue non-concurrent tools take turns on. Cloning shares it: give an agent's
/// registry and its specialists' registries the same queue and their serial tools run one
/// at a time across all of them, first come first served.
#[derive(Clone, Default)]
pub struct SerialQueue {
    lock: Arc<Mutex<()>>,
}

impl fmt::Debug for SerialQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SerialQueue").field("id", &Arc::as_ptr(&self.lock)).finish()
    }
}

/// Holding this is a serial tool's turn; dropping it passes the turn on.
#[derive(Debug)]
pub struct SerialTurn<'a> {
    _guard: MutexGuard<'a, ()>,
}

impl SerialQueue {
    /// A new, unshared queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits for the turn (FIFO).
    pub async fn acquire(&self) -> SerialTurn<'_> {
        SerialTurn { _guard: self.lock.lock().await }
    }

    /// Whether two handles share one queue.
    pub fn same_queue(&self, other: &SerialQueue) -> bool {
        Arc::ptr_eq(&self.lock, &other.lock)
    }
}
