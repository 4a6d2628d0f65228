//! What the shell sends for a backfill: the reads that find each range,
//! and the batch statement with its placeholder replaced — every key value
//! a bound parameter, never text of the statement; the one exception an
//! integer of an integer column, which [`batch_with_integers`] writes as a
//! number it formats itself.
//!
//! - **Placeholders.** PostgreSQL's are numbered `$1`, `$2`, … and SQL
//!   Server's `@P1`, `@P2`, … in order of appearance in the text core
//!   writes (a statement's own parameters would collide with them: a
//!   backfill's statement has none); MySQL and SQLite use `?`. Each
//!   [`Rendered`] lists what to bind at each placeholder, in order; a value
//!   used twice is bound twice.
//! - **Row values.** A key compares as a row value, `(a, b) > ($1, $2)`,
//!   lexicographically in PostgreSQL, MySQL and SQLite; a one-column key as
//!   `(id) > ($1)`. T-SQL has no row values: there the comparison is
//!   written out, `(a > @P1 or (a = @P2 and b > @P3))`, the same order. The
//!   order of a range (`order by a, b`) is the engine's order of the key, so
//!   collations never disagree with the comparisons.
//! - **One row or a few.** `limit n` where the engine has it, `top (n)` on
//!   SQL Server (whose subqueries keep an `order by` only beside a `top`).
//! - **PostgreSQL types.** Its reads select each key column `::text` (one
//!   bind type for every key), and its predicates cast each placeholder to
//!   its column's type (`$1::bigint`), read once from the catalog by
//!   [`key_types`]: a text-bound value then compares as the column's type.
//!   The casts are type names from the catalog, never key values.
//! - **Key columns** must hold no NULL (a primary key, or a unique key of
//!   `NOT NULL` columns): a row whose key is NULL falls in no range.

use std::ops::Range;

use crate::migrate::backfill::placeholder::{self, BATCH, RANGE};
use crate::migrate::backfill::{Key, KeyValue};
use crate::migrate::driver::Driver;

/// A backfill's statement read once (cut as `placeholder::statement` cuts
/// it), with where each of its placeholders stands: every batch fills the
/// same holes, and the text is tokenized once per backfill, not per batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The statement, its placeholders still in it.
    text: String,
    /// Each placeholder's bytes in `text`, in order (as `placeholder::find`
    /// finds them; every occurrence when the tokenizer cannot read it).
    holes: Vec<Range<usize>>,
}

impl Template {
    /// A ranged backfill's statement ([`batch`], [`batch_with_integers`]):
    /// its `{range}` holes.
    pub fn ranged(driver: Driver, statement: &str) -> Template {
        Template::new(driver, statement, RANGE)
    }

    /// A repeated backfill's statement ([`repeated`]): its `{batch}` holes.
    pub fn repeated(driver: Driver, statement: &str) -> Template {
        Template::new(driver, statement, BATCH)
    }

    /// `text`'s statement with the holes of `placeholder` found.
    fn new(driver: Driver, text: &str, placeholder: &str) -> Template {
        let text = placeholder::statement(driver, text);
        let holes = match placeholder::find(driver, text, placeholder) {
            Some(found) => found.into_iter().map(|f| f.bytes).collect(),
            None => text.match_indices(placeholder).map(|(start, _)| start..start + placeholder.len()).collect(),
        };
        Template { text: text.to_string(), holes }
    }

    /// The statement with each hole filled by what `fill` writes, called
    /// once per hole in order.
    fn fill(&self, mut fill: impl FnMut() -> String) -> String {
        let mut out = String::with_capacity(self.text.len() + 48 * self.holes.len());
        let mut copied = 0;
        for hole in &self.holes {
            out.push_str(&self.text[copied..hole.start]);
            out.push_str(&fill());
            copied = hole.end;
        }
        out.push_str(&self.text[copied..]);
        out
    }
}

/// A statement and what to bind at each placeholder, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The statement.
    pub sql: String,
    /// What each placeholder takes, in order of appearance.
    pub binds: Vec<Slot>,
}

/// What a placeholder takes: a value of the range's lower key (column i),
/// of its upper key, or the batch limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Column `i` of the range's lower key (exclusive bound).
    Lower(usize),
    /// Column `i` of the range's upper key (inclusive bound).
    Upper(usize),
    /// The batch's size, as a number of rows.
    Limit,
}

/// The table and key of a ranged backfill, the placeholder already
/// replaced by the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target<'a> {
    /// The engine.
    pub driver: Driver,
    /// The table, as the directive writes it (schema substituted).
    pub table: &'a str,
    /// The key columns, in the directive's order.
    pub key: &'a [String],
    /// PostgreSQL: each key column's type name, as [`key_types`] reads it
    /// (same order as `key`); empty on the other engines. A column without
    /// one gets no cast.
    pub casts: &'a [String],
}

