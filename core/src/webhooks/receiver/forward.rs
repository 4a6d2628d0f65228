//! Forwarding a verified delivery: which of GitHub's headers travel with
//! it, and the report of its attempts. When a failed attempt is retried is
//! [`crate::retry`]'s rule, shared with the migration service's webhook.
//! The shell sends, waits and logs; the decisions are here.

use crate::retry::{self, Attempt};

/// Whether a request header travels with the forwarded delivery: GitHub's
/// own headers (`X-GitHub-*`, `X-Hub-Signature*`), `Content-Type` and
/// `User-Agent`. Hop-by-hop and platform headers (`Host`, `CF-*`,
/// `Content-Length`, …) do not; the body is forwarded byte for byte.
pub fn is_forwarded_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.starts_with("x-github-")
        || lower.starts_with("x-hub-signature")
        || lower == "content-type"
        || lower == "user-agent"
}

/// How forwarding one delivery to one destination ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// Attempts made.
    pub attempts: u32,
    /// How the last one ended.
    pub last: Attempt,
    /// Whether the destination took the delivery.
    pub delivered: bool,
}

impl Report {
    /// The log line for this report. Names the delivery and the destination
    /// kind, never the URL (it may carry a token) or any header value.
    pub fn log_line(&self, destination: &str, event: &str, delivery_id: &str) -> String {
        let last = match self.last {
            Attempt::Status(status) => format!("HTTP {status}"),
            Attempt::Unreachable => "unreachable".to_owned(),
            Attempt::Sent => "sent".to_owned(),
        };
        let outcome = if self.delivered { "forwarded" } else { "NOT forwarded, gave up" };
        let plural = if self.attempts == 1 { "" } else { "s" };
        format!(
            "{outcome}: {event} delivery {delivery_id} to {destination} after {} attempt{plural} (last: {last})",
            self.attempts
        )
    }
}

/// Runs the attempts of one forward: `send(n)` makes attempt `n` (from 1),
/// `wait(ms)` sleeps between them. Both are the shell's I/O; this function
/// only sequences them by [`retry::next_step`].
pub async fn forward_with_retries<SendFn, SendFut, WaitFn, WaitFut>(
    max_attempts: u32,
    mut send: SendFn,
    mut wait: WaitFn,
) -> Report
where
    SendFn: FnMut(u32) -> SendFut,
    SendFut: Future<Output = Attempt>,
    WaitFn: FnMut(u32) -> WaitFut,
    WaitFut: Future<Output = ()>,
{
    let tries = retry::run(max_attempts, &mut send, &mut wait).await;
    Report { attempts: tries.attempts, last: tries.last, delivered: tries.delivered }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn githubs_headers_travel_platform_headers_do_not() {
        for name in
            ["X-GitHub-Event", "x-github-delivery", "X-GitHub-Hook-ID", "X-Hub-Signature-256", "X-Hub-Signature"]
        {
            assert!(is_forwarded_header(name), "{name}");
        }
        assert!(is_forwarded_header("Content-Type") && is_forwarded_header("user-agent"));
        for name in ["host", "content-length", "cf-connecting-ip", "x-forwarded-for", "authorization", "cookie"] {
            assert!(!is_forwarded_header(name), "{name}");
        }
    }

    /// Polls a future that never waits on anything external to completion.
    fn block_on<F: Future>(future: F) -> F::Output {
        let mut future = std::pin::pin!(future);
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        loop {
            if let std::task::Poll::Ready(value) = future.as_mut().poll(&mut context) {
                return value;
            }
        }
    }

    #[test]
    fn the_loop_follows_next_step() {
        let answers = [Attempt::Unreachable, Attempt::Status(502), Attempt::Status(202)];
        let waits = std::cell::RefCell::new(Vec::new());
        let report = block_on(forward_with_retries(
            3,
            |n| std::future::ready(answers[n as usize - 1]),
            |ms| {
                waits.borrow_mut().push(ms);
                std::future::ready(())
            },
        ));
        assert_eq!(report, Report { attempts: 3, last: Attempt::Status(202), delivered: true });
        assert_eq!(*waits.borrow(), [250, 500]);
        assert_eq!(
            report.log_line("FORWARD_URL", "push", "d-1"),
            "forwarded: push delivery d-1 to FORWARD_URL after 3 attempts (last: HTTP 202)"
        );

        let refused = block_on(forward_with_retries(5, |_| std::future::ready(Attempt::Status(410)), |_| async {}));
        assert_eq!(refused, Report { attempts: 1, last: Attempt::Status(410), delivered: false });
        assert_eq!(
            refused.log_line("queue", "issues", "d-2"),
            "NOT forwarded, gave up: issues delivery d-2 to queue after 1 attempt (last: HTTP 410)"
        );

        let down = block_on(forward_with_retries(2, |_| std::future::ready(Attempt::Unreachable), |_| async {}));
        assert_eq!(down, Report { attempts: 2, last: Attempt::Unreachable, delivered: false });
    }
}
