//! One run's view of its context window: the tally of its requests, when to compact, and
//! the recovery from a context-length refusal. The run loop calls
//! [`Tracker::respond`] in place of [`Steps::response`]; everything else about the
//! window is here.

use harnessx_core::Parts;
use tracing::Instrument;

use crate::context::compact::{self, fallback_summary};
use crate::context::{ContextPolicy, Encoding, MediaCost, Summarizer, Tally, known_window};
use crate::model::{Message, ModelError, ModelRequest, ModelResponse, Usage};
use crate::run::Events;
use crate::run::steps::Steps;
use crate::{Agent, AgentError, AgentEvent, spans};

/// Tokens kept for the summary's own answer, and the summarising request's share of
/// the summarizer's window.
const SUMMARY_MAX_TOKENS: u64 = 4096;
const SUMMARY_INPUT_SHARE: f64 = 0.5;
/// Characters per token assumed when sizing the summariser's transcript (a low figure:
/// more tokens than expected would overflow the summariser).
const CHARS_PER_TOKEN: f64 = 3.0;
/// Below this share of the threshold, a request sized by its messages' lengths is not
/// counted with the tokenizer (text denser than the run's so far is what the margin is
/// for; a provider's refusal is the net below it).
const ROUGH_MARGIN: f64 = 0.75;

/// One run's context-window state.
pub(crate) struct Tracker {
    policy: ContextPolicy,
    window: Option<u64>,
    summarizer_window: Option<u64>,
    tally: Tally,
    /// What the summarising requests since the last [`summaries`](Self::summaries) used,
    /// with the model that answered each (`None`: the agent's).
    summaries: Vec<(Usage, Option<String>)>,
}

impl Tracker {
    pub(crate) fn new(agent: &Agent) -> Self {
        let policy = agent.config().context.clone();
        let name = agent.model().map(|m| m.name()).unwrap_or_default();
        let window = policy.window.or_else(|| known_window(&name));
        let summarizer_window = match &policy.summarizer {
            Summarizer::Agent => window,
            Summarizer::Model(m) => known_window(&m.name()).or(window),
        };
        let tally = Tally::new(Encoding::for_model(&name)).with_media(MediaCost::for_model(&name));
        Self { policy, window, summarizer_window, tally, summaries: Vec::new() }
    }

