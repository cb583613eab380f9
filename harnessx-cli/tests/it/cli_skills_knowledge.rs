//! `harnessx run --skills DIR --knowledge DIR` against a loopback OpenAI-compatible
//! server: the skills are listed in the system prompt, the model calls `Skill` and then
//! reads the skill's reference file with a file tool, and walks the knowledge with
//! `search_concepts`, `read_concept` and `get_neighbors`; bad skills and a missing
//! folder are one-line usage errors.

use std::path::{Path, PathBuf};
use std::process::Output;

use harnessx_test_support::bin::{Binary, json_lines, stderr, stdout};
use harnessx_test_support::server::{Reply, Server};
use harnessx_test_support::sse::openai as sse;
use serde_json::{Value, json};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../harnessx-agent/tests/fixtures").canonicalize().unwrap()
}

fn run(dir: &Path, args: &[&str]) -> Output {
    Binary::new(env!("CARGO_BIN_EXE_harnessx")).env("OPENAI_API_KEY", "test-key").run(dir, args)
}

/// One streamed turn calling `name` with `args`.
fn call(id: &str, name: &str, args: Value) -> Reply {
    Reply::event_stream(sse(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ]))
}

fn answer(text: &str) -> Reply {
    Reply::event_stream(sse(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}),
    ]))
}

#[test]
fn the_model_loads_a_skill_reads_its_reference_and_walks_the_knowledge() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = fixtures();
    let server = Server::start(vec![
        call("call_1", "Skill", json!({"name": "pdf-forms"})),
        call("call_2", "read_file", json!({"path": "skills/pdf-forms/reference/fields.md"})),
        call(
            "call_3",
            "search_concepts",
            json!({"query": "the collapsed core a supernova leaves behind", "limit": 3}),
        ),
        call("call_4", "read_concept", json!({"id": "black holes"})),
        call("call_5", "get_neighbors", json!({"id": "black-hole", "direction": "in"})),
        answer("Done."),
    ]);
    let base = format!("{}/v1", server.url);
    let index = dir.path().join("knowledge.db");
    let out = run(
        dir.path(),
        &[
            "run",
            "Fill the form, then tell me about black holes.",
            "--model",
            "openai:qwen3",
            "--base-url",
            &base,
            "--base-path",
            fixtures.to_str().unwrap(),
            "--tools",
            "read_file",
            "--skills",
            fixtures.join("skills").to_str().unwrap(),
            "--knowledge",
            fixtures.join("knowledge").to_str().unwrap(),
            "--knowledge-index",
            index.to_str().unwrap(),
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let events = json_lines(&out);
    assert_eq!(events.last().unwrap()["output"], "Done.", "{}", stdout(&out));
    assert!(index.is_file(), "the index is kept in the file");

    let bodies = server.bodies();
    assert_eq!(bodies.len(), 6);
    let system = bodies[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("\n- pdf-forms: Fill in PDF forms"), "{system}");
    let tools: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    for name in ["read_file", "Skill", "search_concepts", "read_concept", "get_neighbors"] {
        assert!(tools.contains(&name), "{name} in {tools:?}");
    }
    // The prompt block is the same on every request (cache-friendly).
    assert!(bodies.iter().all(|b| b["messages"][0]["content"] == bodies[0]["messages"][0]["content"]));

    let results = harnessx_test_support::openai_tool_messages(&bodies[5]);
    let ids: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["call_1", "call_2", "call_3", "call_4", "call_5"]);
    assert!(results[0].1.contains("- skills/pdf-forms/reference/fields.md"), "{}", results[0].1);
    assert!(results[1].1.contains("dump_data_fields"), "{}", results[1].1);
    assert!(results[2].1.starts_with("1. supernova — Supernova: "), "{}", results[2].1);
    assert!(
        results[2].1.contains("\n2. neutron-star — Neutron star: The collapsed core"),
        "{}",
        results[2].1
    );
    assert!(
        results[3].1.starts_with("# Black hole\nid: black-hole\n"),
        "an alias reads the concept: {}",
        results[3].1
    );
    assert!(
        results[4].1.starts_with("Links into black-hole (6):\n")
            && results[4].1.contains("- general-relativity — "),
        "{}",
        results[4].1
    );
}

#[test]
fn bad_skills_and_missing_folders_are_one_line_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bad = fixtures().join("bad-skills");
    let out = run(dir.path(), &["run", "hi", "--skills", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    let line = err.lines().find(|l| l.contains("SKILL.md")).unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains("broken/SKILL.md:3"), "{err}");

    let out = run(dir.path(), &["run", "hi", "--knowledge", "no-such-folder"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no-such-folder"), "{}", stderr(&out));

    let out = run(dir.path(), &["run", "hi", "--knowledge-index", "k.db"]);
    assert_eq!(out.status.code(), Some(2), "--knowledge-index needs --knowledge");
}

#[test]
fn the_test_model_calls_the_skill_and_knowledge_tools() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = fixtures();
    let out = run(
        dir.path(),
        &[
            "run",
            "Use what you know.",
            "--tools",
            "",
            "--skills",
            fixtures.join("skills").to_str().unwrap(),
            "--knowledge",
            fixtures.join("knowledge").to_str().unwrap(),
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let called: Vec<String> = json_lines(&out)
        .iter()
        .filter(|e| e["type"] == "tool_call_end")
        .map(|e| format!("{}:{}", e["name"].as_str().unwrap(), e["is_error"]))
        .collect();
    for name in ["Skill", "search_concepts", "read_concept", "get_neighbors"] {
        assert!(called.iter().any(|c| c.starts_with(&format!("{name}:"))), "{name} in {called:?}");
    }
}
