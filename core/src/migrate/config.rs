//! The service configuration: parsing, `${NAME}` substitution, defaults,
//! validation and the redacted rendering served at `GET /v2/config`.
//!
//! The YAML is parsed with `serde-saphyr` into a private raw shape, then
//! every string value has its `${NAME}` placeholders replaced from the
//! environment map the caller passes in (this crate never reads the process
//! environment), then the values are validated into [`Config`]. In
//! `webHookTemplate`, placeholders named `summary` or `summary.<field>` belong
//! to the webhook and are left for [`crate::migrate::summary::render_template`].

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashSet;

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use crate::migrate::driver::Driver;
use crate::migrate::ident::{self, validate_identifier};
use crate::migrate::redact::{MASK, redact_data_source, redact_url};
use crate::migrate::template;

pub use backfill::{BackfillSettings, DEFAULT_BATCH_MILLIS, DEFAULT_CONCURRENCY, DEFAULT_ROWS_PER_SECOND};
pub use telemetry::{
    DEFAULT_METRIC_INTERVAL_MILLIS, DEFAULT_QUEUE_SIZE, DEFAULT_SERVICE_NAME, DEFAULT_TIMEOUT_MILLIS, MetricExport,
    OtlpProtocol, RootSampler, Sampler, Telemetry, TraceExport,
};

pub mod auth;
mod backfill;
mod database;
mod directories;
mod limits;
mod paths;
mod service;
mod suggest;
mod telemetry;
mod tenants;

/// Why a configuration was refused. Every variant names the property.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConfigError {
    /// The text is not valid YAML, or a property has the wrong type or an
    /// unknown name. The message comes from the YAML parser and carries the
    /// line and column.
    #[error("invalid YAML: {0}")]
    Yaml(String),
    /// A property the configuration does not have (a typo, another tool's
    /// name), with the closest one there is when one is close, else every
    /// property that may be written there.
    #[error(
        "unknown property {name} ({at}); {}",
        match suggestion {
            Some(suggestion) => format!("did you mean {suggestion}?"),
            None => format!("expected one of {}", expected.join(", ")),
        }
    )]
    UnknownProperty {
        /// The property as written.
        name: String,
        /// Where: `line L column C`.
        at: String,
        /// The closest property of the same object, if one is close.
        suggestion: Option<String>,
        /// The properties the object may have.
        expected: Vec<String>,
    },
    /// A required property is absent or empty.
    #[error("property {0} is required")]
    Missing(&'static str),
    /// A `${NAME}` placeholder names an environment variable that is not set.
    #[error("property {property}: environment variable {name} is not set")]
    MissingEnvVar {
        /// The property whose value holds the placeholder.
        property: &'static str,
        /// The variable name.
        name: String,
    },
    /// A `${NAME:?message}` (or `${NAME?message}`) placeholder names an
    /// environment variable that is not set (or, with `:?`, empty).
    #[error("property {property}: environment variable {name} {}: {message}", if *empty_too { "is not set or empty" } else { "is not set" })]
    RequiredEnvVar {
        /// The property whose value holds the placeholder.
        property: &'static str,
        /// The variable name.
        name: String,
        /// The placeholder's message (`required` when it gives none).
        message: String,
        /// `:?`: an empty value counts as not set.
        empty_too: bool,
    },
    /// A `${NAME}` placeholder names an environment variable whose value is
    /// not UTF-8.
    #[error("property {property}: environment variable {name} is not valid UTF-8")]
    EnvVarNotUnicode {
        /// The property whose value holds the placeholder.
        property: &'static str,
        /// The variable name.
        name: String,
    },
    /// A property has a value outside its allowed set.
    #[error("property {property}: {reason}")]
    Invalid {
        /// The property.
        property: &'static str,
        /// What is wrong with the value.
        reason: String,
    },
}

/// The process environment as the configuration sees it: the shell reads
/// it, the core only looks names up.
pub trait Environment {
    /// What the environment holds under `name`.
    fn lookup(&self, name: &str) -> EnvValue<'_>;
}

/// The value of one environment variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvValue<'a> {
    /// Set, to this text.
    Set(&'a str),
    /// Not set.
    Unset,
    /// Set, to bytes that are not UTF-8.
    NotUnicode,
}

impl Environment for BTreeMap<String, String> {
    fn lookup(&self, name: &str) -> EnvValue<'_> {
        self.get(name).map_or(EnvValue::Unset, |value| EnvValue::Set(value))
    }
}

/// An environment as a shell reads it from the process: the variables whose
/// values are UTF-8, and the names of those whose values are not. A
/// variable that is not UTF-8 matters only when the configuration refers to
/// it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessEnvironment {
    /// Variables with UTF-8 values.
    pub values: BTreeMap<String, String>,
    /// Names of variables whose values are not UTF-8.
    pub not_unicode: BTreeSet<String>,
}

impl Environment for ProcessEnvironment {
    fn lookup(&self, name: &str) -> EnvValue<'_> {
        match self.values.get(name) {
            Some(value) => EnvValue::Set(value),
            None if self.not_unicode.contains(name) => EnvValue::NotUnicode,
            None => EnvValue::Unset,
        }
    }
}

/// Limits on what one request to the GraphQL API may cost (`graphQLLimits`).
/// A request over a limit is refused before any resolver runs, with an error
/// naming the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphQlLimits {
    /// Highest complexity of one operation: every selected field counts 1
    /// (each alias separately), a field that reads storage
    /// (`sourceMigrations`, `versions`, `dbMigrations`, …) counts 10.
    pub complexity: usize,
    /// Deepest nesting of one operation.
    pub depth: usize,
    /// Most operations in one batch (a JSON array of requests).
    pub batch: usize,
    /// Most bytes of `contents` one request may be answered with, over all
    /// its operations and fields.
    pub contents_bytes: usize,
    /// Most root fields of one request, over the operations of a batch
    /// (each alias, each fragment spread's, apart from `__schema`,
    /// `__type` and `__typename`): each reads the fleet's books or changes
    /// them on its own, whatever it selects, so at 10,000 tenants one field
    /// can cost the complexity of one and the work of thousands.
    pub root_fields: usize,
    /// Most root fields of one request's queries that may read the whole
    /// fleet (every one but the light ones — identity, counts, shards,
    /// rollouts, sources, one recorded migration — and pages of `tenants`,
    /// `versions` and `quarantine`): a `drift` or a `plan` reads every
    /// tenant, an unpaged list every row.
    pub fleet_fields: usize,
    /// Most lexical tokens of one operation's text (a name, a punctuator,
    /// a number, a string each), counted before it is parsed: a text of
    /// 300,000 repeated directives or arguments costs the parser and the
    /// validator seconds and answers an error for each (graphql-js's
    /// `maxTokens`).
    pub tokens: usize,
    /// Most introspection root fields (`__schema`, `__type`) of one
    /// request, over the operations of a batch: the schema's every type and
    /// field is one answer of tens of kilobytes, and aliases of it multiply
    /// it without reading storage.
    pub introspection_fields: usize,
}

