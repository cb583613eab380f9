//! Registration: duplicates and `replace`, `register_with_schema`, options that override
//! only what they set, definitions that keep their explicit policy, inspection
//! (`get_tool`, `list_tools`, `get_tool_params`) and invalid names and schemas.
//! Spec: tools.md "Explicit schemas and reusable definitions", "Replacement, timeouts,
//! and replay".

use crate::common;

use std::collections::BTreeSet;

use common::*;
use harnessx_core::{
    DEFAULT_TOOL_TIMEOUT_SECONDS, PERMISSION_DENIED, PermissionLevel, PermissionManager, RegistryError,
    ReplayPolicy, ToolDefinition, ToolHandler, ToolOptions, ToolPolicy, ToolRegistry, ToolRetry,
};
use serde_json::{Value, json};

fn label_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"value": {"type": "string", "maxLength": 40}},
        "required": ["value"],
        "additionalProperties": false
    })
}

fn label_handler() -> ToolHandler {
    ToolHandler::from_async(|args, _ctx| async move {
        Ok(args["value"].as_str().unwrap_or_default().to_uppercase().into())
    })
}

#[tokio::test]
async fn duplicate_names_fail_by_default_and_keep_the_first_binding() {
    let registry = ToolRegistry::new();
    let first = register_counting(&registry, "lookup", ToolOptions::new());
    let second = Counter::new();
    let err = registry
        .register_with_schema(
            "lookup",
            "Another.",
            empty_schema(),
            counting("second", &second),
            ToolOptions::new(),
        )
        .unwrap_err();
    assert_eq!(err, RegistryError::DuplicateTool { name: "lookup".into() });
    assert_eq!(registry.len(), 1);

    let result = registry.execute(&call("c1", "lookup", "{}"), None).await;
    assert_eq!(result.content, "ran lookup");
    assert_eq!((first.get(), second.get()), (1, 0));
}

#[tokio::test]
async fn duplicate_definitions_fail_through_register_tool_too() {
    let registry = ToolRegistry::new();
    let def = ToolDefinition::new("lookup", "Look up.", empty_schema(), counting("one", &Counter::new()));
    registry.register_tool(def.clone()).unwrap();
    assert_eq!(
        registry.register_tool(def).unwrap_err(),
        RegistryError::DuplicateTool { name: "lookup".into() }
    );
}

#[tokio::test]
async fn replace_true_deliberately_replaces_a_binding() {
    let registry = ToolRegistry::new();
    let first = register_counting(&registry, "lookup", ToolOptions::new());
    let second = Counter::new();
    registry
        .register_with_schema(
            "lookup",
            "The replacement.",
            empty_schema(),
            counting("second", &second),
            ToolOptions::new().replace(true),
        )
        .unwrap();
    assert_eq!(registry.len(), 1);
    assert_eq!(registry.get_tool("lookup").unwrap().description, "The replacement.");

    let result = registry.execute(&call("c1", "lookup", "{}"), None).await;
    assert_eq!(result.content, "second");
    assert_eq!((first.get(), second.get()), (0, 1));

    // `replace` on a name that is not registered yet simply registers it.
    register_counting(&registry, "fresh", ToolOptions::new().replace(true));
    assert!(registry.contains("fresh"));
}

