//! The run points: [`UserPrompt`] (before the first model request: block it, or add
//! context), [`ModelTurn`] (after each model response, before its calls run: stop the
//! run) and [`RunEnd`] (observed only), with what the hooks decide and how
//! [`ToolHooks`] asks them.
//!
//! A block or a stop is final: the hooks after it are not asked, and the run ends
//! [`Blocked`]. Added context is not final: every hook that adds some is heard, and the
//! texts go to the model in the order the hooks were given.

use serde::{Deserialize, Serialize};

use super::{ToolHooks, guarded};
use crate::tool::call::ToolCall;

/// What a run used so far, as a hook sees it (the agent's usage, summed over its
/// models and specialists).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunUsage {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Model requests.
    pub requests: u64,
    /// Tool calls handled.
    pub tool_calls: u64,
    /// What the requests cost, in US dollars, when the price is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// A run's prompt as a `user_prompt` hook sees it.
#[derive(Debug, Clone, Copy)]
pub struct UserPrompt<'a> {
    /// The prompt.
    pub prompt: &'a str,
    /// The durable run's id; `None` for a direct run.
    pub run_id: Option<&'a str>,
    /// What the run used so far (a continued conversation's run starts at zero).
    pub usage: RunUsage,
}

/// A model response as a `model_response` hook sees it, before its calls run.
#[derive(Debug, Clone, Copy)]
pub struct ModelTurn<'a> {
    /// The turn (1-based).
    pub turn: u32,
    /// The response's text.
    pub text: &'a str,
    /// The calls it asks for (none for a final answer).
    pub tool_calls: &'a [ToolCall],
    /// The durable run's id; `None` for a direct run.
    pub run_id: Option<&'a str>,
    /// What the run used so far, this response included.
    pub usage: RunUsage,
}

/// How a run ended (or stopped) as a `run_end` hook sees it.
#[derive(Debug, Clone, Copy)]
pub struct RunEnd<'a> {
    /// The durable run's id; `None` for a direct run.
    pub run_id: Option<&'a str>,
    /// `completed`, `blocked`, `limit_reached`, `needs_input` or `failed`.
    pub status: &'a str,
    /// The final answer (empty unless completed).
    pub output: &'a str,
    /// Why it failed, once failed.
    pub error: Option<&'a str>,
    /// Which hook blocked it, and why, once blocked.
    pub blocked: Option<&'a Blocked>,
    /// Model responses.
    pub turns: u32,
    /// What the run used.
    pub usage: RunUsage,
}

/// What a `user_prompt` hook decides (journaled by a durable run as `snake_case` tagged
/// JSON: `{"decision": "block", "message": ..}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PromptDecision {
    /// No opinion.
    Continue,
    /// The run ends blocked before any model request; the person reads `message`.
    Block {
        /// Why, for the person who sent the prompt.
        message: String,
    },
    /// The model reads `text` after the prompt. Not final: the hooks after this one are
    /// asked too.
    AddContext {
        /// What the model reads.
        text: String,
    },
}

/// What a `model_response` hook decides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResponseDecision {
    /// No opinion: the run goes on.
    Continue,
    /// The run ends blocked: the response's calls do not run, and no more requests are
    /// made; the person reads `message`.
    Stop {
        /// Why, for the person running it.
        message: String,
    },
}

/// Which hook blocked a prompt or stopped a run, and why: what a blocked run reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blocked {
    /// The hook's name (a command hook's command).
    pub hook: String,
    /// Its message (or the one-line reason it failed).
    pub message: String,
}

/// Context a hook added to the prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Added {
    /// The hook's name.
    pub hook: String,
    /// The text.
    pub text: String,
}

/// What the `user_prompt` hooks decided together: what a durable run journals before
/// its first request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptOutcome {
    /// The context added, in hook order (kept even when a later hook blocks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<Added>,
    /// The block, if a hook blocked the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<Blocked>,
}

