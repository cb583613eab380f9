//! Hooks on the direct call path (`RunContext::with_hooks`, and a registry's own,
//! `ToolRegistry::set_hooks`): every decision kind, their precedence against the rules,
//! and hooks that fail.

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use harnessx_core::hooks::{
    HookError, PostDecision, PostToolUse, PreDecision, PreToolUse, ToolHook, ToolHooks,
};
use harnessx_core::{
    ApprovalDecision, PERMISSION_DENIED, PermissionLevel, PermissionManager, RunContext, ToolCall,
    ToolHandler, ToolOptions, ToolOutput, ToolRegistry,
};
use serde_json::{Value, json};

/// A hook that decides with a function of the call's arguments and replaces results with
/// another.
struct Hook {
    name: &'static str,
    pre: Box<dyn Fn(&Value) -> PreDecision + Send + Sync>,
    post: Box<dyn Fn(&str) -> PostDecision + Send + Sync>,
}

impl Hook {
    fn pre(name: &'static str, pre: impl Fn(&Value) -> PreDecision + Send + Sync + 'static) -> Self {
        Self { name, pre: Box::new(pre), post: Box::new(|_| PostDecision::Keep) }
    }
}

impl ToolHook for Hook {
    fn name(&self) -> &str {
        self.name
    }
    fn pre_tool_use<'a>(&'a self, call: PreToolUse<'a>) -> BoxFuture<'a, Result<PreDecision, HookError>> {
        Box::pin(std::future::ready(Ok((self.pre)(call.arguments))))
    }
    fn post_tool_use<'a>(&'a self, call: PostToolUse<'a>) -> BoxFuture<'a, Result<PostDecision, HookError>> {
        Box::pin(std::future::ready(Ok((self.post)(call.content))))
    }
}

/// `write` (ALLOW unless `permission` says otherwise) writes down the path it got.
fn registry(permission: Option<PermissionLevel>) -> (ToolRegistry, Arc<Mutex<Vec<String>>>) {
    let registry = ToolRegistry::new();
    let wrote = Arc::new(Mutex::new(Vec::new()));
    let w = wrote.clone();
    let handler = ToolHandler::from_async(move |args, _| {
        let w = w.clone();
        async move {
            let path = args["path"].as_str().unwrap_or_default().to_owned();
            w.lock().unwrap().push(path.clone());
            Ok(format!("wrote {path}; the secret is 42").into())
        }
    });
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
    let mut options = ToolOptions::new();
    if let Some(level) = permission {
        options = options.permission(level);
    }
    registry.register_with_schema("write", "Write a file.", schema, handler, options).unwrap();
    (registry, wrote)
}

fn write(path: &str) -> ToolCall {
    ToolCall::new("c1", "write", json!({"path": path}).to_string())
}

async fn run(registry: &ToolRegistry, ctx: &RunContext, path: &str) -> harnessx_core::ToolResult {
    registry.execute_batch(&[write(path)], ctx).await.pop().unwrap()
}

#[tokio::test]
async fn a_deny_refuses_with_the_hooks_message_and_nothing_runs() {
    let (registry, wrote) = registry(None);
    let hooks = ToolHooks::new().with(Hook::pre("guard", |args| match args["path"].as_str() {
        Some(p) if p.starts_with('/') => {
            PreDecision::Deny { message: "absolute paths are not allowed".into() }
        }
        _ => PreDecision::Continue,
    }));
    let ctx = RunContext::new().with_hooks(hooks);
    let refused = run(&registry, &ctx, "/etc/passwd").await;
    assert!(refused.is_error);
    assert_eq!(refused.content, "absolute paths are not allowed");
    let ran = run(&registry, &ctx, "notes.md").await;
    assert!(!ran.is_error, "{}", ran.content);
    assert_eq!(*wrote.lock().unwrap(), ["notes.md"]);
}

