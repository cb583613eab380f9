//! Spec tools.md "Permission defaults and precedence", reproduced cell by cell through
//! `registry.execute`, plus overrides, session grants, ASK without an approval mechanism,
//! execution without a manager and the persistent approval store.

use crate::common;

use std::sync::Arc;

use common::*;
use futures_util::future::BoxFuture;
use harnessx_core::{
    ApprovalDecision, ApprovalRequest, ApprovalStore, ApprovalStoreError, MemoryApprovalStore,
    PERMISSION_DENIED, PermissionLevel, PermissionManager, ToolDefinition, ToolOptions, ToolRegistry,
};
use serde_json::json;

use PermissionLevel::{Allow, Ask, Deny};

/// The spec's table: one row per registration, one column per manager.
/// Columns: ordinary agent, manager default ASK, manager default DENY.
const COLUMNS: [(&str, PermissionLevel); 3] =
    [("Ordinary agent", Allow), ("Manager default ASK", Ask), ("Manager default DENY", Deny)];
const TABLE: [(&str, Option<PermissionLevel>, [PermissionLevel; 3]); 4] = [
    ("permission omitted", None, [Allow, Ask, Deny]),
    ("explicit permission=ALLOW", Some(Allow), [Allow, Allow, Allow]),
    ("explicit permission=ASK", Some(Ask), [Ask, Ask, Ask]),
    ("explicit permission=DENY", Some(Deny), [Deny, Deny, Deny]),
];

/// How a tool is registered (the spec: registration style does not choose the default).
#[derive(Clone, Copy, Debug)]
enum Style {
    WithSchema,
    Definition,
}

fn register(
    registry: &ToolRegistry,
    style: Style,
    name: &str,
    permission: Option<PermissionLevel>,
) -> Counter {
    let counter = Counter::new();
    match style {
        Style::WithSchema => {
            let mut options = ToolOptions::new();
            if let Some(p) = permission {
                options = options.permission(p);
            }
            registry
                .register_with_schema(name, "Tool.", empty_schema(), counting("ran", &counter), options)
                .unwrap();
        }
        Style::Definition => {
            let mut def = ToolDefinition::new(name, "Tool.", empty_schema(), counting("ran", &counter));
            if let Some(p) = permission {
                def = def.with_permission(p);
            }
            registry.register_tool(def).unwrap();
        }
    }
    counter
}

/// An approval callback that counts its invocations and answers `decision`.
fn approver(manager: PermissionManager, prompts: &Counter, decision: ApprovalDecision) -> PermissionManager {
    let prompts = prompts.clone();
    manager.with_approval_fn(move |_request| {
        prompts.hit();
        let decision = decision.clone();
        async move { decision }
    })
}

/// Observes the level a tool effectively runs under: once with the manager as it is
/// (no approval callback), once with an approving, counting callback.
/// ALLOW runs both times without a prompt; ASK is refused without a callback and runs
/// after exactly one prompt with one; DENY never runs and never prompts.
async fn observe(
    style: Style,
    tool_permission: Option<PermissionLevel>,
    manager: impl Fn() -> PermissionManager,
) -> PermissionLevel {
    let registry = ToolRegistry::new();
    let ran = register(&registry, style, "tool", tool_permission);

    let plain = registry.execute(&call("c1", "tool", "{}"), Some(&manager())).await;
    let ran_without_callback = !plain.is_error;
    if plain.is_error {
        assert_eq!(plain.content, PERMISSION_DENIED);
    }
    assert_eq!(ran.get(), usize::from(ran_without_callback), "the handler ran only if allowed");

    let prompts = Counter::new();
    let with_callback = approver(manager(), &prompts, ApprovalDecision::Approve);
    let second = registry.execute(&call("c2", "tool", "{}"), Some(&with_callback)).await;
    let ran_with_callback = !second.is_error;
    if second.is_error {
        assert_eq!(second.content, PERMISSION_DENIED);
    }
    match (ran_without_callback, ran_with_callback, prompts.get()) {
        (true, true, 0) => Allow,
        (false, true, 1) => Ask,
        (false, false, 0) => Deny,
        other => panic!("no permission level behaves like {other:?}"),
    }
}

