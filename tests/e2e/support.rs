//! Test harness: a real `strata` process per test, configured in a temp
//! directory, driven over HTTP on 127.0.0.1; the database it writes is
//! inspected directly.
//!
//! The backend comes from `STRATA_TEST_BACKEND`: `sqlite` (default; files in
//! the temp dir), `postgres` (a fresh database per test on the server of
//! `STRATA_TEST_PG_URL`) or `mysql` (the server of `STRATA_TEST_MYSQL_URL`;
//! a tenant is a database there, so tests take turns and each starts by
//! dropping every non-system database). `tests/servers.sh` starts both.
//! `sqlserver` (a fresh database per test on the TDS server of
//! `STRATA_TEST_SQLSERVER_URL`, which `tests/sqlserver.sh` starts) is the
//! backend of `tests/e2e/sqlserver.rs`'s workspaces ([`Workspace::on`]).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use sqlx::{Connection, MySqlConnection, PgConnection, SqliteConnection};

pub(crate) mod sqlserver;

/// The database kind the suite runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    Sqlite,
    Postgres,
    Mysql,
    /// Babelfish (TDS and T-SQL), the server of `STRATA_TEST_SQLSERVER_URL`.
    Sqlserver,
}

/// The backend of this run, from `STRATA_TEST_BACKEND`.
pub(crate) fn backend() -> Backend {
    match std::env::var("STRATA_TEST_BACKEND").as_deref() {
        Ok("postgres") => Backend::Postgres,
        Ok("mysql") => Backend::Mysql,
        Ok("sqlserver") => Backend::Sqlserver,
        Ok("sqlite") | Err(_) => Backend::Sqlite,
        Ok(other) => panic!("STRATA_TEST_BACKEND={other}: expected sqlite, postgres, mysql or sqlserver"),
    }
}

pub(crate) fn server_url(variable: &str) -> String {
    std::env::var(variable).unwrap_or_else(|_| panic!("{variable} is not set: run `bash tests/servers.sh start`"))
}

/// `url` with the server of `STRATA_TEST_PG_SERVICE_URL` (a pooler, see
/// [`Workspace::pg_service_url`]) replaced by `STRATA_TEST_PG_URL`'s: the harness
/// reads the server directly.
fn direct_pg_url(url: &str) -> String {
    let base = |url: &str| url.rsplit_once('/').map(|(base, _)| base.to_string());
    match (
        std::env::var("STRATA_TEST_PG_SERVICE_URL").ok().and_then(|s| base(&s)),
        base(&server_url("STRATA_TEST_PG_URL")),
    ) {
        (Some(service), Some(direct)) if url.starts_with(&format!("{service}/")) => url.replacen(&service, &direct, 1),
        _ => url.to_string(),
    }
}

/// Serialises tests on the shared MySQL server.
static MYSQL_TURN: Mutex<()> = Mutex::new(());

/// The statement creating a single schema in the first migration of a set.
pub(crate) fn create_schema_sql() -> &'static str {
    match backend() {
        Backend::Sqlite => "",
        Backend::Postgres => "create schema {schema};\n",
        Backend::Mysql => "create database {schema};\n",
        // `CREATE SCHEMA` must be alone in its batch.
        Backend::Sqlserver => "create schema {schema};\nGO\n",
    }
}

/// Says in one line why `test` does not run on SQL Server (docs/drivers.md
/// lists them): for a test to return with when the backend is SQL Server.
pub(crate) fn not_on_sqlserver(test: &str, why: &str) {
    eprintln!("{test}: not run on SQL Server: {why}");
}

/// The message of a SQL Server workspace's path taken above a `match` on the
/// backend: a workspace of the SQL Server backend is always one.
const ON_SQLSERVER_ABOVE: &str = "a SQL Server workspace is handled above";

/// Decodes every column of a row as a string or an integer.
macro_rules! decode_rows {
    ($rows:expr) => {{
        use sqlx::{Row, ValueRef};
        $rows
            .iter()
            .map(|row| {
                (0..row.len())
                    .map(|i| {
                        if row.try_get_raw(i).unwrap().is_null() {
                            return Value::Null;
                        }
                        row.try_get::<String, _>(i)
                            .map(Value::String)
                            .or_else(|_| row.try_get::<i64, _>(i).map(|n| json!(n)))
                            .or_else(|_| row.try_get::<i32, _>(i).map(|n| json!(n)))
                            .unwrap_or_else(|e| panic!("column {i}: {e}"))
                    })
                    .collect::<Vec<Value>>()
            })
            .collect::<Vec<Vec<Value>>>()
    }};
}

/// `tests/data`.
pub(crate) fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data")
}

