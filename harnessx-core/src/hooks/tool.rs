//! The tool-call points: [`PreToolUse`] (before a call runs: it may be rewritten,
//! refused, let skip a question or answered without running) and [`PostToolUse`] (after:
//! its result may be replaced), with what the hooks decide and how [`ToolHooks`] asks
//! them. The first final decision wins ([`PreDecision::is_final`]); a rewrite is not
//! final, and the hooks after it see the rewritten arguments.
//!
//! What the decisions mean for the call (the rules checked again on rewritten arguments,
//! `Allow` never beating a deny rule) is the permission stage's business, not the hooks'.

use serde_json::Value;

use super::{RunUsage, ToolHooks, guarded};
use crate::tool::call::ToolOutput;

/// One call as a pre hook sees it.
#[derive(Debug, Clone, Copy)]
pub struct PreToolUse<'a> {
    /// The registered (resolved) tool name.
    pub tool: &'a str,
    /// The call id.
    pub call_id: &'a str,
    /// The validated arguments (as an earlier hook rewrote them, if one did).
    pub arguments: &'a Value,
    /// The durable run's id; `None` for a direct run or call.
    pub run_id: Option<&'a str>,
    /// What the run used so far (zero for a direct call outside a run).
    pub usage: RunUsage,
}

/// One call and its result as a post hook sees them.
#[derive(Debug, Clone, Copy)]
pub struct PostToolUse<'a> {
    /// The registered (resolved) tool name.
    pub tool: &'a str,
    /// The call id.
    pub call_id: &'a str,
    /// The arguments the call ran with.
    pub arguments: &'a Value,
    /// The durable run's id; `None` for a direct run or call.
    pub run_id: Option<&'a str>,
    /// What the run used so far (zero for a direct call outside a run).
    pub usage: RunUsage,
    /// The result's text.
    pub content: &'a str,
    /// Whether the result is an error.
    pub is_error: bool,
}

/// What a pre hook decides about a call (journaled by a durable run as `snake_case`
/// tagged JSON: `{"decision": "deny", "message": ..}`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PreDecision {
    /// No opinion: the next hook, then the rules, decide.
    Continue,
    /// Run it without asking a person (never past a deny rule or a DENY level).
    Allow,
    /// Ask a person, whatever the rules say.
    Ask,
    /// Refuse it; the model reads `message`.
    Deny {
        /// What the model reads.
        message: String,
    },
    /// Run it with these arguments instead: validated against the schema and checked
    /// against every rule again. Not final: the hooks after this one see them.
    Rewrite {
        /// The arguments the call runs with.
        arguments: Value,
    },
    /// Run it with these arguments instead, without asking a person: a
    /// [`Rewrite`](Self::Rewrite) and an [`Allow`](Self::Allow) at once (the arguments
    /// are checked as a rewrite's are, and a deny rule still wins). Final.
    AllowRewritten {
        /// The arguments the call runs with.
        arguments: Value,
    },
    /// Ask a person about the call with these arguments instead: a
    /// [`Rewrite`](Self::Rewrite) and an [`Ask`](Self::Ask) at once. Final.
    AskRewritten {
        /// The arguments the person is asked about, and the call runs with.
        arguments: Value,
    },
    /// Do not run it: this is its result (a cache).
    Answer {
        /// The call's result.
        result: ToolOutput,
    },
}

impl PreOutcome {
    /// What the hooks decided, as a hook event names it (`allow`, `ask`, `deny`,
    /// `answer`, or `rewrite` for a rewrite alone); `None` for no opinion.
    pub fn decision_name(&self) -> Option<&'static str> {
        Some(match &self.decision {
            PreDecision::Allow | PreDecision::AllowRewritten { .. } => "allow",
            PreDecision::Ask | PreDecision::AskRewritten { .. } => "ask",
            PreDecision::Deny { .. } => "deny",
            PreDecision::Answer { .. } => "answer",
            _ if self.rewritten.is_some() => "rewrite",
            _ => return None,
        })
    }
}

