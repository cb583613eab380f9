//! trybuild cases: every compile error `#[tool]`/`#[toolbox]` emits (`tests/ui/fail`,
//! each with its `.stderr`) and valid uses (`tests/ui/pass`).
//!
//! They live here rather than beside the facade so that trybuild, which compiles its cases
//! in a target folder of its own with the features of the crate under test, builds the
//! facade without its default features (no agent, HTTP, durable or MCP stack): minutes
//! less on a fresh machine.
//!
//! After an intended message change: `TRYBUILD=overwrite cargo test -p harnessx-macros --test it ui`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
