//! Permission rules through the `harnessx` command: `--allow`, `--ask`, `--deny RULE`,
//! `--permissions FILE` and the project's rules file, on `tools call` (how people try a
//! rule) and `run` alike. Every attempt to slip a command past an allow rule is checked
//! by a marker file the forbidden part would create, not by the output.

use std::path::Path;
use std::process::Output;

use harnessx_test_support::bin::{Binary, json_lines, stderr, stdout};
use serde_json::{Value, json};

fn harnessx(dir: &Path, args: &[&str]) -> Output {
    // No user rules file from the machine running the tests.
    let config = dir.join("no-config");
    Binary::new(env!("CARGO_BIN_EXE_harnessx"))
        .env("XDG_CONFIG_HOME", config.to_str().unwrap())
        .run(dir, args)
}

/// `tools call run_bash` with ASK as the default (so only an allow rule lets it run: no
/// terminal here to ask on) and the rules given.
fn bash(dir: &Path, command: &str, rules: &[&str]) -> (Value, Output) {
    let args = json!({ "command": command }).to_string();
    let base = dir.to_str().unwrap();
    let mut argv = vec!["tools", "call", "run_bash", &args, "--json", "--default-permission", "ask"];
    argv.extend_from_slice(&["--sandbox", "local", "--base-path", base]);
    argv.extend_from_slice(rules);
    let out = harnessx(dir, &argv);
    let v = serde_json::from_str(stdout(&out).trim())
        .unwrap_or_else(|e| panic!("{e}: {} {}", stdout(&out), stderr(&out)));
    (v, out)
}

#[test]
fn an_allow_rule_lets_its_commands_run_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let allow = ["--allow", "run_bash(echo*)", "--allow", "run_bash(true)"];
    let (v, out) = bash(dir.path(), "echo hi && true", &allow);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert!(v["content"].as_str().unwrap().contains("hi"), "{v}");
    let (v, out) = bash(dir.path(), "touch other", &allow);
    assert_eq!((out.status.code(), v["content"].as_str()), (Some(1), Some("Permission denied")));
    assert!(!dir.path().join("other").exists());
}

// Issue 41: `--allow 'run_bash(echo hx-ok*)'` did not let `echo hx-ok-1` run.
#[test]
fn rules_spelled_as_claude_code_spells_them_decide_as_there() {
    let dir = tempfile::tempdir().unwrap();
    let denied = |v: &Value, out: &Output| {
        assert_eq!((out.status.code(), v["content"].as_str()), (Some(1), Some("Permission denied")), "{v}");
    };
    for allow in ["run_bash(echo hx-ok*)", "run_bash(echo *)", "run_bash(echo:*)", "run_bash(* hx-ok-1)"] {
        let (v, out) = bash(dir.path(), "echo hx-ok-1", &["--allow", allow]);
        assert_eq!(out.status.code(), Some(0), "{allow}: {v}");
        assert!(v["content"].as_str().unwrap().contains("hx-ok-1"), "{allow}: {v}");
        // Every command of the script must match, still.
        let (v, out) = bash(dir.path(), "echo hx-ok-1 && touch pwned", &["--allow", allow]);
        denied(&v, &out);
        assert!(!dir.path().join("pwned").exists(), "{allow}");
    }
    // A space before the star stops at the word: `echox` is not `echo *`.
    let (v, out) = bash(dir.path(), "echox", &["--allow", "run_bash(echo *)"]);
    denied(&v, &out);
    // A deny rule finds its command anywhere in the script.
    for deny in ["run_bash(touch *)", "run_bash(touch:*)", "run_bash(tou*)", "run_bash(* pwned)"] {
        let (v, out) = bash(dir.path(), "echo a && touch pwned", &["--allow", "run_bash", "--deny", deny]);
        denied(&v, &out);
        assert!(!dir.path().join("pwned").exists(), "{deny}");
    }
    let (v, out) =
        bash(dir.path(), "echo hx-ok-1", &["--allow", "run_bash", "--deny", "run_bash(echo hx-ok*)"]);
    denied(&v, &out);
}

