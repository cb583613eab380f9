//! Permissions: levels, rules on names and arguments, the manager and its precedence,
//! approvals.

pub mod approval;
pub mod authorizer;
pub mod level;
pub mod manager;
pub mod path;
pub mod rules;
pub mod shell;

pub use approval::{
    ApprovalDecision, ApprovalFn, ApprovalHandler, ApprovalRequest, ApprovalStore, ApprovalStoreError,
    MemoryApprovalStore,
};
pub use authorizer::{
    AuthRequest, Authorization, Authorizer, Decision, NoManager, PERMISSION_DENIED, ask, ask_by_name,
};
pub use level::PermissionLevel;
pub use manager::{DenyReason, PermissionManager};
pub use rules::{PermissionRules, Rule, RuleError, RuleLists, suggest_rule};