/// PostgreSQL: one row, each key column's type name:
/// `select pg_typeof((null::{table}).{k})::text, …` (fails with the
/// engine's own error when the table or a column does not exist).
pub fn key_types(table: &str, key: &[String]) -> String {
    let types: Vec<String> = key.iter().map(|k| format!("pg_typeof((null::{table}).{k})::text")).collect();
    format!("select {}", types.join(", "))
}

/// The largest key: `select k1, k2 from T order by k1 desc, k2 desc limit
/// 1` (PostgreSQL selects each column `::text`, outside the ordered query,
/// so the order is the column's and never its text's). No binds. Fails
/// when the table or a column does not exist (that is how MySQL and SQLite
/// check them).
pub fn last_key(t: &Target<'_>) -> String {
    let order: Vec<String> = t.key.iter().map(|k| format!("{k} desc")).collect();
    as_text(
        t,
        "strata_last",
        limited(t.driver, &t.key.join(", "), &format!("{} order by {}", t.table, order.join(", ")), 1),
    )
}

/// `select {columns} from {rest}` of at most `rows` rows: `… limit rows`,
/// or `select top (rows) …` on SQL Server.
fn limited(driver: Driver, columns: &str, rest: &str, rows: u64) -> String {
    match driver {
        Driver::SqlServer => format!("select top ({rows}) {columns} from {rest}"),
        _ => format!("select {columns} from {rest} limit {rows}"),
    }
}

/// The rows up to the upper key: `select count(*) from T where (k) <=
/// (upper)` — binds `Upper(i)`. The estimate of the rows a backfill
/// covers, read once when it starts.
pub fn count_up_to(t: &Target<'_>) -> Rendered {
    let mut binds = Binds::new(t);
    let sql = count_in(&mut binds);
    Rendered { sql, binds: binds.slots }
}

/// [`count_up_to`] with the upper key written in ([`batch_with_integers`]'s
/// rule); None where it stays bound.
pub fn count_up_to_with_integers<'t>(t: &'t Target<'_>, upper: &'t Key) -> Option<String> {
    with_integers(t, None, Some(upper), count_in)
}

fn count_in(binds: &mut Binds<'_, '_>) -> String {
    format!("select count(*) from {} where {}", binds.target.table, binds.at_most())
}

/// The ends of the next `count` ranges of `size` keys after the lower key
/// (or from the start when `from_start`), not past the upper key, in key
/// order, in one read: every `size`-th key of the next `size × count` —
/// `select k.. from (select k.., row_number() over (order by k1, k2) as
/// strata_n from T where [(k) > (lower) and] (k) <= (upper) order by k1, k2
/// limit {size × count}) as strata_ahead where strata_n % {size} = 0 order by
/// strata_n` (numbers written in, not values; PostgreSQL selects each column
/// `::text`). Fewer rows than `count`: the range after the last ends at the
/// upper key ([`crate::migrate::backfill::Machine::ends_found`]).
pub fn batch_ends(t: &Target<'_>, from_start: bool, size: u32, count: u32) -> Rendered {
    let mut binds = Binds::new(t);
    let sql = ends_in(&mut binds, from_start, size, count);
    Rendered { sql, binds: binds.slots }
}

/// [`batch_ends`] with the range's keys written in
/// ([`batch_with_integers`]'s rule); None where they stay bound.
pub fn batch_ends_with_integers<'t>(
    t: &'t Target<'_>,
    lower: Option<&'t Key>,
    upper: &'t Key,
    size: u32,
    count: u32,
) -> Option<String> {
    with_integers(t, lower, Some(upper), |binds| ends_in(binds, lower.is_none(), size, count))
}

fn ends_in(binds: &mut Binds<'_, '_>, from_start: bool, size: u32, count: u32) -> String {
    let t = binds.target;
    let (size, count) = (u64::from(size.max(1)), u64::from(count.max(1)));
    let key = t.key.join(", ");
    // PostgreSQL's text columns in the query that orders them (a wrapper
    // would not keep its subquery's order).
    let selected: Vec<String> = match t.driver {
        Driver::Postgres => t.key.iter().map(|k| format!("{k}::text")).collect(),
        _ => t.key.to_vec(),
    };
    let ahead = limited(
        t.driver,
        &format!("{key}, row_number() over (order by {key}) as strata_n"),
        &format!("{} where {} order by {key}", t.table, binds.range(from_start, false)),
        size * count,
    );
    format!(
        "select {} from ({ahead}) as strata_ahead where strata_n % {size} = 0 order by strata_n",
        selected.join(", ")
    )
}

