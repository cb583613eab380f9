//! Hooks: user code a run puts its steps through. On tool calls ([`PreToolUse`],
//! [`PostToolUse`]): every call before it runs (it may be rewritten, refused, let skip a
//! question or answered without running) and every result after (it may be replaced).
//! On the run ([`UserPrompt`], [`ModelTurn`], [`RunEnd`]): the prompt before the first
//! model request (it may be blocked, or context added), each model response before its
//! calls run (the run may be stopped), and the run's end (observed only).
//!
//! A [`ToolHook`] implements the points it needs (the others default to no opinion);
//! [`ToolHooks`] runs several in the order given, each under its timeout, failing
//! closed: a hook that panics, errors or passes its timeout gives a one-line reason
//! naming it, which refuses the call, blocks the prompt or stops the run (a post hook
//! keeps the result; a run-end hook is logged). At every point the first final decision
//! wins.

mod run;
mod tool;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tracing::Instrument;

pub use run::{
    Added, Blocked, ModelTurn, PromptDecision, PromptOutcome, ResponseDecision, ResponseOutcome, RunEnd,
    RunUsage, UserPrompt,
};
pub use tool::{PostDecision, PostToolUse, PreDecision, PreOutcome, PreToolUse};

/// The default time a hook has to answer.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a hook gave no decision: its text, for the one-line reason naming the hook.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HookError(pub String);

/// A hook on a run and its tool calls. Every method defaults to no opinion, so a hook
/// implements only the points it needs.
pub trait ToolHook: Send + Sync {
    /// The hook's name, in refusals, events and spans.
    fn name(&self) -> &str;

    /// Before a call runs.
    fn pre_tool_use<'a>(&'a self, call: PreToolUse<'a>) -> BoxFuture<'a, Result<PreDecision, HookError>> {
        let _ = call;
        Box::pin(std::future::ready(Ok(PreDecision::Continue)))
    }

    /// After a call ran (or was answered), before the model sees its result.
    fn post_tool_use<'a>(&'a self, call: PostToolUse<'a>) -> BoxFuture<'a, Result<PostDecision, HookError>> {
        let _ = call;
        Box::pin(std::future::ready(Ok(PostDecision::Keep)))
    }

    /// Before the first model request of a run: the prompt may be blocked (the run ends
    /// [`blocked`](Blocked) and the model is never asked), or context added to it.
    fn user_prompt<'a>(&'a self, prompt: UserPrompt<'a>) -> BoxFuture<'a, Result<PromptDecision, HookError>> {
        let _ = prompt;
        Box::pin(std::future::ready(Ok(PromptDecision::Continue)))
    }

    /// After each model response, before its calls run: a guardrail that may stop the
    /// run ([`blocked`](Blocked)).
    fn model_response<'a>(
        &'a self,
        response: ModelTurn<'a>,
    ) -> BoxFuture<'a, Result<ResponseDecision, HookError>> {
        let _ = response;
        Box::pin(std::future::ready(Ok(ResponseDecision::Continue)))
    }

    /// When a run ends, or stops (for input, at a limit): it observes; an error is
    /// logged and changes nothing.
    fn run_end<'a>(&'a self, end: RunEnd<'a>) -> BoxFuture<'a, Result<(), HookError>> {
        let _ = end;
        Box::pin(std::future::ready(Ok(())))
    }
}

/// Hooks in the order given, each with its timeout. Cheap to clone.
#[derive(Clone, Default)]
pub struct ToolHooks {
    hooks: Vec<(Arc<dyn ToolHook>, Duration)>,
}

impl std::fmt::Debug for ToolHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.hooks.iter().map(|(h, t)| (h.name().to_owned(), *t))).finish()
    }
}

impl ToolHooks {
    /// No hooks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `hook`, after the others, with the default timeout
    /// ([`DEFAULT_HOOK_TIMEOUT`]).
    pub fn with(self, hook: impl ToolHook + 'static) -> Self {
        self.with_timeout(hook, DEFAULT_HOOK_TIMEOUT)
    }

    /// Adds `hook`, after the others, with its own timeout.
    pub fn with_timeout(mut self, hook: impl ToolHook + 'static, timeout: Duration) -> Self {
        self.hooks.push((Arc::new(hook), timeout));
        self
    }

    /// Whether there are no hooks (then nothing is asked and nothing allocated).
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// The hooks in order, with their timeouts.
    fn iter(&self) -> impl Iterator<Item = (&Arc<dyn ToolHook>, &Duration)> {
        self.hooks.iter().map(|(h, t)| (h, t))
    }
}