#[tokio::test]
async fn register_with_schema_takes_the_four_positional_parameters_and_keyword_options() {
    let registry = ToolRegistry::new();
    let retry = ToolRetry::immediate(4);
    let def = registry
        .register_with_schema(
            "label",
            "Uppercase a short label.",
            label_schema(),
            label_handler(),
            ToolOptions::new()
                .permission(PermissionLevel::Ask)
                .concurrent(false)
                .replay_policy(ReplayPolicy::Idempotent)
                .timeout_seconds(7.5)
                .retry(retry)
                .retry_if_result(|out| out.content == "PENDING"),
        )
        .unwrap();
    for d in [def, registry.get_tool("label").unwrap()] {
        assert_eq!(d.name, "label");
        assert_eq!(d.description, "Uppercase a short label.");
        assert_eq!(d.input_schema, label_schema());
        assert_eq!(d.permission, Some(PermissionLevel::Ask));
        assert!(!d.concurrent);
        assert_eq!(d.replay_policy, ReplayPolicy::Idempotent);
        assert_eq!(d.timeout_seconds, Some(7.5));
        assert_eq!(d.retry, Some(retry));
        let predicate = d.retry_if_result.expect("retry_if_result is kept");
        assert!(predicate(&"PENDING".into()) && !predicate(&"DONE".into()));
    }

    // The spec's example: the registered handler runs through the pipeline.
    let plain = ToolRegistry::new();
    plain
        .register_with_schema(
            "label",
            "Uppercase a short label.",
            label_schema(),
            label_handler(),
            ToolOptions::new(),
        )
        .unwrap();
    let result = plain.execute(&call("c1", "label", r#"{"value":"ok"}"#), None).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.content, "OK");
}

#[test]
fn ordinary_registrations_default_to_inherited_permission_concurrent_manual_and_the_default_timeout() {
    let registry = ToolRegistry::new();
    let def = registry
        .register_with_schema("label", "Uppercase.", label_schema(), label_handler(), ToolOptions::new())
        .unwrap();
    assert_eq!(def.permission, None, "omitted permission inherits the manager's default");
    assert!(def.concurrent);
    assert_eq!(def.replay_policy, ReplayPolicy::Manual);
    assert_eq!(def.replay_policy.to_string(), "manual");
    assert_eq!(def.timeout_seconds, None);
    assert_eq!(def.retry, None);
    assert!(def.retry_if_result.is_none());
    assert_eq!(registry.effective_timeout_seconds("label"), Some(DEFAULT_TOOL_TIMEOUT_SECONDS));
    assert_eq!(DEFAULT_TOOL_TIMEOUT_SECONDS, 25.0);

    // A ToolDefinition that never set its own timeout takes the same default, and a
    // ToolPolicy changes that default.
    let with_policy =
        ToolRegistry::with_policy(ToolPolicy { default_timeout_seconds: Some(40.0), ..Default::default() });
    with_policy.register_tool(ToolDefinition::new("d", "D.", empty_schema(), label_handler())).unwrap();
    assert_eq!(with_policy.get_tool("d").unwrap().timeout_seconds, None);
    assert_eq!(with_policy.effective_timeout_seconds("d"), Some(40.0));
}

fn fully_configured(name: &str) -> ToolDefinition {
    ToolDefinition::new(name, "Configured.", empty_schema(), counting("ran", &Counter::new()))
        .with_permission(PermissionLevel::Deny)
        .with_concurrent(false)
        .with_replay_policy(ReplayPolicy::Safe)
        .with_timeout_seconds(5.0)
        .with_retry(ToolRetry::immediate(2))
        .with_retry_if_result(|_| false)
}

#[test]
fn registration_options_override_only_what_they_set() {
    type Check = fn(&ToolDefinition) -> bool;
    let cases: Vec<(&str, ToolOptions, Check)> = vec![
        ("permission", ToolOptions::new().permission(PermissionLevel::Allow), |d| {
            d.permission == Some(PermissionLevel::Allow)
        }),
        ("concurrent", ToolOptions::new().concurrent(true), |d| d.concurrent),
        ("replay_policy", ToolOptions::new().replay_policy(ReplayPolicy::Idempotent), |d| {
            d.replay_policy == ReplayPolicy::Idempotent
        }),
        ("timeout_seconds", ToolOptions::new().timeout_seconds(9.0), |d| d.timeout_seconds == Some(9.0)),
        ("retry", ToolOptions::new().retry(ToolRetry::immediate(6)), |d| {
            d.retry == Some(ToolRetry::immediate(6))
        }),
        ("replace only", ToolOptions::new().replace(true), |_| true),
    ];
    for (i, (what, options, changed)) in cases.into_iter().enumerate() {
        let registry = ToolRegistry::new();
        let name = format!("t{i}");
        let def = registry.register_tool_with(fully_configured(&name), options).unwrap();
        assert!(changed(&def), "{what}: the option was not applied: {def:?}");
        let original = fully_configured(&name);
        let stored = registry.get_tool(&name).unwrap();
        for d in [&def, &stored] {
            if what != "permission" {
                assert_eq!(d.permission, original.permission, "{what} reset the permission");
            }
            if what != "concurrent" {
                assert_eq!(d.concurrent, original.concurrent, "{what} reset concurrent");
            }
            if what != "replay_policy" {
                assert_eq!(d.replay_policy, original.replay_policy, "{what} reset the replay policy");
            }
            if what != "timeout_seconds" {
                assert_eq!(d.timeout_seconds, original.timeout_seconds, "{what} reset the timeout");
            }
            if what != "retry" {
                assert_eq!(d.retry, original.retry, "{what} reset the retry policy");
            }
            assert!(d.retry_if_result.is_some(), "{what} dropped retry_if_result");
            assert_eq!(d.description, original.description);
            assert_eq!(d.input_schema, original.input_schema);
        }
    }
}

#[tokio::test]
async fn registering_an_existing_definition_keeps_its_explicit_permission_and_replay_policy() {
    let definition = ToolDefinition::new(
        "drop_table",
        "Drop a table.",
        empty_schema(),
        counting("dropped", &Counter::new()),
    )
    .with_permission(PermissionLevel::Deny)
    .with_replay_policy(ReplayPolicy::Idempotent);

    let plain = ToolRegistry::new();
    plain.register_tool(definition.clone()).unwrap();
    let with_options = ToolRegistry::new();
    with_options
        .register_tool_with(&definition, ToolOptions::new().timeout_seconds(3.0).concurrent(false))
        .unwrap();

    for registry in [plain, with_options] {
        let stored = registry.get_tool("drop_table").unwrap();
        assert_eq!(stored.permission, Some(PermissionLevel::Deny));
        assert_eq!(stored.replay_policy, ReplayPolicy::Idempotent);
        assert_eq!(stored.replay_policy.to_string(), "idempotent");
        // Not silently reset to "inherit": an ordinary (ALLOW) manager still refuses it.
        let result =
            registry.execute(&call("c1", "drop_table", "{}"), Some(&PermissionManager::default())).await;
        assert!(result.is_error);
        assert_eq!(result.content, PERMISSION_DENIED);
    }
}

#[tokio::test]
async fn registering_a_definition_copies_its_metadata_and_retains_its_handler() {
    let counter = Counter::new();
    let mut definition = ToolDefinition::new("label", "Uppercase.", label_schema(), label_handler())
        .with_replay_policy(ReplayPolicy::Safe);
    definition.handler = {
        let counter = counter.clone();
        ToolHandler::from_async(move |args, _ctx| {
            counter.hit();
            async move { Ok(args["value"].as_str().unwrap_or_default().to_uppercase().into()) }
        })
    };
    let a = ToolRegistry::new();
    let b = ToolRegistry::new();
    a.register_tool(&definition).unwrap();
    b.register_tool(&definition).unwrap();

    // Changing the caller's copy afterwards changes neither registry.
    definition.description = "Changed.".into();
    definition.input_schema = empty_schema();
    for registry in [&a, &b] {
        let stored = registry.get_tool("label").unwrap();
        assert_eq!(stored.description, "Uppercase.");
        assert_eq!(stored.input_schema, label_schema());
        assert_eq!(stored.replay_policy, ReplayPolicy::Safe);
        let result = registry.execute(&call("c", "label", r#"{"value":"x"}"#), None).await;
        assert_eq!(result.content, "X");
    }
    assert_eq!(counter.get(), 2, "both registries run the definition's own handler");
}

#[test]
fn get_tool_returns_the_definition_registered_under_exactly_that_name() {
    let registry = ToolRegistry::new();
    register_counting(&registry, "search_web", ToolOptions::new().permission(PermissionLevel::Ask));
    let def = registry.get_tool("search_web").unwrap();
    assert_eq!(def.name, "search_web");
    assert_eq!(def.permission, Some(PermissionLevel::Ask));
    assert!(registry.get_tool("fetch_url").is_none());
}

#[test]
fn list_tools_lists_every_registered_definition() {
    let registry = ToolRegistry::new();
    assert!(registry.list_tools().is_empty());
    for name in ["read_file", "write_file", "grep"] {
        register_counting(&registry, name, ToolOptions::new());
    }
    let names: BTreeSet<String> = registry.list_tools().into_iter().map(|d| d.name).collect();
    assert_eq!(names, BTreeSet::from(["grep".to_owned(), "read_file".to_owned(), "write_file".to_owned()]));
    registry.remove_tool("grep").unwrap();
    assert_eq!(registry.list_tools().len(), 2);
}

#[test]
fn get_tool_params_returns_canonical_provider_neutral_schemas() {
    let registry = ToolRegistry::new();
    registry
        .register_with_schema(
            "label",
            "Uppercase a short label.",
            label_schema(),
            label_handler(),
            ToolOptions::new(),
        )
        .unwrap();
    // A schema with draft/title decoration and without "type"/"properties".
    registry
        .register_with_schema(
            "ping",
            "Ping.",
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "PingArgs"}),
            label_handler(),
            ToolOptions::new().permission(PermissionLevel::Deny).timeout_seconds(3.0),
        )
        .unwrap();

    let params = registry.get_tool_params();
    assert_eq!(params.len(), 2);
    let label = params.iter().find(|p| p.name == "label").unwrap();
    assert_eq!(label.description, "Uppercase a short label.");
    assert_eq!(label.input_schema, label_schema());
    let ping = params.iter().find(|p| p.name == "ping").unwrap();
    assert_eq!(ping.input_schema, json!({"type": "object", "properties": {}}));

    // Provider-neutral: only name, description and schema; no handler or policy.
    let serialized = serde_json::to_value(ping).unwrap();
    assert_eq!(
        serialized,
        json!({"name": "ping", "description": "Ping.", "input_schema": {"type": "object", "properties": {}}})
    );
}

// The model sees one self-contained schema (no `$ref`, `$defs` or `title` anywhere), while
// the registered schema, recursion included, is still what validates the arguments.
#[tokio::test]
async fn get_tool_params_inlines_references_and_validation_keeps_the_original() {
    let registry = ToolRegistry::new();
    let schema = json!({
        "title": "Args",
        "type": "object",
        "properties": {
            "title": {"title": "Title", "type": "string"},
            "tree": {"$ref": "#/$defs/Tree", "description": "The tree."}
        },
        "required": ["tree"],
        "$defs": {
            "Tree": {"title": "Tree", "type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}
            }}
        }
    });
    registry
        .register_with_schema("plant", "Plant a tree.", schema, label_handler(), ToolOptions::new())
        .unwrap();
    let params = registry.get_tool_params();
    assert_eq!(
        params[0].input_schema,
        json!({
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "tree": {"type": "object", "required": ["name"], "description": "The tree.", "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {}}
                }}
            },
            "required": ["tree"]
        })
    );
    // A child without a name: the canonical form cannot say so, the registered schema does.
    let bad = r#"{"tree": {"name": "oak", "children": [{"children": []}]}}"#;
    let r = registry.execute(&harnessx_core::ToolCall::new("c1", "plant", bad), None).await;
    assert!(r.is_error);
    assert!(r.content.starts_with("invalid arguments for plant: tree.children[0]: "), "{}", r.content);
}

