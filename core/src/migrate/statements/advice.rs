//! The advice a refusal of transaction control ends with: how the file's
//! format marks it to run outside any transaction, or, for a backfill
//! (whose batches each run in a transaction of their own), what to do
//! instead.

/// After "remove it ": why the statement is not needed, and the way out.
pub(super) fn remove(mark: &Option<&'static str>) -> String {
    match mark {
        Some(mark) => format!(
            "(the service commits each schema's migrations itself), or mark the file with {mark} to run it outside \
             any transaction"
        ),
        None => "(a backfill commits each of its batches itself)".into(),
    }
}

/// After "cannot run inside a transaction; ": where it can run.
pub(super) fn run_outside(mark: &Option<&'static str>) -> String {
    match mark {
        Some(mark) => {
            format!("mark the file with {mark} to run it outside one (alone, recorded right after it succeeds)")
        }
        None => "a backfill runs each batch in one: write it in a file of its own, marked to run outside one".into(),
    }
}

/// After "correct the text": the way out a marked file has.
pub(super) fn or_mark(mark: &Option<&'static str>) -> String {
    mark.map(|mark| format!(", or mark the file with {mark}")).unwrap_or_default()
}
