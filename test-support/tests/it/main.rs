//! The integration tests of `harnessx-test-support` itself, one binary with a module per
//! area.

mod restate_server;
