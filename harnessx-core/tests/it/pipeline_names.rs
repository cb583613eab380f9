//! Spec tools.md "Tool names the model gets wrong": an exact name always wins; a name is
//! repaired only for case, separators and the known prefixes, and only when exactly one
//! tool matches; typos and ambiguous aliases are never dispatched, and the error suggests
//! up to three close names and lists the available tools. Name repair never gets a call
//! past a DENY for the tool it resolves to.

use crate::common;

use std::collections::BTreeMap;

use common::*;
use harnessx_core::{
    PERMISSION_DENIED, PermissionLevel, PermissionManager, ToolHandler, ToolOptions, ToolRegistry,
    UnknownTool,
};
use serde_json::{Value, json};

/// A registry of tools that each answer `ran <name>`, with their counters.
fn registry_of(names: &[&str]) -> (ToolRegistry, BTreeMap<String, Counter>) {
    let registry = ToolRegistry::new();
    let counters =
        names.iter().map(|n| (n.to_string(), register_counting(&registry, n, ToolOptions::new()))).collect();
    (registry, counters)
}

fn total_runs(counters: &BTreeMap<String, Counter>) -> usize {
    counters.values().map(Counter::get).sum()
}

/// Asserts that `requested` is not dispatched: an error result whose text is the
/// resolution error, listing every available tool; no handler runs.
async fn assert_not_dispatched(
    registry: &ToolRegistry,
    counters: &BTreeMap<String, Counter>,
    requested: &str,
) -> UnknownTool {
    let before = total_runs(counters);
    let result = registry.execute(&call("c1", requested, "{}"), None).await;
    assert!(result.is_error, "{requested:?} was dispatched: {result:?}");
    assert_eq!(total_runs(counters), before, "{requested:?} ran a handler");
    let unknown = registry.resolve_name(requested).expect_err("the name must not resolve");
    assert_eq!(result.content, unknown.to_string());
    assert!(unknown.suggestions.len() <= 3, "{unknown:?}");
    let mut all = registry.tool_names();
    all.sort();
    assert_eq!(unknown.available, all, "the error lists the available tools");
    for name in &all {
        assert!(result.content.contains(name.as_str()), "{name} missing from: {}", result.content);
    }
    assert!(!result.content.contains('\n'), "one line: {}", result.content);
    unknown
}

#[tokio::test]
async fn every_listed_repair_dispatches_the_one_matching_tool() {
    let (registry, counters) = registry_of(&["search_web", "fetch_url", "read_file"]);
    let repairs = [
        // letter case
        "Search_Web",
        "SEARCH_WEB",
        // separators
        "search-web",
        "searchWeb",
        "search.web",
        "search web",
        // the known prefixes
        "functions.search_web",
        "tools.search_web",
        "default_api:search_web",
    ];
    for (i, requested) in repairs.into_iter().enumerate() {
        let id = format!("call_{i}");
        let result = registry.execute(&call(&id, requested, "{}"), None).await;
        assert!(!result.is_error, "{requested:?}: {result:?}");
        assert_eq!(result.content, "ran search_web", "{requested:?}");
        assert_eq!(result.name, "search_web", "{requested:?}");
        assert_eq!(result.call_id, id);
        assert_eq!(registry.resolve_name(requested), Ok("search_web".to_owned()));
    }
    assert_eq!(counters["search_web"].get(), repairs.len());
    assert_eq!(counters["fetch_url"].get() + counters["read_file"].get(), 0);
}

#[tokio::test]
async fn a_prefix_combines_with_a_case_or_separator_repair() {
    let (registry, counters) = registry_of(&["search_web", "fetch_url"]);
    for requested in ["functions.searchWeb", "tools.Search-Web", "default_api:search.web"] {
        let result = registry.execute(&call("c", requested, "{}"), None).await;
        assert_eq!(result.content, "ran search_web", "{requested:?}");
    }
    assert_eq!(counters["search_web"].get(), 3);
}

