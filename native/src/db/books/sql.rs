//! The statements of the service's books, written once for the three sqlx
//! dialects: each dialect says what differs ([`Dialect`]: its placeholders,
//! how it asks whether a table exists, how it reads a time back, how an
//! insert updates the row it collides with), and [`BooksSql::new`] writes
//! every statement from that. A statement only one dialect can say (an
//! insert returning its id) is a field of the dialect, not a branch here.

/// How a dialect writes what the books' statements need.
pub(crate) struct Dialect {
    /// Placeholders numbered `$1`, `$2`, … (PostgreSQL); else `?`.
    pub(crate) numbered: bool,
    /// Counts the table `{table}` of the `svc` schema: 0 before it exists.
    pub(crate) table_count: &'static str,
    /// Counts the column `{column}` of the table `{table}` of the `svc`
    /// schema: 0 in books written before the column was added.
    pub(crate) column_count: &'static str,
    /// A text column's null, typed (for a column books written before it
    /// do not have).
    pub(crate) null_text: &'static str,
    /// The `created` column read back as RFC 3339 UTC text.
    pub(crate) created: &'static str,
    /// The current time, as a fingerprint's `created` is stored.
    pub(crate) now: &'static str,
    /// How an insert colliding with a row of the same key updates it.
    pub(crate) upsert: Upsert,
    /// The quarantine's `failures` column as an update of a collision
    /// names the stored row's.
    pub(crate) stored_failures: &'static str,
    /// The stored fingerprints as text: `db_schema, fingerprint, recorded`.
    pub(crate) select_fingerprints: &'static str,
    /// A bound RFC 3339 time as the column stores it.
    pub(crate) bound_time: &'static str,
    /// An insert reads its row's id back with `returning id`; else it asks
    /// the connection for the last inserted id (MySQL, MariaDB).
    pub(crate) returns_id: bool,
    /// How text is written into a statement sent whole, its values in its
    /// text ([`written`]), where that saves a round trip: PostgreSQL's
    /// unnamed statements (the pooler-safe way) are prepared, then run —
    /// two round trips — where a statement sent whole takes one.
    pub(crate) quote: Option<fn(&str) -> String>,
    /// A page of the tenant list in the database ([`tenant_page`]):
    /// `{select}` (`tenantSelectSQL` as a subquery) with its first column
    /// named `strata_name` — where the dialect can name one column of a
    /// subquery of any width (PostgreSQL's alias list may be shorter than
    /// the columns) — the rows after `$1` (none: from the first) in byte
    /// order, `$2` of them (none: all); else the page is kept as the list
    /// streams by.
    pub(crate) tenant_page: Option<&'static str>,
    /// The first statement of a backfill's claim by a background runner
    /// ([`crate::db::books::Books::claim_backfill_in_turn`]): takes a lock
    /// held until the claim's transaction ends, that one claim at a time
    /// holds on the server, so the runners read before a claim count every
    /// claim committed before it.
    pub(crate) claims_lock: &'static str,
}

/// How many rows `subquery` (`tenantSelectSQL` as one, core's
/// `statements::subquery`) lists.
pub(crate) fn tenant_count(subquery: &str) -> String {
    format!("select count(*) from {subquery} strata_count")
}

/// A page of the rows `subquery` lists, by the dialect's `template`
/// ([`Dialect::tenant_page`]).
pub(crate) fn tenant_page(template: Option<&str>, subquery: &str) -> Option<String> {
    template.map(|template| template.replace("{select}", subquery))
}

/// A value written into a statement sent whole ([`written`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Literal<'a> {
    /// Text, written quoted.
    Text(&'a str),
    /// An integer, written as the number.
    Int(i64),
    /// SQL's null.
    Null,
}

impl<'a> Literal<'a> {
    /// Text, or null.
    pub(crate) fn text(value: Option<&'a str>) -> Self {
        value.map_or(Literal::Null, Literal::Text)
    }
}