impl PromptOutcome {
    /// Every decision, as hook events name them: `(hook, "add_context")` for each text
    /// added, then `(hook, "block")`.
    pub fn decisions(&self) -> impl Iterator<Item = (&str, &'static str)> {
        let added = self.context.iter().map(|a| (a.hook.as_str(), "add_context"));
        added.chain(self.blocked.iter().map(|b| (b.hook.as_str(), "block")))
    }
}

/// What the `model_response` hooks decided together: what a durable run journals with
/// the response.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseOutcome {
    /// The stop, if a hook stopped the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Blocked>,
}

impl ToolHooks {
    /// Runs the `user_prompt` hooks in order until one blocks, collecting the context
    /// they add. A hook that fails (an error, a panic, its timeout) blocks the prompt
    /// with a one-line reason naming it.
    pub async fn user_prompt(&self, prompt: UserPrompt<'_>) -> PromptOutcome {
        let mut outcome = PromptOutcome::default();
        for (hook, timeout) in self.iter() {
            let name = hook.name();
            let decided =
                guarded(name, "user_prompt", *timeout, "the prompt was blocked", || hook.user_prompt(prompt))
                    .await;
            match decided.unwrap_or_else(|message| PromptDecision::Block { message }) {
                PromptDecision::Continue => {}
                PromptDecision::AddContext { text } => {
                    outcome.context.push(Added { hook: name.to_owned(), text });
                }
                PromptDecision::Block { message } => {
                    outcome.blocked = Some(Blocked { hook: name.to_owned(), message });
                    break;
                }
            }
        }
        outcome
    }

    /// Runs the `model_response` hooks in order until one stops the run. A hook that
    /// fails stops it with a one-line reason naming it.
    pub async fn model_response(&self, response: ModelTurn<'_>) -> ResponseOutcome {
        for (hook, timeout) in self.iter() {
            let name = hook.name();
            let decided = guarded(name, "model_response", *timeout, "the run was stopped", || {
                hook.model_response(response)
            })
            .await;
            match decided.unwrap_or_else(|message| ResponseDecision::Stop { message }) {
                ResponseDecision::Continue => {}
                ResponseDecision::Stop { message } => {
                    return ResponseOutcome { stopped: Some(Blocked { hook: name.to_owned(), message }) };
                }
            }
        }
        ResponseOutcome::default()
    }

    /// Tells every hook how the run ended, in order; a hook that fails is logged.
    pub async fn run_end(&self, end: RunEnd<'_>) {
        for (hook, timeout) in self.iter() {
            let name = hook.name();
            if let Err(reason) =
                guarded(name, "run_end", *timeout, "it was ignored", || hook.run_end(end)).await
            {
                tracing::warn!(hook = name, run_id = end.run_id, %reason, "run_end hook failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use futures_util::future::BoxFuture;

    use super::*;
    use crate::hooks::{HookError, ToolHook};

    /// Answers every run point the same way, recording each ask in `log`.
    struct Says {
        name: &'static str,
        prompt: PromptDecision,
        response: ResponseDecision,
        log: Arc<Mutex<Vec<String>>>,
    }

    fn says(name: &'static str, prompt: PromptDecision, log: &Arc<Mutex<Vec<String>>>) -> Says {
        Says { name, prompt, response: ResponseDecision::Continue, log: log.clone() }
    }

    impl ToolHook for Says {
        fn name(&self) -> &str {
            self.name
        }
        fn user_prompt<'a>(&'a self, _: UserPrompt<'a>) -> BoxFuture<'a, Result<PromptDecision, HookError>> {
            self.log.lock().unwrap().push(format!("{} prompt", self.name));
            Box::pin(std::future::ready(Ok(self.prompt.clone())))
        }
        fn model_response<'a>(
            &'a self,
            _: ModelTurn<'a>,
        ) -> BoxFuture<'a, Result<ResponseDecision, HookError>> {
            self.log.lock().unwrap().push(format!("{} response", self.name));
            Box::pin(std::future::ready(Ok(self.response.clone())))
        }
        fn run_end<'a>(&'a self, end: RunEnd<'a>) -> BoxFuture<'a, Result<(), HookError>> {
            self.log.lock().unwrap().push(format!("{} end {}", self.name, end.status));
            Box::pin(std::future::ready(Err(HookError("ignored".into()))))
        }
    }

    /// Fails every run point in the way `how` says.
    struct Failing(&'static str);

    impl Failing {
        fn fail<'a, T: Send + 'a>(&self) -> BoxFuture<'a, Result<T, HookError>> {
            match self.0 {
                "panic" => panic!("hook bug"),
                "panic later" => Box::pin(async { panic!("hook bug") }),
                "sleep" => Box::pin(async {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Err(HookError("never".into()))
                }),
                _ => Box::pin(std::future::ready(Err(HookError("exit 1:\nno such file\n".into())))),
            }
        }
    }

    impl ToolHook for Failing {
        fn name(&self) -> &str {
            "failing"
        }
        fn user_prompt<'a>(&'a self, _: UserPrompt<'a>) -> BoxFuture<'a, Result<PromptDecision, HookError>> {
            self.fail()
        }
        fn model_response<'a>(
            &'a self,
            _: ModelTurn<'a>,
        ) -> BoxFuture<'a, Result<ResponseDecision, HookError>> {
            self.fail()
        }
        fn run_end<'a>(&'a self, _: RunEnd<'a>) -> BoxFuture<'a, Result<(), HookError>> {
            self.fail()
        }
    }