// Regression: with a camelCase tool `searchWeb`, the case-only variants `searchweb`,
// `SEARCHWEB` and `Searchweb` were "Unknown tool" (the key split at camelCase before it
// lower-cased), and with `searchweb` registered, `searchWeb` was not repaired.
#[tokio::test]
async fn case_separators_and_prefixes_combine_for_names_of_every_style() {
    let styles: [(&str, &[&str]); 5] = [
        (
            "searchWeb",
            &[
                "searchweb",
                "SEARCHWEB",
                "Searchweb",
                "SearchWeb",
                "search_web",
                "search-web",
                "Search.Web",
                "search web",
                "functions.searchweb",
                "tools.SEARCH_WEB",
                "default_api:Search-web",
            ],
        ),
        (
            "searchweb",
            &["searchWeb", "SearchWeb", "SEARCHWEB", "search_web", "Search-Web", "functions.searchWeb"],
        ),
        ("SearchWeb", &["searchweb", "searchWeb", "SEARCH_WEB", "search.web", "tools.searchweb"]),
        ("SEARCH_WEB", &["search_web", "searchWeb", "searchweb", "Search-Web", "default_api:searchweb"]),
        (
            "get-HTTPResponse",
            &[
                "getHttpResponse",
                "get_http_response",
                "GETHTTPRESPONSE",
                "gethttpresponse",
                "functions.get.http.response",
            ],
        ),
    ];
    for (registered, variants) in styles {
        let (registry, counters) = registry_of(&[registered, "fetch_url", "read_file"]);
        for (i, requested) in variants.iter().enumerate() {
            let result = registry.execute(&call(&format!("c{i}"), requested, "{}"), None).await;
            assert!(!result.is_error, "{registered}: {requested:?}: {}", result.content);
            assert_eq!(result.content, format!("ran {registered}"), "{requested:?}");
            assert_eq!(result.name, registered, "{requested:?}");
            assert_eq!(registry.resolve_name(requested).as_deref(), Ok(registered), "{requested:?}");
        }
        assert_eq!(counters[registered].get(), variants.len(), "{registered}");
        // A typo of the same name is still never dispatched.
        assert_not_dispatched(&registry, &counters, "serchWeb").await;
        assert_not_dispatched(&registry, &counters, "searchWebs").await;
    }
}

#[tokio::test]
async fn a_case_only_variant_matching_two_camel_case_tools_is_ambiguous() {
    let (registry, counters) = registry_of(&["searchWeb", "search_web", "fetch_url"]);
    for requested in ["searchweb", "SEARCHWEB", "Searchweb", "tools.searchweb"] {
        let unknown = assert_not_dispatched(&registry, &counters, requested).await;
        assert!(unknown.ambiguous, "{requested:?}: {unknown:?}");
    }
}

#[tokio::test]
async fn an_exact_registered_name_always_wins() {
    // `searchWeb` and `search_web` are both formatting variants of each other.
    let (registry, counters) = registry_of(&["search_web", "searchWeb", "Search_Web"]);
    for name in ["search_web", "searchWeb", "Search_Web"] {
        let result = registry.execute(&call("c", name, "{}"), None).await;
        assert_eq!(result.content, format!("ran {name}"));
        assert_eq!(counters[name].get(), 1, "{name}");
    }
}

#[tokio::test]
async fn an_alias_that_matches_two_tools_is_never_dispatched() {
    let (registry, counters) = registry_of(&["search_web", "searchWeb", "fetch_url"]);
    for requested in ["search-web", "SEARCH_WEB", "search.web", "functions.search web"] {
        let unknown = assert_not_dispatched(&registry, &counters, requested).await;
        assert!(unknown.ambiguous, "{requested:?}: {unknown:?}");
        let mut suggested = unknown.suggestions.clone();
        suggested.sort();
        assert_eq!(suggested, ["searchWeb", "search_web"], "the matching names are suggested");
    }
}

