//! The changes a server announces (`notifications/tools/list_changed`), noted by the
//! transport as they are read.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::Notify;

/// Changes a server announced, and the wake-up of the task that applies them.
#[derive(Default)]
pub(super) struct Changes {
    /// Counts the announcements (`tools/list_changed`, a restart).
    announced: AtomicU64,
    pub(super) notify: Notify,
}

impl Changes {
    pub(super) fn announce(&self) {
        self.announced.fetch_add(1, Ordering::SeqCst);
        self.notify.notify_one();
    }

    pub(super) fn announced(&self) -> u64 {
        self.announced.load(Ordering::SeqCst)
    }
}

/// A transport that notes the server's `notifications/tools/list_changed` as it is read,
/// in order with the responses: a call whose response follows the announcement sees it
/// (rmcp runs notification handlers as tasks of their own, in no set order).
pub(super) struct Watched<T> {
    pub(super) inner: T,
    pub(super) changed: Arc<Changes>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if let Some(JsonRpcMessage::Notification(n)) = &message
            && matches!(n.notification, ServerNotification::ToolListChangedNotification(_))
        {
            self.changed.announce();
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