    fn prompt() -> UserPrompt<'static> {
        UserPrompt { prompt: "deploy it", run_id: Some("r1"), usage: RunUsage::default() }
    }

    fn turn() -> ModelTurn<'static> {
        ModelTurn { turn: 1, text: "done", tool_calls: &[], run_id: None, usage: RunUsage::default() }
    }

    fn end(status: &str) -> RunEnd<'_> {
        RunEnd {
            run_id: None,
            status,
            output: "",
            error: None,
            blocked: None,
            turns: 1,
            usage: RunUsage::default(),
        }
    }

    fn block(message: &str) -> PromptDecision {
        PromptDecision::Block { message: message.into() }
    }

    fn add(text: &str) -> PromptDecision {
        PromptDecision::AddContext { text: text.into() }
    }

    #[tokio::test]
    async fn prompt_hooks_run_in_order_context_accumulates_and_the_first_block_wins() {
        let log = Arc::default();
        let hooks = ToolHooks::new()
            .with(says("a", add("one"), &log))
            .with(says("quiet", PromptDecision::Continue, &log))
            .with(says("b", add("two"), &log))
            .with(says("guard", block("not on fridays"), &log))
            .with(says("never", block("never asked"), &log));
        let outcome = hooks.user_prompt(prompt()).await;
        let added = |hook: &str, text: &str| Added { hook: hook.into(), text: text.into() };
        assert_eq!(outcome.context, [added("a", "one"), added("b", "two")]);
        assert_eq!(outcome.blocked, Some(Blocked { hook: "guard".into(), message: "not on fridays".into() }));
        assert_eq!(
            *log.lock().unwrap(),
            ["a prompt", "quiet prompt", "b prompt", "guard prompt"],
            "the hooks after a block are not asked"
        );
        let decisions: Vec<_> = outcome.decisions().collect();
        assert_eq!(decisions, [("a", "add_context"), ("b", "add_context"), ("guard", "block")]);
    }

    #[tokio::test]
    async fn no_prompt_hook_or_no_opinion_leaves_the_prompt_alone() {
        let log = Arc::default();
        assert_eq!(ToolHooks::new().user_prompt(prompt()).await, PromptOutcome::default());
        let hooks = ToolHooks::new().with(says("quiet", PromptDecision::Continue, &log));
        let outcome = hooks.user_prompt(prompt()).await;
        assert_eq!(outcome, PromptOutcome::default());
        assert_eq!(outcome.decisions().count(), 0);
    }

    #[tokio::test]
    async fn the_first_response_stop_wins_and_the_hooks_after_it_are_not_asked() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = |name, message: &str| Says {
            response: ResponseDecision::Stop { message: message.into() },
            ..says(name, PromptDecision::Continue, &log)
        };
        let hooks = ToolHooks::new()
            .with(says("quiet", PromptDecision::Continue, &log))
            .with(stop("leak", "the answer quotes a secret"))
            .with(stop("never", "never asked"));
        let outcome = hooks.model_response(turn()).await;
        assert_eq!(
            outcome.stopped,
            Some(Blocked { hook: "leak".into(), message: "the answer quotes a secret".into() })
        );
        assert_eq!(*log.lock().unwrap(), ["quiet response", "leak response"]);
        let quiet = ToolHooks::new().with(says("quiet", PromptDecision::Continue, &log));
        assert_eq!(quiet.model_response(turn()).await, ResponseOutcome::default());
    }

    #[tokio::test(start_paused = true)]
    async fn a_run_hook_that_fails_in_any_way_blocks_or_stops_with_one_line_naming_it() {
        let log = Arc::default();
        for (how, prompt_reason, response_reason) in [
            (
                "panic",
                "hook failing failed (it panicked); the prompt was blocked",
                "hook failing failed (it panicked); the run was stopped",
            ),
            (
                "panic later",
                "hook failing failed (it panicked); the prompt was blocked",
                "hook failing failed (it panicked); the run was stopped",
            ),
            (
                "sleep",
                "hook failing did not answer within 2s; the prompt was blocked",
                "hook failing did not answer within 2s; the run was stopped",
            ),
            (
                "error",
                "hook failing failed: exit 1: no such file",
                "hook failing failed: exit 1: no such file",
            ),
        ] {
            let hooks = ToolHooks::new().with_timeout(Failing(how), Duration::from_secs(2)).with(says(
                "after",
                add("never heard"),
                &log,
            ));
            let blocked = hooks.user_prompt(prompt()).await.blocked;
            assert_eq!(
                blocked,
                Some(Blocked { hook: "failing".into(), message: prompt_reason.into() }),
                "{how}"
            );
            let stopped = hooks.model_response(turn()).await.stopped;
            assert_eq!(
                stopped,
                Some(Blocked { hook: "failing".into(), message: response_reason.into() }),
                "{how}"
            );
        }
        assert!(log.lock().unwrap().is_empty(), "no hook after a failed one is asked");
    }

    #[tokio::test(start_paused = true)]
    async fn every_run_end_hook_is_told_in_order_and_a_failing_one_changes_nothing() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let asked = Arc::new(AtomicUsize::new(0));
        struct Counting(Arc<AtomicUsize>);
        impl ToolHook for Counting {
            fn name(&self) -> &str {
                "counting"
            }
            fn run_end<'a>(&'a self, _: RunEnd<'a>) -> BoxFuture<'a, Result<(), HookError>> {
                self.0.fetch_add(1, Ordering::SeqCst);
                Box::pin(std::future::ready(Ok(())))
            }
        }
        let hooks = ToolHooks::new()
            .with_timeout(Failing("sleep"), Duration::from_secs(1))
            .with(Failing("panic"))
            .with(says("a", PromptDecision::Continue, &log))
            .with(Counting(asked.clone()));
        hooks.run_end(end("completed")).await;
        assert_eq!(*log.lock().unwrap(), ["a end completed"]);
        assert_eq!(asked.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn decisions_and_outcomes_are_tagged_snake_case_json() {
        fn json(value: &impl Serialize) -> String {
            serde_json::to_string(value).unwrap()
        }
        assert_eq!(json(&block("no")), r#"{"decision":"block","message":"no"}"#);
        assert_eq!(json(&add("ctx")), r#"{"decision":"add_context","text":"ctx"}"#);
        assert_eq!(
            json(&ResponseDecision::Stop { message: "leak".into() }),
            r#"{"decision":"stop","message":"leak"}"#
        );
        assert_eq!(json(&PromptOutcome::default()), "{}");
        let outcome = ResponseOutcome { stopped: Some(Blocked { hook: "h".into(), message: "m".into() }) };
        let back: ResponseOutcome = serde_json::from_str(&json(&outcome)).unwrap();
        assert_eq!(back, outcome);
    }
}
