//! Run budgets through the `harnessx` binary against a loopback OpenAI-compatible server
//! that scripts usage figures and counts requests: each limit stops at exactly the right
//! place (a `run_bash` call appends a line to `calls.log`, outside the process, so the
//! file shows the calls that ran), no request is sent after a stop, exit status 4, the
//! `run_end` event, the usage on stderr, and a durable run's pause and resume.

use std::path::Path;
use std::process::Output;

use harnessx_test_support::bin::{Binary, json_lines, stderr, stdout};
use harnessx_test_support::server::{Reply, Server};
use harnessx_test_support::sse::openai as sse;
use serde_json::{Value, json};

fn harnessx(dir: &Path, args: &[&str]) -> Output {
    Binary::new(env!("CARGO_BIN_EXE_harnessx")).env("OPENAI_API_KEY", "test-key").run(dir, args)
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited, not killed")
}

/// The lines `run_bash` calls appended: one per call that ran.
fn calls_ran(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("calls.log")).map(|s| s.lines().count()).unwrap_or(0)
}

/// A usage object as OpenAI reports it.
fn usage(prompt: u64, completion: u64, cached: u64) -> Value {
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached}, "completion_tokens_details": {"reasoning_tokens": 0}})
}

/// A response calling `run_bash` `n` times (ids `call_{first}`...), each appending its id
/// to `calls.log`.
fn bash_turn(first: usize, n: usize, usage: Value, stream: bool) -> Reply {
    let calls: Vec<Value> = (first..first + n)
        .map(|i| {
            let arguments = json!({"command": format!("echo call_{i} >> calls.log")}).to_string();
            json!({"id": format!("call_{i}"), "type": "function", "function": {"name": "run_bash", "arguments": arguments}})
        })
        .collect();
    if stream {
        let deltas: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(index, call)| {
                let mut call = call.clone();
                call["index"] = json!(index);
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
            })
            .chain([
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
                json!({"choices": [], "usage": usage}),
            ])
            .collect();
        Reply::event_stream(sse(&deltas))
    } else {
        let body = json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": null, "tool_calls": calls}}], "usage": usage});
        Reply::json(200, body.to_string())
    }
}

/// A final answer.
fn answer(text: &str, usage: Value, stream: bool) -> Reply {
    if stream {
        Reply::event_stream(sse(&[
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}),
            json!({"choices": [], "usage": usage}),
        ]))
    } else {
        let body = json!({"id": "y", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": text}}], "usage": usage});
        Reply::json(200, body.to_string())
    }
}

/// `run PROMPT` on the loopback model with run_bash approved, plus `extra` flags.
fn run(dir: &Path, server: &Server, extra: &[&str]) -> Output {
    let base = format!("{}/v1", server.url);
    let mut args = vec!["run", "Log the calls.", "--model", "openai:gpt-4o", "--base-url", &base];
    args.extend_from_slice(&["--tools", "run_bash", "--yes"]);
    args.extend_from_slice(extra);
    harnessx(dir, &args)
}

fn run_end(out: &Output) -> Value {
    let events = json_lines(out);
    let last = events.last().cloned().unwrap_or_else(|| panic!("no events: {}", stderr(out)));
    assert_eq!(last["type"], "run_end", "{events:?}");
    last
}

#[test]
fn a_batch_that_would_pass_the_tool_call_limit_runs_up_to_it_and_sends_no_further_request() {
    for stream in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let server = Server::start(vec![
            bash_turn(1, 3, usage(1000, 40, 600), stream),
            answer("never asked", usage(1, 1, 0), stream),
        ]);
        let mut flags = vec!["--max-tool-calls", "2", "--price", "2.5,10,1.25", "--json"];
        if !stream {
            flags.push("--no-stream");
        }
        let out = run(dir.path(), &server, &flags);
        assert_eq!(code(&out), 4, "{}", stderr(&out));
        assert_eq!(calls_ran(dir.path()), 2, "exactly the calls up to the limit ran");
        assert_eq!(server.requests().len(), 1, "no model request after the stop");
        let end = run_end(&out);
        assert_eq!((&end["status"], &end["limit"]), (&json!("limit_reached"), &json!("tool_calls")), "{end}");
        let used = &end["usage"];
        assert_eq!(
            (&used["input_tokens"], &used["output_tokens"], &used["cached_input_tokens"]),
            (&json!(1000), &json!(40), &json!(600)),
            "{end}"
        );
        assert_eq!((&used["requests"], &used["tool_calls"]), (&json!(1), &json!(2)), "{end}");
        // 400 uncached at $2.50, 600 cached at $1.25, 40 out at $10 (per million).
        let cost = used["cost_usd"].as_f64().unwrap();
        assert!((cost - 0.00215).abs() < 1e-12, "{cost}");
        assert_eq!((&end["turns"], &end["output"]), (&json!(1), &json!("")), "{end}");
        // The cut call got the limit's error result, in its own `tool_call_end` (it had
        // none: a `--json` reader never saw it); the others ran.
        let ends: Vec<Value> =
            json_lines(&out).into_iter().filter(|e| e["type"] == "tool_call_end").collect();
        assert_eq!(ends.len(), 3, "{ends:?}");
        let cut: Vec<&Value> = ends.iter().filter(|e| e["is_error"] == true).collect();
        assert_eq!(cut.len(), 1, "{ends:?}");
        assert_eq!(cut[0]["content"], "tool-call limit of 2 reached: this call was not run");
        let err = stderr(&out);
        assert!(err.contains("the tool-call limit of 2 (--max-tool-calls)"), "{err}");
        assert!(
            err.contains(
                "usage: 1000 input tokens (600 cached), 40 output tokens, 1 request, 2 tool calls, $0.002150"
            ),
            "{err}"
        );
    }
}