    /// The usage of each summarising request made since the last call, and the model
    /// that answered it (`None`: the agent's): the run counts and prices it as it does a
    /// response, so a summary is held to every limit.
    pub(crate) fn summaries(&mut self) -> std::vec::Drain<'_, (Usage, Option<String>)> {
        self.summaries.drain(..)
    }

    /// The response to `request` for `turn`: compacts the history first when its
    /// estimate passes the threshold, and once more (then retries once) when the
    /// provider refuses it as too large.
    pub(crate) async fn respond<S: Steps>(
        &mut self,
        agent: &Agent,
        steps: &mut S,
        turn: u32,
        request: &mut ModelRequest,
        events: Option<&Events>,
    ) -> Result<ModelResponse, S::Error> {
        if self.over_threshold(request) {
            self.compact(agent, steps, turn, 0, request, events).await?;
        }
        let mut refused = false;
        loop {
            // Counted only while the window is known (nothing to compare with otherwise;
            // a refusal counts the request then).
            let raw = if self.window.is_some() { self.tally.raw(request) } else { 0 };
            let error = match steps.response(agent, turn, request, events).await {
                Ok(response) => {
                    self.tally.calibrate(raw, response.usage.input_tokens);
                    return Ok(response);
                }
                Err(error) => error,
            };
            let Some(ModelError::ContextWindow { message, limit, requested }) =
                steps.context_overflow(&error)
            else {
                return Err(error);
            };
            if refused {
                return Err(AgentError::ContextOverflow {
                    detail: format!("the provider refused the compacted request too: {message}"),
                }
                .into());
            }
            refused = true;
            tracing::warn!(turn, %message, "the provider refused the request as larger than the context window; compacting");
            let raw = if raw == 0 { self.tally.raw(request) } else { raw };
            // Learn from the refusal: the window it names, the size it measured.
            if let Some(limit) = limit {
                self.window = Some(self.window.map_or(limit, |w| w.min(limit)));
            }
            match requested {
                Some(requested) => self.tally.calibrate_up(raw, requested),
                None if limit.is_none() => {
                    // Neither named: the request was too large by an unknown amount.
                    let now = self.tally.corrected(raw);
                    let guess = (now as f64 * 0.8) as u64;
                    self.window = Some(self.window.map_or(guess, |w| w.min(guess)));
                }
                None => {}
            }
            self.compact(agent, steps, turn, 1, request, events).await?;
        }
    }

    /// The room for the prompt: the window less the answer's `max_tokens`.
    fn budget(&self, request: &ModelRequest) -> Option<u64> {
        let window = self.window?;
        Some(window.saturating_sub(request.max_tokens.map_or(0, u64::from)).max(1))
    }

    fn over_threshold(&mut self, request: &ModelRequest) -> bool {
        let Some(budget) = self.budget(request) else { return false };
        let threshold = self.policy.compact_at * budget as f64;
        // Sized by length first: far from the threshold, no text is tokenized.
        if (self.tally.rough(request) as f64) < ROUGH_MARGIN * threshold {
            return false;
        }
        self.tally.estimate(request) as f64 > threshold
    }

    /// Compacts `request`'s history down to half the threshold: clears the old tool
    /// results when that is enough, else summarises the older turns. Fails when even the
    /// result does not fit the window.
    async fn compact<S: Steps>(
        &mut self,
        agent: &Agent,
        steps: &mut S,
        turn: u32,
        attempt: u32,
        request: &mut ModelRequest,
        events: Option<&Events>,
    ) -> Result<(), S::Error> {
        let Some(budget) = self.budget(request) else { return Ok(()) };
        let target = (self.policy.compact_at.clamp(0.05, 1.0) * budget as f64 / 2.0) as u64;
        let before = self.tally.estimate(request);
        let span = spans::compaction(turn, before);
        let head = compact::head_end(&request.messages);
        let starts = compact::turn_starts(&request.messages, head);
        // The turns that stay: the newest `keep_turns`, fewer while they alone pass the
        // target, never none (the model answers the newest one).
        let mut keep = self.policy.keep_turns.clamp(1, starts.len().saturating_sub(1).max(1));
        while keep > 1 && self.kept_size(request, head, starts[starts.len() - keep]) > target {
            keep -= 1;
        }
        let cut = match starts.len() {
            n if n > keep => starts[n - keep],
            _ => head,
        };
        let how = if cut <= head {
            "nothing"
        } else {
            // Clearing first: no model request, when it is enough.
            self.tally.forget_from(head);
            // Old media go first, before any text: an image is thousands of tokens.
            if self.without_media_size(request, head, cut, before) <= target {
                compact::drop_media(&mut request.messages, head, cut);
                "media dropped"
            } else if self.cleared_size(request, head, cut, before) <= target {
                compact::drop_media(&mut request.messages, head, cut);
                compact::clear_results(&mut request.messages, head, cut);
                "cleared"
            } else {
                let summary_window = self.summarizer_window.unwrap_or(budget);
                let max_tokens = (summary_window / 10).clamp(256, SUMMARY_MAX_TOKENS);
                let budget_chars = (summary_window as f64 * SUMMARY_INPUT_SHARE * CHARS_PER_TOKEN) as usize;
                let ask =
                    compact::summary_request(&request.messages, head, cut, budget_chars, max_tokens as u32);
                let response = steps.summary(agent, turn, attempt, &ask).instrument(span.clone()).await?;
                let by = response.model.clone().or_else(|| match &self.policy.summarizer {
                    Summarizer::Model(model) => Some(model.name()),
                    Summarizer::Agent => None,
                });
                self.summaries.push((response.usage, by));
                let text = if response.content.trim().is_empty() {
                    fallback_summary(&request.messages, head, cut)
                } else {
                    response.content
                };
                compact::apply_summary(&mut request.messages, head, cut, &text);
                "summarised"
            }
        };
        let after = self.tally.estimate(request);
        spans::record_compaction(&span, after, how);
        if how != "nothing" {
            tracing::info!(turn, tokens_before = before, tokens_after = after, how, "compacted the history");
            if let Some(tx) = events {
                let _ = tx.send(AgentEvent::Compaction { tokens_before: before, tokens_after: after });
            }
        }
        if after > budget {
            return Err(AgentError::ContextOverflow {
                detail: format!(
                    "about {after} tokens after compaction for a window of {} (the newest turn, the system prompt and the first message alone)",
                    self.window.unwrap_or(budget)
                ),
            }
            .into());
        }
        Ok(())
    }

    /// The estimated size of the request without `messages[head..from]`.
    fn kept_size(&mut self, request: &ModelRequest, head: usize, from: usize) -> u64 {
        let all = self.tally.estimate(request);
        let dropped: u64 = request.messages[head..from].iter().map(|m| self.tally.count(m)).sum();
        all.saturating_sub(self.tally.corrected(dropped))
    }

    /// The estimated size of the request (`before` now) once the media in
    /// `messages[head..cut]` are dropped.
    fn without_media_size(&self, request: &ModelRequest, head: usize, cut: usize, before: u64) -> u64 {
        let (mut now, mut then) = (0, 0);
        for message in request.messages[head..cut].iter().filter(|m| !m.parts().is_empty()) {
            now += self.tally.count(message);
            let mut stripped = [message.clone()];
            compact::drop_media(&mut stripped, 0, 1);
            then += self.tally.count(&stripped[0]);
        }
        if now == 0 {
            // No media there: nothing to gain (the next step is tried).
            return u64::MAX;
        }
        before.saturating_sub(self.tally.corrected(now)) + self.tally.corrected(then)
    }

    /// The estimated size of the request (`before` now) once the tool results in
    /// `messages[head..cut]` are cleared.
    fn cleared_size(&self, request: &ModelRequest, head: usize, cut: usize, before: u64) -> u64 {
        let (mut now, mut then) = (0, 0);
        for message in &request.messages[head..cut] {
            if let Message::Tool { name, call_id, .. } = message {
                now += self.tally.count(message);
                let stub = Message::Tool {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    content: compact::cleared_stub(name, call_id),
                    is_error: false,
                    parts: Parts::new(),
                };
                then += self.tally.count(&stub);
            }
        }
        before.saturating_sub(self.tally.corrected(now)) + self.tally.corrected(then)
    }
}