impl Default for GraphQlLimits {
    fn default() -> Self {
        GraphQlLimits {
            complexity: 1000,
            depth: 32,
            batch: 10,
            contents_bytes: 8 * 1024 * 1024,
            root_fields: 16,
            fleet_fields: 4,
            tokens: 10_000,
            introspection_fields: 4,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawGraphQlLimits {
    complexity: Option<u64>,
    depth: Option<u64>,
    batch: Option<u64>,
    contents_bytes: Option<u64>,
    root_fields: Option<u64>,
    fleet_fields: Option<u64>,
    tokens: Option<u64>,
    introspection_fields: Option<u64>,
}

impl RawGraphQlLimits {
    fn validate(self) -> Result<GraphQlLimits, ConfigError> {
        let defaults = GraphQlLimits::default();
        let positive = |name: &'static str, value: Option<u64>, default: usize| match value {
            None => Ok(default),
            Some(0) => Err(invalid("graphQLLimits", format!("{name} must be at least 1"))),
            Some(n) => usize::try_from(n).map_err(|_| invalid("graphQLLimits", format!("{name} is too large"))),
        };
        Ok(GraphQlLimits {
            complexity: positive("complexity", self.complexity, defaults.complexity)?,
            depth: positive("depth", self.depth, defaults.depth)?,
            batch: positive("batch", self.batch, defaults.batch)?,
            contents_bytes: positive("contentsBytes", self.contents_bytes, defaults.contents_bytes)?,
            root_fields: positive("rootFields", self.root_fields, defaults.root_fields)?,
            fleet_fields: positive("fleetFields", self.fleet_fields, defaults.fleet_fields)?,
            tokens: positive("tokens", self.tokens, defaults.tokens)?,
            introspection_fields: positive(
                "introspectionFields",
                self.introspection_fields,
                defaults.introspection_fields,
            )?,
        })
    }
}

/// What a version does about fleet drift found just before it runs
/// (`driftPolicy`; see [`crate::migrate::fingerprint`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DriftPolicy {
    /// Nothing is read.
    Off,
    /// Outliers and schemas changed since their last unit are logged; the
    /// version runs (the default).
    #[default]
    Report,
    /// The version is refused (`SCHEMA_DRIFT`) while any exists.
    Refuse,
    /// Drifted tenants are quarantined (see
    /// [`crate::migrate::quarantine::drift_entries`]) and the version runs
    /// without them.
    Quarantine,
}

impl DriftPolicy {
    /// The value in the configuration file.
    pub fn name(self) -> &'static str {
        match self {
            DriftPolicy::Off => "off",
            DriftPolicy::Report => "report",
            DriftPolicy::Refuse => "refuse",
            DriftPolicy::Quarantine => "quarantine",
        }
    }
}

/// What one transaction of a version covers (`transactionScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TransactionScope {
    /// One transaction per schema and segment of the plan (the default): a
    /// failure rolls back one schema's steps, what committed stays applied
    /// and recorded, and a version's lock needs do not grow with the fleet.
    #[default]
    Schema,
    /// The whole version in one transaction: all or nothing, but the
    /// database must hold every lock of the version at once (on PostgreSQL
    /// about four per table created per tenant, against a lock table of
    /// `max_locks_per_transaction × max_connections`, 6,400 by default).
    Version,
}

impl TransactionScope {
    /// The value in the configuration file.
    pub fn name(self) -> &'static str {
        match self {
            TransactionScope::Schema => "schema",
            TransactionScope::Version => "version",
        }
    }
}

/// Connections a tenant segment fans out over when `tenantConcurrency` is
/// not set (SQLite always uses 1).
pub const DEFAULT_TENANT_CONCURRENCY: usize = 4;

/// How long a mutation's lease lasts when `lockLeaseSeconds` is not set.
pub const DEFAULT_LOCK_LEASE_SECONDS: u64 = 15;

/// How long a statement of a migration waits for a lock when
/// `lockTimeoutMillis` is not set (see [`crate::migrate::lock_wait`]).
pub const DEFAULT_LOCK_TIMEOUT_MILLIS: u64 = 1_000;

/// How often a unit is retried after a lock time-out when `lockRetries`
/// is not set.
pub const DEFAULT_LOCK_RETRIES: u32 = 12;

/// The tenant select statement used when `tenantSelectSQL` is not set.
pub const DEFAULT_TENANT_SELECT_SQL: &str = "select name from svc.svc_tenants";
/// The schema placeholder used when `schemaPlaceHolder` is not set.
pub const DEFAULT_SCHEMA_PLACEHOLDER: &str = "{schema}";
/// The listen port used when `port` is not set.
pub const DEFAULT_PORT: u16 = 8080;

/// Log filter levels of the `logLevel` property.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    /// Everything down to debug messages.
    Debug,
    /// Informational messages and above (the default).
    Info,
    /// Errors only.
    Error,
    /// Only messages that precede a crash; shown as errors.
    Panic,
}

impl LogLevel {
    /// The value as written in the configuration file.
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Debug => "DEBUG",
            LogLevel::Info => "INFO",
            LogLevel::Error => "ERROR",
            LogLevel::Panic => "PANIC",
        }
    }

    fn parse(text: &str) -> Option<LogLevel> {
        [LogLevel::Debug, LogLevel::Info, LogLevel::Error, LogLevel::Panic]
            .into_iter()
            .find(|level| level.name().eq_ignore_ascii_case(text))
    }
}

/// One extra header of the webhook request, from `webHookHeaders`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Header name, as written.
    pub name: String,
    /// Header value; a secret, never served or logged.
    pub value: String,
}

