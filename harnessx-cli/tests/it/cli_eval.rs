//! `harnessx eval FILE` through the binary: a case file run live against a loopback
//! model, then recorded, then replayed with the model gone, each giving the same table and
//! the same `--json` lines (but the times); a changed prompt under `--replay` fails naming
//! the mismatch; a judge graded live and from the cassettes; a malformed file exit 2
//! naming its line; the `--report` page in headless Chromium.

use std::path::Path;
use std::process::{Command, Output};

use harnessx_test_support::bin::{Binary, stderr, stdout};
use harnessx_test_support::server::{Reply, Server};
use serde_json::{Value, json};

fn harnessx(dir: &Path, args: &[&str]) -> Output {
    Binary::new(env!("CARGO_BIN_EXE_harnessx")).run(dir, args)
}

const CASES: &str = r#"
[defaults]
tools = ["read_file", "list_directory"]
expect.max_tool_calls = 3

[[case]]
name = "finds the secret"
prompt = "What is the secret word in note.txt?"
files = { "note.txt" = "The secret word is tangerine.", "deep/other.txt" = "x" }
expect.output_contains = ["tangerine"]
expect.tools_called = ["read_file"]
expect.tools_not_called = ["list_directory"]
expect.max_cost_usd = 0.01

[[case]]
name = "<img src=x onerror=alert(1)> <b>answers at once</b>"
prompt = "Say hello."
expect.output_contains = ["goodbye"]

[[case]]
name = "graded"
prompt = "What is the secret word in note.txt?"
files = { "note.txt" = "The secret word is tangerine." }
expect.judge = "The answer names the fruit."
expect.judge_threshold = 0.8
"#;

/// An OpenAI-compatible model: reads `note.txt` when the prompt names it, then says what
/// it read; answers the judge's request (offered `final_result`) with a grade.
fn model() -> Server {
    Server::respond(|request| {
        let body = &request.body;
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let usage = json!({"prompt_tokens": 100 * messages.len(), "completion_tokens": 20});
        let judged = body["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "final_result"));
        let message = if judged {
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "g1", "type": "function",
                "function": {"name": "final_result", "arguments": "{\"score\": 0.9, \"reason\": \"It names tangerine.\"}"}}]})
        } else if let Some(tool) = messages.iter().rev().find(|m| m["role"] == "tool") {
            json!({"role": "assistant", "content": format!("It says: {}", tool["content"].as_str().unwrap_or(""))})
        } else if messages.iter().any(|m| m["content"].as_str().is_some_and(|c| c.contains("note.txt"))) {
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{}", messages.len()), "type": "function",
                "function": {"name": "read_file", "arguments": "{\"path\": \"note.txt\"}"}}]})
        } else {
            json!({"role": "assistant", "content": "Hello!"})
        };
        let reply =
            json!({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}], "usage": usage});
        Reply::json(200, reply.to_string())
    })
}

/// The table without its TIME column (the one thing that differs between two runs).
fn table(out: &Output) -> Vec<String> {
    stdout(out)
        .lines()
        .map(|line| {
            let time = time_cell(line);
            line.replacen(&time, "", 1)
        })
        .collect()
}

/// The `N.Ns` cell of a table line, if any.
fn time_cell(line: &str) -> String {
    line.split_whitespace()
        .find(|w| w.ends_with('s') && w[..w.len() - 1].parse::<f64>().is_ok())
        .unwrap_or("")
        .to_owned()
}

/// The `--json` lines without their `seconds`.
fn lines(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|line| {
            let mut value: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            value.as_object_mut().unwrap().remove("seconds");
            value
        })
        .collect()
}

