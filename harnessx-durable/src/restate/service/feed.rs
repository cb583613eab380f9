//! A run's `--json` events on the cluster, for `harnessx serve`: the
//! [`AgentEvent`](harnessx_agent::AgentEvent)s of its steps, and the `needs_input` of a
//! pause or the `run_end` of a limit, written to the run's state in chunks as the run
//! goes. On every attempt of the workflow the same events land in the same chunks, so a
//! replay writes nothing new. The `feed` handler reads them from any event on.

use restate_sdk::prelude::*;

/// The state key holding the ends of the chunks (`Vec<u64>`: how many events the log
/// held after each chunk); chunk `k` is the state key `feed/{k}` (`Vec<String>`, each a
/// JSON object). Written a chunk at a time, so a long run writes each event once.
const FEED: &str = "feed";
/// The most events the `feed` handler answers at once.
pub(super) const FEED_PAGE: usize = 1000;

/// The events of one attempt of a run, as the loop sends them.
pub(super) struct Feed {
    events: tokio::sync::mpsc::UnboundedReceiver<harnessx_agent::AgentEvent>,
    /// Events received and not yet written, as JSON.
    pending: Vec<String>,
    /// The chunks written: how many events the log held after each.
    ends: Vec<u64>,
}

impl Feed {
    /// The feed of the events sent on `events`' sender.
    pub(super) fn new(events: tokio::sync::mpsc::UnboundedReceiver<harnessx_agent::AgentEvent>) -> Self {
        Self { events, pending: Vec::new(), ends: Vec::new() }
    }

    /// Adds `event` (a JSON object) after those received so far (call [`flush`](Self::flush)
    /// first, so that it lands after them).
    pub(super) fn push(&mut self, event: &serde_json::Value) {
        self.pending.push(event.to_string());
    }

    /// Writes what came since the last flush as a new chunk.
    pub(super) fn flush(&mut self, ctx: &WorkflowContext<'_>) {
        while let Ok(event) = self.events.try_recv() {
            match serde_json::to_string(&event) {
                Ok(text) => self.pending.push(text),
                Err(e) => tracing::warn!(error = %e, "an event of the run could not be written as JSON"),
            }
        }
        if self.pending.is_empty() {
            return;
        }
        let written = self.ends.last().copied().unwrap_or(0);
        let chunk = std::mem::take(&mut self.pending);
        let end = written + chunk.len() as u64;
        ctx.set(&format!("{FEED}/{}", self.ends.len()), Json(chunk));
        self.ends.push(end);
        ctx.set(FEED, Json(self.ends.clone()));
    }
}

/// The run's events from number `from` on (0 is the first), as JSON texts: at most
/// [`FEED_PAGE`] at once; none past the end.
pub(super) async fn read(ctx: &SharedWorkflowContext<'_>, from: u64) -> Result<Vec<String>, HandlerError> {
    let ends: Vec<u64> = ctx.get::<Json<Vec<u64>>>(FEED).await?.map(Json::into_inner).unwrap_or_default();
    let mut found = Vec::new();
    let first = ends.partition_point(|&end| end <= from);
    for k in first..ends.len() {
        let start = k.checked_sub(1).and_then(|before| ends.get(before)).copied().unwrap_or(0);
        let chunk: Vec<String> = ctx
            .get::<Json<Vec<String>>>(&format!("{FEED}/{k}"))
            .await?
            .map(Json::into_inner)
            .unwrap_or_default();
        let skip = usize::try_from(from.saturating_sub(start)).unwrap_or(usize::MAX);
        found.extend(chunk.into_iter().skip(skip).take(FEED_PAGE - found.len()));
        if found.len() >= FEED_PAGE {
            break;
        }
    }
    Ok(found)
}