/// A port of 127.0.0.1 held bound but not listening, for as long as the
/// guard lives: a connection to it is refused, and no other process (a
/// suite on another engine, running beside this one) can listen there
/// meanwhile — as a port from [`free_port`] might, by then.
pub(crate) struct ClosedPort {
    _socket: tokio::net::TcpSocket,
    /// The port.
    pub(crate) port: u16,
}

/// A [`ClosedPort`].
pub(crate) fn closed_port() -> ClosedPort {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = socket.local_addr().unwrap().port();
    ClosedPort { _socket: socket, port }
}

/// A free TCP port on 127.0.0.1.
///
/// Drawn from 27000–32767: below Linux's ephemeral range (32768–60999),
/// where the kernel picks the local ports of outgoing connections (CI's
/// parallel lanes open thousands, so a port found free there can be taken
/// before the service binds it), and above the fixed ports the suite's own
/// servers take (tests/servers.sh from 21329, Citus 23601, the PostgreSQL
/// majors from 26300). Each process walks the range from its own
/// starting point, and a port is handed out once per test process: two
/// servers of parallel tests on one port would answer each other's
/// requests (the second fails to listen while the first answers its
/// readiness probe).
pub(crate) fn free_port() -> u16 {
    const FIRST: u32 = 27_000;
    const COUNT: u32 = 5_768;
    static HANDED_OUT: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    let start = std::process::id().wrapping_mul(7_919) % COUNT;
    for step in 0..COUNT {
        let port = (FIRST + (start + handed_out.len() as u32 + step) % COUNT) as u16;
        if handed_out.contains(&port)
            || std::net::TcpListener::bind(("127.0.0.1", port)).is_err()
            || std::net::TcpListener::bind(("0.0.0.0", port)).is_err()
            || !claim_port(port)
        {
            continue;
        }
        handed_out.push(port);
        return port;
    }
    panic!("no free TCP port on 127.0.0.1 between {FIRST} and {}", FIRST + COUNT - 1);
}

/// Claims `port` for this process among every test process of the machine
/// (CI's lanes run several at once, each walking the range from its own
/// start; two walks meet, and a port checked free by both before either
/// server binds it went to two servers): an exclusive lock (`flock`) on a
/// file named after the port in a shared directory, held until the process
/// ends — the kernel lets it go however the process ends, so no claim goes
/// stale. (A pid written in the file, taken over once its process had
/// ended, let two processes take over one stale claim at once: CI saw one
/// lane's version created in another lane's server.)
fn claim_port(port: u16) -> bool {
    static HELD: Mutex<Vec<std::fs::File>> = Mutex::new(Vec::new());
    let dir = std::env::temp_dir().join("strata-e2e-ports");
    let _ = std::fs::create_dir_all(&dir);
    let opened =
        std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(dir.join(format!("{port}.lock")));
    let Ok(file) = opened else { return false };
    if file.try_lock().is_err() {
        return false;
    }
    HELD.lock().unwrap_or_else(|e| e.into_inner()).push(file);
    true
}

/// Copies a directory tree.
pub(crate) fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The directories every test configuration uses.
pub(crate) const DIRECTORIES: &str = "singleMigrations: [ref, config]\ntenantMigrations: [tenants]\n\
                               singleScripts: [scripts/config]\ntenantScripts: [scripts/tenants]\n";

/// A test's workspace: a temp dir with `migrations/` (a copy of a data set)
/// and `db/`, plus the config written for it.
pub(crate) struct Workspace {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) port: u16,
    /// Its database is on the SQL Server of `STRATA_TEST_SQLSERVER_URL`,
    /// whatever this run's backend ([`Workspace::on_sqlserver`]).
    pub(crate) sqlserver: bool,
    /// The harness's own PostgreSQL sessions on its database, idle between
    /// two of its reads or writes ([`Workspace::pg_session`]).
    idle_pg: Mutex<Vec<PgConnection>>,
}

impl Workspace {
    /// Copies `tests/data/migrations/<set>` and creates every configured directory.
    pub(crate) fn new(set: &str) -> Workspace {
        let backend_dir = match backend() {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
            Backend::Mysql => "mysql",
            Backend::Sqlserver => return Workspace::on_sqlserver(set),
        };
        Workspace::of(backend_dir, set, false)
    }

    /// Like [`Workspace::new`], on a fresh database of the SQL Server of
    /// `STRATA_TEST_SQLSERVER_URL` (`tests/data/migrations/sqlserver/<set>`).
    pub(crate) fn on_sqlserver(set: &str) -> Workspace {
        Workspace::of("sqlserver", set, true)
    }

