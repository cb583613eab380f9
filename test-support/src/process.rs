//! A test that needs a process of its own inside a crate's one test binary: it runs that
//! binary again with only itself selected, so that what it does to its process (a move
//! into a cgroup, a limit, a signal disposition) reaches no other test.

use std::process::Command;

/// Set in the child process: the path of the test it runs.
const OWN_PROCESS: &str = "HX_OWN_PROCESS";

/// Whether the calling test runs its body here. `test` is its path in the binary
/// (`module::name`, as `cargo test -- --list` shows it).
///
/// In an ordinary run this starts the test binary again running only `test`, waits for it,
/// prints its output, panics if it failed or did not run exactly that one test, and returns
/// `false`: the caller then returns. In that child it returns `true`.
///
/// The test's first lines (after any lock that makes such tests take turns):
/// `if !in_own_process("area::the_test") { return; }`.
pub fn in_own_process(test: &str) -> bool {
    if std::env::var_os(OWN_PROCESS).is_some_and(|t| t == test) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = Command::new(&exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(OWN_PROCESS, test)
        .output()
        .unwrap_or_else(|e| panic!("running {} {test}: {e}", exe.display()));
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    print!("{stdout}");
    eprint!("{stderr}");
    assert!(out.status.success(), "{test} failed in its own process ({})", out.status);
    assert!(
        stdout.contains("test result: ok. 1 passed;"),
        "{test} did not run in its own process: is that its path in the test binary?"
    );
    false
}