/// `sql` — one of the books' own statements, its placeholders numbered
/// `$1`, `$2`, … and no `$` anywhere else — with each placeholder replaced
/// by its value in `values`, text quoted by `quote` (the dialect's
/// [`Dialect::quote`]). A placeholder without a value stays as it is.
pub(crate) fn written(sql: &str, values: &[Literal<'_>], quote: fn(&str) -> String) -> String {
    let mut out = String::with_capacity(sql.len() + 16 * values.len());
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let digits = rest[at + 1..].bytes().take_while(u8::is_ascii_digit).count();
        let number: usize = rest[at + 1..at + 1 + digits].parse().unwrap_or(0);
        match number.checked_sub(1).and_then(|index| values.get(index)) {
            Some(Literal::Text(text)) => out.push_str(&quote(text)),
            Some(Literal::Int(n)) => out.push_str(&n.to_string()),
            Some(Literal::Null) => out.push_str("null"),
            None => out.push_str(&rest[at..at + 1 + digits]),
        }
        rest = &rest[at + 1 + digits..];
    }
    out.push_str(rest);
    out
}

/// How an insert updates the row whose key it collides with.
#[derive(Clone, Copy)]
pub(crate) enum Upsert {
    /// `on conflict (key) do update set c = excluded.c` (PostgreSQL, SQLite).
    OnConflict,
    /// `on duplicate key update c = values(c)` (MySQL, MariaDB).
    OnDuplicateKey,
}

impl Upsert {
    /// The tail of an insert: on a collision over `key`, `columns` take the
    /// inserted values and `also` (more assignments) applies.
    fn tail(self, key: &str, columns: &[&str], also: &str) -> String {
        let (head, value): (String, fn(&str) -> String) = match self {
            Upsert::OnConflict => (format!(" on conflict ({key}) do update set "), |c| format!("excluded.{c}")),
            Upsert::OnDuplicateKey => (" on duplicate key update ".to_string(), |c| format!("values({c})")),
        };
        let mut sets: Vec<String> = columns.iter().map(|c| format!("{c} = {}", value(c))).collect();
        if !also.is_empty() {
            sets.push(also.to_string());
        }
        head + &sets.join(", ")
    }

    /// `insert into {into}` that inserts nothing (no error) when a row with
    /// the same `key` exists.
    fn insert_unless_taken(self, into: &str, key: &str) -> String {
        match self {
            Upsert::OnConflict => format!("insert into {into} on conflict ({key}) do nothing"),
            Upsert::OnDuplicateKey => format!("insert ignore into {into}"),
        }
    }
}

/// A dialect's statements over the `svc` tables. The `*_installed`
/// statements return a count: 0 before the table exists.
pub(crate) struct BooksSql {
    /// Whether `svc.svc_migrations` exists.
    pub(crate) installed: String,
    /// `filename, name, db_schema, migration_type, checksum` of every
    /// recorded migration.
    pub(crate) select_applied: String,
    /// `db_schema, filename, checksum, migration_type` of every recorded
    /// migration, ordered by schema.
    pub(crate) select_recorded: String,
    /// Every version.
    pub(crate) select_versions: Traced,
    /// The versions that applied a file (bound: the file).
    pub(crate) select_versions_by_file: Traced,
    /// One version (bound: its id).
    pub(crate) select_version: Traced,
    /// The lowest ids above one (bound: that id, how many), ascending.
    pub(crate) select_versions_after: Traced,
    /// The highest ids below one (bound: that id, how many), descending.
    pub(crate) select_versions_before: Traced,
    /// How many versions there are.
    pub(crate) count_versions: String,
    /// Whether `svc.svc_versions` has `trace_id` (books written before it
    /// was added do not, until a read-write start adds it).
    pub(crate) version_trace_installed: String,
    /// A version's migrations (bound: its id).
    pub(crate) select_version_migrations: String,
    /// One migration (bound: its id).
    pub(crate) select_migration: String,
    /// A page of a version's migrations (bound: version id, the id after
    /// which the page starts).
    pub(crate) select_migrations_page: String,
    /// The tail of [`BooksSql::store_fingerprints`]'s upsert.
    store_fingerprints_tail: String,
    /// Whether the dialect numbers its placeholders.
    numbered: bool,
    /// Whether `svc.svc_fingerprints` exists.
    pub(crate) fingerprints_installed: String,
    /// `db_schema, fingerprint, recorded` of every schema.
    pub(crate) select_fingerprints: String,
    /// Quarantines a tenant with its failures, or counts one more failure
    /// of one already there, the latest error kept (bound: the ten columns
    /// of a quarantine row).
    pub(crate) quarantine: String,
    /// Whether `svc.svc_quarantine` exists.
    pub(crate) quarantine_installed: String,
    /// The quarantined tenants, by name.
    pub(crate) select_quarantine: String,
    /// Releases one tenant (bound: its name).
    pub(crate) release_quarantined: String,
    /// Whether `svc.svc_rollouts` exists.
    pub(crate) rollouts_installed: String,
    /// `id, doc, revision` of every rollout, oldest first.
    pub(crate) select_rollouts: String,
    /// Compare-and-set of a rollout's document (bound: doc, updated, id,
    /// revision read).
    pub(crate) update_rollout: String,
    /// Whether `svc.svc_directory` exists.
    pub(crate) directory_installed: String,
    /// `tenant, shard` of every tenant the shard directory knows.
    pub(crate) select_directory: String,
    /// Says where a tenant was seen (bound: tenant, shard).
    pub(crate) put_directory: String,
    /// Forgets a tenant (bound: tenant).
    pub(crate) drop_directory: String,
    /// Inserts a version row (bound: name, created, request id, trace id);
    /// its id comes back as [`BooksSql::returns_id`] says.
    pub(crate) insert_version: String,
    /// Inserts a rollout unless its id is taken (bound: id, doc, updated).
    pub(crate) insert_rollout: String,
    /// Whether an insert returns its row's id (`returning id`); else the
    /// connection's last insert id is the row's.
    pub(crate) returns_id: bool,
    /// How text is written into a statement sent whole
    /// ([`Dialect::quote`]).
    pub(crate) quote: Option<fn(&str) -> String>,
    /// [`Dialect::tenant_page`].
    pub(crate) tenant_page: Option<&'static str>,
    /// Records a file's new checksum in every schema (bound: checksum,
    /// file, checksum).
    pub(crate) update_checksum: String,
    /// Removes every record of a file (bound: file).
    pub(crate) delete_migrations: String,
    /// Removes the record of a file in one schema (bound: file, schema).
    pub(crate) delete_record: String,
    /// The API tokens' and the audit log's statements.
    pub(crate) access: AccessSql,
    /// The backfills' statements.
    pub(crate) backfills: BackfillSql,
}

