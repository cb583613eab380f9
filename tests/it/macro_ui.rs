//! trybuild cases: every compile error `#[tool]`/`#[toolbox]` emits (`tests/ui/fail`,
//! each with its `.stderr`) and valid uses (`tests/ui/pass`).
//!
//! After an intended message change: `TRYBUILD=overwrite cargo test --test macro_ui`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
