//! Permissions: levels, rules on names and arguments, the manager and its precedence,
//! approvals.

pub mod approval;
pub mod authorizer;
mod command;
pub mod level;
pub mod manager;
pub mod path;
mod rule;
pub mod rules;
pub mod shell;
mod suggest;

pub use approval::{
    ApprovalDecision, ApprovalFn, ApprovalHandler, ApprovalRequest, ApprovalStore, ApprovalStoreError,
    MemoryApprovalStore,
};
pub use authorizer::{
    AuthRequest, Authorization, Authorizer, Decision, NoManager, PERMISSION_DENIED, ask, ask_by_name,
};
pub use level::PermissionLevel;
pub use manager::{DenyReason, ManagerRules, PermissionManager};
pub use rules::{PermissionRules, Rule, RuleError, RuleLists};
pub use suggest::suggest_rule;