/// A validated configuration with every default applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Where migrations are stored: a local path, `s3://…` or a blob URL.
    pub base_location: String,
    /// The database kind.
    pub driver: Driver,
    /// Connection string; may hold a password, see [`Config::render_redacted`].
    /// With `shards:`, the first shard's.
    pub data_source: String,
    /// The database servers of a sharded fleet (`shards:`), in order; empty
    /// when `dataSource` names the one server.
    pub shards: Vec<crate::migrate::shard::Shard>,
    /// `devDataSource`: a database of the same driver, apart from the
    /// fleet's, where a desired-state file is applied to be read (Atlas's
    /// dev database): on MySQL and MariaDB the scratch database is made and
    /// dropped there, so the fleet's user needs no right to create one.
    /// May hold a password, like `dataSource`.
    pub dev_data_source: Option<String>,
    /// Statement returning tenant names.
    pub tenant_select_sql: String,
    /// Statement inserting a tenant, taking its name as one parameter.
    pub tenant_insert_sql: String,
    /// True when the user set neither tenant statement, so the service
    /// creates and uses its own `svc.svc_tenants` table.
    pub default_tenant_table: bool,
    /// Placeholder replaced in SQL by the current schema.
    pub schema_placeholder: String,
    /// Single-schema migration directories.
    pub single_migrations: Vec<String>,
    /// Tenant migration directories.
    pub tenant_migrations: Vec<String>,
    /// Single-schema script directories.
    pub single_scripts: Vec<String>,
    /// Tenant script directories.
    pub tenant_scripts: Vec<String>,
    /// The tenants' desired schema (`desiredSchema`): a file below
    /// `baseLocation`, read as the migrations are, that `diff`, `new` and
    /// `apply --desired` use when no file is given.
    pub desired_schema: Option<String>,
    /// The single schemas' desired schemas (`desiredSchema` by directory):
    /// `singleMigrations` directory → file, as the tenants' is; what `diff
    /// --dir` and `new --dir` use when no file is given.
    pub single_desired_schemas: BTreeMap<String, String>,
    /// Listen port (with `listen` unset).
    pub port: u16,
    /// Where to listen (`listen`, overriding `port`); see
    /// [`auth::bind_address`].
    pub listen: Option<std::net::SocketAddr>,
    /// Who may use the API.
    pub auth: auth::Auth,
    /// Prefix of every route: `/` or `/segment…` without a trailing slash.
    pub path_prefix: String,
    /// Webhook target.
    pub web_hook_url: Option<String>,
    /// Webhook payload template.
    pub web_hook_template: Option<String>,
    /// Extra webhook headers.
    pub web_hook_headers: Vec<Header>,
    /// Log filter.
    pub log_level: LogLevel,
    /// Cost limits of the GraphQL API.
    pub graphql_limits: GraphQlLimits,
    /// What one transaction of a version covers.
    pub transaction_scope: TransactionScope,
    /// Connections a tenant segment fans out over.
    pub tenant_concurrency: usize,
    /// Seconds a client has to send a request's headers before its
    /// connection is closed (`headerReadTimeoutSeconds`).
    pub header_read_timeout_seconds: u64,
    /// Seconds the requests running at a stop signal (a version in
    /// progress included) may take to finish before the process exits
    /// anyway (`shutdownGraceSeconds`).
    pub shutdown_grace_seconds: u64,
    /// Connections the service holds open at once (`maxConnections`); the
    /// others wait in the listen queue.
    pub max_connections: usize,
    /// Connections one client address holds open at once
    /// (`maxConnectionsPerClient`): more are closed as they come, so one
    /// client's slow connections cannot take every slot.
    pub max_connections_per_client: usize,
    /// Seconds a client has to send a request's whole body once its
    /// headers arrived (`bodyReadTimeoutSeconds`): a body sent a byte at a
    /// time holds its connection no longer.
    pub body_read_timeout_seconds: u64,
    /// `POST /v2/service` also takes a JSON body sent as
    /// `application/x-www-form-urlencoded` or `text/plain` without a bearer
    /// credential (`allowFormContentType`: migrator's `curl -d` clients);
    /// off by default, as a browser can send those cross-origin.
    pub allow_form_content_type: bool,
    /// Seconds a mutation's lease lasts unless renewed (drivers whose lock
    /// is a lease row: PostgreSQL, MySQL/MariaDB): how long a holder that
    /// died blocks the next mutation at most. Renewed every third of it.
    pub lock_lease_seconds: u64,
    /// Milliseconds a migration's statement waits for a lock before it
    /// gives up and its unit is retried (0: waits as long as the engine
    /// does, which is forever on PostgreSQL).
    pub lock_timeout_millis: u64,
    /// How often a unit that hit the lock time-out is retried.
    pub lock_retries: u32,
    /// Seconds a migration's statement may run (0: no limit).
    pub statement_timeout_seconds: u64,
    /// Whether each schema's catalog fingerprint is stored after its unit
    /// commits (fleet drift's "changed since recorded").
    pub record_fingerprints: bool,
    /// The PostgreSQL database is a Citus coordinator (`citus: true`): the
    /// linter's Citus rules apply even where it does not connect (`lint
    /// --all`). The service finds Citus by itself when it connects.
    pub citus: bool,
    /// Single-schema migration directories whose tables are Citus reference
    /// tables (`citusReferenceTables`): on Citus, the tables a file of one
    /// of them creates are made reference tables in the file's
    /// transaction (see [`crate::migrate::citus`]).
    pub citus_reference_tables: Vec<String>,
    /// What a version over all schemas does about fleet drift found first.
    pub drift_policy: DriftPolicy,
    /// Tenants a version may fail in and go on (each put aside in
    /// quarantine); one more stops it. 0: the first failure stops it.
    pub failure_budget: crate::migrate::quarantine::FailureBudget,
    /// The format of each directory that names one (`migrationFormats`);
    /// the others' is detected from their files.
    pub migration_formats: BTreeMap<String, crate::migrate::format::Format>,
    /// What a pending migration that sorts before applied ones does
    /// (`outOfOrder`).
    pub out_of_order: crate::migrate::plan::OutOfOrderPolicy,
    /// The pace of backfills on each database server (`backfill:`).
    pub backfill: BackfillSettings,
    /// How traces and metrics are exported over OTLP (`telemetry:` and the
    /// OpenTelemetry SDK's environment variables); `None`: not at all.
    pub telemetry: Option<Telemetry>,
    /// Read [`ParseOptions::offline`]: the environment variables that are
    /// not set, left as written in the properties a command that never
    /// connects does not use (`dataSource`, `shards`, `webHook…`). Empty
    /// otherwise; such a configuration cannot connect.
    pub unresolved: BTreeSet<String>,
}

/// The environment variable that, set and not blank, replaces `dataSource`
/// (a deployment keeps the secret out of the file).
pub const DATA_SOURCE_VARIABLE: &str = "STRATA_DATA_SOURCE";

/// The properties only a command that connects (or serves) uses: read
/// offline, a variable they name may be unset.
const CONNECTION_PROPERTIES: [&str; 6] =
    ["dataSource", "shards", "devDataSource", "webHookURL", "webHookTemplate", "webHookHeaders"];

