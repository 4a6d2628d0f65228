//! Why a database statement failed, as far as what to do next differs:
//! read from what the engine answered (its SQLSTATE, MySQL/MariaDB's error
//! number, its message). The shells hand the answer over and act on the
//! [`Cause`]; the rule lives here once.
//!
//! Citus relays a failure of one of its worker nodes to the client as
//! SQLSTATE `XX000` ("internal error") with a message naming the node or
//! the connection to it ("failure on connection marked as essential",
//! "connection to the remote node … failed", "could not … remote …"); at
//! `COMMIT` a node that died between `PREPARE` and `COMMIT PREPARED` is
//! reported the same way. Those are the node's failure, not the file's: a
//! lost connection.

/// Why a statement failed, as far as what to do next differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Cause {
    /// The statement itself: fix the file.
    #[default]
    Statement,
    /// The server accepts no writes (a standby, a read-only replica).
    ReadOnly,
    /// The connection, or a node behind the server, is gone.
    ConnectionLost,
    /// A connection pooler had no server connection in time.
    PoolExhausted,
    /// The mutation's lease was taken by another mutation (it could not
    /// renew it in time); the version stopped before this unit. Never an
    /// engine's answer: the shell finds it so.
    LockLost,
    /// The statement waited for a lock longer than its lock time-out.
    LockTimeout,
    /// The statement ran longer than its statement time-out.
    StatementTimeout,
}

/// Whether a quarantine row of cause `name` is a failure a version's
/// budget absorbed (a tenant's own, [`Cause::is_tenants_own`]), not a
/// tenant put aside for another reason: its shard did not answer
/// (`SHARD_UNREACHABLE`), its schema drifted (`SCHEMA_DRIFT`), an operator
/// cancelled its backfill (`BACKFILL_CANCELLED`).
pub fn absorbed_cause(name: &str) -> bool {
    const ALL: [Cause; 7] = [
        Cause::Statement,
        Cause::ReadOnly,
        Cause::ConnectionLost,
        Cause::PoolExhausted,
        Cause::LockLost,
        Cause::LockTimeout,
        Cause::StatementTimeout,
    ];
    ALL.iter().any(|cause| cause.is_tenants_own() && cause.name() == name)
}

impl Cause {
    /// The name served in a GraphQL error's `extensions.cause` and stored
    /// in a quarantine row.
    pub fn name(self) -> &'static str {
        match self {
            Cause::Statement => "STATEMENT",
            Cause::ReadOnly => "READ_ONLY_SERVER",
            Cause::ConnectionLost => "CONNECTION_LOST",
            Cause::PoolExhausted => "POOL_EXHAUSTED",
            Cause::LockLost => "LOCK_LOST",
            Cause::LockTimeout => "LOCK_TIMEOUT",
            Cause::StatementTimeout => "STATEMENT_TIMEOUT",
        }
    }

    /// A failure of the tenant's own — its statement, a lock or statement
    /// time-out — rather than of the database under every tenant: what a
    /// failure budget may absorb.
    pub fn is_tenants_own(self) -> bool {
        matches!(self, Cause::Statement | Cause::LockTimeout | Cause::StatementTimeout)
    }
}

/// What an engine answered to a failed statement.
#[derive(Debug, Clone, Copy, Default)]
pub struct Answer<'a> {
    /// The SQLSTATE (five characters), empty when none was given.
    pub sqlstate: &'a str,
    /// MySQL/MariaDB's error number, when the engine is one of them.
    pub mysql_number: Option<u32>,
    /// SQL Server's error number, when the engine speaks TDS.
    pub sqlserver_number: Option<u32>,
    /// The engine's message.
    pub message: &'a str,
}

/// Parts of the messages Citus relays, as SQLSTATE `XX000`, when a worker
/// node or the connection to it failed (lowercase).
const CITUS_NODE_FAILURES: &[&str] = &[
    "failure on connection marked as essential",
    "connection to the remote node",
    "remote node",
    "connection not open",
    "could not establish any connections",
    "connection is lost",
    "server closed the connection",
    "ssl syscall error",
    "eof detected",
    "invalid socket",
    "terminating connection",
    "could not commit transaction",
    "failed to commit transaction",
    "could not receive query results",
    "could not get remote",
];

/// The number Babelfish for PostgreSQL answers over TDS for a PostgreSQL
/// error it maps to no SQL Server number (its message is PostgreSQL's).
pub const BABELFISH_UNMAPPED: u32 = 33_557_097;

