//! Rules on names and arguments, spelled as Claude Code spells them (issue 41): `*`
//! anywhere, a space before `*` stopping at a word, no space a plain character prefix,
//! the legacy `:*` suffix, and `NAME(ARG:VALUE)` beside `NAME(ARG=GLOB)`. Allow still
//! needs every simple command of a script, deny and ask still find any.

use harnessx_core::permission::{PermissionRules, Rule, suggest_rule};
use harnessx_core::{PermissionLevel, ToolOptions, ToolRegistry};
use serde_json::{Value, json};

use crate::common::{Counter, echo};
use PermissionLevel::{Allow, Ask, Deny};

fn rules(list: &[(PermissionLevel, &str)]) -> PermissionRules {
    let mut r = PermissionRules::new().base_path("/work/p");
    for (level, rule) in list {
        r.add(*level, rule).unwrap_or_else(|e| panic!("{rule}: {e}"));
    }
    r
}

/// What the rules decide for `run_bash` running `command`.
fn bash(r: &PermissionRules, command: &str) -> Option<PermissionLevel> {
    r.decide("run_bash", &json!({ "command": command }))
}

/// The commands of `yes` match the one allow rule `rule`, those of `no` do not.
fn allows(rule: &str, yes: &[&str], no: &[&str]) {
    let r = rules(&[(Allow, rule)]);
    for c in yes {
        assert_eq!(bash(&r, c), Some(Allow), "{rule} should allow {c:?}");
    }
    for c in no {
        assert_eq!(bash(&r, c), None, "{rule} should not allow {c:?}");
    }
}

// What the issue reported: `run_bash(echo hx-ok*)` did not match `echo hx-ok-1`.
#[test]
fn a_star_without_a_space_is_a_character_prefix() {
    allows(
        "run_bash(echo hx-ok*)",
        &["echo hx-ok-1", "echo hx-ok", "echo hx-ok 2", "echo  hx-okay"],
        &["echo hx-o", "echo x hx-ok-1", "printf hx-ok-1"],
    );
    allows("run_bash(ls*)", &["ls", "lsof", "ls -la", "lsblk -f"], &["l", "cat ls"]);
    // A rule written for the old word meaning now means Claude Code's.
    allows("run_bash(git status*)", &["git status", "git status -s", "git statusx"], &["git stat"]);
}

#[test]
fn a_space_before_the_star_stops_at_a_word() {
    allows("run_bash(ls *)", &["ls", "ls -la", "ls  -la   src", "ls ''"], &["lsof", "ls-la", "l"]);
    allows("run_bash(git status *)", &["git status", "git status -s"], &["git statusx", "git"]);
}

#[test]
fn the_legacy_colon_star_suffix_is_a_word_prefix() {
    allows("run_bash(ls:*)", &["ls", "ls -la"], &["lsof"]);
    // Claude Code's own example: `npm run test:*` is `npm run test *`.
    allows(
        "run_bash(npm run test:*)",
        &["npm run test", "npm run test --watch"],
        &["npm run test:unit", "npm run testx"],
    );
    // An empty prefix: every command, as `*` alone.
    allows("run_bash(:*)", &["anything at all", "x"], &[]);
    allows("run_bash(*)", &["anything at all", "x"], &[]);
    // `:*` inside a pattern is no suffix: a literal colon, then a star.
    allows("run_bash(a:* b)", &["a: b", "a:x y b"], &["a b"]);
    // `**` after a colon is a character prefix that keeps the colon.
    allows("run_bash(npm run test:**)", &["npm run test:unit", "npm run test:"], &["npm run test"]);
}

#[test]
fn a_star_may_stand_anywhere_and_more_than_once() {
    allows(
        "run_bash(git * main)",
        &["git checkout main", "git push origin main"],
        &["git main", "git push origin main2", "git push main origin"],
    );
    allows(
        "run_bash(* --version)",
        &["cargo --version", "npm x --version"],
        &["--version", "cargo --versions"],
    );
    allows("run_bash(*hx-ok-1)", &["echo hx-ok-1", "hx-ok-1", "echo xhx-ok-1"], &["echo hx-ok-12"]);
    allows("run_bash(*a*b*)", &["ab", "xaybz", "a b", "cat a.b"], &["ba", "b a"]);
    allows(
        "run_bash(cargo * --release *)",
        &["cargo build --release", "cargo build --release -p x"],
        &["cargo build", "cargo --release"],
    );
    allows("run_bash(***)", &["x", "x y z"], &[]);
}