/// A hook's decision as its span's `harnessx.hook.decision` names it.
trait Decided {
    fn decision(&self) -> &'static str;
}

impl Decided for PreDecision {
    fn decision(&self) -> &'static str {
        match self {
            Self::Continue => "continue",
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny { .. } => "deny",
            Self::Rewrite { .. } => "rewrite",
            Self::AllowRewritten { .. } => "allow_rewritten",
            Self::AskRewritten { .. } => "ask_rewritten",
            Self::Answer { .. } => "answer",
        }
    }
}

impl Decided for PostDecision {
    fn decision(&self) -> &'static str {
        match self {
            Self::Keep => "keep",
            Self::Replace { .. } => "replace",
        }
    }
}

impl Decided for PromptDecision {
    fn decision(&self) -> &'static str {
        match self {
            Self::Continue => "continue",
            Self::Block { .. } => "block",
            Self::AddContext { .. } => "add_context",
        }
    }
}

impl Decided for ResponseDecision {
    fn decision(&self) -> &'static str {
        match self {
            Self::Continue => "continue",
            Self::Stop { .. } => "stop",
        }
    }
}

impl Decided for () {
    fn decision(&self) -> &'static str {
        "observed"
    }
}

/// The span of one hook asked at one point (`hook {point}`), a child of the current
/// span (the call's or the run's): its name, point and decision, or an ERROR status with
/// why it gave none. Built only when a subscriber wants it.
fn hook_span(name: &str, point: &'static str) -> tracing::Span {
    tracing::info_span!(
        target: "harnessx_core::hooks",
        "hook",
        "otel.name" = %format_args!("hook {point}"),
        "otel.kind" = "internal",
        "harnessx.hook.name" = name,
        "harnessx.hook.point" = point,
        "harnessx.hook.decision" = tracing::field::Empty,
        "otel.status_code" = tracing::field::Empty,
        "otel.status_description" = tracing::field::Empty,
    )
}

/// One hook asked under its timeout, a panic caught, in its span: its decision, or the
/// one-line reason it gave none, naming it (a panic or a timeout's reason ends with
/// `then`: what that meant, such as "the call was refused").
async fn guarded<'a, T: Decided>(
    name: &str,
    point: &'static str,
    timeout: Duration,
    then: &str,
    ask: impl FnOnce() -> BoxFuture<'a, Result<T, HookError>>,
) -> Result<T, String> {
    let span = hook_span(name, point);
    if span.is_disabled() {
        // Nobody wants the span: nothing to enter on each poll.
        return answer(name, timeout, then, ask).await;
    }
    let answered = answer(name, timeout, then, ask).instrument(span.clone()).await;
    {
        match &answered {
            Ok(decision) => {
                span.record("harnessx.hook.decision", decision.decision());
            }
            Err(reason) => {
                span.record("harnessx.hook.decision", "error");
                span.record("otel.status_code", "ERROR");
                span.record("otel.status_description", reason.as_str());
            }
        }
    }
    answered
}

/// [`guarded`] without its span.
async fn answer<'a, T>(
    name: &str,
    timeout: Duration,
    then: &str,
    ask: impl FnOnce() -> BoxFuture<'a, Result<T, HookError>>,
) -> Result<T, String> {
    let asked = match std::panic::catch_unwind(AssertUnwindSafe(ask)) {
        Ok(future) => AssertUnwindSafe(future).catch_unwind(),
        Err(_) => return Err(format!("hook {name} failed (it panicked); {then}")),
    };
    let mut asked = std::pin::pin!(asked);
    // A hook that answers at once (most Rust hooks) needs no timer: the timeout is set
    // only for one that has to wait.
    let answered = match asked.as_mut().now_or_never() {
        Some(answered) => answered,
        None => match tokio::time::timeout(timeout, asked).await {
            Ok(answered) => answered,
            Err(_) => {
                let seconds = timeout.as_secs_f64();
                return Err(format!("hook {name} did not answer within {seconds}s; {then}"));
            }
        },
    };
    match answered {
        Err(_) => Err(format!("hook {name} failed (it panicked); {then}")),
        Ok(Err(e)) => Err(format!("hook {name} failed: {}", one_line(&e.0))),
        Ok(Ok(decision)) => Ok(decision),
    }
}

/// `text` on one line, cut at 300 characters.
fn one_line(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_reason_is_one_cut_line() {
        let text = format!("line one\nline two {}", "x".repeat(500));
        let line = one_line(&text);
        assert!(!line.contains('\n') && line.starts_with("line one line two") && line.ends_with('…'));
        assert_eq!(line.chars().count(), 301);
    }
}
