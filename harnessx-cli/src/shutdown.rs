//! SIGINT or SIGTERM, for the commands that serve until stopped (`mcp serve`, `worker`).
//! The listeners are in place from the moment [`Shutdown::listen`] returns, so a signal
//! that arrives as soon as the command answers (its first MCP reply, its `--json` line)
//! stops it cleanly instead of killing it.

/// The stop signals, listened for.
pub(crate) struct Shutdown {
    #[cfg(unix)]
    signals: Vec<tokio::signal::unix::Signal>,
}

impl Shutdown {
    /// Starts listening for SIGINT and SIGTERM (in the async runtime).
    pub(crate) fn listen() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let signals = [SignalKind::interrupt(), SignalKind::terminate()]
                .into_iter()
                .filter_map(|kind| signal(kind).ok())
                .collect();
            Self { signals }
        }
        #[cfg(not(unix))]
        Self {}
    }

    /// Waits for the first of them.
    pub(crate) async fn wait(self) {
        #[cfg(unix)]
        {
            let mut signals = self.signals;
            if signals.is_empty() {
                // No listener could be set up: Ctrl-C as tokio sets it up, at least.
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
            let any = signals.iter_mut().map(|s| Box::pin(s.recv()));
            futures_util::future::select_all(any).await;
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