    fn of(backend_dir: &str, set: &str, sqlserver: bool) -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        copy_tree(&data_dir().join("migrations").join(backend_dir).join(set), &dir.path().join("migrations"));
        for sub in ["ref", "config", "tenants", "scripts/config", "scripts/tenants"] {
            std::fs::create_dir_all(dir.path().join("migrations").join(sub)).unwrap();
        }
        Workspace { dir, port: free_port(), sqlserver, idle_pg: Mutex::default() }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn migrations(&self) -> PathBuf {
        self.path().join("migrations")
    }

    /// The driver and dataSource lines of this workspace's database.
    fn database_lines(&self) -> String {
        if self.sqlserver {
            return format!("driver: sqlserver\ndataSource: \"{}\"\n", self.sqlserver_data_source());
        }
        match backend() {
            Backend::Sqlite => {
                format!("driver: sqlite\ndataSource: sqlite://{}/db/main.db?mode=rwc\n", self.path().display())
            }
            Backend::Postgres => format!("driver: postgres\ndataSource: {}\n", self.pg_service_url()),
            Backend::Mysql => format!("driver: mysql\ndataSource: {}\n", server_url("STRATA_TEST_MYSQL_URL")),
            Backend::Sqlserver => unreachable!("{ON_SQLSERVER_ABOVE}"),
        }
    }

    /// This test's own SQL Server database, as an ADO connection string.
    pub(crate) fn sqlserver_data_source(&self) -> String {
        format!("{};Database={}", server_url("STRATA_TEST_SQLSERVER_URL"), self.pg_database())
    }

    /// This test's own PostgreSQL database (named after its unique port).
    fn pg_database(&self) -> String {
        format!("strata_test_{}", self.port)
    }

    /// The `dataSource` its configuration names ([`Workspace::pg_service_url`]),
    /// for a test that replaces it.
    pub(crate) fn pg_url_public(&self) -> String {
        self.pg_service_url()
    }

    pub(crate) fn pg_url(&self) -> String {
        let admin = server_url("STRATA_TEST_PG_URL");
        let (base, _) = admin.rsplit_once('/').unwrap();
        format!("{base}/{}", self.pg_database())
    }

    /// The URL the service's configuration names for this test's database:
    /// [`Workspace::pg_url`], or the same database through the server of
    /// `STRATA_TEST_PG_SERVICE_URL` when set — a pooler in front of
    /// `STRATA_TEST_PG_URL`'s server (tests/README.md: the whole suite
    /// through a PgBouncer that hands each transaction another server).
    /// The harness itself always connects directly.
    fn pg_service_url(&self) -> String {
        match std::env::var("STRATA_TEST_PG_SERVICE_URL") {
            Ok(service) => {
                let (base, _) = service.rsplit_once('/').unwrap();
                format!("{base}/{}", self.pg_database())
            }
            Err(_) => self.pg_url(),
        }
    }

    /// Creates an empty database for the test (PostgreSQL), or empties the
    /// shared server (MySQL, whose turn the caller holds).
    pub(crate) async fn prepare_database(&self) {
        if self.sqlserver {
            return sqlserver::create_database(&self.pg_database()).await;
        }
        match backend() {
            Backend::Sqlite => {}
            Backend::Postgres => {
                // The harness's idle sessions would hold the database open.
                self.idle_pg.lock().unwrap().clear();
                let mut admin = PgConnection::connect(&server_url("STRATA_TEST_PG_URL")).await.unwrap();
                let db = self.pg_database();
                for statement in [format!("drop database if exists {db}"), format!("create database {db}")] {
                    sqlx::raw_sql(sqlx::AssertSqlSafe(statement)).execute(&mut admin).await.unwrap();
                }
            }
            Backend::Mysql => {
                let mut admin = MySqlConnection::connect(&server_url("STRATA_TEST_MYSQL_URL")).await.unwrap();
                let names: Vec<String> = sqlx::query_scalar(
                    "select cast(schema_name as char) from information_schema.schemata \
                     where schema_name not in ('mysql', 'information_schema', 'performance_schema', 'sys')",
                )
                .fetch_all(&mut admin)
                .await
                .unwrap();
                for name in names {
                    // `if exists`: a scratch database of a test of the other
                    // half (or of devDataSource's) may be gone by now.
                    let drop = format!("drop database if exists `{}`", name.replace('`', "``"));
                    sqlx::raw_sql(sqlx::AssertSqlSafe(drop)).execute(&mut admin).await.unwrap();
                }
            }
            Backend::Sqlserver => unreachable!("{ON_SQLSERVER_ABOVE}"),
        }
    }

    /// The standard configuration plus `extra` lines.
    pub(crate) fn config(&self, extra: &str) -> String {
        format!(
            "baseLocation: {}\n{}{DIRECTORIES}port: {}\n{extra}",
            self.migrations().display(),
            self.database_lines(),
            self.port
        )
    }