/// The class of a failure (see the module's documentation): lock time-outs
/// (PostgreSQL 55P03, MySQL/MariaDB 1205, SQL Server 1222 — Babelfish
/// answers PostgreSQL's message under [`BABELFISH_UNMAPPED`]), statement time-outs (PostgreSQL
/// 57014 "statement timeout", MariaDB 1969, MySQL 3024), read-only servers
/// (25006, MySQL/MariaDB 1290 and 1836, SQL Server 3906, any "read-only" message), a
/// pooler's full pool (PgBouncer's `query_wait_timeout`, "no more
/// connections allowed"), connection exceptions (class 08, 57P01–57P03) and
/// node failures Citus relays as `XX000`.
pub fn classify(answer: Answer<'_>) -> Cause {
    let Answer { sqlstate: code, mysql_number, sqlserver_number, message } = answer;
    let babelfish_lock_timeout =
        sqlserver_number == Some(BABELFISH_UNMAPPED) && message.starts_with("canceling statement due to lock timeout");
    if code == "55P03" || mysql_number == Some(1205) || sqlserver_number == Some(1222) || babelfish_lock_timeout {
        Cause::LockTimeout
    } else if (code == "57014" && message.contains("statement timeout")) || matches!(mysql_number, Some(1969 | 3024)) {
        Cause::StatementTimeout
    } else if code == "25006"
        || matches!(mysql_number, Some(1290 | 1836))
        || sqlserver_number == Some(3906)
        || message.contains("read-only")
    {
        Cause::ReadOnly
    } else if message.contains("query_wait_timeout") || message.contains("no more connections allowed") {
        Cause::PoolExhausted
    } else if code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03") || citus_node_failure(answer) {
        Cause::ConnectionLost
    } else {
        Cause::Statement
    }
}

/// Whether `answer` is a Citus worker node's failure relayed as `XX000`.
pub fn citus_node_failure(answer: Answer<'_>) -> bool {
    if answer.sqlstate != "XX000" {
        return false;
    }
    let message = answer.message.to_ascii_lowercase();
    CITUS_NODE_FAILURES.iter().any(|part| message.contains(part))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pg(sqlstate: &str, message: &str) -> Cause {
        classify(Answer { sqlstate, message, ..Answer::default() })
    }

    #[test]
    fn citus_node_failures_relayed_as_internal_errors_are_lost_connections() {
        for message in [
            "failure on connection marked as essential: 127.0.0.1:55602",
            "connection to the remote node postgres@127.0.0.1:55603 failed with the following error: Connection refused",
            "connection not open",
            "could not establish any connections to the node 127.0.0.1:55602 after 5000 ms",
            "could not commit transaction for shard 102200 on at least one active node",
            "SSL SYSCALL error: EOF detected",
        ] {
            assert_eq!(pg("XX000", message), Cause::ConnectionLost, "{message}");
        }
        // Another internal error stays the statement's.
        assert_eq!(pg("XX000", "could not open relation with OID 4711"), Cause::Statement);
        // The same words under another SQLSTATE are what that SQLSTATE says.
        assert_eq!(pg("42601", "syntax error at or near \"remote node\""), Cause::Statement);
    }

    #[test]
    fn postgres_and_mysql_causes_keep_their_classes() {
        assert_eq!(pg("55P03", "canceling statement due to lock timeout"), Cause::LockTimeout);
        assert_eq!(pg("57014", "canceling statement due to statement timeout"), Cause::StatementTimeout);
        assert_eq!(pg("57014", "canceling statement due to user request"), Cause::Statement);
        assert_eq!(pg("25006", "cannot execute CREATE TABLE in a read-only transaction"), Cause::ReadOnly);
        assert_eq!(pg("08006", "connection failure"), Cause::ConnectionLost);
        assert_eq!(pg("57P01", "terminating connection due to administrator command"), Cause::ConnectionLost);
        assert_eq!(pg("", "query_wait_timeout"), Cause::PoolExhausted);
        let mysql = |number| classify(Answer { sqlstate: "HY000", mysql_number: Some(number), ..Answer::default() });
        assert_eq!(mysql(1205), Cause::LockTimeout);
        assert_eq!(mysql(3024), Cause::StatementTimeout);
        assert_eq!(mysql(1290), Cause::ReadOnly);
        assert_eq!(mysql(1064), Cause::Statement);
    }

    #[test]
    fn sql_server_and_babelfish_numbers_keep_their_classes() {
        let tds = |number, message| classify(Answer { sqlserver_number: Some(number), message, ..Answer::default() });
        assert_eq!(tds(1222, "Lock request time out period exceeded."), Cause::LockTimeout);
        assert_eq!(tds(BABELFISH_UNMAPPED, "canceling statement due to lock timeout"), Cause::LockTimeout);
        assert_eq!(tds(3906, "Failed to update database \"app\" because the database is read-only."), Cause::ReadOnly);
        // SQL Server's 1205 is a deadlock victim, not MySQL's lock wait time-out.
        assert_eq!(tds(1205, "Transaction (Process ID 53) was deadlocked"), Cause::Statement);
        // Babelfish's catch-all number says nothing by itself.
        assert_eq!(tds(BABELFISH_UNMAPPED, "relation \"ledger\" already exists"), Cause::Statement);
        assert_eq!(tds(2714, "There is already an object named 'ledger' in the database."), Cause::Statement);
    }
}