impl PreDecision {
    /// Whether the decision ends the chain: everything but [`Continue`](Self::Continue)
    /// and [`Rewrite`](Self::Rewrite).
    pub fn is_final(&self) -> bool {
        !matches!(self, Self::Continue | Self::Rewrite { .. })
    }
}

/// What a post hook decides about a result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PostDecision {
    /// Keep the result.
    Keep,
    /// The model gets this instead (a redaction).
    Replace {
        /// The result the model gets.
        result: ToolOutput,
    },
}

/// What the pre hooks decided together: the final decision (or
/// [`PreDecision::Continue`]), the arguments if a hook rewrote them, and which hook
/// decided. What a durable run journals with the call.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PreOutcome {
    /// The first final decision, or `Continue` when no hook gave one.
    pub decision: PreDecision,
    /// The arguments as the hooks left them, when one rewrote them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewritten: Option<Value>,
    /// The name of the hook whose decision is final (or that last rewrote).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// What a failed pre hook's reason ends with.
const REFUSED: &str = "the call was refused";

impl ToolHooks {
    /// Runs the pre hooks in order until one decides. A hook that fails (an error, a
    /// panic, its timeout) denies the call with a one-line reason naming it.
    pub async fn pre_tool_use(&self, call: PreToolUse<'_>) -> PreOutcome {
        let mut rewritten: Option<Value> = None;
        let mut by = None;
        for (hook, timeout) in self.iter() {
            let arguments = rewritten.as_ref().unwrap_or(call.arguments);
            let asked = PreToolUse { arguments, ..call };
            let decided =
                match guarded(hook.name(), "pre_tool_use", *timeout, REFUSED, || hook.pre_tool_use(asked))
                    .await
                {
                    Ok(decision) => decision,
                    Err(reason) => PreDecision::Deny { message: reason },
                };
            match decided {
                PreDecision::Continue => {}
                PreDecision::Rewrite { arguments } => {
                    rewritten = Some(arguments);
                    by = Some(hook.name().to_owned());
                }
                // Recorded as the decision with the arguments beside it, as a rewrite
                // followed by that decision would be.
                PreDecision::AllowRewritten { arguments } => {
                    let by = Some(hook.name().to_owned());
                    return PreOutcome { decision: PreDecision::Allow, rewritten: Some(arguments), by };
                }
                PreDecision::AskRewritten { arguments } => {
                    let by = Some(hook.name().to_owned());
                    return PreOutcome { decision: PreDecision::Ask, rewritten: Some(arguments), by };
                }
                decision => {
                    return PreOutcome { decision, rewritten, by: Some(hook.name().to_owned()) };
                }
            }
        }
        PreOutcome { decision: PreDecision::Continue, rewritten, by }
    }