#[tokio::test]
async fn every_cell_of_the_permission_table() {
    for style in [Style::WithSchema, Style::Definition] {
        for (row, tool_permission, expected) in TABLE {
            for ((column, default), want) in COLUMNS.into_iter().zip(expected) {
                let manager = || {
                    if default == Allow {
                        PermissionManager::default()
                    } else {
                        PermissionManager::new(default)
                    }
                };
                let got = observe(style, tool_permission, manager).await;
                assert_eq!(got, want, "row {row:?}, column {column:?}, {style:?}");
            }
        }
    }
}

#[tokio::test]
async fn the_ordinary_agent_manager_defaults_to_allow() {
    assert_eq!(PermissionManager::default().default_level(), Allow);
}

#[tokio::test]
async fn a_manager_override_for_the_tool_name_beats_every_row() {
    for (row, tool_permission, _) in TABLE {
        for (column, default) in COLUMNS {
            for level in PermissionLevel::ALL {
                let manager = || PermissionManager::new(default).with_override("tool", level);
                let got = observe(Style::WithSchema, tool_permission, manager).await;
                assert_eq!(got, level, "override {level} on row {row:?}, column {column:?}");
            }
        }
    }
}

#[tokio::test]
async fn an_override_for_another_name_changes_nothing() {
    let manager = || PermissionManager::new(Deny).with_override("other_tool", Allow);
    assert_eq!(observe(Style::WithSchema, None, manager).await, Deny);
    assert_eq!(observe(Style::WithSchema, Some(Ask), manager).await, Ask);
}

#[tokio::test]
async fn deny_blocks_execution_even_against_an_earlier_session_grant() {
    // Explicit DENY on the tool, a DENY override, and a DENY manager default.
    let cases: [(Option<PermissionLevel>, PermissionManager); 3] = [
        (Some(Deny), PermissionManager::default()),
        (None, PermissionManager::new(Allow).with_override("tool", Deny)),
        (None, PermissionManager::new(Deny)),
    ];
    for (tool_permission, manager) in cases {
        let registry = ToolRegistry::new();
        let ran = register(&registry, Style::WithSchema, "tool", tool_permission);
        let prompts = Counter::new();
        let manager = approver(manager, &prompts, ApprovalDecision::Approve);
        manager.grant_session("tool");
        let result = registry.execute(&call("c1", "tool", "{}"), Some(&manager)).await;
        assert!(result.is_error);
        assert_eq!(result.content, PERMISSION_DENIED);
        assert_eq!((ran.get(), prompts.get()), (0, 0), "{tool_permission:?} {manager:?}");
    }
}

#[tokio::test]
async fn a_session_grant_from_the_callback_satisfies_ask_without_another_prompt() {
    let registry = ToolRegistry::new();
    let ran = register(&registry, Style::WithSchema, "deploy", Some(Ask));
    let other = register(&registry, Style::WithSchema, "rollback", Some(Ask));
    let prompts = Counter::new();
    let manager = approver(PermissionManager::default(), &prompts, ApprovalDecision::ApproveForSession);

    for id in ["c1", "c2", "c3"] {
        let result = registry.execute(&call(id, "deploy", "{}"), Some(&manager)).await;
        assert!(!result.is_error, "{result:?}");
    }
    assert_eq!((ran.get(), prompts.get()), (3, 1), "one prompt, then the grant answers");
    assert!(manager.has_session_grant("deploy"));

    // The grant is for that tool only.
    registry.execute(&call("c4", "rollback", "{}"), Some(&manager)).await;
    assert_eq!((other.get(), prompts.get()), (1, 2));
}

