//! The registry kept in step with a server's tools: the options' choice of tools, and
//! the changes a server announces applied (after `tools/list_changed`, a restart).

use std::sync::{Arc, Weak};

use harnessx_core::ToolRegistry;
use indexmap::IndexMap;
use rmcp::model::Tool;

use super::changes::Changes;
use super::connect::list_tools;
use super::definition::definition;
use super::link::Link;

/// Keeps the registry in step with the server's tools: runs on each
/// `notifications/tools/list_changed` (and after a restart), until the connection is
/// closed or dropped, or the registry is.
pub(super) async fn refresh_task(link: Weak<Link>, changed: Arc<Changes>) {
    loop {
        changed.notify.notified().await;
        let Some(link) = link.upgrade() else { return };
        if link.state.lock().await.closed || link.registry.upgrade().is_none() {
            return;
        }
        link.apply_changes().await;
    }
}

impl Link {
    /// The tools of `listed` that the options pick, by the server's name, with the name
    /// each is registered under.
    pub(super) fn choose(&self, listed: Vec<Tool>) -> IndexMap<String, (String, Tool)> {
        let options = &self.options;
        let prefix = options.prefix.as_deref().unwrap_or_default();
        listed
            .into_iter()
            .filter(|t| options.include.as_ref().is_none_or(|only| only.iter().any(|n| n == t.name.as_ref())))
            .filter(|t| !options.exclude.iter().any(|n| n == t.name.as_ref()))
            .map(|t| (t.name.to_string(), (format!("{prefix}{}", t.name), t)))
            .collect()
    }

    /// Applies what was announced and not yet applied (once, however many callers wait).
    async fn apply_changes(self: &Arc<Self>) {
        let target = self.changed.announced();
        let mut applied = self.applied.lock().await;
        if *applied >= target {
            return;
        }
        let Some(registry) = self.registry.upgrade() else { return };
        if let Err(e) = self.refresh(&registry).await {
            tracing::warn!(server = %self.shown, error = %e, "could not refresh the MCP server's tools");
        }
        *applied = target;
    }

    /// After a call: when the server announced a change of its tools meanwhile (it
    /// usually does so before answering the call that caused it), applies it before the
    /// result is returned, so that the next model request has the new set.
    pub(super) async fn settle(self: &Arc<Self>) {
        if self.changed.announced() > *self.applied.lock().await {
            self.apply_changes().await;
        }
    }

    /// Lists the server's tools again and brings the registry in step: tools gone are
    /// removed, new ones registered, changed ones replaced; the others are left as they
    /// are (so the tools' order, and a model's cached prompt prefix, stay put). A new
    /// tool whose name is taken by another tool is skipped with a warning.
    async fn refresh(self: &Arc<Self>, registry: &ToolRegistry) -> Result<(), String> {
        let service = {
            let state = self.state.lock().await;
            match &state.service {
                Some(service) if !service.is_transport_closed() => service.clone(),
                // Refreshed after the restart.
                _ => return Ok(()),
            }
        };
        let listed = list_tools(&service).await?;
        let wanted = self.choose(listed);
        let mut registered = self.registered();
        registered.retain(|remote, (name, tool)| {
            let keep = wanted.get(remote).is_some_and(|(_, new)| new == tool);
            if !keep {
                registry.remove_tool(name);
            }
            keep
        });
        for (remote, (name, tool)) in wanted {
            if registered.contains_key(&remote) {
                continue;
            }
            match registry.register_tool(definition(&tool, &name, self)) {
                Ok(_) => {
                    registered.insert(remote, (name, tool));
                }
                Err(e) => {
                    tracing::warn!(server = %self.shown, error = %e, "skipped a tool the MCP server added")
                }
            }
        }
        Ok(())
    }
}