#[test]
fn get_tool_params_is_deterministic() {
    let build = || {
        let registry = ToolRegistry::new();
        for name in ["b_tool", "a_tool"] {
            registry
                .register_with_schema(
                    name,
                    "T.",
                    json!({"title": "X", "properties": {"z": {"type": "string"}, "y": {"type": "integer"}}, "required": ["z"]}),
                    label_handler(),
                    ToolOptions::new(),
                )
                .unwrap();
        }
        serde_json::to_string(&registry.get_tool_params()).unwrap()
    };
    assert_eq!(build(), build());
}

#[test]
fn invalid_tool_names_are_rejected_and_nothing_is_registered() {
    let registry = ToolRegistry::new();
    let too_long = "a".repeat(65);
    for name in ["", "search web", "search.web", "tools/search", "naïve", "default_api:x", too_long.as_str()]
    {
        let err = registry
            .register_with_schema(name, "Bad.", empty_schema(), label_handler(), ToolOptions::new())
            .unwrap_err();
        assert_eq!(err, RegistryError::InvalidName { name: name.to_owned() }, "{name:?}");
    }
    assert!(registry.is_empty());
    // The boundaries of the accepted form.
    for name in ["a".repeat(64), "get-sum".into(), "Tool_2".into()] {
        registry
            .register_with_schema(name.as_str(), "Ok.", empty_schema(), label_handler(), ToolOptions::new())
            .unwrap();
    }
    assert_eq!(registry.len(), 3);
}