    /// Runs the post hooks in order, each seeing the result as the ones before left it.
    /// A hook that fails keeps the result; its reason is logged. Returns the result if a
    /// hook replaced it, with the last hook that did.
    pub async fn post_tool_use(&self, call: PostToolUse<'_>) -> Option<(ToolOutput, String)> {
        let mut replaced: Option<(ToolOutput, String)> = None;
        for (hook, timeout) in self.iter() {
            let content = replaced.as_ref().map_or(call.content, |(r, _)| r.content.as_str());
            let asked = PostToolUse { content, ..call };
            match guarded(hook.name(), "post_tool_use", *timeout, "the result was kept", || {
                hook.post_tool_use(asked)
            })
            .await
            {
                Ok(PostDecision::Keep) => {}
                Ok(PostDecision::Replace { result }) => replaced = Some((result, hook.name().to_owned())),
                Err(reason) => {
                    tracing::warn!(hook = hook.name(), tool = call.tool, call_id = call.call_id, %reason, "post hook failed");
                }
            }
        }
        replaced
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use futures_util::future::BoxFuture;
    use serde_json::json;

    use super::*;
    use crate::hooks::{HookError, ToolHook};

    /// A hook that answers `pre` and `post`, counting how often it was asked.
    struct Fixed {
        name: &'static str,
        pre: PreDecision,
        post: PostDecision,
        asked: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl Fixed {
        fn pre(name: &'static str, pre: PreDecision) -> Self {
            Self { name, pre, post: PostDecision::Keep, asked: Arc::default() }
        }
    }

    impl ToolHook for Fixed {
        fn name(&self) -> &str {
            self.name
        }
        fn pre_tool_use<'a>(&'a self, call: PreToolUse<'a>) -> BoxFuture<'a, Result<PreDecision, HookError>> {
            self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            // A rewrite appends to `seen`, so the order the hooks ran in shows.
            let decision = match &self.pre {
                PreDecision::Rewrite { .. } => {
                    let mut seen =
                        call.arguments.get("seen").and_then(Value::as_str).unwrap_or("").to_owned();
                    seen.push_str(self.name);
                    PreDecision::Rewrite { arguments: json!({"seen": seen}) }
                }
                other => other.clone(),
            };
            Box::pin(std::future::ready(Ok(decision)))
        }
        fn post_tool_use<'a>(
            &'a self,
            call: PostToolUse<'a>,
        ) -> BoxFuture<'a, Result<PostDecision, HookError>> {
            let decision = match &self.post {
                PostDecision::Replace { .. } => PostDecision::Replace {
                    result: ToolOutput::text(call.content.replace("secret", "[redacted]")),
                },
                keep => keep.clone(),
            };
            Box::pin(std::future::ready(Ok(decision)))
        }
    }

    struct Failing(&'static str);

    impl ToolHook for Failing {
        fn name(&self) -> &str {
            "failing"
        }
        fn pre_tool_use<'a>(&'a self, _: PreToolUse<'a>) -> BoxFuture<'a, Result<PreDecision, HookError>> {
            match self.0 {
                "panic" => panic!("hook bug"),
                "panic later" => Box::pin(async { panic!("hook bug") }),
                "sleep" => Box::pin(async {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok(PreDecision::Allow)
                }),
                "wait" => Box::pin(async {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    Ok(PreDecision::Allow)
                }),
                _ => Box::pin(std::future::ready(Err(HookError("exit 1:\nno such file\n".into())))),
            }
        }
        fn post_tool_use<'a>(&'a self, _: PostToolUse<'a>) -> BoxFuture<'a, Result<PostDecision, HookError>> {
            Box::pin(std::future::ready(Err(HookError("broken".into()))))
        }
    }

    fn call(arguments: &Value) -> PreToolUse<'_> {
        PreToolUse { tool: "write_file", call_id: "c1", arguments, run_id: None, usage: RunUsage::default() }
    }

    #[tokio::test]
    async fn a_rewrite_with_a_decision_is_recorded_as_the_decision_with_the_arguments() {
        let args = json!({"path": "a"});
        let moved = json!({"path": "sandbox/a"});
        for (decision, recorded) in [
            (PreDecision::AllowRewritten { arguments: moved.clone() }, PreDecision::Allow),
            (PreDecision::AskRewritten { arguments: moved.clone() }, PreDecision::Ask),
        ] {
            let last = Fixed::pre("never", PreDecision::Deny { message: "never asked".into() });
            let asked = last.asked.clone();
            let hooks = ToolHooks::new().with(Fixed::pre("both", decision)).with(last);
            let outcome = hooks.pre_tool_use(call(&args)).await;
            let name = outcome.decision_name();
            assert_eq!(
                outcome,
                PreOutcome { decision: recorded, rewritten: Some(moved.clone()), by: Some("both".into()) }
            );
            assert!(matches!(name, Some("allow" | "ask")), "{name:?}");
            assert_eq!(
                asked.load(std::sync::atomic::Ordering::SeqCst),
                0,
                "final: the hooks after it are not asked"
            );
        }
    }

