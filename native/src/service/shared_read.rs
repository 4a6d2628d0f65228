//! A read of the whole fleet (drift, a desired-state plan: a catalog query
//! per tenant, minutes at 100,000 tenants) shared by the requests that ask
//! for it while it runs, so the fields of one request (`drift` under four
//! aliases) and many requests at once cost one read, not one each.
//!
//! Invariant: a request is answered only by a read that *started after it
//! arrived* (its [`ticket`], taken before anything else), so what a request
//! sees is never older than what a version, or any change, that ended
//! before it arrived left. Reads of a kind run one at a time; a request that
//! arrived while one ran waits for it to end and then runs the next, which
//! answers every request that arrived before that next read started. The
//! answer is kept only while a request waits for it, never for later ones.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The order in which requests arrive and reads start, process-wide.
static TICKETS: AtomicU64 = AtomicU64::new(1);

/// The next ticket: taken by a request as it arrives, and by a read as it
/// starts.
pub(crate) fn ticket() -> u64 {
    TICKETS.fetch_add(1, Ordering::SeqCst)
}

/// The reads of one kind, keyed by what they read (`K`: `()` for drift,
/// the desired text and directory for a plan).
pub(crate) struct SharedRead<K, T> {
    /// The last read's start ticket, key and answer, while a request waits.
    last: tokio::sync::Mutex<Option<(u64, K, Arc<T>)>>,
    /// Requests waiting for their turn.
    waiting: AtomicUsize,
}

impl<K, T> Default for SharedRead<K, T> {
    fn default() -> Self {
        SharedRead { last: tokio::sync::Mutex::new(None), waiting: AtomicUsize::new(0) }
    }
}

/// Whether an answer came from a read of the request's own or another's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answered {
    /// A read this request started.
    Read,
    /// A read another request (or another field of the same) started after
    /// this one arrived.
    Shared,
}

impl<K: PartialEq, T> SharedRead<K, T> {
    /// The answer for a request that arrived at `arrived` ([`ticket`]): the
    /// last read of `key` when it started after then, else `read`'s, run
    /// now (one at a time).
    pub(crate) async fn get<E, F, Fut>(&self, arrived: u64, key: K, read: F) -> Result<(Arc<T>, Answered), E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        // Counted while it waits, also when the request goes away meanwhile.
        let waiting = Waiting::enter(&self.waiting);
        let mut last = self.last.lock().await;
        drop(waiting);
        if let Some((started, read_key, answer)) = last.as_ref()
            && *started > arrived
            && *read_key == key
        {
            let answer = Arc::clone(answer);
            if self.waiting.load(Ordering::SeqCst) == 0 {
                *last = None;
            }
            return Ok((answer, Answered::Shared));
        }
        *last = None;
        let started = ticket();
        let answer = Arc::new(read().await?);
        // Kept for the requests that came meanwhile (they hold no lock yet).
        if self.waiting.load(Ordering::SeqCst) > 0 {
            *last = Some((started, key, Arc::clone(&answer)));
        }
        Ok((answer, Answered::Read))
    }
}

/// A request counted in [`SharedRead::waiting`] until dropped.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::oneshot;

    type Reads = SharedRead<&'static str, usize>;

    /// A read that ends when `release` is sent, answering the number of
    /// reads run so far.
    async fn counted(reads: &AtomicUsize, release: oneshot::Receiver<()>) -> Result<usize, ()> {
        let n = reads.fetch_add(1, Ordering::SeqCst) + 1;
        release.await.map_err(|_| ())?;
        Ok(n)
    }

    #[tokio::test]
    async fn the_fields_of_one_request_share_one_read() {
        let (shared, reads) = (Reads::default(), AtomicUsize::new(0));
        let arrived = ticket();
        let (release, wait) = oneshot::channel();
        let first = shared.get(arrived, "drift", || counted(&reads, wait));
        let others = futures::future::join_all((0..3).map(|_| shared.get(arrived, "drift", || async { Err(()) })));
        let (first, others, ()) = tokio::join!(first, others, async {
            tokio::task::yield_now().await;
            release.send(()).unwrap();
        });
        assert_eq!(first, Ok((Arc::new(1), Answered::Read)));
        for other in others {
            assert_eq!(other, Ok((Arc::new(1), Answered::Shared)));
        }
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        assert!(shared.last.lock().await.is_none(), "nothing kept once nobody waits");
    }

    #[tokio::test]
    async fn a_request_that_came_after_a_read_started_gets_a_read_of_its_own_or_a_later_one() {
        let (shared, reads) = (Reads::default(), AtomicUsize::new(0));
        let (release_first, first_wait) = oneshot::channel();
        let (release_second, second_wait) = oneshot::channel();
        let early = ticket();
        let first = shared.get(early, "drift", || counted(&reads, first_wait));
        let later = async {
            // Arrives while the first read runs.
            tokio::task::yield_now().await;
            let arrived = ticket();
            let mine = shared.get(arrived, "drift", || counted(&reads, second_wait));
            let also = shared.get(arrived, "drift", || async { Err(()) });
            tokio::join!(mine, also)
        };
        let (first, (mine, also), ()) = tokio::join!(first, later, async {
            tokio::task::yield_now().await;
            tokio::task::yield_now().await;
            release_first.send(()).unwrap();
            tokio::task::yield_now().await;
            let _ = release_second.send(());
        });
        assert_eq!(first, Ok((Arc::new(1), Answered::Read)));
        assert_eq!(mine, Ok((Arc::new(2), Answered::Read)), "not the read that started before it arrived");
        assert_eq!(also, Ok((Arc::new(2), Answered::Shared)));
        assert_eq!(reads.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_request_that_goes_away_while_it_waits_keeps_nothing_alive() {
        let (shared, reads) = (Reads::default(), AtomicUsize::new(0));
        let (release, wait) = oneshot::channel();
        let arrived = ticket();
        let first = shared.get(arrived, "drift", || counted(&reads, wait));
        let gone = async {
            let waiter = shared.get(arrived, "drift", || async { Err(()) });
            // Polled once (it counts itself and waits), then dropped.
            let _ = futures::poll!(Box::pin(waiter));
        };
        let (first, (), ()) = tokio::join!(first, gone, async {
            tokio::task::yield_now().await;
            release.send(()).unwrap();
        });
        assert_eq!(first, Ok((Arc::new(1), Answered::Read)));
        assert_eq!(shared.waiting.load(Ordering::SeqCst), 0);
        assert!(shared.last.lock().await.is_none(), "no answer kept for a request that went away");
    }

    #[tokio::test]
    async fn another_key_is_another_read_and_a_failure_is_not_shared() {
        let shared = Reads::default();
        let arrived = ticket();
        let (one, two) = tokio::join!(
            shared.get(arrived, "a", || async { Ok::<_, ()>(1) }),
            shared.get(arrived, "b", || async { Ok::<_, ()>(2) })
        );
        assert_eq!((one, two), (Ok((Arc::new(1), Answered::Read)), Ok((Arc::new(2), Answered::Read))));
        let (failed, after) = tokio::join!(
            shared.get(arrived, "a", || async { Err::<usize, _>("down") }),
            shared.get(arrived, "a", || async { Ok::<_, &str>(3) })
        );
        assert_eq!((failed, after), (Err("down"), Ok((Arc::new(3), Answered::Read))));
    }
}