#[test]
fn a_case_file_live_then_recorded_then_replayed_offline_gives_the_same_table() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("evals.toml"), CASES).unwrap();
    let server = model();
    let base = format!("{}/v1", server.url);
    let flags =
        ["eval", "evals.toml", "--model", "openai:m", "--base-url", &base, "--price", "1,2", "--jobs", "2"];

    let live = harnessx(dir.path(), &flags);
    assert_eq!(live.status.code(), Some(1), "{}\n{}", stdout(&live), stderr(&live));
    let shown = table(&live);
    assert_eq!(shown.len(), 5, "{shown:?}");
    assert!(shown[0].starts_with("CASE") && shown[0].contains("FAILED"), "{shown:?}");
    let secret: Vec<&str> = shown[1].split_whitespace().collect();
    assert_eq!(&secret[..7], ["finds", "the", "secret", "pass", "2", "640", "$0.0007"], "{shown:?}");
    assert!(
        shown[2].contains("FAIL") && shown[2].ends_with("output_contains: \"goodbye\" is not in the answer"),
        "{shown:?}"
    );
    assert!(shown[3].starts_with("graded") && shown[3].contains("pass"), "{shown:?}");
    assert_eq!(shown[4], "2 passed, 1 failed");

    let json_flags: Vec<&str> = flags.iter().copied().chain(["--json"]).collect();
    let live_json = lines(&harnessx(dir.path(), &json_flags));
    assert_eq!(live_json.len(), 4);
    assert_eq!(live_json[0]["case"], "finds the secret");
    assert_eq!(live_json[0]["passed"], true);
    assert_eq!(live_json[0]["failed"], Value::Null);
    assert_eq!(live_json[0]["turns"], 2);
    assert_eq!(live_json[0]["usage"]["tool_calls"], 1);
    assert_eq!(live_json[1]["passed"], false);
    assert_eq!(live_json[1]["failed"], "output_contains: \"goodbye\" is not in the answer");
    assert_eq!(live_json[2]["judge"], json!({"score": 0.9, "reason": "It names tangerine."}));
    assert_eq!(live_json[3], json!({"summary": {"passed": 2, "failed": 1}}));

    // Recorded: the same table; every exchange a cassette, the judge's too.
    let recording: Vec<&str> = flags.iter().copied().chain(["--record", "tapes"]).collect();
    let recorded = harnessx(dir.path(), &recording);
    assert_eq!(table(&recorded), shown, "{}", stderr(&recorded));
    let tapes = std::fs::read_dir(dir.path().join("tapes")).unwrap().count();
    assert_eq!(tapes, 2 + 1 + 2 + 1, "two turns, one, two and the judge's");
    let requests = server.requests().len();
    drop(server);

    // Replayed with the model gone: the same table, the same lines.
    let gone = harnessx_test_support::server::dead_url();
    let offline = [
        "eval",
        "evals.toml",
        "--model",
        "openai:m",
        "--base-url",
        &gone,
        "--price",
        "1,2",
        "--replay",
        "tapes",
    ];
    let replayed = harnessx(dir.path(), &offline);
    assert_eq!(replayed.status.code(), Some(1));
    assert_eq!(table(&replayed), shown, "{}", stderr(&replayed));
    let offline_json: Vec<&str> = offline.iter().copied().chain(["--json", "--jobs", "1"]).collect();
    assert_eq!(lines(&harnessx(dir.path(), &offline_json)), live_json);
    assert!(requests >= 3 * tapes, "the live runs asked the model ({requests} requests)");

    // A changed prompt under --replay: that case fails naming the mismatch, no live call.
    let changed =
        CASES.replacen("What is the secret word in note.txt?", "What is the secret in note.txt?", 1);
    std::fs::write(dir.path().join("evals.toml"), changed).unwrap();
    let out = harnessx(dir.path(), &offline_json);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let first = &lines(&out)[0];
    assert_eq!(first["passed"], false, "{first}");
    let failed = first["failed"].as_str().unwrap();
    assert!(
        failed.starts_with("the run failed: no cassette matches this request; the nearest, tapes/"),
        "{failed}"
    );
    assert!(
        failed.contains(
            "recorded \"What is the secret word in note.txt?\", now \"What is the secret in note.txt?\""
        ),
        "{failed}"
    );
}

