//! The de-duplication store: a Durable Object per delivery (named by
//! `dedup::key`), because a Durable Object runs one request at a time for
//! its name and its storage is consistent — twenty concurrent copies of a
//! delivery are twenty requests to one object, and exactly one of them gets
//! the claim. (Workers KV is eventually consistent and has no
//! compare-and-set; D1 would serialize every delivery of every hook through
//! one database.) The rules are `strata_core::webhooks::receiver::dedup`;
//! this file stores what they say and sets the alarm that forgets it.

use strata_core::webhooks::receiver::dedup::{self, Answer, DEDUP_BINDING, Request as LedgerRequest};
use worker::{Date, Env, Method, Request, RequestInit, Result, Stub, console_warn};

/// The storage key of the one entry each object holds.
const ENTRY: &str = "entry";

fn now_ms() -> u64 {
    Date::now().as_millis()
}

/// The Durable Object class. `#[durable_object]` generates its JavaScript
/// glue, which carries no doc comments.
#[allow(missing_docs)]
mod object {
    use super::{ENTRY, now_ms};
    use strata_core::webhooks::receiver::dedup::{self, Change, Entry, Request as LedgerRequest};
    use worker::{DurableObject, Env, Request, Response, Result, State, durable_object};

    /// One delivery's record.
    #[durable_object]
    pub struct DeliveryLedger {
        state: State,
    }

    impl DurableObject for DeliveryLedger {
        fn new(state: State, _env: Env) -> Self {
            Self { state }
        }

        async fn fetch(&self, mut request: Request) -> Result<Response> {
            let Ok(ledger_request) = request.json::<LedgerRequest>().await else {
                return Response::error("not a ledger request", 400);
            };
            let storage = self.state.storage();
            let stored: Option<Entry> = storage.get(ENTRY).await?;
            let outcome = dedup::handle(stored, ledger_request, now_ms());
            self.apply(outcome.change, outcome.alarm_at_ms).await?;
            Response::from_json(&outcome.answer)
        }

        async fn alarm(&self) -> Result<Response> {
            let stored: Option<Entry> = self.state.storage().get(ENTRY).await?;
            let outcome = dedup::on_alarm(stored, now_ms());
            self.apply(outcome.change, outcome.alarm_at_ms).await?;
            Response::empty()
        }
    }

    impl DeliveryLedger {
        async fn apply(&self, change: Change, alarm_at_ms: Option<u64>) -> Result<()> {
            let storage = self.state.storage();
            match change {
                Change::Keep => {}
                Change::Put(entry) => storage.put(ENTRY, entry).await?,
                Change::Delete => {
                    storage.delete(ENTRY).await?;
                    storage.delete_alarm().await?;
                }
            }
            if let Some(at) = alarm_at_ms {
                storage.set_alarm(at as i64).await?;
            }
            Ok(())
        }
    }
}

/// A claim taken on one delivery, to be settled when its forward ends.
pub(crate) struct Ledger {
    stub: Stub,
}

/// What claiming a delivery said.
pub(crate) enum Claimed {
    /// Forward it (and settle the ledger after); `None` when the store could
    /// not be asked — the delivery is forwarded anyway (twice is better than
    /// never) and that is logged.
    First(Option<Ledger>),
    /// A copy of a delivery already forwarded or being forwarded: the log line.
    Duplicate(String),
}

async fn ask(stub: &Stub, request: &LedgerRequest) -> Result<Answer> {
    let body = serde_json::to_string(request)?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post).with_body(Some(body.into()));
    let request = Request::new_with_init("https://ledger/", &init)?;
    stub.fetch_with_request(request).await?.json().await
}

/// Claims the delivery `(hook_id, id)` of event `event` before it is forwarded.
pub(crate) async fn claim(env: &Env, event: &str, hook_id: Option<&str>, id: &str, window_ms: u64) -> Claimed {
    let stub = env.durable_object(DEDUP_BINDING).and_then(|namespace| namespace.get_by_name(&dedup::key(hook_id, id)));
    let answer = match &stub {
        Ok(stub) => ask(stub, &LedgerRequest::Claim { window_ms }).await,
        Err(error) => Err(error.to_string().into()),
    };
    match (answer, stub) {
        (Ok(Answer::Duplicate { entry }), _) => {
            Claimed::Duplicate(dedup::duplicate_log_line(event, id, hook_id, &entry, now_ms()))
        }
        (Ok(Answer::First), Ok(stub)) => Claimed::First(Some(Ledger { stub })),
        _ => {
            console_warn!(
                "{DEDUP_BINDING} could not be asked about {event} delivery {id}: forwarding it without de-duplication"
            );
            Claimed::First(None)
        }
    }
}

impl Ledger {
    /// Records how the forward ended: kept for the window when `delivered`,
    /// released otherwise.
    pub(crate) async fn settle(self, delivered: bool, window_ms: u64) {
        if ask(&self.stub, &LedgerRequest::Settle { delivered, window_ms }).await.is_err() {
            console_warn!("{DEDUP_BINDING}: a forward's end could not be recorded (its claim lapses by itself)");
        }
    }
}

/// Whether the store remembers delivery `(hook_id, id)` (forwarded, or being
/// forwarded); false when it cannot be asked (the run then redelivers, which
/// at worst forwards twice).
pub(crate) async fn seen(env: &Env, hook_id: &str, id: &str) -> bool {
    let Ok(stub) =
        env.durable_object(DEDUP_BINDING).and_then(|namespace| namespace.get_by_name(&dedup::key(Some(hook_id), id)))
    else {
        return false;
    };
    matches!(ask(&stub, &LedgerRequest::Seen).await, Ok(Answer::Seen { seen: true }))
}