    pub(crate) fn write_config(&self, yaml: &str) -> PathBuf {
        let path = self.path().join("svc.yaml");
        std::fs::write(&path, yaml).unwrap();
        path
    }

    /// A file of the migrations copy.
    pub(crate) fn write_migration(&self, relative: &str, contents: &str) {
        std::fs::write(self.migrations().join(relative), contents).unwrap();
    }

    /// A file of the migrations copy removed, if it is there.
    pub(crate) fn remove_migration(&self, relative: &str) {
        let _ = std::fs::remove_file(self.migrations().join(relative));
    }

    /// Runs SQL as an administrator would, outside the service: in the
    /// schema's file on SQLite, in the test database on PostgreSQL, on the
    /// server on MySQL.
    pub(crate) async fn execute(&self, schema: &str, sql: &str) {
        if self.sqlserver {
            let sql = sqlserver::qualified(schema, sql);
            return sqlserver::batch(&mut sqlserver::connect(&self.sqlserver_data_source()).await, &sql).await;
        }
        let sql = sqlx::AssertSqlSafe(sql.to_string());
        match backend() {
            Backend::Sqlite => {
                std::fs::create_dir_all(self.path().join("db")).unwrap();
                let file = self.path().join("db").join(format!("{schema}.db"));
                let mut conn =
                    SqliteConnection::connect(&format!("sqlite://{}?mode=rwc", file.display())).await.unwrap();
                sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
            }
            Backend::Postgres => {
                let mut conn = self.pg_session("reset search_path").await;
                sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
                self.idle_pg.lock().unwrap().push(conn);
            }
            Backend::Mysql => {
                let mut conn = MySqlConnection::connect(&server_url("STRATA_TEST_MYSQL_URL")).await.unwrap();
                sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
            }
            Backend::Sqlserver => unreachable!("{ON_SQLSERVER_ABOVE}"),
        }
    }

    /// A session on this test's PostgreSQL database that has just run
    /// `setting` (its schema for what follows): an idle one of the harness's
    /// when it still answers, else a new one. A connection per read or write
    /// was half the PostgreSQL suite's 5,500 connections, and the server's
    /// processor time went to starting and ending backends (their memory
    /// mapped and unmapped) more than to the statements. One call takes a
    /// session at a time, so calls at once each have their own; its queries
    /// are not kept prepared (a plan kept for a table a migration then
    /// changed would fail). MySQL keeps a connection per call: a session
    /// left in a tenant's database counts as one a file leaked (drivers.rs).
    async fn pg_session(&self, setting: &str) -> PgConnection {
        let setting = || sqlx::raw_sql(sqlx::AssertSqlSafe(setting.to_string()));
        let idle = self.idle_pg.lock().unwrap().pop();
        if let Some(mut conn) = idle
            && setting().execute(&mut conn).await.is_ok()
        {
            return conn;
        }
        let mut conn = PgConnection::connect(&self.pg_url()).await.unwrap();
        setting().execute(&mut conn).await.unwrap();
        conn
    }

    /// Adds `count` (at most 100,000) rows to the service's own tenant
    /// table, named `t00001`, `t00002`…, in one statement: a fleet listed
    /// without making a schema for each.
    pub(crate) async fn add_tenant_rows(&self, count: u32) {
        assert!(count <= 100_000, "names have five digits");
        let digits = "(select 0 x union all select 1 union all select 2 union all select 3 union all select 4 \
                      union all select 5 union all select 6 union all select 7 union all select 8 union all select 9)";
        let number = "(a.x * 10000 + b.x * 1000 + c.x * 100 + d.x * 10 + e.x + 1)";
        let (table, name) = match backend() {
            Backend::Sqlite => ("svc_tenants", format!("printf('t%05d', {number})")),
            Backend::Postgres => ("svc.svc_tenants", format!("'t' || lpad({number}::text, 5, '0')")),
            Backend::Mysql => ("svc.svc_tenants", format!("concat('t', lpad({number}, 5, '0'))")),
            Backend::Sqlserver => ("svc.svc_tenants", format!("'t' + right('0000' + cast({number} as varchar(5)), 5)")),
        };
        let sql = format!(
            "insert into {table} (name) select {name} from {digits} a, {digits} b, {digits} c, {digits} d, {digits} e \
             where {number} <= {count}"
        );
        self.execute("svc", &sql).await;
    }

