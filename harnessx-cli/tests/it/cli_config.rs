//! Configuration files: `harnessx.toml` found from the working directory upward and the
//! user's `config.toml` under `XDG_CONFIG_HOME`; precedence (flags, project, user),
//! `config show` and where each value came from, errors that name the file and line,
//! hostile files, Claude desktop's `mcpServers` table, and the system prompt.

use std::process::Output;

use harnessx_test_support::bin::{Binary, json_lines, stderr, stdout};
use harnessx_test_support::server::{Reply, Server};
use harnessx_test_support::sse::openai as sse;
use serde_json::{Value, json};

/// A project folder (`project/`, with `harnessx.toml` written by the test) holding a
/// working folder `project/work/deeper`, and a user config folder `xdg/harnessx/`.
struct Place {
    root: tempfile::TempDir,
}

impl Place {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("project/work/deeper")).unwrap();
        std::fs::create_dir_all(root.path().join("xdg/harnessx")).unwrap();
        std::fs::write(root.path().join("project/work/deeper/notes.txt"), "alpha\n").unwrap();
        Self { root }
    }

    fn project(&self, text: &str) -> &Self {
        std::fs::write(self.root.path().join("project/harnessx.toml"), text).unwrap();
        self
    }

    fn user(&self, text: &str) -> &Self {
        std::fs::write(self.root.path().join("xdg/harnessx/config.toml"), text).unwrap();
        self
    }

    fn work(&self) -> std::path::PathBuf {
        self.root.path().join("project/work/deeper")
    }

    fn harnessx(&self, args: &[&str]) -> Output {
        Binary::new(env!("CARGO_BIN_EXE_harnessx"))
            .env("XDG_CONFIG_HOME", self.root.path().join("xdg").to_str().unwrap())
            .env("OPENAI_API_KEY", "test-key")
            .run(&self.work(), args)
    }

    fn show(&self, args: &[&str]) -> Value {
        let mut all = vec!["config", "show", "--json"];
        all.extend_from_slice(args);
        let out = self.harnessx(&all);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_str(stdout(&out).trim()).unwrap()
    }
}

fn setting<'a>(shown: &'a Value, key: &str) -> (&'a Value, &'a str) {
    let s = &shown["settings"][key];
    (&s["value"], s["from"].as_str().unwrap_or_else(|| panic!("{key}: {shown}")))
}

#[test]
fn flags_override_the_project_file_which_overrides_the_user_file() {
    let place = Place::new();
    place
        .project("# the project\nmax_turns = 7\ntools = [\"read_file\", \"grep\"]\n")
        .user("max_turns = 9\nmodel = \"openai:from-user\"\nbase_url = \"http://127.0.0.1:9/v1\"\n");
    let shown = place.show(&[]);
    let project = place.root.path().join("project/harnessx.toml");
    let user = place.root.path().join("xdg/harnessx/config.toml");
    assert_eq!(setting(&shown, "max_turns"), (&json!(7), format!("{}:2", project.display()).as_str()));
    assert_eq!(
        setting(&shown, "tools"),
        (&json!(["read_file", "grep"]), format!("{}:3", project.display()).as_str())
    );
    assert_eq!(
        setting(&shown, "model"),
        (&json!("openai:from-user"), format!("{}:2", user.display()).as_str())
    );
    assert_eq!(setting(&shown, "tool_choice"), (&json!("auto"), "default"));
    let files: Vec<&str> =
        shown["files"].as_array().unwrap().iter().map(|f| f["scope"].as_str().unwrap()).collect();
    assert_eq!(files, ["project", "user"]);

    let shown = place.show(&["--max-turns", "3", "--model", "test"]);
    assert_eq!(setting(&shown, "max_turns"), (&json!(3), "command line"));
    assert_eq!(setting(&shown, "model"), (&json!("test"), "command line"));

    // The text form names the source of every line.
    let out = place.harnessx(&["config", "show"]);
    let text = stdout(&out);
    assert!(text.contains(&format!("# {}:2", project.display())), "{text}");
    assert!(text.lines().any(|l| l.starts_with("max_turns") && l.contains("= 7")), "{text}");
}

