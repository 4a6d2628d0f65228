//! Accepting connections: at most `maxConnections` open at once (the
//! others wait in the kernel's listen queue), each given
//! `headerReadTimeoutSeconds` to send a request's headers before it is
//! closed, each request told its peer (`ConnectInfo`), all finished
//! gracefully on the stop signal.
//!
//! Why by hand: `axum::serve` runs hyper without a timer, so hyper's header
//! read timeout never fires, and it accepts without bound; this is the same
//! loop with both (hyper's own `http1::Builder`, `hyper_util`'s Tokio I/O).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tower::ServiceExt;

/// What a connection may hold.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Time to send a request's headers.
    pub(crate) header_read_timeout: Duration,
    /// Connections open at once.
    pub(crate) max_connections: usize,
}

/// Serves `app` on `listener` until `stop` turns true, then lets the open
/// connections finish their requests.
pub(crate) async fn serve(listener: TcpListener, app: Router, limits: Limits, stop: watch::Receiver<bool>) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    let stopped = |mut stop: watch::Receiver<bool>| async move {
        let _ = stop.wait_for(|stop| *stop).await;
    };
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            () = stopped(stop.clone()) => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: wait, do not spin.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = stopped(stop.clone()) => break,
        };
        let app = app.clone();
        let http = http.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
                request.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
                app.clone().oneshot(request.map(Body::new))
            });
            let connection = http.serve_connection(TokioIo::new(stream), service).with_upgrades();
            tokio::pin!(connection);
            tokio::select! {
                served = connection.as_mut() => {
                    if let Err(error) = served {
                        tracing::debug!(%peer, %error, "connection closed");
                    }
                }
                () = stopped(stop) => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }
    // Every connection done: all the slots back.
    let _ = slots.acquire_many(limits.max_connections as u32).await;
}
