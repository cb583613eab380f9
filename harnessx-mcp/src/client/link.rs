//! [`Link`]: a server and its live connection, shared by its tools' handlers; a server
//! that died is restarted on the next call, at most once per backoff.

use std::sync::Arc;
use std::time::{Duration, Instant};

use harnessx_core::{Backoff, WeakToolRegistry};
use indexmap::IndexMap;
use rmcp::model::Tool;
use tokio::sync::Mutex;

use super::changes::Changes;
use super::connect::{Service, connect};
use super::endpoint::McpServer;
use super::options::McpOptions;

/// The wait before restarting a server that died: 250 ms after the first failed restart,
/// doubled after each further one, up to 30 s.
const RESTART: Backoff = Backoff::doubling(Duration::from_millis(250), Duration::from_secs(30));

/// A server and its current connection, shared by its tools' handlers.
pub(super) struct Link {
    pub(super) server: McpServer,
    pub(super) shown: String,
    pub(super) options: McpOptions,
    pub(super) state: Mutex<LinkState>,
    /// The server's tools in the registry: the server's name -> (our name, its listing).
    pub(super) registered: std::sync::Mutex<IndexMap<String, (String, Tool)>>,
    /// Announced on `tools/list_changed` and after a restart; notified on close and drop.
    pub(super) changed: Arc<Changes>,
    /// Where the tools are registered.
    pub(super) registry: WeakToolRegistry,
    /// The announcements applied so far (held while applying).
    pub(super) applied: Mutex<u64>,
    /// The calls whose progress someone follows.
    pub(super) progress: Arc<super::connect::Progress>,
}

impl Drop for Link {
    fn drop(&mut self) {
        // Wakes the refresh task, which finds the link gone and ends.
        self.changed.notify.notify_one();
    }
}

/// The connection of a [`Link`], and when it may be restarted.
pub(super) struct LinkState {
    pub(super) service: Option<Arc<Service>>,
    pub(super) pid: Option<u32>,
    /// No restart before this.
    not_before: Option<Instant>,
    /// Failed restarts in a row: the count [`RESTART`] waits by.
    failed_restarts: u32,
    pub(super) closed: bool,
}

impl LinkState {
    pub(super) fn up(service: Service, pid: Option<u32>) -> Self {
        Self { service: Some(Arc::new(service)), pid, not_before: None, failed_restarts: 0, closed: false }
    }
}

impl Link {
    /// The live connection, restarting the server if it died (at most once per backoff).
    pub(super) async fn service(&self) -> Result<Arc<Service>, String> {
        let mut state = self.state.lock().await;
        if state.closed {
            return Err(format!("the MCP server `{}` is closed", self.shown));
        }
        if let Some(service) = &state.service {
            if !service.is_transport_closed() {
                return Ok(service.clone());
            }
            state.service = None;
        }
        if let Some(wait) = state.not_before.map(|t| t.saturating_duration_since(Instant::now()))
            && !wait.is_zero()
        {
            return Err(format!(
                "the MCP server `{}` stopped; it is restarted in {:.1} s",
                self.shown,
                wait.as_secs_f64()
            ));
        }
        match connect(&self.server, &self.changed, &self.progress, self.options.elicit.as_ref()).await {
            Ok((service, pid)) => {
                let service = Arc::new(service);
                state.service = Some(service.clone());
                state.pid = pid;
                state.not_before = None;
                state.failed_restarts = 0;
                // The new process may offer other tools.
                self.changed.announce();
                Ok(service)
            }
            Err(e) => {
                let wait = RESTART.delay(state.failed_restarts);
                state.failed_restarts = state.failed_restarts.saturating_add(1);
                state.not_before = Some(Instant::now() + wait);
                Err(format!("{e}; retried after {:.1} s", wait.as_secs_f64()))
            }
        }
    }

    /// After a call failed on `service` because its transport closed: restart on the next call.
    pub(super) async fn lost(&self, service: &Arc<Service>) {
        let mut state = self.state.lock().await;
        if state.service.as_ref().is_some_and(|s| Arc::ptr_eq(s, service)) {
            state.service = None;
            state.not_before = None;
        }
    }

    /// The server's tools in the registry, by the server's name.
    pub(super) fn registered(&self) -> std::sync::MutexGuard<'_, IndexMap<String, (String, Tool)>> {
        self.registered.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_wait_a_quarter_second_doubling_up_to_thirty() {
        let waits: Vec<u128> = [0, 1, 2, 6, 7, 40].map(|n| RESTART.delay(n).as_millis()).to_vec();
        assert_eq!(waits, [250, 500, 1000, 16_000, 30_000, 30_000]);
    }
}