/// A select of versions (`id, name, created, request_id, trace_id`) in
/// books with `svc_versions.trace_id`, and in books without it (null).
pub(crate) struct Traced {
    /// The select in books with the column.
    pub(crate) traced: String,
    /// The select in books without it.
    pub(crate) untraced: String,
}

impl Traced {
    /// The select for books that have the column, or not.
    pub(crate) fn of(&self, traced: bool) -> &str {
        if traced { &self.traced } else { &self.untraced }
    }
}

/// A dialect's statements over `svc.svc_tokens` and `svc.svc_audit`.
pub(crate) struct AccessSql {
    /// Whether `svc.svc_tokens` exists.
    pub(crate) tokens_installed: String,
    /// `name, role, hash, created, expires, owner` of every API token, by name.
    pub(crate) select_tokens: String,
    /// Whether `svc.svc_tokens` has `owner` (books written before it was
    /// added do not, until a read-write start adds it).
    pub(crate) token_owner_installed: String,
    /// [`AccessSql::select_tokens`] of books without `owner` (null).
    pub(crate) select_tokens_without_owner: String,
    /// Stores a token (bound: name, role, hash, created, expires, owner); no row
    /// when the name is taken.
    pub(crate) insert_token: String,
    /// Removes a token (bound: its name).
    pub(crate) delete_token: String,
    /// Whether `svc.svc_audit` exists.
    pub(crate) audit_installed: String,
    /// The audit rows (`id, at, actor, action, target, request_id, outcome,
    /// prev, hash, signature, trace_id`) written at the bound time or later
    /// among the bound number of the newest, oldest first.
    pub(crate) select_audit: String,
    /// Whether `svc.svc_audit` has `trace_id` (books written before it was
    /// added do not, until a read-write start adds it).
    pub(crate) audit_trace_installed: String,
    /// [`AccessSql::select_audit`] of books without `trace_id` (null).
    pub(crate) select_audit_untraced: String,
    /// Whether `svc.svc_audit` has `signature` (added a release before
    /// `trace_id`).
    pub(crate) audit_signature_installed: String,
    /// [`AccessSql::select_audit`] of books without `signature` nor
    /// `trace_id` (null: the rows are unsigned).
    pub(crate) select_audit_without_signature: String,
    /// `id, hash` of the newest audit row.
    pub(crate) last_audit: String,
    /// Appends an audit row (bound: the eleven columns); no row when another
    /// writer took its id.
    pub(crate) append_audit: String,
}