#[tokio::test]
async fn a_rewrite_runs_with_the_new_arguments_but_never_past_a_deny_rule_or_the_schema() {
    let (registry, wrote) = registry(None);
    let manager = PermissionManager::default();
    manager.add_rule(PermissionLevel::Deny, "write(path=secret*)").unwrap();
    let into = |path: &'static str| {
        ToolHooks::new()
            .with(Hook::pre("mover", move |_| PreDecision::Rewrite { arguments: json!({"path": path}) }))
    };
    let ctx = RunContext::new().with_permissions(manager.clone()).with_hooks(into("sandbox/notes.md"));
    let moved = run(&registry, &ctx, "notes.md").await;
    assert_eq!(moved.content, "wrote sandbox/notes.md; the secret is 42");

    // Smuggled past the deny rule by a hook: refused, nothing runs.
    let ctx = RunContext::new().with_permissions(manager.clone()).with_hooks(into("secret.txt"));
    let refused = run(&registry, &ctx, "notes.md").await;
    assert_eq!((refused.is_error, refused.content.as_str()), (true, PERMISSION_DENIED));

    // Arguments the schema refuses: refused with a line naming the hook.
    let hooks = ToolHooks::new()
        .with(Hook::pre("broken", |_| PreDecision::Rewrite { arguments: json!({"path": 7}) }));
    let ctx = RunContext::new().with_hooks(hooks);
    let invalid = run(&registry, &ctx, "notes.md").await;
    assert!(invalid.is_error);
    assert!(
        invalid.content.starts_with(
            "hook broken changed the arguments of this write call, and the new ones are invalid"
        ),
        "{}",
        invalid.content
    );
    assert_eq!(*wrote.lock().unwrap(), ["sandbox/notes.md"]);
}

#[tokio::test]
async fn allow_answers_an_ask_but_never_beats_deny() {
    let allow = || ToolHooks::new().with(Hook::pre("yes", |_| PreDecision::Allow));
    // ASK with nobody to approve it: the hook's ALLOW answers the question.
    let (asks, wrote) = registry(Some(PermissionLevel::Ask));
    let ctx = RunContext::new().with_permissions(PermissionManager::default()).with_hooks(allow());
    assert!(!run(&asks, &ctx, "a.md").await.is_error);
    assert_eq!(*wrote.lock().unwrap(), ["a.md"]);
    // A person who could be asked is not: the hook answered the question.
    let asked = Arc::new(Mutex::new(0));
    let a = asked.clone();
    let manager = PermissionManager::default().with_approval_fn(move |_| {
        *a.lock().unwrap() += 1;
        async { ApprovalDecision::Deny }
    });
    let ctx = RunContext::new().with_permissions(manager).with_hooks(allow());
    assert!(!run(&asks, &ctx, "b.md").await.is_error);
    assert_eq!(*asked.lock().unwrap(), 0);
    assert_eq!(*wrote.lock().unwrap(), ["a.md", "b.md"]);
    // DENY, as the tool's level, an override, or a rule: still refused.
    let (denied, wrote) = registry(Some(PermissionLevel::Deny));
    let ctx = RunContext::new().with_permissions(PermissionManager::default()).with_hooks(allow());
    assert_eq!(run(&denied, &ctx, "a.md").await.content, PERMISSION_DENIED);
    let (free, _) = registry(None);
    let manager = PermissionManager::default().with_override("write", PermissionLevel::Deny);
    let ctx = RunContext::new().with_permissions(manager).with_hooks(allow());
    assert_eq!(run(&free, &ctx, "a.md").await.content, PERMISSION_DENIED);
    let manager = PermissionManager::default();
    manager.add_rule(PermissionLevel::Deny, "write").unwrap();
    let ctx = RunContext::new().with_permissions(manager).with_hooks(allow());
    assert_eq!(run(&free, &ctx, "a.md").await.content, PERMISSION_DENIED);
    assert!(wrote.lock().unwrap().is_empty());
}