#[test]
fn unicode_is_compared_by_characters() {
    allows(
        "run_bash(echo héllo*)",
        &["echo héllo", "echo héllo-wörld", "echo 'héllo wörld'"],
        &["echo hello", "echo hé"],
    );
    allows("run_bash(echo 日本*)", &["echo 日本語", "echo 日本"], &["echo 日"]);
    allows("run_bash(echo *語)", &["echo 日本語"], &["echo 日本"]);
}

#[test]
fn quotes_in_a_pattern_are_read_as_bash_reads_them() {
    // The pattern's words are unquoted like the command's.
    allows(
        "run_bash(echo \"a b\" *)",
        &["echo 'a b'", "echo \"a b\" c", "echo a\\ b"],
        &["echo a b", "echo a"],
    );
    // A quoted or escaped star is a star, not a wildcard.
    allows("run_bash(echo '*')", &["echo '*'", "echo \\*"], &["echo x"]);
    allows("run_bash(echo \\*x)", &["echo '*x'"], &["echo ax"]);
    allows("run_bash(git commit -m \"fix *\")", &["git commit -m 'fix *'"], &["git commit -m 'fix it'"]);
    // A word with a space is one word: `echo a b` is not `echo "a b"`.
    allows("run_bash(echo a b)", &["echo a b", "echo  a  b"], &["echo 'a b'"]);
}

#[test]
fn allow_needs_every_command_of_a_compound_script() {
    let r = rules(&[(Allow, "run_bash(ls *)"), (Allow, "run_bash(echo hx-ok*)")]);
    assert_eq!(bash(&r, "ls && echo hx-ok-1"), Some(Allow));
    assert_eq!(bash(&r, "ls -la | echo hx-ok-2; ls"), Some(Allow));
    assert_eq!(bash(&r, "ls && rm x"), None);
    assert_eq!(bash(&r, "echo hx-ok-1; rm -rf x"), None);
    assert_eq!(bash(&r, "echo hx-ok-$(rm -rf x)"), None, "a substitution is opaque");
    // A star in an allow rule spans words, not commands.
    let star = rules(&[(Allow, "run_bash(ls*)")]);
    assert_eq!(bash(&star, "ls; rm x"), None);
    assert_eq!(bash(&star, "ls && rm x"), None);
}

#[test]
fn deny_and_ask_match_any_command_of_a_compound_script() {
    let r = rules(&[
        (Allow, "run_bash"),
        (Deny, "run_bash(rm *)"),
        (Deny, "run_bash(* --force *)"),
        (Ask, "run_bash(git push:*)"),
    ]);
    assert_eq!(bash(&r, "ls && rm x"), Some(Deny));
    assert_eq!(bash(&r, "ls && rm"), Some(Deny));
    assert_eq!(bash(&r, "ls; sudo rm -rf x"), Some(Deny));
    assert_eq!(bash(&r, "echo $(rm x)"), Some(Deny));
    assert_eq!(bash(&r, "ls && rmdir x"), Some(Allow), "`rm *` stops at the word");
    assert_eq!(bash(&r, "git reset --force"), Some(Deny), "a trailing ` *` may match nothing");
    assert_eq!(bash(&r, "ls | git push --force origin"), Some(Deny));
    assert_eq!(bash(&r, "ls; git push origin"), Some(Ask));
    assert_eq!(bash(&r, "git pushx"), Some(Allow));
    let chars = rules(&[(Allow, "run_bash"), (Deny, "run_bash(rm*)")]);
    assert_eq!(bash(&chars, "ls && rmdir x"), Some(Deny), "`rm*` is a character prefix");
}

#[test]
fn a_pattern_that_cannot_match_one_command_is_refused() {
    for bad in [
        "run_bash(ls | rm)",
        "run_bash(ls; rm)",
        "run_bash(ls && rm *)",
        "run_bash(echo > f)",
        "run_bash(echo 'unterminated)",
        "run_bash(\"\")",
    ] {
        let err = Rule::parse(bad).unwrap_err().to_string();
        assert!(err.starts_with("malformed permission rule"), "{bad}: {err}");
        assert!(!err.contains('\n'), "{err}");
    }
}

/// A registry with a shell tool (`command`, a numeric `timeout`), a file tool (`path`) and
/// a tool with neither.
fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    let counter = Counter::new();
    let schema = |properties: Value| json!({"type": "object", "properties": properties});
    for (name, properties) in [
        ("run_bash", json!({"command": {"type": "string"}, "timeout": {"type": "number"}})),
        ("read_file", json!({"path": {"type": "string"}})),
        ("fetch", json!({"url": {"type": "string"}, "max": {"type": "integer"}})),
    ] {
        registry
            .register_with_schema(name, "t", schema(properties), echo(&counter), ToolOptions::new())
            .unwrap();
    }
    registry
}