/// A dialect's statements over `svc.svc_backfills`.
pub(crate) struct BackfillSql {
    /// Whether `svc.svc_backfills` exists.
    pub(crate) installed: String,
    /// [`Dialect::claims_lock`].
    pub(crate) claims_lock: &'static str,
    /// Every backfill's row (`db_schema, file, state, after_key, upper_key,
    /// rows_done, batches, rows_estimated, last_error, updated, running_ms`), by schema
    /// and file.
    pub(crate) select: String,
    /// One backfill as a runner takes it (those columns, then `version_id,
    /// name, source_dir, migration_type, contents, checksum, forward,
    /// failure_budget`, its started version; bound: schema, file).
    pub(crate) select_job: String,
    /// Every running backfill as a runner takes it.
    pub(crate) select_running: String,
    /// The running backfills of a file a version started, their rows
    /// (bound: started version id, file).
    pub(crate) select_running_of: String,
    /// Starts a backfill (bound: schema, file, updated, version id, name,
    /// source dir, migration type, contents, checksum, forward, failure
    /// budget).
    pub(crate) register: String,
    /// Starts a failed backfill again in a version, keeping the version
    /// that started it and that version's failure budget (bound: version
    /// id, updated, schema, file).
    pub(crate) restart: String,
    /// How many of the backfills of a file a version started are in each
    /// state, a retry's among them (`state, count`; bound: started version
    /// id, file).
    pub(crate) tally: String,
    /// Each holder's count of running backfills it claimed with a heartbeat
    /// at or after the bound (`holder, count`; bound: fresh after).
    pub(crate) runners: String,
    /// Claims a running backfill for a runner when no other holds it or
    /// its holder's heartbeat is older than the bound (bound: holder,
    /// heartbeat, schema, file, holder, stale before).
    pub(crate) claim: String,
    /// Writes a batch's checkpoint when the runner still holds it and no
    /// other batch was counted since (bound: state, after, upper, rows
    /// done, batches, rows estimated, updated, heartbeat, schema, file,
    /// holder, batches before).
    pub(crate) save: String,
    /// Marks a backfill failed (bound: error, updated, schema, file,
    /// holder).
    pub(crate) fail: String,
    /// Moves the backfills of a schema from one state to another (bound:
    /// to, updated, schema, from).
    pub(crate) move_state: String,
    /// Deletes a backfill's row (bound: schema, file).
    pub(crate) forget: String,
}

/// `sql` with its `?` placeholders numbered `$1`, `$2`, … (none of the
/// books' statements holds a `?` elsewhere).
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(c);
        }
    }
    out
}

impl BooksSql {
    /// Stores the fingerprints of `rows` schemas in one statement (bound,
    /// per row: schema, fingerprint, recorded, version id): a statement per
    /// schema was a round trip per tenant after each version.
    pub(crate) fn store_fingerprints(&self, rows: usize) -> String {
        let mut sql =
            String::from("insert into svc.svc_fingerprints (db_schema, fingerprint, recorded, version_id) values ");
        sql.push_str(&vec!["(?, ?, ?, ?)"; rows].join(", "));
        sql.push_str(&self.store_fingerprints_tail);
        if self.numbered { numbered(&sql) } else { sql }
    }