#[test]
fn no_shell_construct_slips_a_command_past_an_allow_rule() {
    let dir = tempfile::tempdir().unwrap();
    let allow = ["--allow", "run_bash(echo*)"];
    let attempts = [
        "echo a; touch pwned",
        "echo a && touch pwned",
        "false || touch pwned",
        "echo a | touch pwned",
        "echo a & touch pwned",
        "echo a\ntouch pwned",
        "(touch pwned)",
        "{ touch pwned; }",
        "echo $(touch pwned)",
        "echo `touch pwned`",
        "echo \"$(touch pwned)\"",
        "echo <(touch pwned)",
        "echo >(touch pwned)",
        "echo ${x:-$(touch pwned)}",
        "eval touch pwned",
        "echo hi | bash -c 'touch pwned'",
        "echo x; sh -c 'touch pwned'",
        "bash -c 'touch pwned'",
        "echo x > ../pwned",
        "echo x > /tmp/../$(touch pwned)",
        "echo() { touch pwned; }; echo",
        "if true; then touch pwned; fi",
        "for i in 1; do touch pwned; done",
        "echo x; t\\ouch pwned",
        "echo 'x'; 'touch' pwned",
        "FOO=1 touch pwned",
        "cat <<EOF\n$(touch pwned)\nEOF",
    ];
    for attempt in attempts {
        let (v, out) = bash(dir.path(), attempt, &allow);
        assert!(!dir.path().join("pwned").exists(), "{attempt:?} ran: {v}");
        assert_eq!(out.status.code(), Some(1), "{attempt:?}: {v}");
        assert_eq!(v["content"], "Permission denied", "{attempt:?}");
    }
    // The write outside the workspace did not happen either.
    assert!(!dir.path().parent().unwrap().join("pwned").exists());
    // A redirection inside the workspace is fine.
    let (v, _) = bash(dir.path(), "echo ok > inside.txt", &allow);
    assert_eq!(v["is_error"], false, "{v}");
    assert_eq!(std::fs::read_to_string(dir.path().join("inside.txt")).unwrap(), "ok\n");
}

#[test]
fn a_deny_rule_matches_any_part_and_beats_allow() {
    let dir = tempfile::tempdir().unwrap();
    let rules = ["--allow", "run_bash", "--deny", "run_bash(touch*)"];
    for attempt in [
        "touch pwned",
        "echo a; touch pwned",
        "echo $(touch pwned)",
        "bash -c 'echo; touch pwned'",
        "sudo -n touch pwned",
        "env A=1 touch pwned",
        "(cd . && touch pwned)",
    ] {
        let (v, _) = bash(dir.path(), attempt, &rules);
        assert!(!dir.path().join("pwned").exists(), "{attempt:?} ran: {v}");
        assert_eq!(v["content"], "Permission denied", "{attempt:?}");
    }
    let (v, _) = bash(dir.path(), "echo fine", &rules);
    assert_eq!(v["is_error"], false, "{v}");
}

#[test]
fn path_rules_see_through_path_tricks() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src/secret")).unwrap();
    std::fs::write(dir.path().join("src/a.txt"), "public").unwrap();
    std::fs::write(dir.path().join("src/secret/k.txt"), "key").unwrap();
    let base = dir.path().canonicalize().unwrap();
    let read = |path: &str| {
        let args = json!({ "path": path }).to_string();
        let argv = [
            "tools",
            "call",
            "read_file",
            &args,
            "--json",
            "--base-path",
            base.to_str().unwrap(),
            "--default-permission",
            "ask",
            "--allow",
            "read_file(path=src/**)",
            "--deny",
            "read_file(path=src/secret/**)",
        ];
        let out = harnessx(dir.path(), &argv);
        serde_json::from_str::<Value>(stdout(&out).trim()).unwrap()
    };
    let absolute = format!("{}/src/a.txt", base.display());
    for allowed in ["src/a.txt", "./src/a.txt", "src//a.txt", "src/x/../a.txt", absolute.as_str()] {
        assert!(read(allowed)["content"].as_str().unwrap().contains("public"), "{allowed}");
    }
    let absolute = format!("{}//src/secret/k.txt", base.display());
    for denied in [
        "src/secret/k.txt",
        "./src/./secret/k.txt",
        "src//secret//k.txt",
        "src/a/../secret/k.txt",
        absolute.as_str(),
    ] {
        assert_eq!(read(denied)["content"], "Permission denied", "{denied}");
    }
    // Outside src: no rule allows it, and ASK has nobody to ask.
    assert_eq!(read("src/../../etc/passwd")["content"], "Permission denied");
}