/// The statement of `statement` with every `{range}` replaced by the
/// range's condition over fresh placeholders: `((k) > (lower) and (k) <=
/// (upper))`, or `(k) <= (upper)` when `from_start`. On PostgreSQL every
/// placeholder is cast to its column's type from `t.casts` (`$1::bigint`).
///
/// `statement` may be the file's part whole: the comments around the
/// statement and its final `;` are left out (MySQL prepares one statement
/// without a `;`), and a `{range}` in a string or a comment stays as it is.
/// The two comparisons are parenthesized together, so `where not {range}`
/// or `where a or {range}` mean what they say.
pub fn batch(t: &Target<'_>, statement: &Template, from_start: bool) -> Rendered {
    let mut binds = Binds::new(t);
    let sql = statement.fill(|| binds.range(from_start, true));
    Rendered { sql, binds: binds.slots }
}

/// PostgreSQL: [`batch`] with each key value written as a typed literal
/// (`'500'::bigint`) where [`batch`] has a placeholder — a statement with
/// no bound value, which the simple protocol sends in one message with
/// its transaction's `begin` — when every value the range takes is an
/// integer of a column of an integer type (`bigint`, `integer`,
/// `smallint`): what is written is the number formatted again, never a
/// value's text. None for any other key, column type or engine: those
/// values stay bound.
pub fn batch_with_integers<'t>(
    t: &'t Target<'_>,
    statement: &Template,
    lower: Option<&'t Key>,
    upper: Option<&'t Key>,
) -> Option<String> {
    with_integers(t, lower, upper, |binds| statement.fill(|| binds.range(lower.is_none(), true)))
}

/// What `render` writes with `lower` and `upper` written in as integers
/// ([`batch_with_integers`]'s rule): PostgreSQL only, and None when a value
/// it took is not one.
fn with_integers<'t, 'a>(
    t: &'t Target<'a>,
    lower: Option<&'t Key>,
    upper: Option<&'t Key>,
    render: impl FnOnce(&mut Binds<'t, 'a>) -> String,
) -> Option<String> {
    if t.driver != Driver::Postgres {
        return None;
    }
    let mut binds = Binds { literals: Some((lower, upper)), ..Binds::new(t) };
    let sql = render(&mut binds);
    (!binds.unwritable).then_some(sql)
}

/// The statement of `statement` (as [`batch`] cuts it) with every
/// `{batch}` replaced by a placeholder bound to the batch's size:
/// PostgreSQL `$n::bigint`, SQL Server `@Pn`, MySQL and SQLite `?`.
///
/// Where a limit may go: `limit {batch}` in a subquery works on
/// PostgreSQL and SQLite (`delete from t where id in (select id from t
/// where … limit {batch})`; SQLite's `DELETE … LIMIT` needs a build option,
/// use `rowid in (select rowid … limit {batch})`). MySQL refuses `LIMIT`
/// in an `IN` subquery whatever the limit; use its single-table `UPDATE …
/// LIMIT {batch}` / `DELETE … LIMIT {batch}`, or wrap the subquery in a
/// derived table: `where id in (select id from (select id from t where …
/// limit {batch}) as b)`. SQL Server: `update top ({batch}) t set …` and
/// `delete top ({batch}) from t where …`.
pub fn repeated(driver: Driver, statement: &Template) -> Rendered {
    let mut slots = Vec::new();
    let sql = statement.fill(|| {
        slots.push(Slot::Limit);
        match driver {
            Driver::Postgres => format!("${}::bigint", slots.len()),
            Driver::SqlServer => format!("@P{}", slots.len()),
            _ => "?".to_string(),
        }
    });
    Rendered { sql, binds: slots }
}

/// PostgreSQL: `query` wrapped so each key column is selected `::text`
/// (`alias` names the subquery); `query` itself elsewhere.
fn as_text(t: &Target<'_>, alias: &str, query: String) -> String {
    if t.driver != Driver::Postgres {
        return query;
    }
    let columns: Vec<String> = t.key.iter().map(|k| format!("{k}::text")).collect();
    format!("select {} from ({query}) as {alias}", columns.join(", "))
}

/// The placeholders of one rendered statement, numbered in the order they
/// are written.
struct Binds<'t, 'a> {
    target: &'t Target<'a>,
    slots: Vec<Slot>,
    /// The range's lower and upper keys, written as integer literals
    /// instead of placeholders ([`batch_with_integers`]).
    literals: Option<(Option<&'t Key>, Option<&'t Key>)>,
    /// A value [`Binds::literals`] could not write as an integer.
    unwritable: bool,
}