    /// Every statement of the books in `dialect`.
    pub(crate) fn new(dialect: &Dialect) -> BooksSql {
        let d = dialect;
        let placed = |sql: String| placed(d, sql);
        let count = |table: &str| d.table_count.replace("{table}", table);
        let version = |tail: &str| select_versions(d, tail);
        let migration = |tail: &str| select_migrations(d, tail);
        let returning = if d.returns_id { " returning id" } else { "" };
        let fingerprint_also = format!("created = {}", d.now);
        BooksSql {
            installed: count("svc_migrations"),
            select_applied: "select filename, name, db_schema, migration_type, checksum from svc.svc_migrations \
                             order by id"
                .into(),
            select_recorded: "select db_schema, filename, checksum, migration_type from svc.svc_migrations \
                              order by db_schema"
                .into(),
            select_versions: version("order by id"),
            select_versions_by_file: version(
                "where id in (select version_id from svc.svc_migrations where filename = ?) order by id",
            ),
            select_version: version("where id = ?"),
            select_versions_after: version("where id > ? order by id limit ?"),
            select_versions_before: version("where id < ? order by id desc limit ?"),
            count_versions: "select count(*) from svc.svc_versions".into(),
            version_trace_installed: d.column_count.replace("{table}", "svc_versions").replace("{column}", "trace_id"),
            select_version_migrations: migration("where version_id = ? order by id"),
            select_migration: migration("where id = ?"),
            select_migrations_page: migration(&format!(
                "where version_id = ? and id > ? order by id limit {}",
                crate::db::types::MIGRATIONS_PER_PAGE
            )),
            store_fingerprints_tail: d.upsert.tail("db_schema", &["fingerprint", "recorded", "version_id"], &fingerprint_also),
            numbered: d.numbered,
            fingerprints_installed: count("svc_fingerprints"),
            select_fingerprints: d.select_fingerprints.into(),
            quarantine: quarantine_upsert(d),
            quarantine_installed: count("svc_quarantine"),
            select_quarantine: "select tenant, version_id, file, line, col, cause, message, request_id, quarantined, \
                                failures from svc.svc_quarantine order by tenant"
                .into(),
            release_quarantined: placed("delete from svc.svc_quarantine where tenant = ?".into()),
            rollouts_installed: count("svc_rollouts"),
            select_rollouts: "select id, doc, revision from svc.svc_rollouts order by id".into(),
            update_rollout: placed(
                "update svc.svc_rollouts set doc = ?, updated = ?, revision = revision + 1 where id = ? and revision = ?"
                    .into(),
            ),
            directory_installed: count("svc_directory"),
            select_directory: "select tenant, shard from svc.svc_directory order by tenant".into(),
            put_directory: placed(
                "insert into svc.svc_directory (tenant, shard) values (?, ?)".to_string()
                    + &d.upsert.tail("tenant", &["shard"], ""),
            ),
            drop_directory: placed("delete from svc.svc_directory where tenant = ?".into()),
            insert_version: placed(format!(
                "insert into svc.svc_versions (name, created, request_id, trace_id) values (?, {}, ?, ?){returning}",
                d.bound_time
            )),
            insert_rollout: placed(
                d.upsert.insert_unless_taken("svc.svc_rollouts (id, doc, updated) values (?, ?, ?)", "id"),
            ),
            returns_id: d.returns_id,
            quote: d.quote,
            tenant_page: d.tenant_page,
            update_checksum: placed(
                "update svc.svc_migrations set checksum = ? where filename = ? and checksum <> ?".into(),
            ),
            delete_migrations: placed("delete from svc.svc_migrations where filename = ?".into()),
            delete_record: placed("delete from svc.svc_migrations where filename = ? and db_schema = ?".into()),
            access: AccessSql::new(d),
            backfills: BackfillSql::new(d),
        }
    }
}

/// The versions' columns, then `tail` (a filter, an order), with and
/// without the trace column (a database from before it).
fn select_versions(d: &Dialect, tail: &str) -> Traced {
    let select = |trace: &str| {
        placed(d, format!("select id, name, {}, request_id, {trace} from svc.svc_versions {tail}", d.created))
    };
    Traced { traced: select("trace_id"), untraced: select(&format!("{} as trace_id", d.null_text)) }
}

/// The migrations' columns, then `tail`.
fn select_migrations(d: &Dialect, tail: &str) -> String {
    placed(
        d,
        format!(
            "select id, name, migration_type, source_dir, filename, contents, checksum, db_schema, {} \
             from svc.svc_migrations {tail}",
            d.created
        ),
    )
}

/// `sql` as `d` writes its placeholders.
fn placed(d: &Dialect, sql: String) -> String {
    if d.numbered { numbered(&sql) } else { sql }
}

/// [`BooksSql::quarantine`] in `d`.
fn quarantine_upsert(d: &Dialect) -> String {
    let quarantine_also = format!(
        "failures = {} + 1, {}",
        d.stored_failures,
        match d.upsert {
            // The request that put it aside stays (a rollout's wave knows its
            // own tenants by it, a failed retry between its runs or not).
            Upsert::OnConflict => "quarantined = excluded.quarantined",
            Upsert::OnDuplicateKey => "quarantined = values(quarantined)",
        }
    );
    placed(
        d,
        "insert into svc.svc_quarantine \
         (tenant, version_id, file, line, col, cause, message, request_id, quarantined, failures) \
         values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            .to_string()
            + &d.upsert.tail("tenant", &["version_id", "file", "line", "col", "cause", "message"], &quarantine_also),
    )
}

