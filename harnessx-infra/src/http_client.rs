//! reqwest clients: a builder ready for `https` that says who is asking, and a
//! process-wide client built once, so that all of its users' requests share one pool of
//! connections.

use std::sync::OnceLock;

use reqwest::{Client, ClientBuilder};

/// The `User-Agent` harnessx's clients send unless told otherwise: `harnessx/<version>`.
pub const USER_AGENT: &str = concat!("harnessx/", env!("CARGO_PKG_VERSION"));

/// A client builder ready for `https` URLs (rustls's provider installed, see
/// [`crate::tls`]) that sends [`USER_AGENT`]; everything else is reqwest's default.
pub fn builder() -> ClientBuilder {
    crate::tls::install_default_provider();
    Client::builder().user_agent(USER_AGENT)
}

/// A process-wide client, built on first use from [`builder`] and the settings its
/// owner gives; every later use gets the same client (a clone shares its pool).
///
/// ```
/// use std::time::Duration;
/// use harnessx_infra::http_client::SharedClient;
///
/// static CLIENT: SharedClient = SharedClient::new(|b| b.connect_timeout(Duration::from_secs(10)));
///
/// let client = CLIENT.get().expect("a client with these settings builds");
/// # drop(client);
/// ```
#[derive(Debug)]
pub struct SharedClient {
    configure: fn(ClientBuilder) -> ClientBuilder,
    built: OnceLock<Result<Client, reqwest::Error>>,
}

impl SharedClient {
    /// A client that `configure` sets up from [`builder`] when it is first asked for.
    pub const fn new(configure: fn(ClientBuilder) -> ClientBuilder) -> Self {
        Self { configure, built: OnceLock::new() }
    }

    /// The client, built on the first call; a client that could not be built (no TLS
    /// roots, say) is the same error on every call.
    pub fn get(&self) -> Result<Client, &reqwest::Error> {
        match self.built.get_or_init(|| (self.configure)(builder()).build()) {
            Ok(client) => Ok(client.clone()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_user_agent_names_harnessx_and_its_version() {
        assert_eq!(USER_AGENT, format!("harnessx/{}", env!("CARGO_PKG_VERSION")));
    }

    #[test]
    fn a_shared_client_is_configured_once() {
        static CONFIGURED: AtomicUsize = AtomicUsize::new(0);
        static CLIENT: SharedClient = SharedClient::new(|b| {
            CONFIGURED.fetch_add(1, Ordering::SeqCst);
            b.timeout(Duration::from_secs(5))
        });
        CLIENT.get().expect("builds");
        CLIENT.get().expect("builds");
        assert_eq!(CONFIGURED.load(Ordering::SeqCst), 1);
        assert!(rustls::crypto::CryptoProvider::get_default().is_some(), "TLS is ready");
    }
}