#[test]
fn a_malformed_case_file_is_exit_2_naming_its_line_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let gone = harnessx_test_support::server::dead_url();
    let bad = [
        (
            "[[case]]\nname = \"a\"\nprompt = \"p\"\nexpect.max_tool_calls = \"five\"\n",
            "evals.toml:4: ",
            "max_tool_calls",
        ),
        (
            "[[case]]\nname = \"a\"\nprompt = \"p\"\n\n[[case]]\nname = \"b\"\nprmopt = \"q\"\n",
            "evals.toml:",
            "prmopt",
        ),
        (
            "[[case]]\nname = \"a\"\nprompt = \"p\"\ntools = [\"no_such_tool\"]\n",
            "evals.toml:1: case \"a\": ",
            "no_such_tool",
        ),
        (
            "[[case]]\nname = \"a\"\nprompt = \"p\"\nexpect.output_schema = \"missing.json\"\n",
            "evals.toml:1: case \"a\": expect.output_schema",
            "missing.json",
        ),
        (
            "[[case]]\nname = \"a\"\nprompt = \"p\"\nfiles = { \"../../etc/passwd\" = \"x\" }\n",
            "evals.toml:1: ",
            "not a path inside",
        ),
        ("not toml at all [", "evals.toml:1: ", ""),
    ];
    for (text, starts, names) in bad {
        std::fs::write(dir.path().join("evals.toml"), text).unwrap();
        let out = harnessx(
            dir.path(),
            &["eval", "evals.toml", "--model", "openai:m", "--base-url", &gone, "--report", "r.html"],
        );
        assert_eq!(out.status.code(), Some(2), "{text}: {}", stderr(&out));
        assert!(!dir.path().join("r.html").exists(), "no report of a file that did not run");
        let said = stderr(&out);
        let line = said.lines().last().unwrap();
        assert!(line.starts_with(&format!("harnessx: {starts}")) && line.contains(names), "{text}: {said}");
        assert!(stdout(&out).is_empty(), "nothing ran: {}", stdout(&out));
    }
    // A report that cannot be written is said before any case runs.
    std::fs::write(dir.path().join("evals.toml"), CASES).unwrap();
    let out = harnessx(
        dir.path(),
        &[
            "eval",
            "evals.toml",
            "--base-url",
            &gone,
            "--model",
            "openai:m",
            "--report",
            "no/such/folder/r.html",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--report no/such/folder/r.html"), "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "nothing ran: {}", stdout(&out));
    let out = harnessx(dir.path(), &["eval", "nowhere.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("nowhere.toml"), "{}", stderr(&out));
}

/// The `--report` page in headless Chromium (Debian's package, installed when missing):
/// its table shows every case, both charts draw a bar per case, and a case named with
/// markup shows that markup as text.
#[test]
fn the_report_page_renders_its_chart_in_a_real_browser() {
    use harnessx_test_support::system::ensure_debian_package;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("evals.toml"), CASES).unwrap();
    let server = model();
    let base = format!("{}/v1", server.url);
    let out = harnessx(
        dir.path(),
        &[
            "eval",
            "evals.toml",
            "--model",
            "openai:m",
            "--base-url",
            &base,
            "--price",
            "1,2",
            "--report",
            "report.html",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;"), "the case's name escaped");
    let Some(chromium) = ensure_debian_package("chromium", "chromium") else { return };
    let Some(node) = ensure_debian_package("nodejs", "node") else { return };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/browser/drive_page.mjs");
    let shot = dir.path().join("report.png");
    let out = Command::new(node)
        .args(["--experimental-websocket", script])
        .arg(&chromium)
        .arg(format!("file://{}", dir.path().join("report.html").display()))
        .arg(&shot)
        .arg(dir.path().join("chromium-profile"))
        .arg("report")
        .output()
        .unwrap();
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    });
    assert!(out.status.success(), "{seen}");
    assert_eq!(seen["summary"], "2 passed, 1 failed", "{seen}");
    let rows = seen["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{seen}");
    assert_eq!(rows[1][0], "<img src=x onerror=alert(1)> <b>answers at once</b>", "{seen}");
    assert_eq!(seen["injected"], 0, "markup from a case became an element: {seen}");
    assert_eq!(seen["chart"]["visible"], true, "{seen}");
    for chart in ["tokenBars", "costBars"] {
        let bars = seen[chart].as_array().unwrap();
        assert_eq!(bars.len(), 3, "{chart}: {seen}");
        assert!(
            bars.iter().all(|b| b["width"].as_u64().unwrap() >= 1 && b["height"].as_u64().unwrap() > 5),
            "{seen}"
        );
    }
    // The case with the most tokens spans the chart; the others are shorter.
    let widths: Vec<u64> =
        seen["tokenBars"].as_array().unwrap().iter().map(|b| b["width"].as_u64().unwrap()).collect();
    assert!(widths[0] > widths[1], "{widths:?}");
    assert_eq!(seen["errors"], json!([]), "{seen}");
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 5_000, "the screenshot is {} bytes", png.len());
    let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join("eval-report.png");
    std::fs::write(&kept, png).unwrap();
}

