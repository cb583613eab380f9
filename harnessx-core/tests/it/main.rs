//! The integration tests of `harnessx-core`, one binary with a module per area (so the
//! crate and its dependencies are linked once); `common` holds the shared helpers.

mod batch_ordering;
mod common;
mod hooks;
mod permissions_precedence;
mod permissions_rules;
mod pipeline_arguments;
mod pipeline_execution;
mod pipeline_flat;
mod pipeline_names;
mod planned_batches;
mod registry_policy;
mod registry_registration;