/// How [`Config::parse_with`] reads a configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// The directory of the configuration file: a relative local
    /// `baseLocation` and relative SQLite files are resolved against it.
    /// `None` leaves them relative to the working directory.
    pub directory: Option<String>,
    /// For a command that never connects (`lint --all`, `config check
    /// --offline`): an environment variable that is not set, in a property
    /// only a connection uses, is left as written (listed in
    /// [`Config::unresolved`]) instead of refused.
    pub offline: bool,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum PortValue {
    Number(i64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawConfig {
    base_location: Option<String>,
    driver: Option<String>,
    data_source: Option<String>,
    shards: Option<Vec<RawShard>>,
    dev_data_source: Option<String>,
    #[serde(rename = "tenantSelectSQL")]
    tenant_select_sql: Option<String>,
    #[serde(rename = "tenantInsertSQL")]
    tenant_insert_sql: Option<String>,
    /// lukaszbudnik/migrator's current name for `tenantSelectSQL`.
    tenant_select: Option<String>,
    /// lukaszbudnik/migrator's current name for `tenantInsertSQL`.
    tenant_insert: Option<String>,
    schema_place_holder: Option<String>,
    single_migrations: Option<Vec<String>>,
    tenant_migrations: Option<Vec<String>>,
    single_scripts: Option<Vec<String>>,
    tenant_scripts: Option<Vec<String>>,
    desired_schema: Option<directories::RawDesiredSchema>,
    port: Option<PortValue>,
    listen: Option<String>,
    auth: Option<auth::RawAuth>,
    path_prefix: Option<String>,
    #[serde(rename = "webHookURL")]
    web_hook_url: Option<String>,
    web_hook_template: Option<String>,
    web_hook_headers: Option<Vec<String>>,
    log_level: Option<String>,
    #[serde(rename = "graphQLLimits")]
    graphql_limits: Option<RawGraphQlLimits>,
    transaction_scope: Option<String>,
    tenant_concurrency: Option<PortValue>,
    header_read_timeout_seconds: Option<PortValue>,
    shutdown_grace_seconds: Option<PortValue>,
    max_connections: Option<PortValue>,
    max_connections_per_client: Option<PortValue>,
    body_read_timeout_seconds: Option<PortValue>,
    allow_form_content_type: Option<bool>,
    lock_lease_seconds: Option<PortValue>,
    lock_timeout_millis: Option<PortValue>,
    lock_retries: Option<PortValue>,
    statement_timeout_seconds: Option<PortValue>,
    failure_budget: Option<PortValue>,
    record_fingerprints: Option<bool>,
    citus: Option<bool>,
    citus_reference_tables: Option<Vec<String>>,
    drift_policy: Option<String>,
    migration_formats: Option<BTreeMap<String, String>>,
    out_of_order: Option<String>,
    backfill: Option<backfill::RawBackfill>,
    telemetry: Option<telemetry::RawTelemetry>,
}

impl RawConfig {
    /// Reads `yaml` into the raw shape (nothing substituted or checked
    /// yet); a misspelt property is reported with the closest one there is.
    /// The YAML parser's message never reaches the user whole: the lines
    /// around the error it quotes after ` -->`, and a string value it
    /// quotes (`invalid type: string "…"`), could show a `dataSource`'s
    /// password or a header's secret — only where, and what is wrong.
    fn from_yaml(yaml: &str) -> Result<RawConfig, ConfigError> {
        serde_saphyr::from_str(yaml).map_err(|e| {
            let message = one_line(&e.to_string());
            let message = message.split_once(" -->").map_or(message.as_str(), |(before, _)| before).trim_end();
            let message = without_quoted_strings(message);
            suggest::unknown_property(&message).unwrap_or(ConfigError::Yaml(message))
        })
    }
}

/// `message` with every value the parser quoted as `string "…"` (serde's
/// way of naming an unexpected string) left as `a string`.
fn without_quoted_strings(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("string \"") {
        out.push_str(&rest[..at]);
        out.push_str("a string");
        let value = &rest[at + "string \"".len()..];
        rest = value.find('"').map_or("", |end| &value[end + 1..]);
    }
    out.push_str(rest);
    out
}

/// One entry of `shards:`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawShard {
    name: Option<String>,
    data_source: Option<String>,
}

/// Substitutes `${NAME}` from `env` in the values of one property.
struct Substituter<'a, E: Environment + ?Sized> {
    env: &'a E,
    offline: bool,
    /// Offline: the variables left unset so far.
    unresolved: std::cell::RefCell<BTreeSet<String>>,
}

/// A webhook's URL, template and headers, checked.
type Webhook = (Option<String>, Option<String>, Vec<Header>);

