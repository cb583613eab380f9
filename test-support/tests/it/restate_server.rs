//! The `restate-server` the Restate tests run: installed from the npm registry into the
//! cache, started on loopback ports of its own, gone when dropped.

use harnessx_test_support::restate::{RestateServer, http};

#[test]
fn a_restate_server_starts_answers_and_stops() {
    let Some(server) = RestateServer::start() else { return };
    let (status, _) = http("GET", &format!("{}/health", server.admin_url), None).unwrap();
    assert_eq!(status, 200);
    let (status, body) = http("GET", &format!("{}/restate/health", server.ingress_url), None).unwrap();
    assert_eq!(status, 200, "{body}");
    // No deployment yet; a dead endpoint cannot be registered.
    let (status, body) = http("GET", &format!("{}/deployments", server.admin_url), None).unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"deployments\":[]"), "{body}");
    assert!(server.register("http://127.0.0.1:9").is_err());
    let admin = server.admin_url.clone();
    drop(server);
    assert!(http("GET", &format!("{admin}/health"), None).is_err(), "the server is gone");
}
