//! `--attach FILE` on `run` and `chat`: images, PDFs and text reach the model as parts
//! (`--json` shows them as summaries, never base64); a file of an unknown type, over
//! `--max-attach-bytes`, missing or a folder is a one-line usage error before any
//! request; a durable run killed with -9 and resumed sends the same bytes, and its
//! journal keeps a repeated image once.

use std::path::Path;
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use harnessx_test_support::bin::{Binary, json_lines, stderr, stdout};
use harnessx_test_support::server::{Reply, Server};
use serde_json::{Value, json};

/// A 64×40 PNG (a bar chart).
const PNG: &[u8] = include_bytes!("../../../examples/assets/bars.png");
/// A PDF's signature and a page.
const PDF: &[u8] = b"%PDF-1.7\n1 0 obj <</Type /Page>>\n%%EOF\n";

fn harnessx(dir: &Path, args: &[&str]) -> Output {
    Binary::new(env!("CARGO_BIN_EXE_harnessx"))
        .env("XDG_CONFIG_HOME", dir.join("no-config").to_str().unwrap())
        .env("OPENAI_API_KEY", "test-key")
        .run(dir, args)
}

fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("chart.png"), PNG).unwrap();
    std::fs::write(dir.path().join("report.pdf"), PDF).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the secret word is tangerine\n").unwrap();
    dir
}

#[test]
fn attachments_go_with_the_prompt_and_json_events_show_them_without_base64() {
    let dir = folder();
    let out = harnessx(
        dir.path(),
        &[
            "run",
            "What are these?",
            "--attach",
            "chart.png",
            "--attach",
            "report.pdf",
            "--attach",
            "notes.txt",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = json_lines(&out);
    let first = events.iter().find(|e| e["type"] == "model_request").expect("a model_request");
    assert_eq!(
        first["parts"],
        json!([
            {"type": "image", "media_type": "image/png", "bytes": PNG.len()},
            {"type": "file", "media_type": "application/pdf", "name": "report.pdf", "bytes": PDF.len()},
            {"type": "text", "text": "[file: notes.txt]\nthe secret word is tangerine\n"},
        ])
    );
    // Only the first request carries the prompt's parts; no event carries base64.
    assert!(events.iter().filter(|e| e["type"] == "model_request").skip(1).all(|e| e.get("parts").is_none()));
    let base64_start = "iVBORw0KGgo";
    assert!(!stdout(&out).contains(base64_start), "base64 in the events");
}

#[test]
fn a_file_that_cannot_be_attached_is_a_usage_error_before_any_request() {
    let dir = folder();
    std::fs::write(dir.path().join("data.bin"), [0u8, 159, 146, 150, 0, 1, 2]).unwrap();
    std::fs::create_dir(dir.path().join("folder")).unwrap();
    let mut big = PNG.to_vec();
    big.resize(2_000, 0);
    std::fs::write(dir.path().join("big.png"), &big).unwrap();
    // A server that fails the test's expectations if anything asks it.
    let server = Server::start(Vec::new());
    let base = format!("{}/v1", server.url);
    let cases: [(&[&str], &str); 5] = [
        (
            &["--attach", "data.bin"],
            "harnessx: cannot attach data.bin: not a type that can be attached (an image: PNG, JPEG, GIF, WebP; a PDF; audio: WAV, MP3; or UTF-8 text), by its content",
        ),
        (
            &["--attach", "big.png", "--max-attach-bytes", "1kB"],
            "harnessx: cannot attach big.png: 2 kB is over the limit of 1 kB (--max-attach-bytes)",
        ),
        (&["--attach", "missing.png"], "harnessx: cannot attach missing.png: no such file"),
        (&["--attach", "folder"], "harnessx: cannot attach folder: it is a folder"),
        (
            &["--attach", "chart.png", "--attach", "data.bin", "--json"],
            "harnessx: cannot attach data.bin: not a type",
        ),
    ];
    for (flags, said) in cases {
        let mut args = vec!["run", "Look.", "--model", "openai:m", "--base-url", &base];
        args.extend_from_slice(flags);
        let out = harnessx(dir.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.lines().any(|l| l.starts_with(said)), "{flags:?}: {err}");
        assert!(stdout(&out).is_empty(), "{flags:?}");
    }
    assert!(server.requests().is_empty(), "a request was made");
    // A limit that is not a byte count is clap's usage error.
    let out = harnessx(dir.path(), &["run", "Look.", "--attach", "chart.png", "--max-attach-bytes", "lots"]);
    assert_eq!(out.status.code(), Some(2));
}

/// The image data URLs of an OpenAI-format body, in order.
fn images(body: &Value) -> Vec<String> {
    let mut found = Vec::new();
    for message in body["messages"].as_array().into_iter().flatten() {
        for part in message["content"].as_array().into_iter().flatten() {
            if part["type"] == "image_url" {
                found.push(part["image_url"]["url"].as_str().unwrap_or_default().to_owned());
            }
        }
    }
    found
}

fn completion(message: Value) -> Reply {
    let body = json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}});
    Reply::json(200, body.to_string())
}

