#![doc = include_str!("../README.md")]
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod backoff;
pub mod catalog;
pub mod content;
pub mod depth;
pub mod engine;
pub mod error;
pub mod hooks;
pub mod memory;
pub mod permission;
pub mod registry;
pub mod sandbox;
pub mod schema;
pub mod telemetry;
pub mod time;
pub mod tool;

#[doc(hidden)]
#[path = "macro_support/mod.rs"]
pub mod __private;

pub use __private::{CollectedTool, Toolbox};
pub use backoff::Backoff;
pub use catalog::{BuiltinBundle, BuiltinOptions, BundleRequest};
pub use content::{Blob, Bytes, Part, Parts};
pub use depth::MAX_JSON_DEPTH;
pub use engine::cap::{DEFAULT_MAX_RESULT_CHARS, ResultDir};
pub use engine::context::RunContext;
pub use engine::events::{ToolEvent, ToolEventSink};
pub use engine::pipeline::{
    Authorized, CallOutcome, EndHook, PERMISSION_DENIED, Permit, PlannedBatch, PlannedCall, Question,
    RunHooks, Schedule, Slot, StartHook,
};
pub use engine::serial::SerialQueue;
pub use error::{ParsePolicyError, Pause, PauseKind, RegistryError, ToolError, TransientToolError};
pub use memory::{Memory, MemoryError, MemoryHit, MemoryId, MemoryStore, MemoryUpdate, NewMemory, Saved};
pub use permission::{
    ApprovalDecision, ApprovalHandler, ApprovalRequest, ApprovalStore, ApprovalStoreError, AuthRequest,
    Authorization, Authorizer, Decision, DenyReason, ManagerRules, MemoryApprovalStore, PermissionLevel,
    PermissionManager, PermissionRules, RuleError, RuleLists,
};
pub use registry::resolve::UnknownTool;
pub use registry::{NameResolution, ToolRegistry, ToolSource, ToolSpec, WeakToolRegistry};
pub use sandbox::{
    CommandEnd, CommandOutput, OutputChunk, OutputStream, Sandbox, SandboxCommand, SandboxError,
    SandboxFilesystem,
};
pub use schema::canonical_schema;
/// The `schemars` crate, for `#[derive(JsonSchema)]` on tool parameter types.
pub use schemars;
pub use tool::annotations::ToolAnnotations;
pub use tool::call::{ToolCall, ToolOutput, ToolResult};
pub use tool::definition::{IntoToolDefinition, RetryIfResult, ToolDefinition, ToolOptions};
pub use tool::handler::{
    AsyncToolHandler, BlockingToolHandler, BoxFuture, CallInfo, HandlerResult, ToolContext, ToolHandler,
};
pub use tool::policy::{DEFAULT_TOOL_TIMEOUT_SECONDS, EffectivePolicy, ReplayPolicy, ToolPolicy, ToolRetry};