    /// Runs one SQL query in a schema (its SQLite file, its PostgreSQL
    /// search path, its MySQL database), returning every row as JSON values.
    /// SQL Server has no per-session default schema: there the query runs
    /// in the test's database and names its tables with their schema.
    pub(crate) async fn rows(&self, schema: &str, sql: &str) -> Vec<Vec<Value>> {
        if self.sqlserver {
            let sql = sqlserver::qualified(schema, sql);
            return sqlserver::rows(&mut sqlserver::connect(&self.sqlserver_data_source()).await, &sql).await;
        }
        let sql = sqlx::AssertSqlSafe(sql.to_string());
        match backend() {
            Backend::Sqlite => {
                let file = self.path().join("db").join(format!("{schema}.db"));
                assert!(file.exists(), "{} does not exist", file.display());
                // Read-write (never create): after a kill -9 a file may hold a hot
                // rollback journal, which only a writable connection rolls back —
                // SQLite's recovery, as the service's next attach would do.
                let url = format!("sqlite://{}?mode=rw", file.display());
                let mut conn = SqliteConnection::connect(&url).await.unwrap();
                decode_rows!(sqlx::query(sql).fetch_all(&mut conn).await.unwrap())
            }
            Backend::Postgres => {
                let mut conn = self.pg_session(&format!("set search_path to \"{schema}\"")).await;
                let rows = decode_rows!(sqlx::query(sql).persistent(false).fetch_all(&mut conn).await.unwrap());
                self.idle_pg.lock().unwrap().push(conn);
                rows
            }
            Backend::Mysql => {
                let mut conn = MySqlConnection::connect(&server_url("STRATA_TEST_MYSQL_URL")).await.unwrap();
                let use_db = format!("use `{schema}`");
                sqlx::raw_sql(sqlx::AssertSqlSafe(use_db)).execute(&mut conn).await.unwrap();
                decode_rows!(sqlx::query(sql).fetch_all(&mut conn).await.unwrap())
            }
            Backend::Sqlserver => unreachable!("{ON_SQLSERVER_ABOVE}"),
        }
    }

    /// `select count(*)` of a table in a schema.
    pub(crate) async fn count(&self, schema: &str, table: &str) -> i64 {
        let table = if self.sqlserver { format!("[{schema}].{table}") } else { table.to_string() };
        self.rows(schema, &format!("select count(*) from {table}")).await[0][0].as_i64().unwrap()
    }

    /// `(file, schema, count)` of every migration (not script) recorded more
    /// than once in the same schema: empty when nothing ran twice.
    pub(crate) async fn migrations_recorded_twice(&self) -> Vec<Vec<Value>> {
        let table = if self.sqlserver { "svc.svc_migrations" } else { "svc_migrations" };
        let sql = format!(
            "select filename, db_schema, count(*) from {table} where migration_type in (1, 2) \
             group by filename, db_schema having count(*) > 1"
        );
        self.rows("svc", &sql).await
    }

    /// Names of the tables in a schema (empty when the schema does not exist).
    pub(crate) async fn tables(&self, schema: &str) -> Vec<String> {
        if self.sqlserver {
            let sql = format!(
                "select t.name from sys.tables t join sys.schemas s on s.schema_id = t.schema_id \
                 where s.name = N'{}' order by t.name",
                schema.replace('\'', "''")
            );
            let rows = self.rows(schema, &sql).await;
            return rows.into_iter().map(|row| row[0].as_str().unwrap().to_string()).collect();
        }
        let names: Vec<String> = match backend() {
            Backend::Sqlite => {
                if !self.path().join("db").join(format!("{schema}.db")).exists() {
                    return Vec::new();
                }
                let rows = self
                    .rows(
                        schema,
                        // `svc_staged`: the service's rows staged in a tenant's own file.
                        "select name from sqlite_master where type = 'table' and name not like 'sqlite_%' \
                         and name <> 'svc_staged'",
                    )
                    .await;
                rows.into_iter().map(|row| row[0].as_str().unwrap().to_string()).collect()
            }
            Backend::Postgres => {
                let mut conn = PgConnection::connect(&self.pg_url()).await.unwrap();
                sqlx::query_scalar("select table_name::text from information_schema.tables where table_schema = $1")
                    .bind(schema)
                    .fetch_all(&mut conn)
                    .await
                    .unwrap()
            }
            Backend::Mysql => {
                let mut conn = MySqlConnection::connect(&server_url("STRATA_TEST_MYSQL_URL")).await.unwrap();
                sqlx::query_scalar(
                    "select cast(table_name as char) from information_schema.tables where table_schema = ?",
                )
                .bind(schema)
                .fetch_all(&mut conn)
                .await
                .unwrap()
            }
            Backend::Sqlserver => unreachable!("{ON_SQLSERVER_ABOVE}"),
        };
        let mut names = names;
        names.sort();
        names
    }
}

