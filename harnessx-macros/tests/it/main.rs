//! The integration tests of `harnessx-macros`, one binary with a module per area. (The
//! macros' compile errors are pinned by the trybuild cases of the facade's `tests/ui/`.)

mod schemas;