impl AccessSql {
    /// Every token and audit statement in `d`.
    fn new(d: &Dialect) -> AccessSql {
        let count = |table: &str| d.table_count.replace("{table}", table);
        let placed = |sql: String| placed(d, sql);
        let column_count =
            |table: &str, column: &str| d.column_count.replace("{table}", table).replace("{column}", column);
        let tokens = |owner: &str| {
            format!("select name, role, hash, created, expires, {owner} from svc.svc_tokens order by name")
        };
        // Bound: the earliest time, and how many of the newest ids (they
        // follow each other from 1).
        let audit = |signature: &str, trace_id: &str| {
            placed(format!(
                "select id, at, actor, action, target, request_id, outcome, prev, hash, {signature}, {trace_id} \
                 from svc.svc_audit where at >= ? and id > (select coalesce(max(id), 0) from svc.svc_audit) - ? \
                 order by id"
            ))
        };
        let null = |column: &str| format!("{} as {column}", d.null_text);
        AccessSql {
            tokens_installed: count("svc_tokens"),
            select_tokens: tokens("owner"),
            token_owner_installed: column_count("svc_tokens", "owner"),
            select_tokens_without_owner: tokens(&format!("{} as owner", d.null_text)),
            insert_token: placed(d.upsert.insert_unless_taken(
                "svc.svc_tokens (name, role, hash, created, expires, owner) values (?, ?, ?, ?, ?, ?)",
                "name",
            )),
            delete_token: placed("delete from svc.svc_tokens where name = ?".into()),
            audit_installed: count("svc_audit"),
            select_audit: audit("signature", "trace_id"),
            audit_trace_installed: column_count("svc_audit", "trace_id"),
            select_audit_untraced: audit("signature", &null("trace_id")),
            audit_signature_installed: column_count("svc_audit", "signature"),
            select_audit_without_signature: audit(&null("signature"), &null("trace_id")),
            last_audit: "select id, hash from svc.svc_audit order by id desc limit 1".into(),
            append_audit: placed(d.upsert.insert_unless_taken(
                "svc.svc_audit (id, at, actor, action, target, request_id, outcome, prev, hash, signature, \
                 trace_id) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                "id",
            )),
        }
    }
}

