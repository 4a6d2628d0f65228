//! Accepting connections: at most `maxConnections` open at once (the
//! others wait in the kernel's listen queue), at most
//! `maxConnectionsPerClient` of them from one address (more are closed as
//! they come: one client's slow connections cannot take every slot), each
//! given
//! `headerReadTimeoutSeconds` to send a request's headers before it is
//! closed, each request told its peer (`ConnectInfo`), all finished
//! gracefully on the stop signal.
//!
//! Why by hand: `axum::serve` runs hyper without a timer, so hyper's header
//! read timeout never fires, and it accepts without bound; this is the same
//! loop with both (hyper's own `http1::Builder`, `hyper_util`'s Tokio I/O).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
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
    /// Connections open at once from one address.
    pub(crate) max_connections_per_client: usize,
}

/// The connections open from each client address.
#[derive(Default)]
struct PerClient(Mutex<HashMap<IpAddr, usize>>);

/// One open connection of a client, counted until it is dropped.
struct ClientSlot {
    clients: Arc<PerClient>,
    address: IpAddr,
}

impl PerClient {
    /// A slot for one more connection from `address`, unless it holds
    /// `max` already.
    fn enter(self: &Arc<Self>, address: IpAddr, max: usize) -> Option<ClientSlot> {
        let mut open = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = open.entry(address).or_default();
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(ClientSlot { clients: Arc::clone(self), address })
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut open = self.clients.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.address) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.address);
            }
        }
    }
}

/// Serves `app` on `listener` until `stop` turns true, then lets the open
/// connections finish their requests.
pub(crate) async fn serve(listener: TcpListener, app: Router, limits: Limits, stop: watch::Receiver<bool>) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let clients = Arc::new(PerClient::default());
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
        let Some(client) = clients.enter(peer.ip(), limits.max_connections_per_client) else {
            tracing::debug!(%peer, "connection closed: its address holds maxConnectionsPerClient already");
            continue;
        };
        let app = app.clone();
        let http = http.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let _slots = (slot, client);
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