/// A running `strata` process; killed on drop.
pub(crate) struct Server {
    child: Child,
    _turn: Option<std::sync::MutexGuard<'static, ()>>,
    pub(crate) ws: Arc<Workspace>,
    pub(crate) base: String,
    pub(crate) client: reqwest::Client,
    config: PathBuf,
    log_file: PathBuf,
    env: Vec<(String, String)>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `strata` binary the tests run: `STRATA_BIN` when set, else cargo's
/// build of it. tests/all.sh sets it to a copy taken after the build: the
/// container lane then compiles the image's binary into the same target
/// directory (native/container/build.sh), which replaces cargo's file while
/// the suites run.
pub(crate) fn strata_bin() -> std::ffi::OsString {
    std::env::var_os("STRATA_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_strata").into())
}

/// Starts `strata` on a config, appending its output to `log_file`.
fn spawn(config: &Path, log_file: &Path, env: &[(String, String)]) -> Child {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(log_file).unwrap();
    let mut command = Command::new(strata_bin());
    command.env("SVC_YAML", config);
    for (k, v) in env {
        command.env(k, v);
    }
    command.stdout(log.try_clone().unwrap()).stderr(log).spawn().unwrap()
}

/// The turn on MariaDB's shard server (`STRATA_TEST_MYSQL_SHARD_URL`),
/// across processes: the suite's two halves run at once, and each test that
/// uses that server (the two-server fleet empties it first; `devDataSource`
/// makes and drops a scratch database there) holds the lock of a file
/// beside the system's temporary files until the returned file is dropped.
pub(crate) async fn mysql_shard_server_turn() -> std::fs::File {
    let path = std::env::temp_dir().join("strata-e2e-mysql-shard-server.lock");
    let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).unwrap();
    tokio::task::spawn_blocking(move || {
        file.lock().unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        file
    })
    .await
    .unwrap()
}

/// The turn on the shared MySQL server (one test at a time uses it); `None`
/// on the other backends.
pub(crate) fn mysql_turn() -> Option<std::sync::MutexGuard<'static, ()>> {
    (backend() == Backend::Mysql).then(|| MYSQL_TURN.lock().unwrap_or_else(|e| e.into_inner()))
}

/// What a finished `strata` command printed on stdout.
pub(crate) fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// What a finished `strata` command printed on stderr.
pub(crate) fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A finished command's stdout as JSON.
pub(crate) fn json_of(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(output)))
}

/// A finished command's exit status.
pub(crate) fn code(output: &std::process::Output) -> i32 {
    output.status.code().expect("exited")
}

/// A client of the service: a connection idle for 5 s is not reused. The
/// service closes a keep-alive connection idle for `headerReadTimeoutSeconds`
/// (10 s by default); a client sending on it as it closes gets no answer,
/// which a test that blocked its runtime (starting a process) made likely.
pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder().pool_idle_timeout(Duration::from_secs(5)).build().unwrap()
}

/// Runs `strata --config <config> <args…>` as a user would, to completion.
pub(crate) async fn strata(config: &Path, args: &[&str]) -> std::process::Output {
    let mut command = tokio::process::Command::new(strata_bin());
    command.arg("--config").arg(config).args(args).env_remove("SVC_YAML");
    let output = tokio::time::timeout(Duration::from_secs(120), command.output()).await;
    output.expect("strata finished within 120 s").expect("strata ran")
}