impl<E: Environment + ?Sized> Substituter<'_, E> {
    /// `port`: a number or text naming one (default 8080).
    fn port(&self, value: Option<PortValue>) -> Result<u16, ConfigError> {
        match value {
            None => Ok(DEFAULT_PORT),
            Some(PortValue::Number(n)) => port_number("port", n),
            Some(PortValue::Text(text)) => {
                let text = self.text("port", text)?;
                let n = text.trim().parse::<i64>().map_err(|_| invalid("port", format!("{text:?} is not a number")))?;
                port_number("port", n)
            }
        }
    }

    /// `webHookURL` (http or https), `webHookTemplate` (a valid template)
    /// and `webHookHeaders` (`Name: value` lines).
    fn webhook(
        &self,
        url: Option<String>,
        template: Option<String>,
        headers: Option<Vec<String>>,
    ) -> Result<Webhook, ConfigError> {
        let url = self.optional("webHookURL", url)?.filter(|s| !s.trim().is_empty());
        if let Some(url) = &url
            && !(url.starts_with("http://") || url.starts_with("https://"))
            && !(self.offline && url.starts_with("${"))
        {
            let shown = redact_url(url);
            return Err(invalid("webHookURL", format!("{shown:?} is not an http:// or https:// URL")));
        }
        let template = template.map(|t| self.template("webHookTemplate", t)).transpose()?;
        if let Some(template) = &template {
            crate::migrate::summary::validate_template(template)
                .map_err(|reason| invalid("webHookTemplate", reason))?;
        }
        let headers = self
            .list("webHookHeaders", headers)?
            .iter()
            .enumerate()
            .map(|(index, line)| parse_header(index, line))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((url, template, headers))
    }

    /// `dataSource`, or `shards:` (each a `name` and a `dataSource` of
    /// `driver`); one of them. Returns the first data source and the shards.
    fn data_sources(
        &self,
        driver: Driver,
        data_source: Option<String>,
        shards: Option<Vec<RawShard>>,
    ) -> Result<(String, Vec<crate::migrate::shard::Shard>), ConfigError> {
        let check = |property: &'static str, data_source: &str| {
            if self.offline && !template::placeholder_names(data_source).is_empty() {
                return Ok(());
            }
            check_data_source(driver, property, data_source)
        };
        let data_source = self.optional("dataSource", data_source)?.filter(|v| !v.trim().is_empty());
        let Some(raw) = shards else {
            let data_source = required("dataSource", data_source)?;
            check("dataSource", &data_source)?;
            return Ok((data_source, Vec::new()));
        };
        if data_source.is_some() {
            return Err(invalid("shards", "give either dataSource (one server) or shards, not both"));
        }
        if raw.is_empty() {
            return Err(invalid("shards", "must list at least one shard"));
        }
        let mut shards = Vec::with_capacity(raw.len());
        for (index, entry) in raw.into_iter().enumerate() {
            let name = self.optional("shards", entry.name)?.unwrap_or_default();
            let data_source = self
                .optional("shards", entry.data_source)?
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| invalid("shards", format!("shard {} ({name:?}) has no dataSource", index + 1)))?;
            check("shards", &data_source).map_err(|e| invalid("shards", format!("shard {name:?}: dataSource {e}")))?;
            shards.push(crate::migrate::shard::Shard { name, data_source });
        }
        crate::migrate::shard::check_names(shards.iter().map(|s| s.name.as_str()))
            .map_err(|e| invalid("shards", e.to_string()))?;
        Ok((shards[0].data_source.clone(), shards))
    }

    /// `devDataSource`, when given: a data source of `driver`, PostgreSQL,
    /// MySQL or SQL Server (SQLite reads desired files in memory).
    fn dev_data_source(&self, driver: Driver, value: Option<String>) -> Result<Option<String>, ConfigError> {
        let Some(dev) = self.optional("devDataSource", value)?.filter(|v| !v.trim().is_empty()) else {
            return Ok(None);
        };
        if !matches!(driver, Driver::Postgres | Driver::Mysql | Driver::SqlServer) {
            return Err(invalid(
                "devDataSource",
                format!("desired state reads its files on the fleet's own {} database", driver.name()),
            ));
        }
        if !self.offline || template::placeholder_names(&dev).is_empty() {
            check_data_source(driver, "devDataSource", &dev)?;
        }
        Ok(Some(dev))
    }

    fn transaction_scope(&self, value: Option<String>) -> Result<TransactionScope, ConfigError> {
        match self.optional("transactionScope", value)?.as_deref() {
            None | Some("schema") => Ok(TransactionScope::Schema),
            Some("version") => Ok(TransactionScope::Version),
            Some(other) => Err(invalid("transactionScope", format!("{other:?} is not schema or version"))),
        }
    }

    fn drift_policy(&self, value: Option<String>) -> Result<DriftPolicy, ConfigError> {
        match self.optional("driftPolicy", value)?.as_deref() {
            None | Some("report") => Ok(DriftPolicy::Report),
            Some("off") => Ok(DriftPolicy::Off),
            Some("refuse") => Ok(DriftPolicy::Refuse),
            Some("quarantine") => Ok(DriftPolicy::Quarantine),
            Some(other) => Err(invalid("driftPolicy", format!("{other:?} is not off, report, refuse or quarantine"))),
        }
    }

    /// `outOfOrder`: allow, warn (default) or refuse.
    fn out_of_order(&self, value: Option<String>) -> Result<crate::migrate::plan::OutOfOrderPolicy, ConfigError> {
        match self.optional("outOfOrder", value)? {
            None => Ok(crate::migrate::plan::OutOfOrderPolicy::default()),
            Some(text) => crate::migrate::plan::OutOfOrderPolicy::parse(&text)
                .ok_or_else(|| invalid("outOfOrder", format!("{text:?} is not allow, warn or refuse"))),
        }
    }

    /// `migrationFormats`: a format for configured directories.
    fn migration_formats(
        &self,
        value: Option<BTreeMap<String, String>>,
        directories: &[&String],
    ) -> Result<BTreeMap<String, crate::migrate::format::Format>, ConfigError> {
        use crate::migrate::format::Format;
        let mut formats = BTreeMap::new();
        for (directory, name) in value.unwrap_or_default() {
            let name = self.text("migrationFormats", name)?;
            if !directories.iter().any(|d| **d == directory) {
                return Err(invalid(
                    "migrationFormats",
                    format!("{directory:?} is not a configured directory (singleMigrations, tenantMigrations, ...)"),
                ));
            }
            let format = Format::parse(&name).ok_or_else(|| {
                let known: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                invalid(
                    "migrationFormats",
                    format!("{name:?} for {directory:?} is not a format (known: {}, or sqlx)", known.join(", ")),
                )
            })?;
            formats.insert(directory, format);
        }
        Ok(formats)
    }

    /// `failureBudget`: a count (`5`) or a share (`10%`).
    fn failure_budget(
        &self,
        value: Option<PortValue>,
    ) -> Result<crate::migrate::quarantine::FailureBudget, ConfigError> {
        let text = match value {
            None => return Ok(Default::default()),
            Some(PortValue::Number(n)) => n.to_string(),
            Some(PortValue::Text(text)) => self.text("failureBudget", text)?,
        };
        text.parse().map_err(|e: crate::migrate::quarantine::BadBudget| invalid("failureBudget", e.to_string()))
    }

    fn text(&self, property: &'static str, value: String) -> Result<String, ConfigError> {
        self.expand(property, value, false)
    }

    fn template(&self, property: &'static str, value: String) -> Result<String, ConfigError> {
        self.expand(property, value, true)
    }

    fn expand(&self, property: &'static str, value: String, keep_summary: bool) -> Result<String, ConfigError> {
        if !value.contains("${") {
            return Ok(value);
        }
        template::substitute_placeholders(&value, |found| {
            let name = found.name;
            if keep_summary && (name == "summary" || name.starts_with("summary.")) {
                return Ok(None);
            }
            if name.contains('.') {
                return Ok(None);
            }
            let value = match self.env.lookup(name) {
                EnvValue::Set(found) => Some(found),
                EnvValue::Unset => None,
                EnvValue::NotUnicode => {
                    return Err(ConfigError::EnvVarNotUnicode { property, name: name.to_string() });
                }
            };
            // `:-` and `:?` take an empty value as none.
            let usable = match found.fallback {
                template::Fallback::Default { empty_too: true, .. }
                | template::Fallback::Required { empty_too: true, .. } => value.filter(|v| !v.is_empty()),
                _ => value,
            };
            match (usable, found.fallback) {
                (Some(value), _) => Ok(Some(value.to_string())),
                (None, template::Fallback::Default { word, .. }) => Ok(Some(word.to_string())),
                (None, _) => self.unset(property, found),
            }
        })
    }

    /// A placeholder whose variable has no usable value and no default:
    /// refused, or left as written offline in a connection property.
    fn unset(&self, property: &'static str, found: &template::Placeholder<'_>) -> Result<Option<String>, ConfigError> {
        if self.offline && CONNECTION_PROPERTIES.contains(&property) {
            self.unresolved.borrow_mut().insert(found.name.to_string());
            return Ok(None);
        }
        let name = found.name.to_string();
        Err(match found.fallback {
            template::Fallback::Required { message, empty_too } => ConfigError::RequiredEnvVar {
                property,
                name,
                message: if message.trim().is_empty() { "required".to_string() } else { message.to_string() },
                empty_too,
            },
            _ => ConfigError::MissingEnvVar { property, name },
        })
    }

    fn optional(&self, property: &'static str, value: Option<String>) -> Result<Option<String>, ConfigError> {
        value.map(|v| self.text(property, v)).transpose()
    }

    /// A whole number within `range` (given as a number, or as text that may
    /// hold `${NAME}`), or `default` when absent.
    fn number<T: TryFrom<i64> + Copy + std::fmt::Display>(
        &self,
        property: &'static str,
        value: Option<PortValue>,
        default: T,
        range: std::ops::RangeInclusive<i64>,
    ) -> Result<T, ConfigError> {
        let n = match value {
            None => return Ok(default),
            Some(PortValue::Number(n)) => n,
            Some(PortValue::Text(text)) => {
                let text = self.text(property, text)?;
                text.trim().parse::<i64>().map_err(|_| invalid(property, format!("{text:?} is not a number")))?
            }
        };
        match T::try_from(n) {
            Ok(number) if range.contains(&n) => Ok(number),
            _ => Err(invalid(property, format!("{n} is not between {} and {}", range.start(), range.end()))),
        }
    }

    /// A statement given under either of two names (the spec's and
    /// migrator's current one); blank counts as not given, both is an error.
    fn either(
        &self,
        (name, value): (&'static str, Option<String>),
        (alias, alias_value): (&'static str, Option<String>),
    ) -> Result<Option<String>, ConfigError> {
        let value = self.optional(name, value)?.filter(|s| !s.trim().is_empty());
        let alias_value = self.optional(alias, alias_value)?.filter(|s| !s.trim().is_empty());
        match (value, alias_value) {
            (Some(_), Some(_)) => {
                Err(invalid(name, format!("give either {name} or {alias} (migrator's name for it), not both")))
            }
            (value, alias_value) => Ok(value.or(alias_value)),
        }
    }

    fn list(&self, property: &'static str, value: Option<Vec<String>>) -> Result<Vec<String>, ConfigError> {
        value.unwrap_or_default().into_iter().map(|v| self.text(property, v)).collect()
    }
}

impl Config {
    /// Parses `yaml`, substituting `${NAME}` from `env`, applying defaults
    /// and validating every property (paths as written; see
    /// [`Config::parse_with`]).
    pub fn parse<E: Environment + ?Sized>(yaml: &str, env: &E) -> Result<Config, ConfigError> {
        Self::parse_with(yaml, env, &ParseOptions::default())
    }

    /// [`Config::parse`] with relative paths resolved against the
    /// configuration file's directory and, offline, unset variables of the
    /// connection properties allowed (see [`ParseOptions`]).
    /// `STRATA_DATA_SOURCE` in `env`, set and not blank, replaces
    /// `dataSource` (the file's is then not read).
    pub fn parse_with<E: Environment + ?Sized>(
        yaml: &str,
        env: &E,
        options: &ParseOptions,
    ) -> Result<Config, ConfigError> {
        let mut raw = RawConfig::from_yaml(yaml)?;
        let sub = Substituter { env, offline: options.offline, unresolved: Default::default() };
        // Section by section, in the order their errors are reported.
        let database = database::Database::parse(&sub, &mut raw, options.directory.as_deref())?;
        let tenants = tenants::Tenants::parse(&sub, &mut raw, database.driver)?;
        let directories = directories::Directories::parse(&sub, &mut raw, database.driver)?;
        let service = service::Service::parse(&sub, &mut raw)?;
        let transaction_scope = sub.transaction_scope(raw.transaction_scope.take())?;
        let drift_policy = sub.drift_policy(raw.drift_policy.take())?;
        let limits = limits::Limits::parse(&sub, &mut raw)?;
        let failure_budget = sub.failure_budget(raw.failure_budget.take())?;
        let migration_formats = sub.migration_formats(raw.migration_formats.take(), &directories.configured())?;
        let out_of_order = sub.out_of_order(raw.out_of_order.take())?;
        let graphql_limits = raw.graphql_limits.take().map(RawGraphQlLimits::validate).transpose()?.unwrap_or_default();
        let backfill = BackfillSettings::parse(&sub, &mut raw, database.driver)?;
        let telemetry = Telemetry::parse(&sub, &mut raw)?;

        Ok(Config {
            base_location: database.base_location,
            driver: database.driver,
            data_source: database.data_source,
            shards: database.shards,
            dev_data_source: database.dev_data_source,
            tenant_select_sql: tenants.select_sql,
            tenant_insert_sql: tenants.insert_sql,
            default_tenant_table: tenants.default_table,
            schema_placeholder: tenants.schema_placeholder,
            single_migrations: directories.single_migrations,
            tenant_migrations: directories.tenant_migrations,
            single_scripts: directories.single_scripts,
            tenant_scripts: directories.tenant_scripts,
            desired_schema: directories.desired_schema,
            single_desired_schemas: directories.single_desired_schemas,
            port: service.port,
            listen: service.listen,
            auth: service.auth,
            path_prefix: service.path_prefix,
            web_hook_url: service.web_hook_url,
            web_hook_template: service.web_hook_template,
            web_hook_headers: service.web_hook_headers,
            log_level: service.log_level,
            graphql_limits,
            transaction_scope,
            tenant_concurrency: limits.tenant_concurrency,
            header_read_timeout_seconds: limits.header_read_timeout_seconds,
            shutdown_grace_seconds: limits.shutdown_grace_seconds,
            max_connections: limits.max_connections,
            max_connections_per_client: limits.max_connections_per_client,
            body_read_timeout_seconds: limits.body_read_timeout_seconds,
            allow_form_content_type: service.allow_form_content_type,
            lock_lease_seconds: limits.lock_lease_seconds,
            lock_timeout_millis: limits.lock_timeout_millis,
            lock_retries: limits.lock_retries,
            statement_timeout_seconds: limits.statement_timeout_seconds,
            record_fingerprints: raw.record_fingerprints.unwrap_or(true),
            citus: database.citus,
            citus_reference_tables: directories.citus_reference_tables,
            drift_policy,
            failure_budget,
            migration_formats,
            out_of_order,
            backfill,
            telemetry,
            unresolved: sub.unresolved.into_inner(),
        })
    }

    /// The effective configuration as YAML, with the password of
    /// `dataSource` (and of the shards', `devDataSource`'s and the
    /// replicas'), every `webHookHeaders` value and all of `webHookURL` but
    /// its scheme, host and port shown as `***`.
    pub fn render_redacted(&self) -> String {
        let view = RedactedView {
            base_location: &self.base_location,
            driver: self.driver.name(),
            data_source: self.shards.is_empty().then(|| redact_data_source(&self.data_source)),
            shards: self
                .shards
                .iter()
                .map(|shard| RedactedShard { name: &shard.name, data_source: redact_data_source(&shard.data_source) })
                .collect(),
            dev_data_source: self.dev_data_source.as_deref().map(redact_data_source),
            tenant_select_sql: &self.tenant_select_sql,
            tenant_insert_sql: &self.tenant_insert_sql,
            schema_place_holder: &self.schema_placeholder,
            single_migrations: &self.single_migrations,
            tenant_migrations: &self.tenant_migrations,
            single_scripts: &self.single_scripts,
            tenant_scripts: &self.tenant_scripts,
            desired_schema: self.desired_schema_view(),
            port: self.port,
            listen: self.listen.map(|a| a.to_string()),
            auth: (&self.auth).into(),
            path_prefix: &self.path_prefix,
            web_hook_url: self.web_hook_url.as_deref().map(redact_url),
            web_hook_template: self.web_hook_template.as_deref(),
            web_hook_headers: self.web_hook_headers.iter().map(|h| format!("{}: {MASK}", h.name)).collect(),
            log_level: self.log_level.name(),
            transaction_scope: self.transaction_scope.name(),
            tenant_concurrency: self.tenant_concurrency,
            header_read_timeout_seconds: self.header_read_timeout_seconds,
            shutdown_grace_seconds: self.shutdown_grace_seconds,
            max_connections: self.max_connections,
            max_connections_per_client: self.max_connections_per_client,
            body_read_timeout_seconds: self.body_read_timeout_seconds,
            allow_form_content_type: self.allow_form_content_type,
            lock_lease_seconds: self.lock_lease_seconds,
            lock_timeout_millis: self.lock_timeout_millis,
            lock_retries: self.lock_retries,
            statement_timeout_seconds: self.statement_timeout_seconds,
            record_fingerprints: self.record_fingerprints,
            citus: self.citus,
            citus_reference_tables: &self.citus_reference_tables,
            drift_policy: self.drift_policy.name(),
            failure_budget: self.failure_budget,
            migration_formats: self.migration_formats.iter().map(|(d, f)| (d.as_str(), f.name())).collect(),
            out_of_order: self.out_of_order.name(),
            graphql_limits: self.graphql_limits,
            backfill: &self.backfill,
            telemetry: self.telemetry.as_ref(),
        };
        serde_saphyr::to_string(&view).unwrap_or_else(|e| format!("# configuration could not be rendered: {e}\n"))
    }

    /// The single schemas: the last path element of every single-schema
    /// migration and script directory.
    pub fn single_schemas(&self) -> impl Iterator<Item = &str> {
        self.single_migrations.iter().chain(&self.single_scripts).map(|dir| directories::schema_of(dir))
    }

    /// The schema of the single-schema migration directory `dir` (the last
    /// element of its path), `None` when `dir` is not one of
    /// `singleMigrations`.
    pub fn single_migrations_schema(&self, dir: &str) -> Option<&str> {
        self.single_migrations
            .iter()
            .find(|configured| configured.as_str() == dir.trim_end_matches('/'))
            .map(|dir| directories::schema_of(dir))
    }

    /// Whose schema a desired schema is planned for when the migration
    /// directory `dir` is named: a `singleMigrations` directory's single
    /// schema, or `None` for a `tenantMigrations` directory (the tenants').
    /// Any other directory is refused, naming those that can be.
    pub fn desired_schema_of(&self, dir: &str) -> Result<Option<&str>, String> {
        if let Some(schema) = self.single_migrations_schema(dir) {
            return Ok(Some(schema));
        }
        if self.tenant_migrations.iter().any(|tenants| tenants.as_str() == dir.trim_end_matches('/')) {
            return Ok(None);
        }
        let migrations: Vec<&str> =
            self.directories().filter(|(_, kind)| !kind.is_script()).map(|(dir, _)| dir).collect();
        Err(format!(
            "{dir}: a desired schema is planned for a migration directory's schema (configured: {})",
            migrations.join(", ")
        ))
    }

    /// The configured desired schema of the tenants (`single`: `None`) or
    /// of the single schema `single` (never the tenants' for a single
    /// schema: planned there, every table of the single schema would be
    /// dropped): its path below `baseLocation`.
    pub fn desired_schema_for(&self, single: Option<&str>) -> Option<&str> {
        match single {
            None => self.desired_schema.as_deref(),
            Some(schema) => self
                .single_desired_schemas
                .iter()
                .find(|(directory, _)| directories::schema_of(directory) == schema)
                .map(|(_, file)| file.as_str()),
        }
    }

    /// [`Config::desired_schema_for`] as the directory below
    /// `baseLocation` to read (`""`: the base itself) and the file's name
    /// in it.
    pub fn desired_schema_file(&self, single: Option<&str>) -> Option<(&str, &str)> {
        self.desired_schema_for(single).map(desired_schema_parts)
    }

    /// `desiredSchema` as rendered: one path while only the tenants' is
    /// configured, else a path per directory (the tenants' under the first
    /// `tenantMigrations` directory).
    fn desired_schema_view(&self) -> Option<DesiredSchemaView<'_>> {
        if self.single_desired_schemas.is_empty() {
            return self.desired_schema.as_deref().map(DesiredSchemaView::One);
        }
        let mut files: BTreeMap<&str, &str> =
            self.single_desired_schemas.iter().map(|(d, f)| (d.as_str(), f.as_str())).collect();
        if let (Some(file), Some(tenants)) = (&self.desired_schema, self.tenant_migrations.first()) {
            files.insert(tenants, file);
        }
        Some(DesiredSchemaView::ByDirectory(files))
    }

    /// Every configured directory with the type of migration it holds, in
    /// configuration order.
    pub fn directories(&self) -> impl Iterator<Item = (&str, crate::migrate::MigrationType)> {
        use crate::migrate::MigrationType::*;
        [
            (&self.single_migrations, SingleMigration),
            (&self.tenant_migrations, TenantMigration),
            (&self.single_scripts, SingleScript),
            (&self.tenant_scripts, TenantScript),
        ]
        .into_iter()
        .flat_map(|(dirs, kind)| dirs.iter().map(move |d| (d.as_str(), kind)))
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RedactedView<'a> {
    base_location: &'a str,
    driver: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data_source: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    shards: Vec<RedactedShard<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dev_data_source: Option<String>,
    #[serde(rename = "tenantSelectSQL")]
    tenant_select_sql: &'a str,
    #[serde(rename = "tenantInsertSQL")]
    tenant_insert_sql: &'a str,
    schema_place_holder: &'a str,
    single_migrations: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    tenant_migrations: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    single_scripts: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    tenant_scripts: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    desired_schema: Option<DesiredSchemaView<'a>>,
    port: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    listen: Option<String>,
    auth: auth::AuthView,
    path_prefix: &'a str,
    #[serde(rename = "webHookURL", skip_serializing_if = "Option::is_none")]
    web_hook_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    web_hook_template: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    web_hook_headers: Vec<String>,
    log_level: &'a str,
    transaction_scope: &'a str,
    tenant_concurrency: usize,
    header_read_timeout_seconds: u64,
    shutdown_grace_seconds: u64,
    max_connections: usize,
    max_connections_per_client: usize,
    body_read_timeout_seconds: u64,
    allow_form_content_type: bool,
    lock_lease_seconds: u64,
    lock_timeout_millis: u64,
    lock_retries: u32,
    statement_timeout_seconds: u64,
    record_fingerprints: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    citus: bool,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    citus_reference_tables: &'a [String],
    drift_policy: &'a str,
    failure_budget: crate::migrate::quarantine::FailureBudget,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    migration_formats: BTreeMap<&'a str, &'a str>,
    out_of_order: &'a str,
    #[serde(rename = "graphQLLimits")]
    graphql_limits: GraphQlLimits,
    backfill: &'a BackfillSettings,
    #[serde(skip_serializing_if = "Option::is_none")]
    telemetry: Option<&'a Telemetry>,
}

/// `desiredSchema` in the rendered configuration.
#[derive(Serialize)]
#[serde(untagged)]
enum DesiredSchemaView<'a> {
    /// The tenants' alone.
    One(&'a str),
    /// By migration directory.
    ByDirectory(BTreeMap<&'a str, &'a str>),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RedactedShard<'a> {
    name: &'a str,
    data_source: String,
}

/// Whether `data_source` has a form of `driver` (and can be read).
fn check_data_source(driver: Driver, property: &'static str, data_source: &str) -> Result<(), ConfigError> {
    crate::migrate::datasource::check_driver(driver, data_source)
        .and_then(|()| crate::migrate::datasource::normalize(driver, data_source))
        .map(|_| ())
        .map_err(|e| invalid(property, e.to_string().trim_start_matches("dataSource ").to_string()))
}

/// `STRATA_DATA_SOURCE`, when set and not blank.
fn data_source_override<E: Environment + ?Sized>(env: &E) -> Result<Option<String>, ConfigError> {
    match env.lookup(DATA_SOURCE_VARIABLE) {
        EnvValue::Set(value) if !value.trim().is_empty() => Ok(Some(value.to_string())),
        EnvValue::Set(_) | EnvValue::Unset => Ok(None),
        EnvValue::NotUnicode => {
            Err(ConfigError::EnvVarNotUnicode { property: "dataSource", name: DATA_SOURCE_VARIABLE.to_string() })
        }
    }
}

fn required(property: &'static str, value: Option<String>) -> Result<String, ConfigError> {
    value.filter(|v| !v.trim().is_empty()).ok_or(ConfigError::Missing(property))
}

fn invalid(property: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { property, reason: reason.into() }
}

fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn port_number(property: &'static str, n: i64) -> Result<u16, ConfigError> {
    u16::try_from(n)
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| invalid(property, format!("{n} is not a port number (1-65535)")))
}