#[test]
fn run_uses_the_configured_tools_and_limits() {
    let place = Place::new();
    place.project("tools = [\"list_directory\"]\nmax_turns = 1\n");
    // One turn is not enough for the test model's calls and answer: the limit applies.
    let out = place.harnessx(&["run", "What is in this folder?", "--json"]);
    assert_eq!(out.status.code(), Some(4), "the turn limit: {}", stderr(&out));
    let events = json_lines(&out);
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "tool_call_start")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["list_directory"]);
    // The flag wins over the file.
    let out = place.harnessx(&["run", "What is in this folder?", "--json", "--max-turns", "5"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn an_unknown_key_is_an_error_naming_the_file_and_line() {
    let place = Place::new();
    place.project("model = \"test\"\n\nmax_trns = 3\n");
    let out = place.harnessx(&["run", "hi", "--tools", "list_directory"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    let project = place.root.path().join("project/harnessx.toml");
    assert!(err.contains(&format!("{}:3: ", project.display())), "{err}");
    assert!(err.contains("max_trns"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");

    let place = Place::new();
    place.user("[permissions]\nallow = [\"read_file\"]\nallways = []\n");
    let out = place.harnessx(&["config", "show"]);
    assert_eq!(out.status.code(), Some(2));
    let user = place.root.path().join("xdg/harnessx/config.toml");
    assert!(stderr(&out).contains(&format!("{}:3: ", user.display())), "{}", stderr(&out));
}

#[test]
fn hostile_files_are_errors_not_crashes() {
    let place = Place::new();
    let project = place.root.path().join("project/harnessx.toml");
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"model = \"unterminated\n".to_vec(), ":1: "),
        (b"\xff\xfe model = 1".to_vec(), "not UTF-8"),
        (format!("x = {}\n", "[".repeat(200_000)).into_bytes(), "harnessx.toml"),
        (vec![b'#'; 2 << 20], "larger than"),
        (b"max_turns = 99999999999999999999\n".to_vec(), ":1: "),
    ];
    for (bytes, words) in cases {
        std::fs::write(&project, &bytes).unwrap();
        let out = place.harnessx(&["run", "hi", "--tools", "list_directory"]);
        assert_eq!(out.status.code(), Some(2), "{words}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(words) && err.contains(&project.display().to_string()), "{words}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // A folder where the file should be cannot be read: said, with its path.
    std::fs::remove_file(&project).unwrap();
    std::fs::create_dir(&project).unwrap();
    let out = place.harnessx(&["run", "hi", "--tools", "list_directory"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot be read"), "{}", stderr(&out));
    // Commands that build no agent read no file.
    let out = place.harnessx(&["tools", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// The `list_directory` calls of a `run --json` and what each returned.
fn listings(out: &Output) -> Vec<Value> {
    json_lines(out)
        .into_iter()
        .filter(|e| e["type"] == "tool_call_end" && e["name"] == "list_directory")
        .map(|e| e["content"].clone())
        .collect()
}

#[test]
fn permission_rules_in_a_file_are_the_approvals_rules() {
    let place = Place::new();
    place.project("[permissions]\ndeny = [\"list_directory\"]\n");
    let out = place.harnessx(&["run", "What is in this folder?", "--tools", "list_directory", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(listings(&out), [json!("Permission denied")]);

    // A rule on arguments: it applies to the calls it matches, not to the others.
    place.project("[permissions]\ndeny = [\"list_directory(path=elsewhere/**)\"]\n");
    let out = place.harnessx(&["run", "What is in this folder?", "--tools", "list_directory", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed = listings(&out);
    assert_eq!(listed.len(), 1);
    assert!(listed[0].as_str().unwrap().contains("notes.txt"), "{listed:?}");
    place.project("[permissions]\ndeny = [\"list_directory(path=**)\"]\n");
    let out = place.harnessx(&["run", "What is in this folder?", "--tools", "list_directory", "--json"]);
    assert_eq!(listings(&out), [json!("Permission denied")], "{}", stderr(&out));

    // The user's file describes every project: a rule on a tool this run did not load is
    // left out, as in the user's permissions.toml.
    place.project("");
    place.user("[permissions]\nask = [\"run_bash(rm *)\"]\n");
    let out = place.harnessx(&["run", "What is in this folder?", "--tools", "list_directory", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // A malformed rule: an error naming the file and line, before anything runs.
    place.project("[permissions]\nallow = [\n  \"read_file\",\n  \"run_bash(git *\",\n]\n");
    let out = place.harnessx(&["run", "hi", "--tools", "list_directory"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("harnessx.toml:4: permission rule \"run_bash(git *\""), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn claude_desktop_mcp_servers_table_is_accepted() {
    let place = Place::new();
    let me = env!("CARGO_BIN_EXE_harnessx");
    place.project(&format!(
        "[mcpServers.files]\ncommand = {me:?}\nargs = [\"mcp\", \"serve\", \"--tools\", \"list_directory\"]\nenv = {{ HARNESSX_TEST = \"1\" }}\n"
    ));
    let shown = place.show(&[]);
    let servers = setting(&shown, "mcp_servers").0;
    assert_eq!(servers["files"]["command"], me, "{shown}");
    assert!(servers["files"]["from"].as_str().unwrap().ends_with("harnessx.toml:1"), "{shown}");
    assert!(setting(&shown, "mcp_servers").1.ends_with("harnessx.toml"), "{shown}");
    // The server's tools are the agent's: the test model lists the folder through MCP.
    let out = place.harnessx(&["run", "What is in this folder?", "--tools", "", "--yes", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ends: Vec<Value> = json_lines(&out).into_iter().filter(|e| e["type"] == "tool_call_end").collect();
    assert_eq!(ends[0]["name"], "list_directory", "{ends:?}");
    assert!(ends[0]["content"].as_str().unwrap().contains("notes.txt"), "{ends:?}");
    // A server entry that is neither a command nor a URL names its line.
    place.project("\n[mcpServers.broken]\nargs = [\"x\"]\n");
    let out = place.harnessx(&["run", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("harnessx.toml:2: MCP server \"broken\""), "{}", stderr(&out));
}

/// The request of a loopback OpenAI-compatible server that answers "Done." at once.
fn system_prompt_sent(place: &Place, args: &[&str]) -> (Output, Option<String>) {
    let server = Server::start(vec![Reply::event_stream(sse(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Done."}, "finish_reason": "stop"}]}),
    ]))]);
    let base = format!("{}/v1", server.url);
    let mut all = vec!["run", "hi", "--model", "openai:gpt-4o", "--base-url", &base, "--tools", "read_file"];
    all.extend_from_slice(args);
    let out = place.harnessx(&all);
    let system = server.bodies().first().and_then(|body| {
        let messages = body["messages"].as_array()?;
        messages.iter().find(|m| m["role"] == "system").and_then(|m| m["content"].as_str()).map(str::to_owned)
    });
    (out, system)
}

#[test]
fn system_prompt_from_a_flag_a_file_or_the_configuration() {
    let place = Place::new();
    let (out, system) = system_prompt_sent(&place, &["--system", "Answer in French."]);
    assert!(out.status.success(), "{}", stderr(&out));
    // (The agent adds its planning line after the prompt.)
    let first = |s: Option<String>| s.map(|s| s.split("\n\nPlan any task").next().unwrap().to_owned());
    assert_eq!(first(system).as_deref(), Some("Answer in French."));

    std::fs::write(place.work().join("prompt.md"), "You are terse.\nVery terse.").unwrap();
    let (_, system) = system_prompt_sent(&place, &["--system-file", "prompt.md"]);
    assert_eq!(first(system).as_deref(), Some("You are terse.\nVery terse."));

    // A configured system_file is relative to the configuration file's folder.
    std::fs::write(place.root.path().join("project/team-prompt.md"), "Team rules.").unwrap();
    place.project("system_file = \"team-prompt.md\"\n");
    let (_, system) = system_prompt_sent(&place, &[]);
    assert_eq!(first(system).as_deref(), Some("Team rules."));
    let (_, system) = system_prompt_sent(&place, &["--system", "Flag wins."]);
    assert_eq!(first(system).as_deref(), Some("Flag wins."));

    let out = place.harnessx(&["run", "hi", "--system-file", "missing.md"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--system-file") && stderr(&out).contains("missing.md"),
        "{}",
        stderr(&out)
    );
    let out = place.harnessx(&["run", "hi", "--system", "a", "--system-file", "prompt.md"]);
    assert_eq!(out.status.code(), Some(2), "the two flags conflict");
}

#[test]
fn a_durable_run_keeps_its_system_prompt_across_resume() {
    let place = Place::new();
    let dir = place.work();
    let run = |extra: &[&str]| {
        let mut args =
            vec!["run", "Write it.", "--tools", "write_file", "--durable", "runs.db", "--run-id", "s"];
        args.extend_from_slice(extra);
        place.harnessx(&args)
    };
    let out = run(&["--system", "Be careful."]);
    // No terminal, no --yes: the write waits for an approval.
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    // The printed resume command repeats the prompt.
    assert!(stderr(&out).contains("--system 'Be careful.'"), "{}", stderr(&out));
    let approve = place.harnessx(&["approve", "s", "test_0_0", "--durable", "runs.db"]);
    assert_eq!(approve.status.code(), Some(0), "{}", stderr(&approve));
    // Another system prompt is another agent: refused.
    let other = place.harnessx(&[
        "resume",
        "s",
        "--durable",
        "runs.db",
        "--tools",
        "write_file",
        "--system",
        "Be quick.",
    ]);
    assert_eq!(other.status.code(), Some(1), "{}", stderr(&other));
    assert!(stderr(&other).contains("system prompt"), "{}", stderr(&other));
    let same = place.harnessx(&[
        "resume",
        "s",
        "--durable",
        "runs.db",
        "--tools",
        "write_file",
        "--system",
        "Be careful.",
    ]);
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
    assert!(dir.join("a").exists());
}

/// A flag typed at its default value beat the project's file on `run`, but the printed
/// `resume` command left it out, so the resumed run took the file's value instead.
#[test]
fn the_resume_command_keeps_a_flag_typed_at_its_default_over_a_file() {
    let place = Place::new();
    place.project("max_turns = 1\n");
    let out = place.harnessx(&[
        "run",
        "Write it.",
        "--tools",
        "write_file",
        "--durable",
        "runs.db",
        "--run-id",
        "d",
        "--max-turns",
        "50",
    ]);
    // No terminal, no --yes: the write waits for an approval.
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("harnessx resume d --durable runs.db --tools write_file --max-turns 50\n"), "{err}");
}