#[test]
fn bad_rules_are_usage_errors_that_name_them() {
    let dir = tempfile::tempdir().unwrap();
    for (rules, named) in [
        (&["--allow", "no_such_tool"][..], "no_such_tool"),
        (&["--deny", "run_bash(git | x)"][..], "run_bash(git | x)"),
        (&["--ask", "read_file(nope=*)"][..], "nope"),
        (&["--allow", "read_file(git status*)"][..], "command"),
        (&["--allow", "run_bash("][..], "run_bash("),
    ] {
        let mut argv = vec!["tools", "call", "read_file", "{}"];
        argv.extend_from_slice(rules);
        let out = harnessx(dir.path(), &argv);
        assert_eq!(out.status.code(), Some(2), "{rules:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(named), "{rules:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let out = harnessx(dir.path(), &["run", "x", "--tools", "read_file", "--deny", "run_bash(rm*)"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("run_bash"), "{}", stderr(&out));
}

#[test]
fn run_honours_the_rules_as_tools_call_does() {
    // The test model calls run_bash with the command "a".
    let dir = tempfile::tempdir().unwrap();
    let end = |out: &Output| {
        json_lines(out).into_iter().find(|e| e["type"] == "tool_call_end" && e["name"] == "run_bash").unwrap()
    };
    let run = |rules: &[&str]| {
        let mut argv = vec!["run", "Run something.", "--tools", "bash", "--json"];
        argv.extend_from_slice(rules);
        harnessx(dir.path(), &argv)
    };
    // Asks (and so is denied, no terminal) without a rule; runs with one.
    assert_eq!(end(&run(&[]))["content"], "Permission denied");
    let out = run(&["--allow", "run_bash(a)"]);
    assert!(end(&out)["content"].as_str().unwrap().contains("[exit code"), "{}", stdout(&out));
    let out = run(&["--allow", "run_bash(b*)"]);
    assert_eq!(end(&out)["content"], "Permission denied");
    // A deny rule beats --yes; an ask rule with --yes runs.
    assert_eq!(end(&run(&["--yes", "--deny", "run_bash(a)"]))["content"], "Permission denied");
    let out = run(&["--yes", "--ask", "run_bash(a*)"]);
    assert!(end(&out)["content"].as_str().unwrap().contains("[exit code"), "{}", stdout(&out));
}

#[test]
fn rules_files_the_flag_and_the_project_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rules.toml"),
        "allow = [\"run_bash(echo*)\"]\ndeny = [\"run_bash(echo no*)\"]\n",
    )
    .unwrap();
    let (v, _) = bash(dir.path(), "echo yes", &["--permissions", "rules.toml"]);
    assert_eq!(v["is_error"], false, "{v}");
    let (v, _) = bash(dir.path(), "echo no", &["--permissions", "rules.toml"]);
    assert_eq!(v["content"], "Permission denied");

    // The project's file, found from a folder below it; its rules on tools not loaded
    // here are left out, not an error.
    std::fs::create_dir_all(dir.path().join(".harnessx")).unwrap();
    std::fs::write(
        dir.path().join(".harnessx/permissions.toml"),
        "allow = [\"run_bash(printf*)\", \"fetch_url\"]\n",
    )
    .unwrap();
    let below = dir.path().join("sub/dir");
    std::fs::create_dir_all(&below).unwrap();
    let argv = [
        "tools",
        "call",
        "run_bash",
        r#"{"command": "printf ok"}"#,
        "--tools",
        "run_bash",
        "--default-permission",
        "ask",
        "--json",
    ];
    let out = harnessx(&below, &argv);
    assert_eq!(out.status.code(), Some(0), "{} {}", stdout(&out), stderr(&out));

    // A malformed file is a usage error naming it.
    std::fs::write(dir.path().join("bad.toml"), "allow = \"not a list\"\n").unwrap();
    let (out_code, err) = {
        let out = harnessx(dir.path(), &["tools", "call", "read_file", "{}", "--permissions", "bad.toml"]);
        (out.status.code(), stderr(&out))
    };
    assert_eq!(out_code, Some(2), "{err}");
    assert!(err.contains("bad.toml"), "{err}");
    let out = harnessx(dir.path(), &["tools", "call", "read_file", "{}", "--permissions", "missing.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("missing.toml"), "{}", stderr(&out));
}

#[test]
fn approve_flags_are_checked_before_anything_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    for (flags, named) in [
        (&["--decision", "deny", "--arguments", "{}"][..], "--arguments"),
        (&["--decision", "approve", "--message", "no"][..], "--message"),
        (&["--arguments", "[1]"][..], "JSON object"),
        (&["--arguments", "{"][..], "not valid JSON"),
    ] {
        let mut argv = vec!["approve", "r", "c", "--durable", "runs.db"];
        argv.extend_from_slice(flags);
        let out = harnessx(dir.path(), &argv);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(named), "{flags:?}: {}", stderr(&out));
    }
    assert!(!dir.path().join("runs.db").exists());
}
