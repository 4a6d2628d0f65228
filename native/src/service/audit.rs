//! The audit log as the service keeps it: one row for every mutation (who,
//! what, on what, the outcome), every refused operation and every failed
//! authentication (those rate-limited by the caller); read back and
//! verified with core's hash chain (`strata_core::auth::audit`).

use chrono::Utc;
use strata_core::auth::audit::{self, Entry, Sealed};
use strata_core::auth::audit_key::PublicKey;

use crate::db::{AuditWindow, DbError};
use crate::error::AppError;
use crate::service::{Caller, Service};

/// Longest outcome text kept in a row.
const OUTCOME_CHARS: usize = 300;

/// The outcome of `result` as a row says it: `ok`, or `refused: CODE …`
/// (nothing ran) / `failed: CODE …`.
pub(crate) fn outcome<T>(result: &Result<T, AppError>) -> String {
    match result {
        Ok(_) => "ok".to_string(),
        Err(error) => refusal(error),
    }
}

/// [`outcome`] of an error.
pub(crate) fn refusal(error: &AppError) -> String {
    let word = if error.ran_nothing() { "refused" } else { "failed" };
    let text = format!("{word}: {} {}", error.code(), error.public_message());
    text.chars().take(OUTCOME_CHARS).collect()
}

/// A `since` time as the rows store theirs (RFC 3339 UTC, microseconds):
/// an RFC 3339 time, or a date (its midnight UTC). Anything else is
/// refused, naming it: compared as text, `yesterday` would select nothing.
pub(crate) fn since_time(text: &str) -> Result<String, String> {
    let text = text.trim();
    if let Ok(time) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(super::rfc3339(time.with_timezone(&Utc)));
    }
    if let Ok(date) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(super::rfc3339(date.and_time(chrono::NaiveTime::MIN).and_utc()));
    }
    Err(format!(
        "since: {:?} is not a time: give an RFC 3339 time (2026-11-26T09:00:00Z) or a date (2026-11-26)",
        audit::bounded(text)
    ))
}

impl Service {
    /// Runs `work` for `caller` and puts it on record: one row, `action`
    /// on the target `target` names from the result, with its outcome. The
    /// one way an operation is audited.
    pub(crate) async fn audited<T>(
        &self,
        caller: &Caller,
        action: &str,
        work: impl Future<Output = Result<T, AppError>>,
        target: impl FnOnce(&Result<T, AppError>) -> String,
    ) -> Result<T, AppError> {
        let result = work.await;
        self.audit(caller, action, &target(&result), outcome(&result)).await;
        result
    }

    /// Appends one row: `caller` did `action` on `target` with `outcome`.
    /// A row that cannot be written is logged as an error (the operation
    /// it describes has happened); on an engine without the log (SQL
    /// Server) the log line is the record.
    pub(crate) async fn audit(&self, caller: &Caller, action: &str, target: &str, outcome: String) {
        let entry = Entry {
            at: super::rfc3339(Utc::now()),
            actor: caller.recorded(),
            action: action.to_string(),
            target: target.to_string(),
            request_id: caller.request_id.clone(),
            outcome,
            trace_id: crate::traces::current_trace_id(),
        }
        .bounded();
        tracing::info!(actor = %entry.actor, action, target, outcome = %entry.outcome, request_id = %entry.request_id,
            "audit");
        if !self.database.keeps().audit {
            return;
        }
        match self.database.append_audit(entry).await {
            Ok(_) | Err(DbError::OpenedReadOnly) => {}
            Err(error) => tracing::error!(%error, action, "the audit log could not be written"),
        }
    }

    /// The audit log, oldest first; with `since` (RFC 3339), the rows from
    /// then on; with `last`, the newest that many of them — read as such
    /// from the database, never the whole log.
    pub(crate) async fn audit_log(&self, since: Option<&str>, last: Option<u64>) -> Result<Vec<Sealed>, AppError> {
        let since = since.map(since_time).transpose().map_err(AppError::InvalidInput)?;
        let window = AuditWindow { since: since.as_deref(), last };
        let rows = self.database.audit(window).await?;
        // The window's `last` counts ids; `since` may cut inside it.
        let skip = last.map_or(0, |last| rows.len().saturating_sub(usize::try_from(last).unwrap_or(usize::MAX)));
        Ok(rows.into_iter().skip(skip).collect())
    }

    /// Checks the whole chain and its signatures with the configured public
    /// keys and `more` (`--public-key`), and the head kept elsewhere
    /// (`--expect ID:SEAL`) and the first row signed (`--signed-from`): what
    /// it found, or where it breaks.
    pub(crate) async fn verify_audit(
        &self,
        more: &[PublicKey],
        known: audit::Known<'_>,
    ) -> Result<Result<audit::Verified, audit::Broken>, AppError> {
        let rows = self.database.audit(AuditWindow::WHOLE).await?;
        let mut keys = self.config().auth.audit_public_keys.clone();
        keys.extend(more.iter().filter(|key| !self.config().auth.audit_public_keys.contains(key)).cloned());
        Ok(audit::verify_knowing(&rows, &keys, known))
    }

    /// The newest row as `ID:SEAL` (`strata audit head`).
    pub(crate) async fn audit_head(&self) -> Result<Option<String>, AppError> {
        Ok(audit::head(&self.database.audit(AuditWindow { since: None, last: Some(1) }).await?))
    }
}

#[cfg(test)]
mod tests {
    use super::since_time;

    #[test]
    fn since_is_a_time_or_a_date_never_free_text() {
        assert_eq!(since_time("2026-11-26T10:00:00+01:00").unwrap(), "2026-11-26T09:00:00.000000Z");
        assert_eq!(since_time("2026-11-26").unwrap(), "2026-11-26T00:00:00.000000Z");
        assert_eq!(
            since_time("yesterday").unwrap_err(),
            "since: \"yesterday\" is not a time: give an RFC 3339 time (2026-11-26T09:00:00Z) or a date (2026-11-26)"
        );
    }
}