#[test]
fn a_durable_run_with_images_killed_and_resumed_sends_the_same_bytes_and_keeps_each_once() {
    use std::process::{Command, Stdio};

    let dir = folder();
    let asked = Arc::new(AtomicUsize::new(0));
    let count = asked.clone();
    // 1: read the picture again with read_file; 2: hang (the process is killed there);
    // 3 (the resume): answer.
    let server = Server::respond_later(move |_| {
        let n = count.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            match n {
                0 => completion(json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"chart.png\"}"}}]})),
                1 => {
                    tokio::time::sleep(Duration::from_secs(600)).await;
                    completion(json!({"role": "assistant", "content": "too late"}))
                }
                _ => completion(json!({"role": "assistant", "content": "Five bars."})),
            }
        })
    });
    let base = format!("{}/v1", server.url);
    let agent =
        ["--model", "openai:m", "--base-url", &base, "--tools", "read_file", "--yes", "--durable", "runs.db"];
    let mut run = vec!["run", "How many bars?", "--attach", "chart.png", "--run-id", "r"];
    run.extend_from_slice(&agent);
    let mut child = Command::new(env!("CARGO_BIN_EXE_harnessx"))
        .args(&run)
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("no-config"))
        .env("OPENAI_API_KEY", "test-key")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.requests().len() < 2 {
        assert!(Instant::now() < deadline, "the second request never came");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    let mut resume = vec!["resume", "r"];
    resume.extend_from_slice(&agent);
    let out = harnessx(dir.path(), &resume);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    let url = format!("data:image/png;base64,{}", harnessx_test_support::http::base64(PNG));
    // The prompt's image on every request; the read image, journaled, again on the resume.
    assert_eq!(images(&bodies[0]), std::slice::from_ref(&url));
    assert_eq!(images(&bodies[1]), [url.clone(), url.clone()]);
    assert_eq!(images(&bodies[2]), images(&bodies[1]), "the resume sent other bytes");
    assert_eq!(server.requests()[2].raw, server.requests()[1].raw, "the resumed request differs");

    // The prompt's image and the result's are one blob in the journal.
    let db = rusqlite::Connection::open(dir.path().join("runs.db")).unwrap();
    let blobs: i64 = db.query_row("SELECT count(*) FROM blobs", [], |r| r.get(0)).unwrap();
    assert_eq!(blobs, 1);
    let inline: i64 = db
        .query_row("SELECT count(*) FROM entries WHERE data LIKE '%iVBORw0KGgo%'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(inline, 0, "base64 in the journal's entries");
    // `runs show` names the attachment; its JSON has sizes, not base64.
    let shown = harnessx(dir.path(), &["runs", "show", "r", "--durable", "runs.db"]);
    assert!(
        stdout(&shown).contains(&format!("attached: [image: image/png, {} bytes]", PNG.len())),
        "{}",
        stdout(&shown)
    );
    let shown = harnessx(dir.path(), &["runs", "show", "r", "--durable", "runs.db", "--json"]);
    assert!(!stdout(&shown).contains("iVBORw0KGgo"));
    assert!(stdout(&shown).contains(&format!(r#""bytes":{}"#, PNG.len())), "{}", stdout(&shown));
}

#[test]
fn chat_attaches_a_file_typed_as_a_line_to_the_next_message() {
    let dir = folder();
    let input = b"/attach missing.png\n/attach chart.png\nWhat is this?\nAnd now?\n";
    let out = Binary::new(env!("CARGO_BIN_EXE_harnessx"))
        .env("XDG_CONFIG_HOME", dir.path().join("no-config").to_str().unwrap())
        .run_with_input(
            dir.path(),
            &["chat", "--durable", "chat.db", "--json", "--tools", "read_file", "--attach", "report.pdf"],
            input,
        );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    // A file that cannot be attached is said, and the conversation goes on.
    assert!(err.contains("harnessx: cannot attach missing.png: no such file"), "{err}");
    assert!(
        err.contains(&format!(
            "harnessx: attached [image: image/png, {} bytes] to the next message",
            PNG.len()
        )),
        "{err}"
    );
    let firsts: Vec<Value> = json_lines(&out)
        .into_iter()
        .filter(|e| e["type"] == "model_request" && e["turn"] == 1)
        .map(|e| e.get("parts").cloned().unwrap_or(Value::Null))
        .collect();
    // --attach goes with the first message, /attach with the next; the one after has none.
    assert_eq!(
        firsts,
        [
            json!([
                {"type": "file", "media_type": "application/pdf", "name": "report.pdf", "bytes": PDF.len()},
                {"type": "image", "media_type": "image/png", "bytes": PNG.len()}
            ]),
            Value::Null
        ]
    );
}

#[test]
fn hostile_files_are_refused_in_one_line_with_bounded_memory() {
    use std::io::Write;

    let dir = folder();
    // A 4 GB sparse file that starts like a PNG: refused by its size, never read.
    let huge = std::fs::File::create(dir.path().join("huge.png")).unwrap();
    (&huge).write_all(&PNG[..16]).unwrap();
    huge.set_len(4 << 30).unwrap();
    // A PNG signature on garbage, and a PNG claiming 100000×100000 pixels.
    let mut garbage = PNG[..8].to_vec();
    garbage.extend_from_slice(b"this is not a header at all");
    std::fs::write(dir.path().join("garbage.png"), garbage).unwrap();
    let mut bomb = PNG[..16].to_vec();
    bomb.extend(100_000u32.to_be_bytes());
    bomb.extend(100_000u32.to_be_bytes());
    bomb.extend([8, 2, 0, 0, 0, 0, 0, 0, 0]);
    std::fs::write(dir.path().join("bomb.png"), bomb).unwrap();
    // A zip (deflated zeros) renamed .png.
    let mut zip = b"PK\x03\x04\x14\0\0\0\x08\0".to_vec();
    zip.extend(std::iter::repeat_n(0x63u8, 64));
    std::fs::write(dir.path().join("zip.png"), zip).unwrap();
    let cases = [
        (
            "huge.png",
            "harnessx: cannot attach huge.png: 4.2 GB is over the limit of 20 MB (--max-attach-bytes)",
        ),
        (
            "garbage.png",
            "harnessx: cannot attach garbage.png: it starts like image/png but its header is not a valid image header",
        ),
        (
            "bomb.png",
            "harnessx: cannot attach bomb.png: it is image/png of 100000x100000 pixels, outside the limits (1 to 50000 pixels a side, 100000000 in all)",
        ),
        ("zip.png", "harnessx: cannot attach zip.png: not a type that can be attached"),
    ];
    for (file, said) in cases {
        let (out, measured) = Binary::new(env!("CARGO_BIN_EXE_harnessx"))
            .env("XDG_CONFIG_HOME", dir.path().join("no-config").to_str().unwrap())
            .run_measured(dir.path(), &["run", "Look.", "--attach", file], b"");
        assert_eq!(out.status.code(), Some(2), "{file}: {}", stderr(&out));
        assert!(stderr(&out).lines().any(|l| l.starts_with(said)), "{file}: {}", stderr(&out));
        assert!(measured.peak_rss_kib < 256 * 1024, "{file}: {} KiB", measured.peak_rss_kib);
    }
    // An SVG with a script is text: it goes to the model as text, never as an image.
    std::fs::write(
        dir.path().join("x.svg"),
        "<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>",
    )
    .unwrap();
    let out = harnessx(dir.path(), &["run", "Look.", "--attach", "x.svg", "--json", "--tools", "read_file"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = json_lines(&out).into_iter().find(|e| e["type"] == "model_request").unwrap();
    assert_eq!(first["parts"][0]["type"], "text");
    assert!(first["parts"][0]["text"].as_str().unwrap().starts_with("[file: x.svg]\n<svg"));
}

#[test]
fn a_file_that_changes_while_it_is_read_is_refused_or_read_whole() {
    let dir = folder();
    let path = dir.path().join("growing.txt");
    std::fs::write(&path, "start\n").unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (path, stop) = (path.clone(), stop.clone());
        std::thread::spawn(move || {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
            while !stop.load(Ordering::SeqCst) {
                let _ = file.write_all(&[b'x'; 4096]);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    for _ in 0..5 {
        let out = harnessx(
            dir.path(),
            &[
                "run",
                "Look.",
                "--attach",
                "growing.txt",
                "--json",
                "--tools",
                "read_file",
                "--max-attach-bytes",
                "50MB",
            ],
        );
        match out.status.code() {
            Some(0) => {
                let first = json_lines(&out).into_iter().find(|e| e["type"] == "model_request").unwrap();
                assert!(
                    first["parts"][0]["text"].as_str().unwrap().starts_with("[file: growing.txt]\nstart\n")
                );
            }
            Some(2) => {
                let err = stderr(&out);
                assert!(
                    err.contains("cannot attach growing.txt: it changed while it was read; try again")
                        || err.contains("cannot attach growing.txt: it grew over the limit"),
                    "{err}"
                );
            }
            other => panic!("exit {other:?}: {}", stderr(&out)),
        }
    }
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
}

#[test]
fn tools_call_shows_a_read_images_part_as_a_summary() {
    let dir = folder();
    let out = harnessx(dir.path(), &["tools", "call", "read_file", r#"{"path": "chart.png"}"#, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(shown["parts"], json!([{"type": "image", "media_type": "image/png", "bytes": PNG.len()}]));
    assert!(!stdout(&out).contains("iVBORw0KGgo"));
}
