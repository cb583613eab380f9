//! `ask_user` through the pipeline: its policy, the answer, nobody answering, overrides.

use std::sync::{Arc, Mutex};

use harnessx::builtin::ask_user::{
    ASK_USER_TIMEOUT_SECONDS, AskUserOptions, NO_ANSWER, register_ask_user_tool,
};
use harnessx::{PermissionLevel, PermissionManager, ReplayPolicy, ToolAnnotations, ToolCall, ToolRegistry};

#[tokio::test]
async fn registered_with_allow_serial_safe_and_one_hour() {
    let registry = ToolRegistry::new();
    register_ask_user_tool(&registry, |_q, _c| async { None::<String> }, AskUserOptions::default()).unwrap();
    let def = registry.get_tool("ask_user").unwrap();
    assert_eq!(def.permission, Some(PermissionLevel::Allow));
    assert!(!def.concurrent);
    assert_eq!(def.replay_policy, ReplayPolicy::Safe);
    assert_eq!(def.timeout_seconds, Some(ASK_USER_TIMEOUT_SECONDS));
    // It changes nothing on the host, and reaches a person.
    assert_eq!(def.annotations, ToolAnnotations::new().read_only(true).open_world(true));
    assert!(!def.annotations.may_modify());
    // Explicit ALLOW: a manager defaulting to DENY still lets the model ask.
    let manager = PermissionManager::new(PermissionLevel::Deny);
    let r = registry
        .execute(&ToolCall::new("1", "ask_user", r#"{"question": "Which file?"}"#), Some(&manager))
        .await;
    assert_eq!(r.content, NO_ANSWER);
    assert!(!r.is_error);
}

#[tokio::test]
async fn the_question_and_choices_reach_the_app_and_the_answer_reaches_the_model() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let registry = ToolRegistry::new();
    let log = seen.clone();
    register_ask_user_tool(
        &registry,
        move |question, choices| {
            log.lock().unwrap().push((question, choices));
            async { Some("the second one".to_owned()) }
        },
        AskUserOptions::default(),
    )
    .unwrap();
    let call = ToolCall::new("1", "ask_user", r#"{"question": "Which?", "choices": ["first", "second"]}"#);
    let r = registry.execute(&call, None).await;
    assert_eq!(r.content, "The user answered: the second one");
    let free = registry.execute(&ToolCall::new("2", "ask_user", r#"{"question": "Name?"}"#), None).await;
    assert!(!free.is_error);
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0], ("Which?".to_owned(), vec!["first".to_owned(), "second".to_owned()]));
    assert_eq!(seen[1], ("Name?".to_owned(), vec![]));
}

#[tokio::test]
async fn options_change_permission_timeout_and_replace() {
    let registry = ToolRegistry::new();
    register_ask_user_tool(&registry, |_q, _c| async { None::<String> }, AskUserOptions::default()).unwrap();
    let again =
        register_ask_user_tool(&registry, |_q, _c| async { None::<String> }, AskUserOptions::default());
    assert!(again.is_err(), "a second registration without replace fails");
    let options = AskUserOptions {
        permission: Some(PermissionLevel::Deny),
        timeout_seconds: Some(30.0),
        replace: true,
    };
    register_ask_user_tool(&registry, |_q, _c| async { None::<String> }, options).unwrap();
    let def = registry.get_tool("ask_user").unwrap();
    assert_eq!((def.permission, def.timeout_seconds), (Some(PermissionLevel::Deny), Some(30.0)));
    let r = registry.execute(&ToolCall::new("1", "ask_user", r#"{"question": "?"}"#), None).await;
    assert_eq!(r.content, "Permission denied");
}

#[test]
fn ask_user_is_not_part_of_any_bundle() {
    harnessx::builtin::link();
    assert!(!harnessx::catalog::known_names().contains(&"ask_user"));
}

#[test]
fn schema_and_description_are_exactly_these() {
    let registry = ToolRegistry::new();
    register_ask_user_tool(&registry, |_q, _c| async { None::<String> }, AskUserOptions::default()).unwrap();
    let def = registry.get_tool("ask_user").unwrap();
    assert_eq!(
        def.description,
        "Ask the user one focused question when the request is ambiguous, before doing the work. Offer likely answers in choices when there are a few; leave it empty for a free-text question."
    );
    assert_eq!(
        def.input_schema,
        serde_json::json!({
            "type": "object",
            "properties": {
                "question": {"type": "string", "minLength": 1, "description": "One focused question."},
                "choices": {"type": "array", "items": {"type": "string"}, "description": "Suggested answers; empty for a free-text question."}
            },
            "required": ["question"]
        })
    );
}

#[tokio::test]
async fn an_empty_question_is_refused_by_the_schema() {
    let registry = ToolRegistry::new();
    register_ask_user_tool(&registry, |_q, _c| async { Some("x".to_owned()) }, AskUserOptions::default())
        .unwrap();
    let r = registry.execute(&ToolCall::new("1", "ask_user", r#"{"question": ""}"#), None).await;
    assert!(r.is_error);
    assert!(r.content.starts_with("invalid arguments for ask_user: question: "), "{}", r.content);
}