    #[tokio::test]
    async fn hooks_run_in_order_rewrites_pass_on_and_the_first_final_decision_wins() {
        let last = Fixed::pre("c", PreDecision::Deny { message: "never asked".into() });
        let asked = last.asked.clone();
        let hooks = ToolHooks::new()
            .with(Fixed::pre("a", PreDecision::Rewrite { arguments: Value::Null }))
            .with(Fixed::pre("b", PreDecision::Rewrite { arguments: Value::Null }))
            .with(Fixed::pre("allow", PreDecision::Allow))
            .with(last);
        let args = json!({"path": "a"});
        let outcome = hooks.pre_tool_use(call(&args)).await;
        assert_eq!(outcome.decision, PreDecision::Allow);
        assert_eq!(outcome.rewritten, Some(json!({"seen": "ab"})));
        assert_eq!(outcome.by.as_deref(), Some("allow"));
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn no_hook_or_no_opinion_continues_and_a_rewrite_alone_is_kept() {
        let args = json!({});
        let none = ToolHooks::new().pre_tool_use(call(&args)).await;
        assert_eq!(none, PreOutcome { decision: PreDecision::Continue, rewritten: None, by: None });
        let hooks = ToolHooks::new()
            .with(Fixed::pre("quiet", PreDecision::Continue))
            .with(Fixed::pre("mover", PreDecision::Rewrite { arguments: Value::Null }));
        let outcome = hooks.pre_tool_use(call(&args)).await;
        assert_eq!(outcome.decision, PreDecision::Continue);
        assert_eq!(
            (outcome.rewritten, outcome.by.as_deref()),
            (Some(json!({"seen": "mover"})), Some("mover"))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_hook_that_fails_in_any_way_refuses_with_one_line_naming_it() {
        let args = json!({});
        for (how, expected) in [
            ("panic", "hook failing failed (it panicked); the call was refused"),
            ("panic later", "hook failing failed (it panicked); the call was refused"),
            ("sleep", "hook failing did not answer within 2s; the call was refused"),
            ("error", "hook failing failed: exit 1: no such file"),
        ] {
            let hooks = ToolHooks::new()
                .with_timeout(Failing(how), Duration::from_secs(2))
                .with(Fixed::pre("after", PreDecision::Allow));
            let outcome = hooks.pre_tool_use(call(&args)).await;
            assert_eq!(outcome.decision, PreDecision::Deny { message: expected.into() }, "{how}");
            assert_eq!(outcome.by.as_deref(), Some("failing"));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_hook_that_waits_within_its_timeout_is_heard() {
        // Asked once at once (no timer), then under its timeout: the waiting hook's answer
        // counts, and the one that waits too long still refuses.
        let args = json!({});
        let late = "hook failing did not answer within 0.5s; the call was refused";
        for (millis, expected) in
            [(2000, PreDecision::Allow), (500, PreDecision::Deny { message: late.into() })]
        {
            let timeout = Duration::from_millis(millis);
            let hooks = ToolHooks::new().with_timeout(Failing("wait"), timeout);
            assert_eq!(hooks.pre_tool_use(call(&args)).await.decision, expected);
        }
    }

    #[tokio::test]
    async fn post_hooks_replace_in_order_and_a_failing_one_keeps_the_result() {
        let redact = Fixed {
            name: "redact",
            pre: PreDecision::Continue,
            post: PostDecision::Replace { result: ToolOutput::text("") },
            asked: Arc::default(),
        };
        let hooks = ToolHooks::new()
            .with(Failing("error"))
            .with(redact)
            .with(Fixed::pre("keep", PreDecision::Continue));
        let args = json!({});
        let post = PostToolUse {
            tool: "read_file",
            call_id: "c1",
            arguments: &args,
            run_id: None,
            usage: RunUsage::default(),
            content: "the secret is 42",
            is_error: false,
        };
        let (result, by) = hooks.post_tool_use(post).await.expect("replaced");
        assert_eq!((result.content.as_str(), by.as_str()), ("the [redacted] is 42", "redact"));
        let kept = ToolHooks::new().with(Failing("error")).post_tool_use(post).await;
        assert_eq!(kept, None);
    }
}
