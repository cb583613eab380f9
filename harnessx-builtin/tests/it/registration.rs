//! The bundle helper, the catalog (`load_builtin`) and what the model sees of them.

use harnessx_builtin::bash::BASH_TOOLS;
use harnessx_builtin::fs::{FILESYSTEM_TOOLS, FilesystemOptions, register_filesystem_tools};
use harnessx_builtin::memory::MEMORY_TOOLS;
use harnessx_builtin::planning::PLANNING_TOOLS;
use harnessx_core::catalog::{BuiltinOptions, known_names};
use harnessx_core::{PermissionLevel, RegistryError, ToolAnnotations, ToolRegistry};
use serde_json::json;

fn root() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn the_helper_registers_the_selection_in_bundle_order() {
    let registry = ToolRegistry::new();
    let names = register_filesystem_tools(
        &registry,
        FilesystemOptions {
            include: Some(vec!["list_directory".into(), "read_file".into(), "grep".into()]),
            exclude: vec!["grep".into()],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(names, ["read_file", "list_directory"]);
    assert_eq!(registry.tool_names(), names);
    let all = register_filesystem_tools(&ToolRegistry::new(), FilesystemOptions::default()).unwrap();
    assert_eq!(all, FILESYSTEM_TOOLS);
}

#[test]
fn unknown_names_and_empty_selections_fail_and_register_nothing() {
    let registry = ToolRegistry::new();
    let err = register_filesystem_tools(
        &registry,
        FilesystemOptions { include: Some(vec!["read_file".into(), "rm_rf".into()]), ..Default::default() },
    )
    .unwrap_err();
    assert!(matches!(&err, RegistryError::Unknown { name, .. } if name == "rm_rf"), "{err}");
    assert!(err.to_string().contains("read_file, write_file, edit_file"), "{err}");
    let err = register_filesystem_tools(
        &registry,
        FilesystemOptions { exclude: vec!["cat".into()], ..Default::default() },
    )
    .unwrap_err();
    assert!(err.to_string().contains("\"cat\""), "{err}");
    let err = register_filesystem_tools(
        &registry,
        FilesystemOptions { include: Some(vec![]), ..Default::default() },
    )
    .unwrap_err();
    assert!(err.to_string().contains("leave no"), "{err}");
    assert!(registry.is_empty());
}

#[test]
fn bad_options_fail_at_registration() {
    let registry = ToolRegistry::new();
    let tmp = root();
    let missing = tmp.path().join("missing");
    let err = register_filesystem_tools(
        &registry,
        FilesystemOptions { base_path: Some(missing), ..Default::default() },
    )
    .unwrap_err();
    assert!(err.to_string().contains("cannot be used as a root"), "{err}");
    let file = tmp.path().join("file");
    std::fs::write(&file, "").unwrap();
    let err = register_filesystem_tools(
        &registry,
        FilesystemOptions { base_path: Some(file), ..Default::default() },
    )
    .unwrap_err();
    assert!(err.to_string().contains("cannot be opened as a directory"), "{err}");
    let err =
        register_filesystem_tools(&registry, FilesystemOptions { max_read_bytes: 0, ..Default::default() })
            .unwrap_err();
    assert_eq!(err.to_string(), "max_read_bytes must be at least 1");
    assert!(registry.is_empty());
}

#[test]
fn duplicates_fail_up_front_unless_replace() {
    let registry = ToolRegistry::new();
    register_filesystem_tools(
        &registry,
        FilesystemOptions { include: Some(vec!["grep".into()]), ..Default::default() },
    )
    .unwrap();
    let err = register_filesystem_tools(&registry, FilesystemOptions::default()).unwrap_err();
    assert_eq!(err, RegistryError::DuplicateTool { name: "grep".into() });
    assert_eq!(registry.tool_names(), ["grep"], "nothing half-registered");
    register_filesystem_tools(&registry, FilesystemOptions { replace: true, ..Default::default() }).unwrap();
    assert_eq!(registry.len(), 8);
}

#[test]
fn writes_are_serial_reads_concurrent_and_permission_applies_to_all() {
    let registry = ToolRegistry::new();
    register_filesystem_tools(
        &registry,
        FilesystemOptions { permission: Some(PermissionLevel::Ask), ..Default::default() },
    )
    .unwrap();
    for def in registry.list_tools() {
        let serial = ["write_file", "edit_file", "delete", "generate_file"].contains(&def.name.as_str());
        assert_eq!(def.concurrent, !serial, "{}", def.name);
        assert_eq!(def.permission, Some(PermissionLevel::Ask), "{}", def.name);
        assert_eq!(def.timeout_seconds, None, "{}: host file tools use the registry default", def.name);
        assert!(def.handler.is_blocking(), "{}: filesystem I/O runs off the async runtime", def.name);
    }
    // Omitted permission inherits the manager's default.
    let registry = ToolRegistry::new();
    register_filesystem_tools(&registry, FilesystemOptions::default()).unwrap();
    assert!(registry.list_tools().iter().all(|d| d.permission.is_none()));
}

#[test]
fn direct_definitions_use_ordinary_metadata() {
    let def = harnessx_builtin::fs::tool("write_file").unwrap();
    assert!(def.concurrent, "direct definitions keep the ordinary default");
    assert!(harnessx_builtin::fs::tool("nope").is_none());
}

#[test]
fn each_tool_carries_its_annotations() {
    let reads = ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false);
    let writes = ToolAnnotations::new().read_only(false).destructive(true).open_world(false);
    let expected = [
        ("read_file", reads),
        ("write_file", writes.idempotent(true)),
        ("edit_file", writes.idempotent(false)),
        ("delete", writes.idempotent(true)),
        ("glob", reads),
        ("grep", reads),
        ("list_directory", reads),
        ("generate_file", writes.idempotent(true)),
    ];
    assert_eq!(expected.map(|(name, _)| name), FILESYSTEM_TOOLS);
    let registry = ToolRegistry::new();
    register_filesystem_tools(&registry, FilesystemOptions::default()).unwrap();
    for (name, annotations) in expected {
        // Through the bundle helper and as a direct definition alike.
        assert_eq!(registry.get_tool(name).unwrap().annotations, annotations, "{name}");
        assert_eq!(harnessx_builtin::fs::tool(name).unwrap().annotations, annotations, "{name}");
        // The tools that may change things are exactly the serial ones.
        assert_eq!(annotations.may_modify(), !registry.get_tool(name).unwrap().concurrent, "{name}");
    }
}

#[test]
fn configured_options_never_reach_the_model() {
    let tmp = root();
    let registry = ToolRegistry::new();
    register_filesystem_tools(
        &registry,
        FilesystemOptions {
            base_path: Some(tmp.path().to_path_buf()),
            max_read_bytes: 123_457,
            max_media_bytes: 7_654_321,
            max_directory_entries: 4_321,
            output_dir: Some(tmp.path().join("downloads")),
            ..Default::default()
        },
    )
    .unwrap();
    let host = tmp.path().to_str().unwrap();
    for spec in registry.get_tool_params() {
        let seen = format!("{} {}", spec.description, spec.input_schema);
        for hidden in [
            "123457",
            "123_457",
            "4321",
            "7654321",
            "max_read_bytes",
            "max_media_bytes",
            "max_directory_entries",
            "base_path",
            "output_dir",
            host,
        ] {
            assert!(!seen.contains(hidden), "{} exposes {hidden}: {seen}", spec.name);
        }
        let props = spec.input_schema["properties"].as_object().unwrap();
        assert_eq!(spec.input_schema["additionalProperties"], json!(false));
        let expected: &[&str] = match spec.name.as_str() {
            "read_file" => &["path", "offset", "limit"],
            "write_file" | "generate_file" => &["path", "content", "overwrite"],
            "edit_file" => &["path", "old_string", "new_string", "replace_all"],
            "delete" => &["path", "recursive"],
            "glob" => &["pattern", "path"],
            "grep" => &["pattern", "path", "glob", "literal", "ignore_case", "context", "output_mode"],
            "list_directory" => &["path"],
            other => panic!("unexpected tool {other}"),
        };
        assert_eq!(props.keys().map(String::as_str).collect::<Vec<_>>(), expected, "{}", spec.name);
    }
}

#[test]
fn load_builtin_resolves_tools_bundles_and_all() {
    harnessx_builtin::link();
    let names = known_names();
    for n in FILESYSTEM_TOOLS.iter().chain(&["filesystem", "all"]) {
        assert!(names.contains(n), "{n} missing from {names:?}");
    }
    let tmp = root();
    let registry = ToolRegistry::new();
    let got = registry.load_builtin("read_file", json!({"base_path": tmp.path()})).unwrap();
    assert_eq!(got, ["read_file"]);
    let got = registry
        .load_builtin(
            "filesystem",
            BuiltinOptions::new().set("exclude", json!(["read_file", "delete"])).set("max_read_bytes", 10),
        )
        .unwrap();
    assert_eq!(got, ["write_file", "edit_file", "glob", "grep", "list_directory", "generate_file"]);
    // `all` is every bundle, in the spec's order: filesystem, bash, web, memory, planning.
    let got = ToolRegistry::new().load_builtin("all", json!({"permission": "deny"})).unwrap();
    #[cfg(feature = "web")]
    let web: &[&str] = &harnessx_builtin::web::WEB_TOOLS;
    #[cfg(not(feature = "web"))]
    let web: &[&str] = &[];
    let every: Vec<&str> = FILESYSTEM_TOOLS
        .iter()
        .chain(&BASH_TOOLS)
        .chain(web)
        .chain(&MEMORY_TOOLS)
        .chain(&PLANNING_TOOLS)
        .copied()
        .collect();
    assert_eq!(got, every);
    let got = ToolRegistry::new().load_builtin("all", serde_json::Value::Null).unwrap();
    assert_eq!(got.len(), 17 + web.len());
}

#[tokio::test]
async fn load_builtin_options_take_effect() {
    let tmp = root();
    std::fs::write(tmp.path().join("f.txt"), "1\n2\n3\n").unwrap();
    let registry = ToolRegistry::new();
    registry
        .load_builtin(
            "filesystem",
            json!({"base_path": tmp.path(), "include": ["read_file"], "max_read_bytes": 4}),
        )
        .unwrap();
    let r =
        registry.execute(&harnessx_core::ToolCall::new("1", "read_file", r#"{"path":"f.txt"}"#), None).await;
    assert_eq!(
        r.content,
        "     1\t1\n     2\t2\n[output stops at the read limit; call read_file again with offset=2 to continue]\n"
    );
    let registry = ToolRegistry::new();
    registry.load_builtin("delete", json!({"permission": "deny", "base_path": tmp.path()})).unwrap();
    let r = registry.execute(&harnessx_core::ToolCall::new("1", "delete", r#"{"path":"f.txt"}"#), None).await;
    assert_eq!(r.content, "Permission denied");
    assert!(tmp.path().join("f.txt").exists());
}

#[test]
fn load_builtin_rejects_unknown_names_keys_and_values() {
    harnessx_builtin::link();
    let registry = ToolRegistry::new();
    let err = registry.load_builtin("red_file", json!({})).unwrap_err().to_string();
    assert!(
        err.starts_with("unknown built-in tool or bundle \"red_file\"; known: read_file, write_file"),
        "{err}"
    );
    let memory = "save_memory, search_memories, read_memory, update_memory, delete_memory, list_memories";
    #[cfg(feature = "web")]
    let tail = format!(
        "run_bash, fetch_url, {memory}, write_todos, read_todos, filesystem, bash, web, memory, planning, all"
    );
    #[cfg(not(feature = "web"))]
    let tail =
        format!("run_bash, {memory}, write_todos, read_todos, filesystem, bash, memory, planning, all");
    assert!(err.ends_with(&tail), "{err}");
    let err = registry.load_builtin("filesystem", json!({"max_bytes": 1})).unwrap_err().to_string();
    assert_eq!(
        err,
        "unknown option `max_bytes` for built-in \"filesystem\"; valid options: include, exclude, permission, replace, \
         base_path, max_read_bytes, max_media_bytes, max_directory_entries, output_dir"
    );
    let err = registry.load_builtin("read_file", json!({"include": ["read_file"]})).unwrap_err().to_string();
    assert!(err.contains("unknown option `include` for built-in \"read_file\"; valid options: permission, replace, base_path"), "{err}");
    let err = registry.load_builtin("filesystem", json!({"max_read_bytes": "lots"})).unwrap_err().to_string();
    assert_eq!(
        err,
        "option `max_read_bytes` of the filesystem bundle must be a positive integer, got \"lots\""
    );
    let err = registry.load_builtin("filesystem", json!({"permission": "maybe"})).unwrap_err().to_string();
    assert!(err.contains("expected one of allow, ask, deny"), "{err}");
    let err = registry.load_builtin("filesystem", json!({"include": ["nope"]})).unwrap_err().to_string();
    assert!(err.contains("\"nope\""), "{err}");
    let err = registry.load_builtin("filesystem", json!(["base_path"])).unwrap_err().to_string();
    assert!(err.contains("must be a map"), "{err}");
    assert!(registry.is_empty());
}