#[tokio::test]
async fn tools_differing_only_by_case_make_other_spellings_ambiguous() {
    let (registry, counters) = registry_of(&["Read_File", "read_file"]);
    let unknown = assert_not_dispatched(&registry, &counters, "READ_FILE").await;
    assert!(unknown.ambiguous);
}

#[tokio::test]
async fn a_prefixed_name_that_also_matches_another_tool_by_separators_is_ambiguous() {
    // `functions.search_web` is `search_web` with a known prefix, and also
    // `functions_search_web` with `.` for `_`: two tools match, so it must not run.
    let (registry, counters) = registry_of(&["search_web", "functions_search_web"]);
    assert_not_dispatched(&registry, &counters, "functions.search_web").await;
}

#[tokio::test]
async fn a_name_that_starts_like_a_prefix_is_still_repaired_by_separators() {
    // `tools.list` differs from the one registered tool `tools_list` only by a separator.
    let (registry, counters) = registry_of(&["tools_list", "functions_reload", "read_file"]);
    for (requested, expected) in [("tools.list", "tools_list"), ("functions.reload", "functions_reload")] {
        let result = registry.execute(&call("c", requested, "{}"), None).await;
        assert_eq!(result.content, format!("ran {expected}"), "{requested:?}: {result:?}");
    }
    assert_eq!(counters["tools_list"].get() + counters["functions_reload"].get(), 2);
}

#[tokio::test]
async fn a_typo_is_never_dispatched_even_when_only_one_tool_is_close() {
    let (registry, counters) = registry_of(&["search_web"]);
    for typo in ["serch_web", "search_webb", "saerch_web", "search_wbe", "functions.serch_web"] {
        let unknown = assert_not_dispatched(&registry, &counters, typo).await;
        assert!(!unknown.ambiguous);
        assert_eq!(unknown.suggestions, ["search_web"], "{typo:?}: similarity suggests, never selects");
    }
}

#[tokio::test]
async fn the_error_suggests_at_most_three_close_names_best_first_and_lists_every_tool() {
    let names = ["search_web", "search_news", "search_files", "search_images", "search_maps", "fetch_url"];
    let (registry, counters) = registry_of(&names);
    let unknown = assert_not_dispatched(&registry, &counters, "search_wev").await;
    assert_eq!(unknown.suggestions.len(), 3, "five names are close; three are suggested: {unknown:?}");
    assert_eq!(unknown.suggestions[0], "search_web");
    let text = unknown.to_string();
    assert!(text.contains("search_wev"), "the error quotes the requested name: {text}");
    for s in &unknown.suggestions {
        assert!(text.contains(s.as_str()));
    }
}

#[tokio::test]
async fn names_real_models_got_wrong() {
    let observed = fixture_json("tool_defs/observed_wrong_tool_names.json");
    let cases = observed["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 4);
    for case in cases {
        let emitted = case["emitted"].as_str().unwrap();
        // Real names where the thread gives them; otherwise a plausible coding-agent set.
        let registered: Vec<&str> = case["registered"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .filter(|n| !n.starts_with('('))
            .chain(["read_file", "write_file", "execute_bash", "str_replace_editor"])
            .collect();
        let (registry, counters) = registry_of(&registered);
        match emitted {
            "functions.bash" => {
                let result = registry.execute(&call("c", emitted, "{}"), None).await;
                assert_eq!(result.content, "ran bash");
                assert_eq!(counters["bash"].get(), 1);
            }
            "execute_python" | "query_rag" | "run_repo_file" => {
                assert_not_dispatched(&registry, &counters, emitted).await;
            }
            other => panic!("unexpected case {other}"),
        }
    }
}

/// BFCL's dialect ("dict", "float") rewritten to JSON Schema.
fn bfcl_to_json_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v.as_str()) {
                        ("type", Some("dict")) => json!("object"),
                        ("type", Some("float")) => json!("number"),
                        _ => bfcl_to_json_schema(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(bfcl_to_json_schema).collect()),
        other => other.clone(),
    }
}

