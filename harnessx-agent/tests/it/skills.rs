//! Skills: folders in the Claude Code layout loaded by `Agent::builder().skills(..)`, the
//! prompt block, the `Skill` tool (body, files, name repair and suggestions), build-time
//! errors, and runs where the model opens a skill and then reads one of its files.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use harnessx_agent::model::{FunctionModel, Message, ModelRequest, ModelResponse, TestModel};
use harnessx_agent::{Agent, AgentConfig, AgentError, SKILL_TOOL_NAME, Skill, SkillError, SkillSource};
use harnessx_core::{RegistryError, ToolCall, ToolRegistry};
use serde_json::json;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn no_planning() -> AgentConfig {
    AgentConfig { planning: false, ..AgentConfig::default() }
}

/// A model that plays `turns` in order (one response per request), logging each request.
fn scripted(turns: Vec<ModelResponse>, log: Arc<Mutex<Vec<ModelRequest>>>) -> FunctionModel {
    let turns = Mutex::new(turns.into_iter());
    FunctionModel::new(move |req| {
        log.lock().unwrap().push(req.clone());
        Ok(turns.lock().unwrap().next().unwrap_or_else(|| ModelResponse::text("done")))
    })
}

fn call(id: &str, name: &str, args: serde_json::Value) -> ModelResponse {
    ModelResponse::tool_calls(vec![ToolCall::new(id, name, args.to_string())])
}

fn tool_results(messages: &[Message]) -> Vec<(String, String, bool)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { name, content, is_error, .. } => Some((name.clone(), content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

fn agent_with_fixture_skills() -> Agent {
    Agent::builder()
        .model(TestModel::new())
        .skills(SkillSource::dir(fixtures().join("skills")))
        .config(no_planning())
        .build()
        .unwrap()
}

#[test]
fn a_claude_code_skills_folder_loads_front_matter_only() {
    let agent = agent_with_fixture_skills();
    let skills = agent.skills();
    let names: Vec<&str> = skills.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["commit-messages", "pdf-forms", "release-notes"]);
    // A folded description becomes one line; unknown keys (license, metadata) are ignored.
    assert_eq!(
        skills[1].description(),
        "Fill in PDF forms and extract their fields. Use when the user mentions a PDF form, fillable fields or AcroForm."
    );
    // `allowed-tools` as Claude Code writes it (comma-separated) and as a YAML list.
    assert_eq!(skills[1].allowed_tools(), Some(&["read_file".to_owned(), "bash".to_owned()][..]));
    assert_eq!(skills[2].allowed_tools(), Some(&["bash".to_owned(), "read_file".to_owned()][..]));
    assert_eq!(skills[0].allowed_tools(), None);
    assert!(agent.tools().contains(SKILL_TOOL_NAME));
}

#[test]
fn the_prompt_block_lists_each_skill_after_the_system_prompt() {
    let agent = Agent::builder()
        .model(TestModel::new())
        .system_prompt("You are a helpful agent.")
        .skills(SkillSource::dir(fixtures().join("skills")))
        .build()
        .unwrap();
    let prompt = agent.effective_system_prompt().unwrap();
    let expected_skills = "Skills: instructions for particular tasks. Before a task one of them fits, call Skill with its name and follow what it says.\n\
        - commit-messages: Write a git commit message from a staged diff, in the project's style.\n\
        - pdf-forms: Fill in PDF forms and extract their fields. Use when the user mentions a PDF form, fillable fields or AcroForm.\n\
        - release-notes: Draft release notes from the commits since the last tag.";
    assert_eq!(
        prompt,
        format!("You are a helpful agent.\n\n{expected_skills}\n\n{}", harnessx_agent::PLANNING_PROMPT_LINE)
    );
}

#[tokio::test]
async fn the_prompt_block_is_byte_identical_across_turns_and_runs() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let turns = vec![
        call("c1", "Skill", json!({"name": "commit-messages"})),
        call("c2", "write_todos", json!({"todos": [{"content": "write it", "status": "in_progress"}]})),
        ModelResponse::text("first"),
        call("c3", "Skill", json!({"name": "release-notes"})),
        ModelResponse::text("second"),
    ];
    let agent = Agent::builder()
        .model(scripted(turns, log.clone()))
        .system_prompt("Base.")
        .skills(SkillSource::dir(fixtures().join("skills")))
        .build()
        .unwrap();
    let first = agent.run("one").await.unwrap();
    agent.run_with_history(first.messages, "two").await.unwrap();
    let requests = log.lock().unwrap();
    assert_eq!(requests.len(), 5);
    let system = requests[0].system.clone().unwrap();
    assert!(system.contains("- pdf-forms: "));
    for request in requests.iter() {
        assert_eq!(request.system.as_deref(), Some(system.as_str()));
        // The tools (and so the Skill tool's description) stay the same too.
        assert_eq!(request.tools, requests[0].tools);
    }
}

