//! Each run's events, kept in the journal's event log (`SqliteJournal::append_events`)
//! and followed live: a writer appends and bumps the run's counter; a stream reads from
//! the log from where its client is, then waits for the counter to move. A slow or gone
//! client never holds a run up: the writer waits on nobody, and a stream that falls
//! behind reads the log at its own pace.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use harnessx_durable::{JournalError, SqliteJournal};
use serde_json::Value;
use tokio::sync::watch;

/// How many events a stream reads from the log at once.
const BATCH: usize = 256;

/// The event types after which a stream ends: the run ended, failed or paused.
const LAST: [&str; 3] = ["run_end", "error", "needs_input"];

/// The event logs of the runs this server drives or has driven.
#[derive(Debug)]
pub(crate) struct EventLog {
    journal: Arc<SqliteJournal>,
    /// Per run: how many events its log holds, for the streams that follow it.
    counts: Mutex<HashMap<String, watch::Sender<u64>>>,
}

impl EventLog {
    pub(crate) fn new(journal: Arc<SqliteJournal>) -> Self {
        Self { journal, counts: Mutex::default() }
    }

    /// Appends `events` (JSON values) to run `run_id`'s log, and wakes its streams.
    pub(crate) async fn append(&self, run_id: &str, events: Vec<Value>) -> Result<(), JournalError> {
        if events.is_empty() {
            return Ok(());
        }
        let texts: Vec<String> = events.iter().map(Value::to_string).collect();
        let journal = self.journal.clone();
        let id = run_id.to_owned();
        let n = texts.len() as u64;
        let first = tokio::task::spawn_blocking(move || journal.append_events(&id, &texts))
            .await
            .map_err(|e| JournalError::Storage(format!("writing events: {e}")))??;
        self.sender(run_id).send_replace(first + n);
        Ok(())
    }

    fn sender(&self, run_id: &str) -> watch::Sender<u64> {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        counts.entry(run_id.to_owned()).or_insert_with(|| watch::Sender::new(0)).clone()
    }

    /// The server-sent events of run `run_id` from event number `from`: the log from
    /// there, then what is appended, until the run ends, fails or pauses.
    pub(crate) fn stream(
        self: &Arc<Self>,
        run_id: String,
        from: u64,
    ) -> Sse<impl Stream<Item = Result<Event, Infallible>> + use<>> {
        let log = self.clone();
        let changed = self.sender(&run_id).subscribe();
        // State: the next event's number, events read and not yet sent, whether the last
        // one sent ends the stream (it does, unless more came after it).
        let stream = futures_util::stream::unfold(
            (from, Vec::<(u64, String)>::new().into_iter(), false, changed),
            move |(mut next, mut pending, ended, mut changed)| {
                let log = log.clone();
                let run_id = run_id.clone();
                async move {
                    loop {
                        if let Some((seq, data)) = pending.next() {
                            next = seq + 1;
                            let last = is_last(&data);
                            let event = Event::default().id(seq.to_string()).data(data);
                            return Some((Ok(event), (next, pending, last, changed)));
                        }
                        changed.borrow_and_update();
                        let journal = log.journal.clone();
                        let id = run_id.clone();
                        let read =
                            tokio::task::spawn_blocking(move || journal.events(&id, next, BATCH)).await;
                        match read {
                            Ok(Ok(rows)) if !rows.is_empty() => pending = rows.into_iter(),
                            // The run ended, failed or paused, and nothing came after.
                            Ok(Ok(_)) if ended => return None,
                            Ok(Ok(_)) => {
                                // Nothing new: wait for the writer (and look again now and
                                // then: another process may append to the same log).
                                let _ = tokio::time::timeout(Duration::from_secs(5), changed.changed()).await;
                            }
                            Ok(Err(e)) => {
                                let error = serde_json::json!({"type": "error", "message": e.to_string()});
                                let event = Event::default().data(error.to_string());
                                return Some((Ok(event), (next, pending, true, changed)));
                            }
                            Err(_) => return None,
                        }
                    }
                }
            },
        );
        Sse::new(stream).keep_alive(KeepAlive::default())
    }
}

/// Whether the event `data` ends a stream.
pub(crate) fn is_last(data: &str) -> bool {
    serde_json::from_str::<Value>(data)
        .ok()
        .and_then(|v| v.get("type").and_then(Value::as_str).map(|t| LAST.contains(&t)))
        .unwrap_or(false)
}