impl BackfillSql {
    /// Every backfill statement in `d`.
    fn new(d: &Dialect) -> BackfillSql {
        let placed = |sql: String| placed(d, sql);
        let backfills = |more: &str, tail: &str| {
            placed(format!(
                "select db_schema, file, state, after_key, upper_key, rows_done, batches, rows_estimated, \
                 last_error, updated, running_ms{more} from svc.svc_backfills {tail}"
            ))
        };
        let job = ", version_id, name, source_dir, migration_type, contents, checksum, forward, failure_budget, \
                   coalesce(started_version, version_id)";
        BackfillSql {
            claims_lock: d.claims_lock,
            installed: d.table_count.replace("{table}", "svc_backfills"),
            select: backfills("", "order by db_schema, file"),
            select_job: backfills(job, "where db_schema = ? and file = ?"),
            select_running: backfills(job, "where state = 'running' order by db_schema, file"),
            select_running_of: backfills(
                "",
                "where state = 'running' and coalesce(started_version, version_id) = ? and file = ? order by db_schema",
            ),
            register: placed(
                "insert into svc.svc_backfills (db_schema, file, state, rows_done, batches, rows_estimated, updated, \
                 version_id, name, source_dir, migration_type, contents, checksum, forward, failure_budget) \
                 values (?, ?, 'running', 0, 0, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    .into(),
            ),
            restart: placed(
                "update svc.svc_backfills set started_version = coalesce(started_version, version_id), \
                 state = 'running', version_id = ?, last_error = null, holder = null, updated = ? \
                 where db_schema = ? and file = ? \
                 and state in ('failed', 'cancelled')"
                    .into(),
            ),
            tally: placed(
                "select state, count(*) from svc.svc_backfills where coalesce(started_version, version_id) = ? \
                 and file = ? group by state"
                    .into(),
            ),
            runners: placed(
                "select holder, count(*) from svc.svc_backfills where state = 'running' and holder is not null \
                 and heartbeat >= ? group by holder"
                    .into(),
            ),
            claim: placed(
                "update svc.svc_backfills set holder = ?, heartbeat = ? where db_schema = ? and file = ? \
                 and state = 'running' and (holder is null or holder = ? or heartbeat < ?)"
                    .into(),
            ),
            save: placed(
                "update svc.svc_backfills set state = ?, after_key = ?, upper_key = ?, rows_done = ?, batches = ?, \
                 rows_estimated = ?, running_ms = ?, last_error = null, updated = ?, heartbeat = ? \
                 where db_schema = ? and file = ? and holder = ? and batches = ? and state = 'running'"
                    .into(),
            ),
            fail: placed(
                "update svc.svc_backfills set state = 'failed', last_error = ?, updated = ?, holder = null \
                 where db_schema = ? and file = ? and holder = ?"
                    .into(),
            ),
            move_state: placed(
                "update svc.svc_backfills set state = ?, updated = ? where db_schema = ? and file = ? and state = ?"
                    .into(),
            ),
            forget: placed("delete from svc.svc_backfills where db_schema = ? and file = ?".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tenant_select_is_counted_and_paged_around_its_subquery() {
        assert_eq!(tenant_count("(select name from t)"), "select count(*) from (select name from t) strata_count");
        let page = tenant_page(Some("select * from {select} as p(n)"), "(select a, b from t)");
        assert_eq!(page.unwrap(), "select * from (select a, b from t) as p(n)");
        assert_eq!(tenant_page(None, "(select a from t)"), None);
    }

    fn test_dialect() -> Dialect {
        Dialect {
            numbered: true,
            table_count: "",
            column_count: "",
            null_text: "",
            created: "",
            now: "",
            upsert: Upsert::OnConflict,
            stored_failures: "",
            select_fingerprints: "",
            bound_time: "?",
            returns_id: true,
            quote: None,
            tenant_page: None,
            claims_lock: "",
        }
    }

    #[test]
    fn placeholders_are_numbered_in_order() {
        assert_eq!(numbered("a = ? and b = ?"), "a = $1 and b = $2");
    }

    #[test]
    fn a_statement_is_written_with_its_values_quoted_by_the_dialect() {
        let quote = strata_core::migrate::ident::quote_string_postgres;
        let sql = numbered("update t set a = ?, b = ?, c = ? where d = ? and e = ? and f = ? and g = ?");
        let values = [
            Literal::Text("it's"),
            Literal::Int(-7),
            Literal::Null,
            Literal::Text("\\'; drop table t; --"),
            Literal::text(None),
            Literal::text(Some("$1")),
            Literal::Int(10),
        ];
        assert_eq!(
            written(&sql, &values, quote),
            "update t set a = E'it''s', b = -7, c = null where d = E'\\\\''; drop table t; --' and e = null \
             and f = E'$1' and g = 10"
        );
        // The tenth placeholder is not the first's value followed by a 0;
        // one without a value stays.
        let ten = numbered(&"?, ".repeat(11));
        let values: Vec<Literal<'_>> = (1..=10).map(Literal::Int).collect();
        assert_eq!(written(&ten, &values, quote), "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, $11, ");
        // Backfill's save and claim, every placeholder written.
        let books = BooksSql::new(&Dialect { quote: Some(quote), ..test_dialect() });
        for (sql, n) in [(&books.backfills.save, 13), (&books.backfills.claim, 6)] {
            let values = vec![Literal::Int(0); n];
            assert!(!written(sql, &values, quote).contains('$'), "{sql}");
            assert!(written(sql, &values[..n - 1], quote).contains(&format!("${n}")), "{sql}");
        }
    }

    #[test]
    fn an_upsert_is_written_in_each_dialects_form() {
        assert_eq!(
            Upsert::OnConflict.tail("tenant", &["shard"], ""),
            " on conflict (tenant) do update set shard = excluded.shard"
        );
        assert_eq!(
            Upsert::OnDuplicateKey.tail("tenant", &["shard", "x"], "n = n + 1"),
            " on duplicate key update shard = values(shard), x = values(x), n = n + 1"
        );
    }
}