#[tokio::test]
async fn ask_puts_an_allowed_call_to_a_person_once() {
    let ask = || ToolHooks::new().with(Hook::pre("careful", |_| PreDecision::Ask));
    for (decision, runs) in [(ApprovalDecision::Approve, true), (ApprovalDecision::Deny, false)] {
        let (registry, wrote) = registry(None);
        let asked = Arc::new(Mutex::new(0));
        let a = asked.clone();
        let manager = PermissionManager::default().with_approval_fn(move |_| {
            *a.lock().unwrap() += 1;
            let decision = decision.clone();
            async move { decision }
        });
        let ctx = RunContext::new().with_permissions(manager).with_hooks(ask());
        let result = run(&registry, &ctx, "a.md").await;
        assert_eq!(!result.is_error, runs, "{}", result.content);
        assert_eq!(wrote.lock().unwrap().len(), usize::from(runs));
        assert_eq!(*asked.lock().unwrap(), 1);
    }
    // Nobody to ask: refused.
    let (registry, wrote) = registry(None);
    let ctx = RunContext::new().with_permissions(PermissionManager::default()).with_hooks(ask());
    assert_eq!(run(&registry, &ctx, "a.md").await.content, PERMISSION_DENIED);
    assert!(wrote.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_answer_is_the_result_without_running_and_post_hooks_redact_every_result() {
    let (registry, wrote) = registry(None);
    let cache = Hook::pre("cache", |args| match args["path"].as_str() {
        Some("cached.md") => {
            PreDecision::Answer { result: ToolOutput::text("wrote cached.md earlier; the secret is 42") }
        }
        _ => PreDecision::Continue,
    });
    let redact = Hook {
        name: "redact",
        pre: Box::new(|_| PreDecision::Continue),
        post: Box::new(|content| PostDecision::Replace {
            result: ToolOutput::text(content.replace("42", "[redacted]")),
        }),
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let ctx = RunContext::new().with_hooks(ToolHooks::new().with(cache).with(redact)).with_events(Arc::new(
        move |event: &harnessx_core::ToolEvent<'_>| {
            if let harnessx_core::ToolEvent::Hook { call_id, hook, decision } = event {
                s.lock().unwrap().push(format!("{call_id} {hook} {decision}"));
            }
        },
    ));
    let cached = run(&registry, &ctx, "cached.md").await;
    assert_eq!(cached.content, "wrote cached.md earlier; the secret is [redacted]");
    let ran = run(&registry, &ctx, "new.md").await;
    assert_eq!(ran.content, "wrote new.md; the secret is [redacted]");
    assert_eq!(*wrote.lock().unwrap(), ["new.md"]);
    // Every decision is an event; no opinion is none.
    assert_eq!(*seen.lock().unwrap(), ["c1 cache answer", "c1 redact replace", "c1 redact replace"]);
}

struct Panics;

impl ToolHook for Panics {
    fn name(&self) -> &str {
        "panics"
    }
    fn pre_tool_use<'a>(&'a self, _: PreToolUse<'a>) -> BoxFuture<'a, Result<PreDecision, HookError>> {
        panic!("a bug in the hook")
    }
}

#[tokio::test]
async fn a_hook_that_panics_refuses_its_call_and_the_batch_goes_on() {
    let (registry, wrote) = registry(None);
    let ctx = RunContext::new().with_hooks(ToolHooks::new().with(Panics));
    let results = registry.execute_batch(&[write("a.md"), write("b.md")], &ctx).await;
    for result in &results {
        assert_eq!(result.content, "hook panics failed (it panicked); the call was refused");
    }
    assert!(wrote.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_planned_call_applies_a_recorded_outcome_without_asking_the_hooks_again() {
    use harnessx_core::Permit;
    let (registry, wrote) = registry(Some(PermissionLevel::Ask));
    let asked = Arc::new(Mutex::new(0));
    let a = asked.clone();
    let hooks = ToolHooks::new().with(Hook::pre("mover", move |_| {
        *a.lock().unwrap() += 1;
        PreDecision::Allow
    }));
    let manager = PermissionManager::default();
    manager.add_rule(PermissionLevel::Deny, "write(path=secret*)").unwrap();
    let calls = [write("a.md"), ToolCall::new("c2", "write", r#"{"path": "b.md"}"#)];
    let mut batch = registry.plan_batch(&calls);
    // The first call: the hooks asked, their outcome "recorded" (kept here).
    let outcome =
        batch.get_mut("c1").unwrap().ask_hooks(&hooks, Some("run-1"), Default::default()).await.unwrap();
    assert_eq!(*asked.lock().unwrap(), 1);
    assert_eq!(batch.get_mut("c1").unwrap().apply_hooks(outcome.clone()), Permit::Runs);
    // The second: a recorded outcome that rewrites into a denied path is applied as it is,
    // the hooks not asked, and the deny rule still refuses it.
    let recorded = harnessx_core::hooks::PreOutcome {
        decision: PreDecision::Allow,
        rewritten: Some(json!({"path": "secret.txt"})),
        by: Some("mover".into()),
    };
    assert_eq!(batch.get_mut("c2").unwrap().apply_hooks(recorded), Permit::Runs);
    assert_eq!(*asked.lock().unwrap(), 1);
    // ASK with nobody to answer: the hook's ALLOW answers it; the deny rule still wins.
    let done = batch.authorize(&manager.rules_only(), Some(&manager)).await;
    assert!(done.questions.is_empty());
    assert_eq!(done.refused.len(), 1);
    assert_eq!(
        (done.refused[0].call_id.as_str(), done.refused[0].content.as_str()),
        ("c2", PERMISSION_DENIED)
    );
    let outcomes = registry.run_planned(batch, &RunContext::new(), &harnessx_core::RunHooks::new()).await;
    assert_eq!(outcomes.iter().map(|o| o.ran).collect::<Vec<_>>(), [true, false]);
    assert_eq!(*wrote.lock().unwrap(), ["a.md"]);

    // A hook's answer settles a planned call: it does not run.
    let answer = harnessx_core::hooks::PreOutcome {
        decision: PreDecision::Answer { result: ToolOutput::text("from the cache") },
        rewritten: None,
        by: Some("cache".into()),
    };
    let mut batch = registry.plan_batch(&[write("c.md")]);
    assert_eq!(batch.get_mut("c1").unwrap().apply_hooks(answer), Permit::Settled);
    let outcomes = registry.run_planned(batch, &RunContext::new(), &harnessx_core::RunHooks::new()).await;
    assert_eq!((outcomes[0].ran, outcomes[0].result.content.as_str()), (false, "from the cache"));
}

/// A hook that moves every write under `moved/`, and one that refuses absolute paths.
fn mover() -> Hook {
    Hook::pre("mover", |args| PreDecision::Rewrite {
        arguments: json!({"path": format!("moved/{}", args["path"].as_str().unwrap_or_default())}),
    })
}

fn guard() -> Hook {
    Hook::pre("guard", |args| match args["path"].as_str() {
        Some(p) if p.starts_with('/') => {
            PreDecision::Deny { message: "absolute paths are not allowed".into() }
        }
        _ => PreDecision::Continue,
    })
}

#[tokio::test]
async fn a_registrys_hooks_deny_and_rewrite_its_direct_calls() {
    let (registry, wrote) = registry(None);
    registry.set_hooks(ToolHooks::new().with(guard()).with(mover()));
    // `execute`, `execute_in` and `execute_batch` alike.
    let refused = registry.execute(&write("/etc/passwd"), None).await;
    assert_eq!((refused.is_error, refused.content.as_str()), (true, "absolute paths are not allowed"));
    let moved = registry.execute_in(&write("a.md"), &RunContext::new()).await;
    assert_eq!(moved.content, "wrote moved/a.md; the secret is 42");
    let moved = run(&registry, &RunContext::new(), "b.md").await;
    assert_eq!(moved.content, "wrote moved/b.md; the secret is 42");
    assert_eq!(*wrote.lock().unwrap(), ["moved/a.md", "moved/b.md"]);
    assert!(!registry.hooks().is_empty());
    // Every handle of the registry shares them; empty hooks remove them.
    let handle = registry.clone();
    handle.set_hooks(ToolHooks::new());
    assert!(registry.hooks().is_empty());
    assert_eq!(registry.execute(&write("c.md"), None).await.content, "wrote c.md; the secret is 42");
}

#[tokio::test]
async fn a_registrys_rewrite_never_passes_a_deny_rule_and_its_post_hooks_redact() {
    let (registry, wrote) = registry(None);
    let redact = Hook {
        name: "redact",
        pre: Box::new(|_| PreDecision::Continue),
        post: Box::new(|content| PostDecision::Replace {
            result: ToolOutput::text(content.replace("42", "[redacted]")),
        }),
    };
    registry.set_hooks(ToolHooks::new().with(mover()).with(redact));
    let manager = PermissionManager::default();
    manager.add_rule(PermissionLevel::Deny, "write(path=moved/secret*)").unwrap();
    let refused = registry.execute(&write("secret.txt"), Some(&manager)).await;
    assert_eq!((refused.is_error, refused.content.as_str()), (true, PERMISSION_DENIED));
    let ran = registry.execute(&write("notes.md"), Some(&manager)).await;
    assert_eq!(ran.content, "wrote moved/notes.md; the secret is [redacted]");
    assert_eq!(*wrote.lock().unwrap(), ["moved/notes.md"]);
}

#[tokio::test]
async fn a_contexts_own_hooks_win_over_the_registrys_and_planned_runs_ask_neither() {
    let (registry, wrote) = registry(None);
    registry.set_hooks(ToolHooks::new().with(guard()));
    // The context's hooks alone: the registry's guard is not asked.
    let ctx = RunContext::new().with_hooks(ToolHooks::new().with(mover()));
    let moved = run(&registry, &ctx, "/abs").await;
    assert_eq!(moved.content, "wrote moved//abs; the secret is 42");
    // A planned batch (the agent loop's, a durable run's) gets the hooks its runtime gives.
    let batch = registry.plan_batch(&[write("/planned")]);
    let outcomes = registry.run_planned(batch, &RunContext::new(), &harnessx_core::RunHooks::new()).await;
    assert!(!outcomes[0].result.is_error, "{}", outcomes[0].result.content);
    assert_eq!(*wrote.lock().unwrap(), ["moved//abs", "/planned"]);
}