#[test]
fn param_colon_value_names_an_argument_the_tool_has() {
    let reg = registry();
    let r = rules(&[
        (Allow, "read_file(path:src/**)"),
        (Deny, "fetch(url:*evil*)"),
        (Allow, "fetch(url:https://docs.rs/*)"),
    ]);
    r.check(&reg).unwrap();
    let read = |p: &str| r.decide("read_file", &json!({ "path": p }));
    assert_eq!(read("src/a.rs"), Some(Allow));
    assert_eq!(read("./src//deep/a.rs"), Some(Allow), "a path is normalised as for path=");
    assert_eq!(read("src/../../etc/passwd"), None);
    let fetch = |u: &str| r.decide("fetch", &json!({ "url": u }));
    assert_eq!(fetch("https://docs.rs/serde"), Some(Allow));
    assert_eq!(fetch("https://evil.example/"), Some(Deny));
    assert_eq!(fetch("https://example.com/"), None);
}

#[test]
fn param_colon_value_on_a_shell_tool_stays_a_command_pattern() {
    let reg = registry();
    // `git` is no argument of run_bash, `timeout` is not a string one: commands.
    let r = rules(&[(Allow, "run_bash(git:*)"), (Allow, "run_bash(timeout:*)")]);
    r.check(&reg).unwrap();
    assert_eq!(bash(&r, "git status"), Some(Allow));
    assert_eq!(bash(&r, "timeout 5 git log"), Some(Allow));
    assert_eq!(bash(&r, "gitk"), None);
    assert_eq!(bash(&r, "git status; rm -rf x"), None);
    // A model that adds an argument named like the prefix gains nothing.
    let smuggled = json!({"command": "rm -rf x", "git": "status"});
    assert_eq!(r.decide("run_bash", &smuggled), None);
}

// `run_bash(command=git *)` was a glob over the whole script: `git x; rm -rf y` matched.
#[test]
fn a_rule_on_the_command_argument_reads_it_as_a_script() {
    for rule in ["run_bash(command=git *)", "run_bash(command:git *)"] {
        let r = rules(&[(Allow, rule)]);
        r.check(&registry()).unwrap();
        assert_eq!(bash(&r, "git status"), Some(Allow), "{rule}");
        assert_eq!(bash(&r, "git x; rm -rf y"), None, "{rule}");
        assert_eq!(bash(&r, "git x && rm -rf y"), None, "{rule}");
        let deny = rules(&[(Allow, "run_bash"), (Deny, rule)]);
        assert_eq!(bash(&deny, "ls; git push"), Some(Deny), "{rule}");
    }
}

#[test]
fn check_refuses_a_param_colon_rule_with_neither_reading() {
    let reg = registry();
    for (rule, named) in [("fetch(nope:x)", "nope"), ("fetch(max:5)", "max"), ("read_file(git:*)", "git")] {
        let err = rules(&[(Allow, rule)]).check(&reg).unwrap_err().to_string();
        assert!(err.contains(named), "{rule}: {err}");
        assert!(!err.contains('\n'), "{err}");
    }
    // A middle star is no longer an error.
    rules(&[(Deny, "run_bash(git * main)")]).check(&reg).unwrap();
}

#[test]
fn always_suggests_claude_codes_spelling_and_means_it() {
    let cases = [
        ("git status -s", "run_bash(git status *)"),
        ("ls -la", "run_bash(ls *)"),
        ("ls", "run_bash(ls *)"),
        ("echo hx-ok-1", "run_bash(echo hx-ok-1 *)"),
        ("cargo test --workspace", "run_bash(cargo test *)"),
        ("echo héllo wörld", "run_bash(echo héllo *)"),
        ("echo 'a b'", "run_bash(echo *)"),
        ("FOO=1 make", "run_bash"),
        ("ls; rm x", "run_bash"),
    ];
    for (command, expected) in cases {
        let rule = suggest_rule("run_bash", &json!({ "command": command }), None);
        assert_eq!(rule, expected, "{command}");
        // What it suggests allows that command, and not a longer first word.
        let r = rules(&[(Allow, &rule)]);
        assert_eq!(bash(&r, command), Some(Allow), "{rule} for {command}");
        if rule != "run_bash" {
            let first = command.split_whitespace().next().unwrap();
            assert_eq!(bash(&r, &format!("{first}x")), None, "{rule}");
        }
    }
}