/// `""`, `/` → `/`; `api`, `/api/` → `/api`.
fn normalize_path_prefix(text: &str) -> Result<String, ConfigError> {
    let trimmed = text.trim().trim_matches('/');
    if trimmed.is_empty() {
        return Ok("/".to_string());
    }
    if trimmed.split('/').any(|segment| segment.is_empty() || segment == "." || segment == "..")
        || trimmed.chars().any(|c| c.is_whitespace() || matches!(c, '?' | '#' | '{' | '}' | '*' | ':'))
    {
        return Err(invalid("pathPrefix", format!("{text:?} is not a plain URL path")));
    }
    Ok(format!("/{trimmed}"))
}

fn validate_directories(
    driver: Driver,
    single_migrations: &[String],
    tenant_migrations: &[String],
    single_scripts: &[String],
    tenant_scripts: &[String],
) -> Result<(), ConfigError> {
    let mut seen = FxHashSet::default();
    let mut schemas: Vec<(&str, &str)> = Vec::new();
    let lists: [(&'static str, &[String]); 4] = [
        ("singleMigrations", single_migrations),
        ("tenantMigrations", tenant_migrations),
        ("singleScripts", single_scripts),
        ("tenantScripts", tenant_scripts),
    ];
    for (property, dirs) in lists {
        for dir in dirs {
            if !is_relative_below_base(dir) {
                return Err(invalid(property, format!("{dir:?} is not a relative directory below baseLocation")));
            }
            if !seen.insert(dir.as_str()) {
                return Err(invalid(property, format!("directory {dir:?} is configured more than once")));
            }
            if property.starts_with("single") {
                let schema = dir.rsplit('/').next().unwrap_or(dir);
                check_single_schema(driver, schema, &schemas)
                    .map_err(|e| invalid(property, format!("schema of directory {dir:?}: {e}")))?;
                schemas.push((dir, schema));
            }
        }
    }
    Ok(())
}

/// The schema a single-schema directory names (its last element): an
/// identifier, neither the service's own schema (its books) nor one the
/// engine keeps for itself (`public` and SQL Server's `dbo` excepted: a
/// database's default schema may hold single migrations), and not another
/// directory's schema written in another case (one schema to the engine,
/// two in the records: `ref` and `Ref` on PostgreSQL).
fn check_single_schema(driver: Driver, schema: &str, before: &[(&str, &str)]) -> Result<(), String> {
    validate_identifier(schema).map_err(|e| e.to_string())?;
    if schema.eq_ignore_ascii_case(ident::SERVICE_SCHEMA) {
        return Err(format!("{schema:?} is the service's own schema, which holds its records"));
    }
    if schema.eq_ignore_ascii_case(ident::DESIRED_SCRATCH) {
        return Err(format!("{schema:?} is the scratch a desired schema is read in, made and dropped at each reading"));
    }
    let lower = schema.to_ascii_lowercase();
    if driver.reserves_schema(schema) && !matches!(lower.as_str(), "public" | "dbo") {
        return Err(format!("{schema:?} is a schema {} keeps for itself", driver.name()));
    }
    match before.iter().find(|(_, other)| other.eq_ignore_ascii_case(schema) && *other != schema) {
        Some((dir, other)) => Err(format!(
            "{schema:?} and {other:?} (directory {dir:?}) differ only in case, which {} may read as one schema \
             while the records keep two; name them alike",
            driver.name()
        )),
        None => Ok(()),
    }
}

/// Whether `path` names something below `baseLocation`: relative, `/`
/// between its parts, none of them empty, `.` or `..`.
fn is_relative_below_base(path: &str) -> bool {
    !path.is_empty()
        && !path.contains('\\')
        && path.split('/').all(|part| !part.is_empty() && part != "." && part != "..")
}

/// A path below `baseLocation` as its directory (`""`: the base) and name.
fn desired_schema_parts(file: &str) -> (&str, &str) {
    file.rsplit_once('/').unwrap_or(("", file))
}

/// Parses one `Name: value` line. Errors never quote the line: it may be a secret.
fn parse_header(index: usize, line: &str) -> Result<Header, ConfigError> {
    let Some((name, value)) = line.split_once(':') else {
        return Err(invalid("webHookHeaders", format!("entry {} is not \"Name: value\"", index + 1)));
    };
    let name = name.trim();
    let valid_name =
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if !valid_name {
        return Err(invalid("webHookHeaders", format!("{name:?} is not a valid header name")));
    }
    let value = value.trim();
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(invalid("webHookHeaders", format!("value of header {name} contains a line break")));
    }
    Ok(Header { name: name.to_string(), value: value.to_string() })
}

#[cfg(test)]
mod tests;
