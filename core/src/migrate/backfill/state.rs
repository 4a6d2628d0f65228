//! Where one schema's backfill of one file stands, as the books keep it
//! (`svc_backfills.state`).

/// Where one schema's backfill of one file stands. Ordered as a summary
/// lists them ([`crate::migrate::backfill::summary`]): what needs a look
/// first (running, held, stopped), done last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum State {
    /// Batches remain: a runner runs them (or will, once one claims it).
    Running,
    /// Held by a pause: no runner takes it until it is resumed.
    Paused,
    /// A batch failed; the next version over the tenant (a retry) starts
    /// it again after the last committed batch.
    Failed,
    /// Stopped by a cancel: like a failure, its tenant is quarantined and a
    /// retry starts it again after its last committed batch (its checkpoint
    /// stays: rows are never changed twice).
    Cancelled,
    /// Its last batch committed, with the file's row.
    Done,
}

impl State {
    /// Every state, in a summary's order.
    pub const ALL: [State; 5] = [State::Running, State::Paused, State::Failed, State::Cancelled, State::Done];

    /// As the books store it.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Paused => "paused",
            State::Done => "done",
            State::Failed => "failed",
            State::Cancelled => "cancelled",
        }
    }

    /// From the books (anything else reads as running).
    pub fn parse(text: &str) -> Self {
        match text {
            "paused" => State::Paused,
            "done" => State::Done,
            "failed" => State::Failed,
            "cancelled" => State::Cancelled,
            _ => State::Running,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::State;

    #[test]
    fn each_state_reads_back_as_stored() {
        for state in State::ALL {
            assert_eq!(State::parse(state.as_str()), state);
        }
        assert_eq!(State::parse("anything else"), State::Running);
    }
}