#[test]
fn the_cut_calls_get_the_limits_error_result_in_the_conversation() {
    // A text run: the answer is not printed, the limit and usage are, and the cut call's
    // result names the limit. (Seen through a durable journal, which keeps the request.)
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![bash_turn(1, 2, usage(10, 5, 0), true)]);
    let out = run(dir.path(), &server, &["--max-tool-calls", "1"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(stdout(&out), "", "no answer");
    assert_eq!(calls_ran(dir.path()), 1);
    let err = stderr(&out);
    assert!(err.contains("harnessx: the run stopped at the tool-call limit of 1 (--max-tool-calls); usage: 10 input tokens (0 cached), 5 output tokens, 1 request, 1 tool call, $0.000075"), "{err}");
}

#[test]
fn a_completed_run_ends_with_status_completed_and_its_usage_summed_over_turns() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![
        bash_turn(1, 1, usage(1000, 40, 0), false),
        answer("Logged.", usage(1200, 10, 1000), false),
    ]);
    let out =
        run(dir.path(), &server, &["--max-tool-calls", "5", "--price", "1,2,0.5", "--json", "--no-stream"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let end = run_end(&out);
    assert_eq!(end["status"], "completed", "{end}");
    assert_eq!(end.get("limit"), None, "{end}");
    assert_eq!((&end["output"], &end["turns"]), (&json!("Logged."), &json!(2)), "{end}");
    let used = &end["usage"];
    assert_eq!((&used["input_tokens"], &used["cached_input_tokens"]), (&json!(2200), &json!(1000)), "{end}");
    assert_eq!(
        (&used["output_tokens"], &used["requests"], &used["tool_calls"]),
        (&json!(50), &json!(2), &json!(1))
    );
    // (1000 + 200) at $1, 1000 cached at $0.50, 50 out at $2.
    assert!((used["cost_usd"].as_f64().unwrap() - 0.0018).abs() < 1e-12, "{end}");
    assert!(
        stderr(&out).contains(
            "usage: 2200 input tokens (1000 cached), 50 output tokens, 2 requests, 1 tool call, $0.001800"
        ),
        "{}",
        stderr(&out)
    );
    // Text mode: the answer on stdout, the usage on stderr.
    let server = Server::start(vec![answer("Hi.", usage(7, 3, 0), true)]);
    let out = run(dir.path(), &server, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Hi.\n");
    // gpt-4o has a built-in price: 7 in at $2.50, 3 out at $10.
    assert!(
        stderr(&out).contains(
            "harnessx: usage: 7 input tokens (0 cached), 3 output tokens, 1 request, 0 tool calls, $0.000048"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn tokens_reached_by_a_response_keep_its_calls_from_running() {
    let dir = tempfile::tempdir().unwrap();
    let server =
        Server::start(vec![bash_turn(1, 2, usage(900, 100, 0), true), answer("no", usage(1, 1, 0), true)]);
    let out = run(dir.path(), &server, &["--max-tokens", "1000", "--json"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(calls_ran(dir.path()), 0, "the calls of the response that reached the limit did not run");
    assert_eq!(server.requests().len(), 1);
    let end = run_end(&out);
    assert_eq!((&end["limit"], &end["usage"]["tool_calls"]), (&json!("tokens"), &json!(0)), "{end}");
}

#[test]
fn a_request_whose_input_alone_passes_the_tokens_left_is_not_sent() {
    let dir = tempfile::tempdir().unwrap();
    let server =
        Server::start(vec![bash_turn(1, 1, usage(1000, 50, 0), true), answer("no", usage(1, 1, 0), true)]);
    // 1050 used, 450 left, and the next request's input is at least 1000.
    let out = run(dir.path(), &server, &["--max-tokens", "1500", "--json"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(calls_ran(dir.path()), 1, "the first response's call ran");
    assert_eq!(server.requests().len(), 1, "the second request was not sent");
    let end = run_end(&out);
    assert_eq!((&end["limit"], &end["usage"]["input_tokens"]), (&json!("tokens"), &json!(1000)), "{end}");
}

#[test]
fn the_cost_limit_stops_after_the_response_that_reaches_it() {
    let dir = tempfile::tempdir().unwrap();
    let server =
        Server::start(vec![bash_turn(1, 1, usage(1000, 50, 0), true), answer("no", usage(1, 1, 0), true)]);
    // $0.001 in + $0.0001 out: past $0.001.
    let out = run(dir.path(), &server, &["--max-cost-usd", "0.001", "--price", "1,2", "--json"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!((calls_ran(dir.path()), server.requests().len()), (0, 1));
    let end = run_end(&out);
    assert_eq!(end["limit"], "cost", "{end}");
    assert!((end["usage"]["cost_usd"].as_f64().unwrap() - 0.0011).abs() < 1e-12, "{end}");
    assert!(stderr(&out).contains("the cost limit of $0.001 (--max-cost-usd)"), "{}", stderr(&out));
}

#[test]
fn a_cost_limit_without_a_known_price_is_a_usage_error_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![answer("no", usage(1, 1, 0), true)]);
    let base = format!("{}/v1", server.url);
    let out = harnessx(
        dir.path(),
        &["run", "Hi.", "--model", "openai:my-local-model", "--base-url", &base, "--max-cost-usd", "1"],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--max-cost-usd needs the price of the model \"my-local-model\""),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("--price IN,OUT[,CACHED_IN]"), "{}", stderr(&out));
    assert_eq!(server.requests().len(), 0);
    // The test model has no price either; with one given, the run goes.
    let out = harnessx(dir.path(), &["run", "Hi.", "--tools", "read_file", "--max-cost-usd", "1"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let out = harnessx(
        dir.path(),
        &["run", "Hi.", "--tools", "read_file", "--max-cost-usd", "1", "--price", "0,0"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // Bad values are usage errors too.
    for bad in [&["--max-cost-usd", "-1"][..], &["--price", "1"], &["--max-tool-calls", "x"]] {
        let mut args = vec!["run", "Hi."];
        args.extend_from_slice(bad);
        assert_eq!(code(&harnessx(dir.path(), &args)), 2, "{bad:?}");
    }
}

#[test]
fn max_turns_is_a_limit_with_exit_status_4() {
    let dir = tempfile::tempdir().unwrap();
    let server =
        Server::start(vec![bash_turn(1, 1, usage(10, 1, 0), true), answer("no", usage(1, 1, 0), true)]);
    let out = run(dir.path(), &server, &["--max-turns", "1", "--json"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!((calls_ran(dir.path()), server.requests().len()), (1, 1), "the last turn's calls ran");
    assert_eq!(run_end(&out)["limit"], "turns");
}

#[test]
fn a_durable_run_pauses_at_the_tool_call_limit_and_resumes_under_a_higher_one_without_repeating() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = Server::start(vec![
        bash_turn(1, 3, usage(100, 10, 0), false),
        bash_turn(4, 2, usage(150, 10, 0), false),
        answer("All logged.", usage(200, 5, 0), false),
    ]);
    let out = run(d, &server, &["--max-tool-calls", "2", "--durable", "runs.db", "--run-id", "b", "--json"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let stopped: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(
        (&stopped["status"], &stopped["limit"]),
        (&json!("limit_reached"), &json!("tool_calls")),
        "{stopped}"
    );
    assert_eq!(stopped["usage"]["tool_calls"], 2, "{stopped}");
    assert_eq!((calls_ran(d), server.requests().len()), (2, 1));
    let shown = harnessx(d, &["runs", "show", "b", "--durable", "runs.db"]);
    assert!(stdout(&shown).contains("status: limit_reached"), "{}", stdout(&shown));
    assert!(stdout(&shown).contains("limit_reached  the tool-call limit;"), "{}", stdout(&shown));
    let listed = harnessx(d, &["runs", "list", "--durable", "runs.db"]);
    assert!(stdout(&listed).starts_with("b  limit_reached"), "{}", stdout(&listed));

    // Text mode names the flag to raise and the command that resumes.
    let text = run(d, &server, &["--max-tool-calls", "2", "--durable", "runs.db", "--run-id", "b"]);
    assert_eq!(code(&text), 1, "the id is taken: {}", stderr(&text));

    // Raised to 4: the third call of turn 1 runs (the first two are not run again), turn
    // 2 asks for two more, one runs, and the run stops again.
    let base = format!("{}/v1", server.url);
    let resume = |max: &str| {
        harnessx(
            d,
            &[
                "resume",
                "b",
                "--durable",
                "runs.db",
                "--model",
                "openai:gpt-4o",
                "--base-url",
                &base,
                "--tools",
                "run_bash",
                "--yes",
                "--max-tool-calls",
                max,
                "--json",
            ],
        )
    };
    let out = resume("4");
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!((calls_ran(d), server.requests().len()), (4, 2));
    let log = std::fs::read_to_string(d.join("calls.log")).unwrap();
    assert_eq!(log, "call_1\ncall_2\ncall_3\ncall_4\n", "nothing journaled ran again");
    let out = resume("10");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let done: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!((&done["status"], &done["output"]), (&json!("completed"), &json!("All logged.")), "{done}");
    assert_eq!((calls_ran(d), server.requests().len()), (5, 3));
    // The usage is rebuilt from the journal: three responses, five calls, each once.
    let shown = harnessx(d, &["runs", "show", "b", "--durable", "runs.db", "--json"]);
    let report: Value = serde_json::from_str(stdout(&shown).trim()).unwrap();
    let used = &report["report"]["usage"];
    assert_eq!(
        (&used["input_tokens"], &used["requests"], &used["tool_calls"]),
        (&json!(450), &json!(3), &json!(5))
    );
}

#[test]
fn a_durable_text_run_at_a_limit_prints_the_flag_to_raise_and_the_resume_command() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![bash_turn(1, 2, usage(10, 1, 0), false)]);
    let out = run(dir.path(), &server, &["--max-tool-calls", "1", "--durable", "runs.db", "--run-id", "t"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "harnessx: run t stopped at its tool-call limit (--max-tool-calls); usage: 10 input tokens"
        ),
        "{err}"
    );
    assert!(err.contains("harnessx: resume it with a higher --max-tool-calls: harnessx resume t --durable runs.db --model openai:gpt-4o --base-url "), "{err}");
    assert!(err.contains(" --tools run_bash --yes --max-tool-calls 1\n"), "{err}");
}

#[test]
fn a_durable_run_keeps_the_limits_and_price_given_to_run_when_resumed_without_them() {
    // Regression: a SQLite run took its limits and price from the agent of each command,
    // so `runs show` priced nothing and a resume without the flags ran unlimited.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = Server::start(vec![
        bash_turn(1, 3, usage(1000, 100, 0), false),
        answer("All logged.", usage(10, 1, 0), false),
    ]);
    let base = format!("{}/v1", server.url);
    // A model with no built-in price: the cost is the run's --price or nothing.
    let agent: Vec<&str> =
        vec!["--model", "openai:local-model", "--base-url", &base, "--tools", "run_bash", "--yes"];
    let mut args = vec!["run", "Log the calls.", "--durable", "runs.db", "--run-id", "p", "--json"];
    args.extend_from_slice(&agent);
    args.extend_from_slice(&["--max-tool-calls", "2", "--price", "1,2"]);
    let out = harnessx(d, &args);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!((calls_ran(d), server.requests().len()), (2, 1));
    // $0.001 in, $0.0002 out.
    let cost = |report: &Value| report["usage"]["cost_usd"].as_f64();
    let stopped: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(cost(&stopped), Some(0.0012), "{stopped}");
    let shown = harnessx(d, &["runs", "show", "p", "--durable", "runs.db", "--json"]);
    let shown: Value = serde_json::from_str(stdout(&shown).trim()).unwrap();
    assert_eq!(cost(&shown["report"]), Some(0.0012), "runs show prices at the run's price: {shown}");

    // Resumed with the agent flags alone: the run's limit holds, nothing more runs.
    let mut args = vec!["resume", "p", "--durable", "runs.db", "--json"];
    args.extend_from_slice(&agent);
    let out = harnessx(d, &args);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!((calls_ran(d), server.requests().len()), (2, 1), "the limit of 2 still holds");
    let again: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!((&again["limit"], cost(&again)), (&json!("tool_calls"), Some(0.0012)), "{again}");

    // A flag on resume raises it, and the price is still the run's.
    args.extend_from_slice(&["--max-tool-calls", "5"]);
    let out = harnessx(d, &args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!((calls_ran(d), server.requests().len()), (3, 2));
    let done: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    let shown = harnessx(d, &["runs", "show", "p", "--durable", "runs.db", "--json"]);
    let shown: Value = serde_json::from_str(stdout(&shown).trim()).unwrap();
    // Plus 10 in and 1 out at the same price.
    assert!((cost(&shown["report"]).unwrap() - 0.001212).abs() < 1e-12, "{shown}");
}
