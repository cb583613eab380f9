//! The integration tests of `harnessx-macros`, one binary with a module per area: the
//! schemas the macros write, and (`ui`) the trybuild cases in `tests/ui/` that pin every
//! compile error and compile the valid uses.

mod media;
mod schemas;
mod ui;