impl<'t, 'a> Binds<'t, 'a> {
    fn new(target: &'t Target<'a>) -> Self {
        Binds { target, slots: Vec::new(), literals: None, unwritable: false }
    }

    /// The next placeholder, taking `slot`, cast to column `column`'s type
    /// on PostgreSQL.
    fn placeholder(&mut self, slot: Slot, column: usize) -> String {
        if let Some((lower, upper)) = self.literals {
            let key = match slot {
                Slot::Lower(_) => lower,
                Slot::Upper(_) => upper,
                Slot::Limit => None,
            };
            return match key.and_then(|key| self.integer(key, column)) {
                Some(literal) => literal,
                None => {
                    self.unwritable = true;
                    String::new()
                }
            };
        }
        self.slots.push(slot);
        match self.target.driver {
            Driver::Postgres => match self.target.casts.get(column).filter(|cast| !cast.is_empty()) {
                Some(cast) => format!("${}::{cast}", self.slots.len()),
                None => format!("${}", self.slots.len()),
            },
            Driver::SqlServer => format!("@P{}", self.slots.len()),
            _ => "?".to_string(),
        }
    }

    /// `key`'s value in `column` as a typed integer literal, when the
    /// column's type is an integer type and the value an integer.
    fn integer(&self, key: &Key, column: usize) -> Option<String> {
        let cast = self.target.casts.get(column)?;
        if !matches!(cast.as_str(), "bigint" | "integer" | "smallint") {
            return None;
        }
        let n = match key.get(column)? {
            KeyValue::Int(n) => *n,
            KeyValue::Text(text) => text.parse::<i64>().ok()?,
        };
        Some(format!("'{n}'::{cast}"))
    }

    /// The key compared with the lower (`>`) or upper (`<=`) key: `(k1,
    /// k2) > (v1, v2)`, or written out where the engine has no row values
    /// (SQL Server): `(k1 > v1 or (k1 = v2 and k2 > v3))` — `k1 > v1` for
    /// one column — each value bound where it is used.
    fn compared(&mut self, slot: fn(usize) -> Slot, operator: &str) -> String {
        let key = self.target.key;
        if self.target.driver != Driver::SqlServer {
            let values: Vec<String> = (0..key.len()).map(|i| self.placeholder(slot(i), i)).collect();
            return format!("({}) {operator} ({})", key.join(", "), values.join(", "));
        }
        // k1 op v, or k1 strictly-op v or (k1 = v and (the rest)).
        let strict = if operator == "<=" { "<" } else { operator };
        let mut written = String::new();
        for (i, column) in key.iter().enumerate() {
            let last = i + 1 == key.len();
            let value = self.placeholder(slot(i), i);
            match last {
                true => written.push_str(&format!("{column} {operator} {value}")),
                false => {
                    let equal = self.placeholder(slot(i), i);
                    written.push_str(&format!("({column} {strict} {value} or ({column} = {equal} and "));
                }
            }
        }
        written.push_str(&"))".repeat(key.len().saturating_sub(1)));
        written
    }

    /// `(k) <= (upper)`.
    fn at_most(&mut self) -> String {
        self.compared(Slot::Upper, "<=")
    }

    /// `(k) > (lower) and (k) <= (upper)` (parenthesized when `grouped`),
    /// or `(k) <= (upper)` when `from_start`.
    fn range(&mut self, from_start: bool, grouped: bool) -> String {
        if from_start {
            return self.at_most();
        }
        let lower = self.compared(Slot::Lower, ">");
        let condition = format!("{lower} and {}", self.at_most());
        if grouped { format!("({condition})") } else { condition }
    }
}

/// A MySQL or MariaDB replica's status, newest name first (MySQL 8.0.22
/// and MariaDB 10.5.1 renamed `SHOW SLAVE STATUS`), and the column of its
/// lag under each name it has had.
pub const REPLICA_STATUS: [&str; 2] = ["show replica status", "show slave status"];

/// The columns of [`REPLICA_STATUS`] that hold the seconds a replica is
/// behind its source.
pub const SECONDS_BEHIND: [&str; 2] = ["Seconds_Behind_Master", "Seconds_Behind_Source"];

/// The read of how far the server's replicas replay behind it, where the
/// engine tells (None elsewhere): one row of the replicas listed, those
/// whose state this role may see, and the largest replay lag in
/// milliseconds (0 when none lags) — PostgreSQL's `pg_stat_replication`
/// on the primary. [`crate::migrate::backfill::pace::replica_lag`] reads it.
pub fn replica_lag(driver: Driver) -> Option<&'static str> {
    match driver {
        Driver::Postgres => Some(
            "select count(*), count(state), \
             coalesce((extract(epoch from max(replay_lag)) * 1000)::bigint, 0) from pg_stat_replication",
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