#[tokio::test]
async fn a_session_grant_satisfies_ask_even_with_no_callback() {
    let registry = ToolRegistry::new();
    let ran = register(&registry, Style::WithSchema, "deploy", None);
    let manager = PermissionManager::new(Ask);
    let refused = registry.execute(&call("c1", "deploy", "{}"), Some(&manager)).await;
    assert_eq!(refused.content, PERMISSION_DENIED);
    manager.grant_session("deploy");
    let granted = registry.execute(&call("c2", "deploy", "{}"), Some(&manager)).await;
    assert!(!granted.is_error, "{granted:?}");
    assert_eq!(ran.get(), 1);
}

#[tokio::test]
async fn a_plain_approval_does_not_grant_the_session() {
    let registry = ToolRegistry::new();
    register(&registry, Style::WithSchema, "deploy", Some(Ask));
    let prompts = Counter::new();
    let manager = approver(PermissionManager::default(), &prompts, ApprovalDecision::Approve);
    registry.execute(&call("c1", "deploy", "{}"), Some(&manager)).await;
    registry.execute(&call("c2", "deploy", "{}"), Some(&manager)).await;
    assert_eq!(prompts.get(), 2);
}

#[tokio::test]
async fn ask_with_no_approval_mechanism_is_denied() {
    // A plain agent denies ASK calls rather than prompting; so does an ASK manager
    // without a callback.
    for (tool_permission, manager) in
        [(Some(Ask), PermissionManager::default()), (None, PermissionManager::new(Ask))]
    {
        let registry = ToolRegistry::new();
        let ran = register(&registry, Style::WithSchema, "tool", tool_permission);
        let result = registry.execute(&call("c1", "tool", "{}"), Some(&manager)).await;
        assert!(result.is_error);
        assert_eq!(result.content, "Permission denied");
        assert_eq!(ran.get(), 0);
    }
}

#[tokio::test]
async fn a_rejected_ask_is_denied_and_the_handler_does_not_run() {
    let registry = ToolRegistry::new();
    let ran = register(&registry, Style::WithSchema, "tool", Some(Ask));
    let prompts = Counter::new();
    let manager = approver(PermissionManager::default(), &prompts, ApprovalDecision::Deny);
    let result = registry.execute(&call("c1", "tool", "{}"), Some(&manager)).await;
    assert_eq!(result.content, PERMISSION_DENIED);
    assert_eq!((ran.get(), prompts.get()), (0, 1));
}

