//! [`UsageSink`]: how a specialist's usage reaches its parent's run. A specialist runs
//! inside one of its parent's tool calls; it reports its run's usage, by model, for that
//! call's id to the sink the parent's backend set around the batch, and the backend hands
//! it to the loop with the call's result (and journals it with the result, so a replayed
//! call brings its usage back without running again).

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};

use crate::model::Usage;

/// Usage by model name (`openai:gpt-4o`).
pub type UsageByModel = BTreeMap<String, Usage>;

tokio::task_local! {
    static SINK: UsageSink;
}

/// Collects the usage specialists report during a batch, by call id. Cheap to clone
/// (shared).
#[derive(Debug, Clone, Default)]
pub struct UsageSink(Arc<Mutex<HashMap<String, UsageByModel>>>);

impl UsageSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `work` (a batch of calls) with this sink receiving what specialists report.
    /// The calls' handlers must run in this task (the tool engine runs a batch's async
    /// handlers there).
    pub async fn scope<F: Future>(&self, work: F) -> F::Output {
        SINK.scope(self.clone(), work).await
    }

    /// What was reported for `call_id` so far (left in the sink).
    pub fn get(&self, call_id: &str) -> UsageByModel {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).get(call_id).cloned().unwrap_or_default()
    }

    /// What was reported for `call_id` (taken out of the sink).
    pub fn take(&self, call_id: &str) -> UsageByModel {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(call_id).unwrap_or_default()
    }
}

/// Reports `usage` (by model) as spent by the call `call_id` of the current batch.
/// Outside a [`UsageSink::scope`] (a tool run on its own) it goes nowhere.
pub fn report(call_id: &str, usage: &UsageByModel) {
    let _ = SINK.try_with(|sink| {
        let mut calls = sink.0.lock().unwrap_or_else(|e| e.into_inner());
        let spent = calls.entry(call_id.to_owned()).or_default();
        for (model, usage) in usage {
            *spent.entry(model.clone()).or_default() += *usage;
        }
    });
}