#[tokio::test]
async fn skill_returns_the_body_and_lists_the_folders_other_files() {
    let agent = agent_with_fixture_skills();
    let result = agent
        .tools()
        .execute_batch(&[ToolCall::new("1", "Skill", r#"{"name":"pdf-forms"}"#)], &Default::default())
        .await;
    assert!(!result[0].is_error, "{}", result[0].content);
    let text = &result[0].content;
    assert!(text.starts_with("# Filling PDF forms\n\n1. List the form's fields"), "{text}");
    assert!(!text.contains("description:"), "the front matter is not part of the body: {text}");
    // An absolute folder: the files are listed relative to the skill's folder, and no
    // host path reaches the model.
    assert!(
        text.contains("Files of this skill, relative to its folder:\n- fill.py\n- reference/fields.md"),
        "{text}"
    );
    assert!(!text.contains(env!("CARGO_MANIFEST_DIR")), "{text}");
    assert!(text.ends_with("This skill expects to use only these tools: read_file, bash."), "{text}");
}

#[tokio::test]
async fn a_misnamed_skill_is_repaired_by_formatting_and_a_typo_gets_suggestions() {
    let agent = agent_with_fixture_skills();
    let calls = [
        ToolCall::new("1", "Skill", r#"{"name":"PDF_Forms"}"#),
        ToolCall::new("2", "Skill", r#"{"name":"pdf-form"}"#),
        ToolCall::new("3", "Skill", r#"{"name":"zzz"}"#),
    ];
    let results = agent.tools().execute_batch(&calls, &Default::default()).await;
    assert!(!results[0].is_error, "formatting-only differences are repaired: {}", results[0].content);
    assert!(results[0].content.starts_with("# Filling PDF forms"));
    assert!(results[1].is_error);
    assert_eq!(
        results[1].content,
        "Unknown skill \"pdf-form\". Did you mean: pdf-forms? Available skills: commit-messages, pdf-forms, release-notes. Call Skill again with one of these exact names."
    );
    assert!(results[2].is_error);
    assert_eq!(
        results[2].content,
        "Unknown skill \"zzz\". Available skills: commit-messages, pdf-forms, release-notes. Call Skill again with one of these exact names."
    );
}

#[test]
fn bad_front_matter_fails_the_build_naming_file_and_line() {
    let err = Agent::builder()
        .model(TestModel::new())
        .skills(SkillSource::dir(fixtures().join("bad-skills")))
        .build()
        .unwrap_err();
    let AgentError::Skill(SkillError::FrontMatter { path, line, .. }) = &err else {
        panic!("expected a front matter error, got {err:?}")
    };
    assert_eq!(path, &fixtures().join("bad-skills/broken/SKILL.md"));
    assert_eq!(*line, 3, "{err}");
    let text = err.to_string();
    assert!(text.starts_with(&format!("{}:3: invalid skill front matter: ", path.display())), "{text}");
    assert!(!text.contains('\n'), "one line: {text}");
}

#[test]
fn missing_fields_and_missing_front_matter_fail_the_build() {
    let dir = tempfile::tempdir().unwrap();
    let skill = dir.path().join("s");
    std::fs::create_dir(&skill).unwrap();
    let build = || Agent::builder().model(TestModel::new()).skills(SkillSource::dir(dir.path())).build();

    std::fs::write(skill.join("SKILL.md"), "---\nname: s\n---\nbody").unwrap();
    let err = build().unwrap_err().to_string();
    assert!(err.contains("SKILL.md:2: invalid skill front matter: ") && err.contains("description"), "{err}");

    std::fs::write(skill.join("SKILL.md"), "# just Markdown\n").unwrap();
    let err = build().unwrap_err().to_string();
    assert!(
        err.contains("SKILL.md:1: invalid skill front matter: the file must start with a `---` line"),
        "{err}"
    );

    std::fs::write(skill.join("SKILL.md"), "---\nname: s\ndescription: ''\n---\n").unwrap();
    let err = build().unwrap_err().to_string();
    assert!(err.contains("`description` is empty"), "{err}");
}

#[test]
fn a_folder_without_skills_and_duplicate_names_fail_the_build() {
    let dir = tempfile::tempdir().unwrap();
    let err = Agent::builder().skills(SkillSource::dir(dir.path())).build().unwrap_err();
    assert!(matches!(err, AgentError::Skill(SkillError::Empty { .. })), "{err:?}");

    let err = Agent::builder()
        .skills(SkillSource::dir(fixtures().join("skills")))
        .skills(Skill::new("pdf-forms", "Another.", "Body."))
        .build()
        .unwrap_err();
    let AgentError::Skill(SkillError::Duplicate { name, .. }) = &err else { panic!("{err:?}") };
    assert_eq!(name, "pdf-forms");
}

#[tokio::test]
async fn skills_from_several_folders_and_from_code() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("SKILL.md"),
        "---\nname: solo\ndescription: A folder that is one skill.\n---\nSolo body.\n",
    )
    .unwrap();
    let agent = Agent::builder()
        .model(TestModel::new())
        .skills(SkillSource::dirs([fixtures().join("skills"), dir.path().to_path_buf()]))
        .skills(Skill::new("inline", "Built in code.", "Inline body.").with_allowed_tools(["read_file"]))
        .build()
        .unwrap();
    let names: Vec<&str> = agent.skills().iter().map(|s| s.name()).collect();
    assert_eq!(names, ["commit-messages", "inline", "pdf-forms", "release-notes", "solo"]);
    let results = agent
        .tools()
        .execute_batch(
            &[
                ToolCall::new("1", "Skill", r#"{"name":"inline"}"#),
                ToolCall::new("2", "Skill", r#"{"name":"solo"}"#),
            ],
            &Default::default(),
        )
        .await;
    assert_eq!(results[0].content, "Inline body.\n\nThis skill expects to use only these tools: read_file.");
    assert_eq!(results[1].content, "Solo body.");
}

#[test]
fn no_skills_means_no_tool_and_no_prompt_block() {
    let agent = Agent::builder().model(TestModel::new()).config(no_planning()).build().unwrap();
    assert!(!agent.tools().contains(SKILL_TOOL_NAME));
    assert_eq!(agent.effective_system_prompt(), None);
}

#[test]
fn skills_is_not_a_bundle_name() {
    let registry = ToolRegistry::new();
    let err = registry.load_builtin("skills", json!({})).unwrap_err();
    let RegistryError::Unknown { name, known, .. } = &err else { panic!("{err:?}") };
    assert_eq!(name, "skills");
    for real in ["filesystem", "bash", "memory", "planning", "all"] {
        assert!(known.contains(real), "{known}");
    }
    assert!(!known.contains("skills") && !known.contains("Skill"), "{known}");
}

#[tokio::test]
async fn test_model_run_calls_skill_and_reads_the_error_it_gets() {
    // TestModel calls every tool with schema-made arguments (`{"name":"a"}`): the run
    // goes through and the model reads the unknown-skill error with the list.
    let agent = Agent::builder()
        .model(TestModel::new().call_tools([SKILL_TOOL_NAME]))
        .skills(SkillSource::dir(fixtures().join("skills")))
        .config(no_planning())
        .build()
        .unwrap();
    let result = agent.run("Fill my tax form.").await.unwrap();
    let results = tool_results(&result.messages);
    assert_eq!(results.len(), 1);
    assert!(results[0].2);
    assert!(results[0].1.contains("Available skills: commit-messages, pdf-forms, release-notes."));
    assert!(
        result.output.starts_with("Ran 1 tool call:\n- Skill (error): Unknown skill \"a\"."),
        "{}",
        result.output
    );
}

#[tokio::test]
async fn test_model_run_opens_an_in_code_skill() {
    let agent = Agent::builder()
        .model(TestModel::new().call_tools([SKILL_TOOL_NAME]))
        .skills(Skill::new("a", "The skill TestModel's arguments name.", "Step one: relax."))
        .config(no_planning())
        .build()
        .unwrap();
    let result = agent.run("go").await.unwrap();
    assert_eq!(result.output, "Ran 1 tool call:\n- Skill: Step one: relax.");
}

#[tokio::test]
async fn the_model_opens_a_skill_then_reads_its_reference_file_with_the_file_tools() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let turns = vec![
        call("c1", "Skill", json!({"name": "pdf-forms"})),
        call("c2", "read_file", json!({"path": "skills/pdf-forms/reference/fields.md"})),
        ModelResponse::text("Listed the fields."),
    ];
    let agent = Agent::builder()
        .model(scripted(turns, log.clone()))
        .builtin("filesystem", json!({"base_path": fixtures()}))
        .skills(SkillSource::dir(fixtures().join("skills")).shown_as("skills"))
        .config(no_planning())
        .build()
        .unwrap();
    let result = agent.run("Fill in form.pdf").await.unwrap();
    assert_eq!(result.output, "Listed the fields.");
    let results = tool_results(&result.messages);
    assert!(
        results[0].1.contains(
            "in skills/pdf-forms/:\n- skills/pdf-forms/fill.py\n- skills/pdf-forms/reference/fields.md"
        ),
        "{}",
        results[0].1
    );
    assert!(!results[1].2, "{}", results[1].1);
    assert!(results[1].1.contains("dump_data_fields"), "{}", results[1].1);
}

/// Spec: no untrusted input recurses without bound. A skill's front matter nested 1 to
/// 1,000,000 levels deep (flow and block lists and maps, unclosed): the skill loads up to
/// YAML's 64 levels and the build fails with one line naming the file past them.
#[test]
fn deeply_nested_skill_front_matter_fails_the_build_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let skill = dir.path().join("s");
    std::fs::create_dir(&skill).unwrap();
    for depth in harnessx_test_support::deep::DEPTHS {
        let shapes = [
            ("flow lists", format!("{}{}", "[".repeat(depth), "]".repeat(depth))),
            ("flow maps", format!("{}1{}", "{a: ".repeat(depth), "}".repeat(depth))),
            ("block lists", format!("\n  {}1", "- ".repeat(depth))),
            ("unclosed", "[".repeat(depth)),
        ];
        for (shape, yaml) in shapes {
            std::fs::write(
                skill.join("SKILL.md"),
                format!("---\nname: s\ndescription: d\nmetadata: {yaml}\n---\nbody"),
            )
            .unwrap();
            let started = std::time::Instant::now();
            let built = Agent::builder().model(TestModel::new()).skills(SkillSource::dir(dir.path())).build();
            assert!(started.elapsed() < std::time::Duration::from_secs(10), "{shape} {depth}");
            match built {
                // The top-level map is one of YAML's 64 levels.
                Ok(_) => assert!(shape != "unclosed" && depth < 64, "{shape} at depth {depth} loaded"),
                Err(err) => {
                    assert!(shape == "unclosed" || depth >= 64, "{shape} at depth {depth}: {err}");
                    let text = err.to_string();
                    assert!(
                        text.contains("SKILL.md:") && text.contains(": invalid skill front matter: "),
                        "{text}"
                    );
                    assert!(!text.contains('\n') && text.len() < 400, "{text}");
                }
            }
        }
    }
}