#[tokio::test]
async fn the_approval_request_names_the_registered_tool_the_call_and_its_validated_arguments() {
    let registry = ToolRegistry::new();
    registry
        .register_with_schema(
            "write_file",
            "Write.",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            counting("written", &Counter::new()),
            ToolOptions::new().permission(Ask),
        )
        .unwrap();
    let seen = Log::new();
    let log = seen.clone();
    let manager = PermissionManager::default().with_approval_fn(move |request: ApprovalRequest| {
        log.push(format!("{} {} {}", request.tool_name, request.call_id, request.arguments));
        async { ApprovalDecision::Approve }
    });
    let result = registry
        .execute(&call("call_9", "functions.WriteFile", r#"{"path": "a.txt"}"#), Some(&manager))
        .await;
    assert_eq!(result.content, "written");
    assert_eq!(seen.entries(), [r#"write_file call_9 {"path":"a.txt"}"#]);
}

#[tokio::test]
async fn without_a_manager_omitted_and_allow_run_while_explicit_ask_and_deny_are_denied() {
    let registry = ToolRegistry::new();
    let cases = [
        ("omitted", None, true),
        ("allow", Some(Allow), true),
        ("ask", Some(Ask), false),
        ("deny", Some(Deny), false),
    ];
    for (name, permission, runs) in cases {
        let ran = register(&registry, Style::WithSchema, name, permission);
        let result = registry.execute(&call("c1", name, "{}"), None).await;
        if runs {
            assert!(!result.is_error, "{name}: {result:?}");
            assert_eq!(result.content, "ran");
        } else {
            assert!(result.is_error);
            assert_eq!(result.content, "Permission denied", "{name}");
        }
        assert_eq!(ran.get(), usize::from(runs), "{name}");
    }
}

#[tokio::test]
async fn the_persistent_approval_store_is_consulted_before_the_callback() {
    let registry = ToolRegistry::new();
    let ran = register(&registry, Style::WithSchema, "deploy", Some(Ask));
    let store = Arc::new(MemoryApprovalStore::new());
    store.insert("deploy", "approved_call", ApprovalDecision::Approve);
    store.insert("deploy", "rejected_call", ApprovalDecision::Deny);
    let prompts = Counter::new();
    let manager =
        approver(PermissionManager::default(), &prompts, ApprovalDecision::Approve).with_store(store);

    let approved = registry.execute(&call("approved_call", "deploy", "{}"), Some(&manager)).await;
    assert!(!approved.is_error, "{approved:?}");
    let rejected = registry.execute(&call("rejected_call", "deploy", "{}"), Some(&manager)).await;
    assert_eq!(rejected.content, PERMISSION_DENIED);
    assert_eq!((ran.get(), prompts.get()), (1, 0), "stored decisions answer without a prompt");
}

#[tokio::test]
async fn callback_decisions_are_saved_so_a_later_process_does_not_ask_twice() {
    let registry = ToolRegistry::new();
    let ran = register(&registry, Style::WithSchema, "deploy", Some(Ask));
    let store = Arc::new(MemoryApprovalStore::new());
    let prompts = Counter::new();
    let first =
        approver(PermissionManager::default(), &prompts, ApprovalDecision::Approve).with_store(store.clone());
    registry.execute(&call("call_1", "deploy", "{}"), Some(&first)).await;
    assert_eq!((prompts.get(), store.len()), (1, 1));

    // A recovered run: a new manager with the same store and no callback at all.
    let recovered = PermissionManager::default().with_store(store.clone());
    let again = registry.execute(&call("call_1", "deploy", "{}"), Some(&recovered)).await;
    assert!(!again.is_error, "{again:?}");
    assert_eq!(ran.get(), 2);
    // A call with no stored decision still has no way to be approved.
    let unknown = registry.execute(&call("call_2", "deploy", "{}"), Some(&recovered)).await;
    assert_eq!(unknown.content, PERMISSION_DENIED);
    assert_eq!(ran.get(), 2);
}

#[tokio::test]
async fn deny_beats_a_stored_approval() {
    let registry = ToolRegistry::new();
    let ran = register(&registry, Style::WithSchema, "deploy", Some(Deny));
    let store = Arc::new(MemoryApprovalStore::new());
    store.insert("deploy", "c1", ApprovalDecision::ApproveForSession);
    let manager = PermissionManager::default().with_store(store);
    let result = registry.execute(&call("c1", "deploy", "{}"), Some(&manager)).await;
    assert_eq!(result.content, PERMISSION_DENIED);
    assert_eq!(ran.get(), 0);
}

struct BrokenStore;

impl ApprovalStore for BrokenStore {
    fn load<'a>(
        &'a self,
        _request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<Option<ApprovalDecision>, ApprovalStoreError>> {
        Box::pin(async { Err(ApprovalStoreError("disk on fire".into())) })
    }

    fn save<'a>(
        &'a self,
        _request: &'a ApprovalRequest,
        _decision: ApprovalDecision,
    ) -> BoxFuture<'a, Result<(), ApprovalStoreError>> {
        Box::pin(async { Err(ApprovalStoreError("disk on fire".into())) })
    }
}

#[tokio::test]
async fn a_failing_approval_store_fails_closed_without_leaking_its_error() {
    let registry = ToolRegistry::new();
    let ran = register(&registry, Style::WithSchema, "deploy", Some(Ask));
    let prompts = Counter::new();
    let manager = approver(PermissionManager::default(), &prompts, ApprovalDecision::Approve)
        .with_store(Arc::new(BrokenStore));
    let result = registry.execute(&call("c1", "deploy", "{}"), Some(&manager)).await;
    assert_eq!(result.content, PERMISSION_DENIED);
    assert_eq!(ran.get(), 0);
}