/// Runs the binary with a config to completion (for start-up failures).
pub(crate) fn run_to_exit(config_path: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(strata_bin());
    command.env("SVC_YAML", config_path);
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    for _ in 0..100 {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!("strata did not exit within 10 s");
}

impl Server {
    /// Starts the service on the `set` data set with `extra` config lines.
    pub(crate) async fn start(set: &str, extra: &str) -> Server {
        let ws = Workspace::new(set);
        let yaml = ws.config(extra);
        Server::start_in(ws, &yaml, "").await
    }

    /// Starts the service in `ws` with `yaml`; `prefix` is the pathPrefix.
    pub(crate) async fn start_in(ws: Workspace, yaml: &str, prefix: &str) -> Server {
        Server::start_in_with_env(ws, yaml, prefix, &[]).await
    }

    /// Like [`Server::start_in`], with extra environment variables for the process.
    pub(crate) async fn start_in_with_env(ws: Workspace, yaml: &str, prefix: &str, env: &[(&str, &str)]) -> Server {
        let turn = (!ws.sqlserver && backend() == Backend::Mysql)
            .then(|| MYSQL_TURN.lock().unwrap_or_else(|e| e.into_inner()));
        ws.prepare_database().await;
        let config = ws.write_config(yaml);
        let log_file = ws.path().join("strata.log");
        let base = format!("http://127.0.0.1:{}{prefix}", ws.port);
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let child = spawn(&config, &log_file, &env);
        let mut server = Server { child, _turn: turn, ws: Arc::new(ws), base, client: client(), config, log_file, env };
        server.wait_ready().await;
        server
    }

    /// A second `strata` process on the same configuration and database,
    /// on another port.
    pub(crate) async fn twin(&self) -> Server {
        let port = free_port();
        let yaml = std::fs::read_to_string(&self.config).unwrap();
        let config = self.ws.path().join(format!("svc-{port}.yaml"));
        std::fs::write(&config, yaml.replace(&format!("port: {}\n", self.ws.port), &format!("port: {port}\n")))
            .unwrap();
        let log_file = self.ws.path().join(format!("strata-{port}.log"));
        let child = spawn(&config, &log_file, &self.env);
        let base = self.base.replacen(&format!(":{}", self.ws.port), &format!(":{port}"), 1);
        let mut twin = Server {
            child,
            _turn: None,
            ws: Arc::clone(&self.ws),
            base,
            client: client(),
            config,
            log_file,
            env: self.env.clone(),
        };
        twin.wait_ready().await;
        twin
    }

    /// Waits (up to 10 s) until the log shows `n` mutations started.
    pub(crate) async fn wait_for_mutations_started(&self, n: usize) {
        for _ in 0..100 {
            if self.log().matches("mutation started").count() >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("fewer than {n} mutations started: {}", self.log());
    }

    /// Kills the process with SIGKILL, as a crash or an OOM kill would.
    ///
    /// Then waits (up to 30 s) until no session on a PostgreSQL database of
    /// its configuration is busy any more: a unit sent as
    /// one message runs to its end on the server after its client died
    /// (committed or rolled back whole), and the checks that follow read
    /// the state it leaves.
    pub(crate) async fn kill_hard(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        let config = std::fs::read_to_string(&self.config).unwrap_or_default();
        let urls = config
            .split(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == ',')
            .filter(|token| token.starts_with("postgres://"));
        for url in urls {
            let Ok(mut conn) = PgConnection::connect(&direct_pg_url(url)).await else { continue };
            for _ in 0..300 {
                let others: i64 = sqlx::query_scalar(
                    "select count(*) from pg_stat_activity \
                     where datname = current_database() and pid <> pg_backend_pid() and state <> 'idle'",
                )
                .fetch_one(&mut conn)
                .await
                .unwrap_or(0);
                if others == 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The process's resident memory now and its peak since start or the
    /// last [`Server::reset_peak_memory`], in KiB (`VmRSS`, `VmHWM`).
    pub(crate) fn memory_kib(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let field = |name: &str| -> u64 {
            let line = status.lines().find(|line| line.starts_with(name)).unwrap();
            line[name.len()..].trim().trim_end_matches("kB").trim().parse().unwrap()
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    /// Starts the peak of [`Server::memory_kib`] again from the present
    /// resident memory (Linux's `clear_refs`).
    pub(crate) fn reset_peak_memory(&self) {
        std::fs::write(format!("/proc/{}/clear_refs", self.pid()), "5").unwrap();
    }

    /// Sends SIGTERM, as a container runtime does, and waits (up to 40 s)
    /// for the process to exit.
    pub(crate) async fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        // Above the default grace (30 s), and what a test giving a longer
        // one lets its version take on a loaded machine.
        for _ in 0..1200 {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("strata did not exit within 120 s of SIGTERM: {}", self.log());
    }

    /// Starts the process again on the same configuration.
    pub(crate) async fn restart(&mut self) {
        self.child = spawn(&self.config, &self.log_file, &self.env);
        self.wait_ready().await;
    }

    async fn wait_ready(&mut self) {
        for _ in 0..100 {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("strata exited with {status}: {}", self.log());
            }
            if self.client.get(format!("{}/metrics", self.base)).send().await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("strata did not start: {}", self.log());
    }

    /// Everything the process logged so far.
    /// The configuration file the server runs with.
    pub(crate) fn config_path(&self) -> &Path {
        &self.config
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log_file).unwrap_or_default()
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// POSTs a raw body to `/v2/service` as `application/json`.
    pub(crate) async fn post_raw(&self, body: impl Into<reqwest::Body>) -> reqwest::Response {
        self.post_typed("application/json", body).await
    }

    /// POSTs a raw body to `/v2/service` with the given content type.
    pub(crate) async fn post_typed(&self, content_type: &str, body: impl Into<reqwest::Body>) -> reqwest::Response {
        self.client.post(self.url("/v2/service")).header("Content-Type", content_type).body(body).send().await.unwrap()
    }

    /// Runs a GraphQL request and returns the whole response (asserting HTTP 200).
    pub(crate) async fn graphql(&self, query: &str, variables: Value) -> Value {
        let response = self.post_raw(json!({ "query": query, "variables": variables }).to_string()).await;
        assert_eq!(response.status(), 200);
        response.json().await.unwrap()
    }

    /// Runs a GraphQL request that must succeed and returns its `data`.
    pub(crate) async fn data(&self, query: &str, variables: Value) -> Value {
        let response = self.graphql(query, variables).await;
        assert!(response.get("errors").is_none(), "unexpected errors: {response}\n{}", self.log());
        response["data"].clone()
    }

    /// `createVersion` with the given input, asking for summary and version.
    pub(crate) async fn create_version(&self, input: Value) -> Value {
        self.graphql(CREATE_VERSION, json!({ "input": input })).await
    }

    /// `createTenant` with the given input.
    pub(crate) async fn create_tenant(&self, input: Value) -> Value {
        self.graphql(CREATE_TENANT, json!({ "input": input })).await
    }

    pub(crate) async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.unwrap()
    }

    /// The value of one metric series in `/metrics` (e.g.
    /// `svc_http_migrations_applied{type="single_migrations"}`).
    pub(crate) async fn metric(&self, series: &str) -> f64 {
        let text = self.get("/metrics").await.text().await.unwrap();
        text.lines()
            .find_map(|line| line.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')))
            .unwrap_or_else(|| panic!("no series {series} in\n{text}"))
            .trim()
            .parse()
            .unwrap()
    }
}

/// Selection of every field of `CreateResults`.
macro_rules! create_results {
    () => {
        "summary { startedAt duration tenants singleMigrations tenantMigrations tenantMigrationsTotal \
         migrationsGrandTotal singleScripts tenantScripts tenantScriptsTotal scriptsGrandTotal } \
         version { id name created dbMigrations { id name migrationType sourceDir file schema checkSum created } }"
    };
}

pub(crate) const CREATE_VERSION: &str =
    concat!("mutation($input: VersionInput!) { createVersion(input: $input) { ", create_results!(), " } }");
pub(crate) const CREATE_TENANT: &str =
    concat!("mutation($input: TenantInput!) { createTenant(input: $input) { ", create_results!(), " } }");

/// The summary counts of a create result, without the timing fields.
pub(crate) fn counts(result: &Value) -> Value {
    let mut summary = result["summary"].clone();
    let object = summary.as_object_mut().unwrap();
    assert!(object.remove("startedAt").unwrap().as_str().unwrap().ends_with('Z'));
    assert!(object.remove("duration").unwrap().as_f64().unwrap() >= 0.0);
    summary
}

/// `(file, schema)` of each dbMigration of a create result's version.
pub(crate) fn applied(result: &Value) -> Vec<(String, String)> {
    result["version"]["dbMigrations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["file"].as_str().unwrap().to_string(), m["schema"].as_str().unwrap().to_string()))
        .collect()
}

pub(crate) fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

/// A recorded webhook request.
#[derive(Debug, Clone)]
pub(crate) struct Hook {
    pub(crate) headers: axum::http::HeaderMap,
    pub(crate) body: String,
}

/// A real HTTP listener on 127.0.0.1 recording every request and answering
/// with a fixed status.
pub(crate) struct HookListener {
    pub(crate) url: String,
    pub(crate) received: Arc<Mutex<Vec<Hook>>>,
}

impl HookListener {
    pub(crate) async fn start(status: u16) -> HookListener {
        let received: Arc<Mutex<Vec<Hook>>> = Arc::default();
        let store = Arc::clone(&received);
        let app = axum::Router::new().fallback(move |headers: axum::http::HeaderMap, body: String| {
            let store = Arc::clone(&store);
            async move {
                store.lock().unwrap().push(Hook { headers, body });
                axum::http::StatusCode::from_u16(status).unwrap()
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        HookListener { url, received }
    }

    /// A listener that records each request and answers `307` to
    /// `location`.
    pub(crate) async fn redirecting(location: &str) -> HookListener {
        let received: Arc<Mutex<Vec<Hook>>> = Arc::default();
        let store = Arc::clone(&received);
        let location = location.to_string();
        let app = axum::Router::new().fallback(move |headers: axum::http::HeaderMap, body: String| {
            let store = Arc::clone(&store);
            let location = location.clone();
            async move {
                store.lock().unwrap().push(Hook { headers, body });
                (axum::http::StatusCode::TEMPORARY_REDIRECT, [(axum::http::header::LOCATION, location)])
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook/s3cret-path?token=q-s3cret", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        HookListener { url, received }
    }

    /// Waits until `n` requests arrived (up to 10 s) and returns them.
    pub(crate) async fn wait_for(&self, n: usize) -> Vec<Hook> {
        for _ in 0..100 {
            let got = self.received.lock().unwrap().clone();
            if got.len() >= n {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("expected {n} webhook requests, got {}", self.received.lock().unwrap().len());
    }
}