#[test]
fn bfcl_dotted_function_names_are_not_valid_tool_names() {
    // BFCL's own handlers rewrite '.' to '_' before sending; registering the dotted form fails.
    let bfcl = fixture_json("tool_defs/bfcl_function_defs_sample.json");
    let dotted: Vec<&str> =
        bfcl["names_with_dots"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert_eq!(dotted.len(), 30);
    let registry = ToolRegistry::new();
    for name in dotted {
        let err =
            registry.register_with_schema(name, "BFCL.", empty_schema(), label_handler(), ToolOptions::new());
        assert!(matches!(err, Err(RegistryError::InvalidName { .. })), "{name}: {err:?}");
        registry
            .register_with_schema(
                name.replace('.', "_"),
                "BFCL.",
                empty_schema(),
                label_handler(),
                ToolOptions::new(),
            )
            .unwrap();
    }
}

#[test]
fn invalid_input_schemas_are_rejected_and_nothing_is_registered() {
    let bfcl = fixture_json("tool_defs/bfcl_function_defs_sample.json");
    // BFCL's dialect ("type": "dict") is not JSON Schema.
    let bfcl_params = bfcl["functions"][0]["function"]["parameters"].clone();
    assert_eq!(bfcl_params["type"], "dict");
    let cases = [
        ("not_an_object", json!([1, 2])),
        ("a_string_schema", json!({"type": "string"})),
        ("an_array_schema", json!({"type": "array", "items": {}})),
        ("bogus_type", json!({"type": "object", "properties": {"a": {"type": "bogus"}}})),
        ("bfcl_dialect", bfcl_params),
    ];
    let registry = ToolRegistry::new();
    for (name, schema) in cases {
        let err = registry
            .register_with_schema(name, "Bad.", schema, label_handler(), ToolOptions::new())
            .unwrap_err();
        assert!(matches!(&err, RegistryError::InvalidSchema { name: n, .. } if n == name), "{name}: {err:?}");
        assert!(err.to_string().contains(name), "the message names the tool: {err}");
    }
    assert!(registry.is_empty());
}

#[test]
fn non_positive_timeouts_are_rejected() {
    let registry = ToolRegistry::new();
    for t in [0.0, -1.0, f64::NAN] {
        let err = registry
            .register_with_schema(
                "slow",
                "Slow.",
                empty_schema(),
                label_handler(),
                ToolOptions::new().timeout_seconds(t),
            )
            .unwrap_err();
        assert!(matches!(err, RegistryError::InvalidOption(_)), "{t}: {err:?}");
    }
    assert!(registry.is_empty());
}

#[test]
fn replay_policy_takes_the_enum_or_the_plain_strings_and_shows_the_string() {
    for (text, policy) in [
        ("safe", ReplayPolicy::Safe),
        ("idempotent", ReplayPolicy::Idempotent),
        ("manual", ReplayPolicy::Manual),
    ] {
        assert_eq!(text.parse::<ReplayPolicy>().unwrap(), policy);
        assert_eq!(policy.to_string(), text);
        let registry = ToolRegistry::new();
        let def = registry
            .register_with_schema(
                "t",
                "T.",
                empty_schema(),
                label_handler(),
                ToolOptions::new().replay_policy(text.parse().unwrap()),
            )
            .unwrap();
        assert_eq!(def.replay_policy.to_string(), text);
    }
    assert!("sometimes".parse::<ReplayPolicy>().is_err());
}

#[tokio::test]
async fn a_cloned_registry_is_the_same_registry_not_a_copy() {
    let registry = ToolRegistry::new();
    let attached = registry.clone();
    assert!(attached.same_registry(&registry));
    register_counting(&attached, "later", ToolOptions::new());
    assert!(registry.contains("later"));
    let result = registry.execute(&call("c1", "later", ""), None).await;
    assert_eq!(result.content, "ran later");
    assert!(!ToolRegistry::new().same_registry(&registry));
}

#[test]
fn the_revision_changes_with_every_registration_and_removal_and_a_weak_handle_does_not_keep_it() {
    let registry = ToolRegistry::new();
    let start = registry.revision();
    registry
        .register_with_schema("label", "Label.", label_schema(), label_handler(), ToolOptions::new())
        .unwrap();
    let registered = registry.revision();
    assert_ne!(registered, start);
    // Reading does not change it; a failed registration neither.
    let _ = registry.get_tool_params();
    assert!(
        registry
            .register_with_schema("label", "Again.", label_schema(), label_handler(), ToolOptions::new())
            .is_err()
    );
    assert_eq!(registry.revision(), registered);
    assert!(registry.remove_tool("label").is_some());
    assert_ne!(registry.revision(), registered);
    let removed = registry.revision();
    assert!(registry.remove_tool("label").is_none());
    assert_eq!(registry.revision(), removed, "removing nothing changes nothing");

    let weak = registry.downgrade();
    let clone = weak.upgrade().expect("alive");
    assert!(clone.same_registry(&registry));
    drop((clone, registry));
    assert!(weak.upgrade().is_none());
}
