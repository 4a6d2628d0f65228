//! The migration service's decisions: what the configuration says, which
//! files exist and in what order, what runs where, what a file says about
//! transactions, and how an operation is summed up.
//!
//! The modules import each other without a cycle; which module uses which
//! is in each one's `use` lines, not listed here.
//!
//! - [`config`]: the YAML configuration, `${NAME}` substitution and the
//!   redacted rendering served at `GET /v2/config`.
//! - [`source`]: source migrations (name, type, file, checksum) and their order.
//! - [`format`]: files of the tools Strata replaces (dbmate, golang-migrate
//!   and sqlx, goose, Flyway) read in their own format: what runs forward,
//!   what undoes it, where it sorts.
//! - [`repair`]: `strata repair` — new checksums of changed files, records
//!   of deleted files removed, never a pending file recorded.
//! - [`plan`]: which migration runs in which schema, or is only recorded,
//!   plus drift and out-of-order diagnostics and the plan's segments.
//! - [`summary`]: an operation's counts, its summary and the webhook payload.
//! - [`report`]: a plan rendered for people (`strata plan`, `strata status`)
//!   and grouped for pipelines.
//! - [`backfill`]: fleet backfills — a file's `strata:backfill` directive,
//!   the batch statements over bound key ranges, their pace, and the
//!   resumable state machine the shell drives.
//! - [`statements`]: what a migration file says about transactions (the
//!   `strata:no-transaction` directive, hidden transaction control,
//!   statements that cannot run in one), its statements one by one, and
//!   error positions mapped back into the file — over sqlparser's tokenizer.
//! - [`lint`]: the migration linter — locks, table rewrites, breakage and
//!   data loss a set of files would cause, over sqlparser's parser.
//! - [`fingerprint`]: fleet drift — a schema's live catalog fingerprinted,
//!   tenants grouped by recorded migrations, outliers and their differences.
//! - [`lock_wait`]: the lock time-outs a file runs with, and the waits
//!   before a unit that hit one is retried.
//! - [`operation`]: what a mutation is (a version, new tenants, a retry, a
//!   revert), decided once where the request is built.
//! - [`quarantine`]: failure isolation — a version's failure budget, and
//!   the tenants it runs in given those put aside by earlier versions.
//! - [`run`]: a version's run decided — the files it executes read before
//!   any runs and how each step runs, which tenant failures the failure
//!   budget absorbs, what a stopped version committed, per schema, what
//!   `driftPolicy` makes of the fleet's drift, and how a unit's steps split
//!   into transactions.
//! - [`revert`]: which recorded migrations a revert undoes, where, in what
//!   order — a plan the shell runs like any other.
//! - [`wave`]: a version over part of the fleet — named tenants or a
//!   stable share of them.
//! - [`rollout`]: a version rolled out in ordered waves with gates (go, soak,
//!   approval) between them — the state machine the service stores and drives.
//! - [`shard`]: a fleet on several database servers — the `shards:` list,
//!   where a new tenant goes, ids that name their shard, one plan of many.
//! - [`fleet`]: what such a fleet decides from each shard's answer — each
//!   shard's part of a request, the directory, quarantine hand-overs, what
//!   the operator sees, one identity per version.
//! - [`history`]: a Sync adopting what another tool applied — each schema's
//!   dbmate, golang-migrate, sqlx, goose, Flyway or Atlas history read and
//!   matched to the files by that tool's naming rule.
//! - [`batches`]: SQL Server scripts cut at `GO` lines.
//! - [`location`]: which storage a `baseLocation` names.
//! - [`ident`]: validation and quoting of schema and tenant identifiers.
//! - [`keywords`]: the words each engine reserves, refused as tenant names.
//! - [`tenant_list`]: many new tenants at once, every problem of the list
//!   found before anything runs.
//! - `template`: `${name}` placeholders, for the configuration's
//!   environment substitution and the webhook template.
//! - [`redact`]: hiding secrets in connection strings.
//! - [`datasource`]: `dataSource` forms of other tools turned into driver
//!   URLs, and the check that a `dataSource` belongs to its `driver`.
//! - [`driver`]: the database kinds and the schema names each engine reserves.
//! - [`failure`]: why a statement failed, as far as what to do next differs
//!   (SQLSTATEs, MySQL error numbers, Citus's relayed node failures).
//! - [`citus`]: where Citus keeps what a file creates (single schemas on the
//!   coordinator, `citusReferenceTables`).

pub mod backfill;
pub mod batches;
pub mod citus;
pub mod config;
pub mod datasource;
pub mod desired;
pub mod driver;
pub mod failure;
pub mod fingerprint;
pub mod fleet;
pub mod format;
pub mod history;
pub mod ident;
pub mod keywords;
pub mod lint;
pub mod location;
pub mod lock_wait;
pub mod operation;
pub mod plan;
pub mod quarantine;
pub mod redact;
pub mod repair;
pub mod report;
pub mod revert;
pub mod rollout;
pub mod run;
pub mod shard;
pub mod source;
pub mod statements;
pub mod summary;
mod template;
pub mod tenant_list;
pub mod wave;

pub use source::MigrationType;
