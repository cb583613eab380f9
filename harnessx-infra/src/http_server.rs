//! The accept loop of a hyper server, written once for every server of the workspace
//! (the MCP server over HTTP/1.1, the Restate worker over HTTP/2): each server only says
//! how to serve one connection.
//!
//! Each accepted socket gets `TCP_NODELAY` (the messages are small and each one waits
//! for an answer: Nagle's algorithm held them back, which doubled the time of a Restate
//! run) and a task of its own. A failed accept (out of descriptors, say) waits a little
//! rather than spin. When `stop` completes, no connection is taken any more and the open
//! ones are asked to finish, for at most the drain time.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::{GracefulConnection, GracefulShutdown};
use tokio::net::{TcpListener, TcpStream};

/// How long to wait after a failed accept before the next one.
const ACCEPT_PAUSE: Duration = Duration::from_millis(50);

/// How [`serve`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "the caller says whether connections still open at the end matter"]
pub enum Ended {
    /// Every open connection finished within the drain time.
    Drained,
    /// Some were still open when the drain time ran out (they are dropped with the
    /// runtime's tasks, not waited for).
    StillOpen,
}

/// Accepts connections on `listener` until `stop` completes, serving each with the
/// connection `connection` makes of the socket (an `http1` or `http2` builder's
/// `serve_connection`), then lets open connections finish for at most `drain`. `name`
/// says in the logs which server it is.
pub async fn serve<C>(
    listener: TcpListener,
    stop: impl Future<Output = ()>,
    drain: Duration,
    name: &'static str,
    connection: impl Fn(TokioIo<TcpStream>) -> C,
) -> Ended
where
    C: GracefulConnection + Send + 'static,
    C::Error: Display + Send,
{
    let graceful = GracefulShutdown::new();
    let mut stop = std::pin::pin!(stop);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, remote) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        tracing::warn!(server = name, "accepting a connection: {e}");
                        tokio::time::sleep(ACCEPT_PAUSE).await;
                        continue;
                    }
                };
                if let Err(e) = stream.set_nodelay(true) {
                    tracing::debug!(server = name, "TCP_NODELAY on {remote}: {e}");
                }
                let served = graceful.watch(connection(TokioIo::new(stream)));
                tokio::spawn(async move {
                    if let Err(e) = served.await {
                        tracing::debug!(server = name, "serving {remote}: {e}");
                    }
                });
            }
            () = &mut stop => break,
        }
    }
    match tokio::time::timeout(drain, graceful.shutdown()).await {
        Ok(()) => Ended::Drained,
        Err(_) => Ended::StillOpen,
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use hyper::body::Incoming;
    use hyper::server::conn::http1;
    use hyper::{Request, Response};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A service that answers every request with an empty `200`.
    fn ok(_: Request<Incoming>) -> std::future::Ready<Result<Response<String>, Infallible>> {
        std::future::ready(Ok(Response::new(String::new())))
    }

    async fn get(addr: std::net::SocketAddr) -> (TcpStream, String) {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
        let mut buf = vec![0; 1024];
        let n = stream.read(&mut buf).await.unwrap();
        (stream, String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    #[tokio::test]
    async fn serves_until_stopped_then_drains() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(
            listener,
            async {
                let _ = stopped.await;
            },
            Duration::from_secs(5),
            "test",
            |io| http1::Builder::new().serve_connection(io, hyper::service::service_fn(ok)),
        ));
        let (open, answer) = get(addr).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        // A kept-alive connection is still open: the stop closes it gracefully.
        stop.send(()).unwrap();
        assert_eq!(server.await.unwrap(), Ended::Drained);
        drop(open);
        assert!(TcpStream::connect(addr).await.is_err(), "the listener is closed");
    }

    #[tokio::test]
    async fn a_connection_that_does_not_finish_is_reported() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        // A request that never completes: the connection cannot finish gracefully.
        let slow = hyper::service::service_fn(|_: Request<Incoming>| async {
            std::future::pending::<Result<Response<String>, Infallible>>().await
        });
        let server = tokio::spawn(serve(
            listener,
            async {
                let _ = stopped.await;
            },
            Duration::from_millis(100),
            "test",
            move |io| http1::Builder::new().serve_connection(io, slow),
        ));
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.send(()).unwrap();
        assert_eq!(server.await.unwrap(), Ended::StillOpen);
    }
}
