//! A SQL Server client for the tests' own reads and writes (tiberius, as
//! the driver uses; sqlx has no SQL Server).

use serde_json::{Value, json};
use tiberius::{Client, ColumnData, Config};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

/// A connection of the tests.
pub(crate) type Connection = Client<Compat<TcpStream>>;

/// Connects with an ADO connection string.
pub(crate) async fn connect(ado: &str) -> Connection {
    let config = Config::from_ado_string(ado).unwrap_or_else(|e| panic!("{ado}: {e}"));
    let tcp = TcpStream::connect(config.get_addr()).await.unwrap_or_else(|e| panic!("{}: {e}", config.get_addr()));
    tcp.set_nodelay(true).unwrap();
    Client::connect(config, tcp.compat_write()).await.unwrap_or_else(|e| panic!("connecting: {e}"))
}

/// Creates database `name` on the server of `STRATA_TEST_SQLSERVER_URL`
/// (dropped first if it exists); [`create_database_on`] another's. One at a time in this process, and again
/// when another process's creation raced it: Babelfish answers two
/// concurrent `create database` with "tuple concurrently updated" (its
/// catalog rows, PostgreSQL's).
pub(crate) async fn create_database(name: &str) {
    let url = std::env::var("STRATA_TEST_SQLSERVER_URL").expect("STRATA_TEST_SQLSERVER_URL");
    create_database_on(&url, name).await;
}

/// Creates database `name` on the server `url` reaches (an ADO
/// connection string without a database), as [`create_database`] does.
pub(crate) async fn create_database_on(url: &str, name: &str) {
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _turn = ONE_AT_A_TIME.lock().await;
    let mut admin = connect(url).await;
    let statement = format!("if db_id('{name}') is not null drop database {name}; create database {name};");
    for attempt in 1.. {
        let outcome = match admin.simple_query(&statement).await {
            Ok(stream) => stream.into_results().await.map(|_| ()),
            Err(e) => Err(e),
        };
        match outcome {
            Ok(()) => return,
            Err(e) if attempt < 10 && e.to_string().contains("concurrently updated") => {
                tokio::time::sleep(std::time::Duration::from_millis(200 * attempt)).await;
            }
            Err(e) => panic!("{statement}: {e}"),
        }
    }
}

/// Runs a batch (several statements, no `GO`), draining its results.
pub(crate) async fn batch(conn: &mut Connection, sql: &str) {
    let stream = conn.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    stream.into_results().await.unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// The first result set of a query, each column as text, an integer or
/// null.
pub(crate) async fn rows(conn: &mut Connection, sql: &str) -> Vec<Vec<Value>> {
    let stream = conn.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    let rows = stream.into_first_result().await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows.into_iter().map(|row| row.into_iter().map(value).collect()).collect()
}

fn value(data: ColumnData<'static>) -> Value {
    match data {
        ColumnData::U8(n) => n.map_or(Value::Null, |n| json!(n)),
        ColumnData::I16(n) => n.map_or(Value::Null, |n| json!(n)),
        ColumnData::I32(n) => n.map_or(Value::Null, |n| json!(n)),
        ColumnData::I64(n) => n.map_or(Value::Null, |n| json!(n)),
        ColumnData::Bit(b) => b.map_or(Value::Null, |b| json!(i64::from(b))),
        ColumnData::String(s) => s.map_or(Value::Null, |s| Value::String(s.into_owned())),
        other => panic!("a column the tests do not read: {other:?} (cast it to nvarchar or int)"),
    }
}

/// `sql` run "in" `schema` as the other engines run it (PostgreSQL's
/// search path, MySQL's `use`): SQL Server has no session schema, so in
/// `svc` each name of the service's tables (`svc_…`) not already qualified
/// is qualified with it, and in another schema each table named bare after
/// `from`, `join`, `into` or `update`. A trailing `limit N` becomes `top (N)`.
pub(crate) fn qualified(schema: &str, sql: &str) -> String {
    let sql = top_for_limit(sql);
    if schema != "svc" {
        return tables_in(schema, &sql);
    }
    let sql = sql.as_str();
    let mut out = String::with_capacity(sql.len() + 16);
    let mut rest = sql;
    while let Some(at) = rest.find("svc_") {
        let before = rest[..at].chars().next_back().or(out.chars().next_back());
        out.push_str(&rest[..at]);
        let qualify = !before.is_some_and(|c| c == '.' || c == '[' || c == '\'' || c == '_' || c.is_alphanumeric());
        if qualify {
            out.push_str("svc.");
        }
        out.push_str("svc_");
        rest = &rest[at + 4..];
    }
    out.push_str(rest);
    out
}

/// `select … limit N` as T-SQL writes it: `select top (N) …`.
fn top_for_limit(sql: &str) -> String {
    let trimmed = sql.trim_end().trim_end_matches(';');
    let Some((body, count)) = trimmed.rsplit_once(" limit ") else { return sql.to_string() };
    let Some(rest) = body.strip_prefix("select ") else { return sql.to_string() };
    if count.trim().parse::<u64>().is_err() {
        return sql.to_string();
    }
    format!("select top ({}) {rest}", count.trim())
}

/// Each bare table name after `from`, `join`, `into` or `update` in `sql`
/// qualified with `schema`.
fn tables_in(schema: &str, sql: &str) -> String {
    let words: Vec<&str> = sql.split(' ').collect();
    let mut out = Vec::with_capacity(words.len());
    for (index, word) in words.iter().enumerate() {
        let after_keyword = index
            .checked_sub(1)
            .is_some_and(|p| ["from", "join", "into", "update"].contains(&words[p].to_ascii_lowercase().as_str()));
        let bare = !word.is_empty() && !word.contains('.') && !word.starts_with('(') && !word.starts_with('@');
        out.push(if after_keyword && bare { format!("{schema}.{word}") } else { word.to_string() });
    }
    out.join(" ")
}