#[tokio::test]
async fn bfcl_dotted_names_resolve_to_their_underscore_registration() {
    // BFCL's handlers send `uber.ride` as `uber_ride`; a model may answer with either.
    let bfcl = fixture_json("tool_defs/bfcl_function_defs_sample.json");
    let registry = ToolRegistry::new();
    for f in bfcl["functions"].as_array().unwrap() {
        let f = &f["function"];
        let name = f["name"].as_str().unwrap().replace('.', "_");
        let echo_name = name.clone();
        registry
            .register_with_schema(
                name.as_str(),
                f["description"].as_str().unwrap(),
                bfcl_to_json_schema(&f["parameters"]),
                ToolHandler::from_async(move |args, _ctx| {
                    let text = format!("{echo_name} {args}");
                    async move { Ok(text.into()) }
                }),
                ToolOptions::new().replace(true),
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    assert!(registry.len() >= 95, "{}", registry.len());
    for dotted in bfcl["names_with_dots"].as_array().unwrap() {
        let dotted = dotted.as_str().unwrap();
        assert_eq!(registry.resolve_name(dotted), Ok(dotted.replace('.', "_")), "{dotted}");
    }
    let result = registry.execute(&call("c1", "math.gcd", r#"{"num1": 12, "num2": 18}"#), None).await;
    assert_eq!(result.content, r#"math_gcd {"num1":12,"num2":18}"#);
    let result = registry
        .execute(&call("c2", "functions.uber.ride", r#"{"loc": "x", "type": "plus", "time": 600}"#), None)
        .await;
    assert!(result.content.starts_with("uber_ride "), "{result:?}");
    // A repaired name still gets its schema checked.
    let result = registry.execute(&call("c3", "math.hcf", r#"{"number1": 12}"#), None).await;
    assert!(result.is_error);
    assert!(result.content.starts_with("invalid arguments for math_hcf: "), "{}", result.content);
    assert!(result.content.contains("number2"), "{}", result.content);
}

#[tokio::test]
async fn name_repair_never_gets_past_a_deny_for_the_resolved_tool() {
    let spellings =
        ["delete_file", "functions.delete_file", "Delete-File", "deleteFile", "default_api:DELETE_FILE"];

    // Explicit DENY on the tool, with and without a manager.
    let registry = ToolRegistry::new();
    let denied =
        register_counting(&registry, "delete_file", ToolOptions::new().permission(PermissionLevel::Deny));
    for requested in spellings {
        for manager in [None, Some(PermissionManager::default())] {
            let result = registry.execute(&call("c", requested, "{}"), manager.as_ref()).await;
            assert_eq!(result.content, PERMISSION_DENIED, "{requested:?}");
        }
    }

    // A DENY override on the registered name, and a DENY default.
    let registry = ToolRegistry::new();
    let by_manager = register_counting(&registry, "delete_file", ToolOptions::new());
    let overridden = PermissionManager::default().with_override("delete_file", PermissionLevel::Deny);
    let deny_default = PermissionManager::new(PermissionLevel::Deny);
    for requested in spellings {
        for manager in [&overridden, &deny_default] {
            let result = registry.execute(&call("c", requested, "{}"), Some(manager)).await;
            assert_eq!(result.content, PERMISSION_DENIED, "{requested:?}");
        }
    }
    // An ALLOW override on the wrong spelling does not let it through either.
    let sneaky =
        PermissionManager::new(PermissionLevel::Deny).with_override("Delete-File", PermissionLevel::Allow);
    let result = registry.execute(&call("c", "Delete-File", "{}"), Some(&sneaky)).await;
    assert_eq!(result.content, PERMISSION_DENIED);

    assert_eq!(denied.get() + by_manager.get(), 0);
}

#[tokio::test]
async fn an_empty_registry_says_no_tools_are_available() {
    let registry = ToolRegistry::new();
    let result = registry.execute(&call("c", "anything", "{}"), None).await;
    assert!(result.is_error);
    assert!(result.content.contains("anything"), "{}", result.content);
    assert!(registry.resolve_name("anything").unwrap_err().available.is_empty());
}
