//! rustls's process-wide crypto provider.
//!
//! reqwest (and the clients built on it: rmcp's, the OTLP exporter's) is built without a
//! bundled crypto provider (`rustls-no-provider`), so that the workspace builds ring and
//! not also aws-lc. rustls then needs a process-wide default before the first TLS
//! connection; [`install_default_provider`] installs ring, unless the application
//! installed a provider of its own, which is then kept.

/// Installs ring as rustls's process-wide crypto provider unless one is installed
/// already (by the application, or by an earlier call). Cheap to call again.
pub fn install_default_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may win the race between the check and the install: its
        // provider is then the default, which is all that is asked for.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provider_is_installed_and_kept() {
        install_default_provider();
        let first = rustls::crypto::CryptoProvider::get_default().expect("installed");
        install_default_provider();
        let again = rustls::crypto::CryptoProvider::get_default().expect("still installed");
        assert!(std::sync::Arc::ptr_eq(first, again), "a second call must not replace the provider");
    }
}