/// `examples/evals.toml` passes on the built-in test model, as its first line says.
#[test]
fn the_example_eval_file_passes_on_the_test_model() {
    let dir = tempfile::tempdir().unwrap();
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/evals.toml");
    let out = harnessx(dir.path(), &["eval", file, "--json", "--repeat", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stdout(&out), stderr(&out));
    let shown = lines(&out);
    assert_eq!(shown.len(), 4);
    assert!(
        shown[..3].iter().all(|l| l["passed"] == true && l["runs"] == 2 && l["pass_rate"] == 1.0),
        "{shown:?}"
    );
    assert_eq!(shown[3], json!({"summary": {"passed": 3, "failed": 0}}));
    // Each case ran in a folder of its own: nothing was written here.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    assert_eq!(stderr(&out).matches("built-in test model").count(), 1, "the notice once: {}", stderr(&out));
    // --case runs the cases it names, in the file's order; an unknown one is exit 2.
    let out = harnessx(
        dir.path(),
        &["eval", file, "--json", "--case", "no file tool needed", "--case", "finds the secret"],
    );
    let names: Vec<Value> = lines(&out).iter().map(|l| l["case"].clone()).collect();
    assert_eq!(
        names,
        [json!("finds the secret"), json!("no file tool needed"), Value::Null],
        "{}",
        stderr(&out)
    );
    let out = harnessx(dir.path(), &["eval", file, "--case", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--case \"nope\": the file has no case of that name"), "{}", stderr(&out));
    let out = harnessx(dir.path(), &["eval", file, "--base-path", "."]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--base-path has no place in eval"), "{}", stderr(&out));
}

/// Ctrl-C (SIGINT) mid-eval stops the runs, removes their folders and says how many cases
/// finished (exit 1); what finished is still summed up.
#[test]
fn a_signal_stops_the_eval_and_leaves_no_folder_behind() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("evals.toml"), CASES).unwrap();
    // A model that takes the connection and never answers.
    let hang = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", hang.local_addr().unwrap());
    let child = Command::new(env!("CARGO_BIN_EXE_harnessx"))
        .args(["eval", "evals.toml", "--model", "openai:m", "--base-url", &url, "--json"])
        .current_dir(dir.path())
        .env("TMPDIR", tmp.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let folders = || {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("harnessx-eval-"))
            .count()
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while folders() < 3 && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(folders(), 3, "every case started, in a folder of its own");
    let killed = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("harnessx: eval stopped by a signal: 0 of 3 cases finished"),
        "{}",
        stderr(&out)
    );
    assert_eq!(lines(&out), [json!({"summary": {"passed": 0, "failed": 0}})]);
    assert_eq!(folders(), 0, "the cases' folders are removed");
    drop(hang);
}
