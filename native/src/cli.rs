//! The command line: `strata [serve]` runs the service; `plan`, `apply`,
//! `status` and `config check` are one-shot commands for pipelines, on the
//! same configuration, the same executor and the same cross-instance lock
//! as the API (`apply` runs the API's own `createVersion`/`createTenant`
//! in-process, so it answers exactly what the API would).

/// `print!` to stdout that never panics: once the reader has gone away
/// (`strata status | head -1`), the rest is dropped and the command ends
/// as it would have, with its own exit status.
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::write_stdout(format_args!($($arg)*)) };
}

/// [`out!`] with a line end.
macro_rules! outln {
    () => { $crate::cli::write_stdout(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::cli::write_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

mod access;
mod answers;
mod backfill;
mod commands;
mod desired;
mod new;
mod output;
mod progress;
mod remote;
mod rollout;
mod tenants;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use strata_core::migrate::lint::Severity;

use crate::db::DbError;
use crate::db::error::Cause;
use crate::db::error::OpenError;
use crate::error::AppError;

/// What a command's exit status means (also in `--help` and README.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Exit {
    /// Done, or nothing to do.
    Success = 0,
    /// A migration failed (or a file was refused before anything ran), or
    /// another operation failed.
    Failed = 1,
    /// The command line is wrong (clap's own status).
    Usage = 2,
    /// Drift: a migration applied earlier changed since; Apply refuses.
    Drift = 3,
    /// The configuration cannot be read or is invalid.
    BadConfig = 4,
    /// The database cannot be reached.
    Unreachable = 5,
    /// `plan --check`: a migration is pending.
    Pending = 6,
    /// The database server is read-only (a standby or replica).
    ReadOnly = 7,
    /// A migration gave up waiting for a lock another session holds (after
    /// its retries): run again later, or end the blocking session.
    LockTimeout = 8,
    /// `lint` or `plan --check`: a finding at or above the failing
    /// severity.
    LintFindings = 9,
    /// `drift`: a tenant's live schema differs from the tenants that
    /// recorded the same migrations; `diff --check`: a tenant differs from
    /// the desired schema.
    SchemaDrift = 10,
    /// `apply`, `quarantine retry`: the version completed, but tenants failed
    /// and are quarantined (within the failure budget, or in a backfill run
    /// after the version: past its budget, the rest are paused).
    Quarantined = 11,
    /// `apply`, `quarantine retry` on a sharded fleet: the version did not
    /// finish on some shards (each named with why); the others finished.
    /// `status`, `tenants`: some shards did not answer (each named); what
    /// is shown of them is as last seen.
    ShardsFailed = 12,
    /// `apply`, `plan` under `outOfOrder: refuse`: a pending migration
    /// sorts before one already applied.
    OutOfOrder = 13,
    /// `apply`, `quarantine retry`: a rollout is in progress and the
    /// version would run its files on tenants whose waves are not due.
    RolloutInProgress = 14,
    /// `audit verify`: a row of the audit log was edited or deleted.
    AuditBroken = 15,
    /// Refused for who asks: through `--server` the service refused the
    /// credential (`STRATA_TOKEN`) or its role (401, 403, 429); in-process,
    /// an approval that must go through the service, or a starter's own.
    Refused = 16,
}

impl Exit {
    /// The exit status an error code means: the one table of it, for the
    /// in-process commands' errors (after the few that need more than their
    /// code, [`From<&AppError>`]) and for the service's answers through
    /// `--server`.
    fn of_code(code: &str) -> Exit {
        match code {
            "DRIFT" => Exit::Drift,
            "OUT_OF_ORDER" => Exit::OutOfOrder,
            "ROLLOUT_IN_PROGRESS" => Exit::RolloutInProgress,
            "MIGRATIONS_PENDING" => Exit::Pending,
            "SCHEMA_DRIFT" => Exit::SchemaDrift,
            "SHARDS_FAILED" => Exit::ShardsFailed,
            "READ_ONLY_SERVER" => Exit::ReadOnly,
            "UNREACHABLE" | "SHARD_UNREACHABLE" | "CONNECTION_LOST" => Exit::Unreachable,
            "UNAUTHENTICATED" | "FORBIDDEN" | "TOO_MANY_REQUESTS" => Exit::Refused,
            "INVALID_INPUT"
            | "INVALID_TENANT_NAME"
            | "INVALID_TENANT_LIST"
            | "NOT_A_TENANT"
            | "NOT_QUARANTINED"
            | "QUARANTINED"
            | "REPAIR_REFUSED"
            | "UNKNOWN_ATTRIBUTE"
            | "UNKNOWN_SHARD"
            | "DESTRUCTIVE_PLAN"
            | "USAGE" => Exit::Usage,
            _ => Exit::Failed,
        }
    }
}

impl From<&AppError> for Exit {
    /// The one mapping from a failure to an exit status: by its code
    /// ([`Exit::of_code`]), but for what the code does not tell apart (a
    /// database that cannot be reached, why a migration failed, a
    /// configuration the engine refuses).
    fn from(error: &AppError) -> Self {
        match error {
            AppError::Database(DbError::Open(OpenError::Connect(_))) => Exit::Unreachable,
            AppError::Database(DbError::MigrationFailed(failure)) => match failure.cause {
                Cause::ConnectionLost => Exit::Unreachable,
                Cause::ReadOnly => Exit::ReadOnly,
                Cause::LockTimeout => Exit::LockTimeout,
                Cause::Statement | Cause::PoolExhausted | Cause::LockLost | Cause::StatementTimeout => Exit::Failed,
            },
            #[cfg(feature = "sqlserver")]
            AppError::Database(DbError::SqlServer(_)) => Exit::Unreachable,
            AppError::Database(
                DbError::Open(OpenError::BadDataSource(_))
                | DbError::Open(OpenError::CitusWorker { .. })
                | DbError::Open(OpenError::DriverNotBuilt(_))
                | DbError::Open(OpenError::Directory { .. }),
            ) => Exit::BadConfig,
            _ => Exit::of_code(error.code()),
        }
    }
}

impl From<&crate::server::ServeError> for Exit {
    /// `strata serve`'s failures, by the same mapping as the commands'.
    fn from(error: &crate::server::ServeError) -> Self {
        use crate::server::ServeError;
        match error {
            ServeError::Config(_) => Exit::BadConfig,
            ServeError::Database { error, .. } => Exit::from(error.as_ref()),
            ServeError::Other(_) => Exit::Failed,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        ExitCode::from(exit as u8)
    }
}

const EXIT_CODES: &str = "\
Exit status:
  0  done, or nothing to do
  1  a migration failed (or a file was refused before anything ran), or another failure
  2  the command line is wrong
  3  drift: a migration applied earlier has changed; Apply refuses to run
  4  the configuration cannot be read or is invalid
  5  the database cannot be reached
  6  plan --check: a migration is pending (scripts, due on every version, do not count)
  7  the database server is read-only (a standby or replica): point dataSource at the primary
  8  a migration gave up waiting for a lock another session holds (after its retries): run again later
  9  lint, plan --check: a finding at or above --fail-on (default: error)
  10 drift: a tenant's live schema differs from the others that recorded the same migrations, or a schema
     changed since its last migration; apply refused by driftPolicy: refuse; diff --check: a tenant differs
     from the desired schema
  11 apply, quarantine retry: the version completed, but tenants failed and are quarantined — within the
     failure budget, or in a backfill run after the version (past its budget, the rest pause) (strata quarantine lists them)
  12 apply, quarantine retry on a sharded fleet: the version did not finish on some shards (each is named,
     with why); the others finished. Run it again once they are fixed or reachable. status, tenants: some
     shards did not answer (each is named); what is shown of them is as last seen
  13 apply, plan: outOfOrder is refuse and a pending migration sorts before one already applied
  14 apply: a rollout is in progress (approve, resume or cancel it, or --override-rollout)
  15 audit verify: a row of the audit log was edited, deleted or re-signed, or the --expect head differs
  16 --server: the service refused the token (STRATA_TOKEN) or its role";

/// Strata: versioned SQL migrations for single schemas and tenant fleets.
#[derive(Debug, Parser)]
#[command(name = "strata", version, about, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    /// The configuration file (default: $SVC_YAML, else /data/svc.yaml).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Run plan, apply, status, rollout and quarantine through a running
    /// service's API (default: $STRATA_SERVER), authenticated with the token
    /// in $STRATA_TOKEN; no configuration or database credentials needed.
    #[arg(long, global = true, value_name = "URL")]
    server: Option<String>,
    /// Log errors only (overrides logLevel).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    /// Log debug detail, commands included (overrides logLevel).
    #[arg(short, long, global = true)]
    verbose: bool,
    /// Retry connecting to a database that cannot be reached yet (waits
    /// from 0.25 s doubling to 5 s) for up to SECONDS, then fail as usual
    /// (exit 5).
    #[arg(long, global = true, value_name = "SECONDS")]
    wait_for_db: Option<u64>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the HTTP and GraphQL API (what `strata` alone does).
    Serve(ServeArgs),
    #[command(flatten)]
    OnDatabase(OnDatabase),
    /// Create the next migration file of a directory, named and started in
    /// its convention (a timestamp or the next number; the format's
    /// markers), and print its path. With --desired FILE: holding the plan
    /// of the largest group of tenants that differs from the desired
    /// schema (what `diff --desired` shows), the other groups listed with
    /// how the file fares there.
    New(NewArgs),
    /// Write an Atlas directory's `atlas.sum` again over its files as they
    /// are (what `atlas migrate hash` does): after a change to them was
    /// reviewed. Until then a directory whose files differ from its sum is
    /// refused.
    Hash {
        /// The configured directory (default: the only migration
        /// directory).
        #[arg(long, value_name = "DIR")]
        dir: Option<String>,
    },
    /// The configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Print the shell completion script for bash, zsh, fish, elvish or
    /// powershell (e.g. `strata completions bash >
    /// /etc/bash_completion.d/strata`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// The commands that open the database (or, `lint --all`, only read the
/// sources).
#[derive(Debug, Subcommand)]
enum OnDatabase {
    /// Show what `apply` would do, without writing anything: per schema the
    /// files to apply, scripts, out-of-order files and drift.
    Plan(PlanArgs),
    /// Apply (or record, with --sync) everything pending as a new version,
    /// through the API's own code path and lock.
    Apply(Box<ApplyArgs>),
    /// Recent versions, the tenant count, and pending migrations per schema.
    Status(StatusArgs),
    /// Each tenant with its shard and whether it is quarantined (a shard
    /// that does not answer: as the directory last saw it).
    Tenants(TenantsArgs),
    /// Fleet drift: fingerprint every tenant's live schema and name those
    /// that differ from the tenants that recorded the same migrations.
    Drift(DriftArgs),
    /// Desired state: every tenant's way from its live schema to the schema
    /// --desired FILE (or the configuration's desiredSchema) describes (DDL
    /// naming the tenant's schema `{schema}`), tenants grouped by identical
    /// plan, largest group first, destructive steps marked, each plan
    /// linted. Reads only: the file is applied into a scratch schema in a
    /// transaction that is rolled back (MariaDB: a scratch database dropped
    /// afterwards).
    Diff(DiffArgs),
    /// Undo the most recently applied migrations (their down parts, newest
    /// first), per schema in one transaction with their records, as a new
    /// version: --steps N (in each schema) or --to FILE; refused before
    /// anything runs when a down part is missing.
    Revert(RevertArgs),
    /// Record a deliberate change to applied files: the new checksum of
    /// each changed file, and the removal of the records of deleted files
    /// (every one, or those named). Lists what it changes first; runs no
    /// migration and never records a pending file; audited as a version.
    Repair(RepairArgs),
    /// Tenants put aside after failures a version absorbed (failureBudget):
    /// list them, retry them, or release them.
    Quarantine(QuarantineArgs),
    /// Backfills (`strata:backfill` files): every tenant's progress, batch
    /// by batch (`list`, the default); `pause` and `resume` them.
    Backfill(BackfillArgs),
    /// Roll a version out in waves run by the service (a canary, a share,
    /// the rest) with gates between them: start, approve, pause, resume,
    /// list; `drive` runs the waves due now in this process.
    Rollout(RolloutArgs),
    /// Lint the files `apply` would run (with --all: every source file, no
    /// database needed) for statements that lock or rewrite live tables,
    /// break the running application or lose data.
    Lint(LintArgs),
    /// API tokens (`auth.tokens: true`): create one (its secret is printed
    /// once, stored as a hash), list them, revoke one.
    Token(TokenArgs),
    /// The audit log: who did what, when, with what outcome (`--since`,
    /// `--json`); `verify` checks its hash chain and signatures for edited,
    /// deleted or re-signed rows; `head` prints the newest row's seal to
    /// keep elsewhere; `keygen` a new signing key (`auth.auditKey`).
    Audit(AuditArgs),
}

#[derive(Debug, Args)]
struct TokenArgs {
    #[command(subcommand)]
    action: TokenAction,
    /// Print as JSON.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum TokenAction {
    /// Create a token; prints its secret once.
    Create {
        /// Its name (the actor of what it does is `token:NAME`).
        #[arg(long)]
        name: String,
        /// viewer (reads), deployer (versions, waves, rollouts), approver
        /// (approves rollouts) or admin (everything).
        #[arg(long)]
        role: strata_core::auth::Role,
        /// Days until it stops working, 1 or more (default: until revoked).
        #[arg(long, value_name = "DAYS", value_parser = clap::value_parser!(u32).range(1..))]
        expires: Option<u32>,
        /// Who holds it: every token of one owner is one principal (the
        /// starter of a rollout cannot approve it with another of theirs).
        /// Default: the token is its own principal.
        #[arg(long, value_name = "WHO")]
        owner: Option<String>,
    },
    /// Every token: name, role, created, expiry (never a secret).
    List,
    /// Revoke a token: it stops working (within 2 s on running servers).
    Revoke {
        /// The token's name.
        name: String,
    },
}

#[derive(Debug, Args)]
struct AuditArgs {
    #[command(subcommand)]
    action: Option<AuditAction>,
    /// Only the rows from this time on (RFC 3339, e.g. 2026-11-26T00:00:00Z,
    /// or a date); anything else is refused (exit 2).
    #[arg(long, value_name = "TIME", value_parser = crate::service::audit::since_time)]
    since: Option<String>,
    /// Print as JSON.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum AuditAction {
    /// Check the hash chain and every row's signature: exit 15 naming the
    /// first row edited, deleted, or written, rewritten or re-signed
    /// without the key.
    Verify {
        /// A public key to verify signatures with, besides
        /// `auth.auditPublicKeys` and the configured key's own (repeatable;
        /// base64, as `keygen` prints it).
        #[arg(long = "public-key", value_name = "KEY", value_parser = public_key)]
        public_keys: Vec<strata_core::auth::audit_key::PublicKey>,
        /// A head printed earlier by `strata audit head` (`ID:SEAL`): exit
        /// 15 when that row is missing (the log was truncated) or differs.
        #[arg(long, value_name = "ID:SEAL")]
        expect: Option<String>,
        /// The first row signed (`strata audit verify` says it once a key
        /// signs): exit 15 when a row from it on is unsigned — a log whose
        /// signatures were stripped looks otherwise like one written before
        /// the key.
        #[arg(long, value_name = "ID")]
        signed_from: Option<i64>,
    },
    /// Print the newest row as `ID:SEAL`, to keep outside the database
    /// (`verify --expect` checks it later).
    Head,
    /// Print a new signing key for `auth.auditKey` and its public key (for
    /// `auth.auditPublicKeys` and `verify --public-key`); reads nothing.
    Keygen,
}

/// `--public-key`: a base64 Ed25519 public key.
fn public_key(text: &str) -> Result<strata_core::auth::audit_key::PublicKey, String> {
    strata_core::auth::audit_key::PublicKey::from_base64(text).map_err(|e| e.to_string())
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Where to listen, `address:port` (overrides `listen` and `port`;
    /// default: `port` on loopback without auth, on every interface with
    /// it).
    #[arg(long, value_name = "ADDRESS:PORT", conflicts_with = "port")]
    listen: Option<std::net::SocketAddr>,
    /// The port to listen on (overrides `port`, and the port of `listen`).
    #[arg(long, value_name = "PORT")]
    port: Option<u16>,
}

#[derive(Debug, Args)]
struct DriftArgs {
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct DiffArgs {
    /// The desired schema of a tenant: a SQL file of DDL (without FILE,
    /// or without the option: the configuration's desiredSchema).
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    desired: Option<Option<PathBuf>>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Exit 10 when a tenant differs from the desired schema.
    #[arg(long)]
    check: bool,
    /// A single-schema migration directory (`singleMigrations`): plan its
    /// schema to the desired one instead of the tenants' (the file names
    /// it `{schema}`, as the tenants' does).
    #[arg(long, value_name = "DIR")]
    dir: Option<String>,
    /// `new NAME --desired FILE`: the file to write (its description and
    /// directory) instead of a report.
    #[arg(skip)]
    write: Option<(String, Option<String>)>,
}

#[derive(Debug, Args)]
struct RepairArgs {
    /// Files to repair, as `directory/name` (default: every file changed
    /// since it was applied and every applied file deleted from the source).
    files: Vec<String>,
    /// The name of the version the repair is audited as.
    #[arg(long = "version", value_name = "NAME", default_value = "repair")]
    version_name: String,
    /// Only list what would change.
    #[arg(long)]
    dry_run: bool,
    /// Print as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct BackfillArgs {
    #[command(subcommand)]
    action: Option<BackfillAction>,
    /// Print as JSON.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum BackfillAction {
    /// Every tenant's backfill and how far it is (the default).
    List {
        /// Per file instead: its tenants by state, its rows and pace, and
        /// the 20 tenants to look at first (running, paused, failed,
        /// cancelled, then done) — a short answer for a fleet of thousands.
        #[arg(long)]
        summary: bool,
    },
    /// Pause the running backfills of these tenants (all when none is
    /// named): no batch of them starts until they are resumed.
    Pause {
        /// Tenants (default: every tenant).
        tenants: Vec<String>,
    },
    /// Resume paused backfills (all when no tenant is named), after their
    /// last committed batch.
    Resume {
        /// Tenants (default: every tenant).
        tenants: Vec<String>,
    },
    /// Cancel running or paused backfills (all when no tenant is named):
    /// their tenants are quarantined; a retry resumes them after their last
    /// committed batch.
    Cancel {
        /// Tenants (default: every tenant).
        tenants: Vec<String>,
    },
}

#[derive(Debug, Args)]
struct QuarantineArgs {
    #[command(subcommand)]
    action: Option<QuarantineAction>,
    /// Print as JSON.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum QuarantineAction {
    /// The quarantined tenants with their errors (the default).
    List,
    /// Run a version over quarantined tenants only (all, or those named):
    /// each completed leaves the quarantine.
    Retry {
        /// The name of the new version.
        #[arg(long = "version", value_name = "NAME")]
        version_name: String,
        /// Tenants to retry (default: every quarantined tenant).
        tenants: Vec<String>,
        /// Exit once the version is done, without waiting for the backfills
        /// it restarted (the service runs them; their tenants stay
        /// quarantined until they are done).
        #[arg(long)]
        no_wait: bool,
        /// Run in tenants a rollout in progress has not reached yet, past
        /// its gates (recorded in its events); without it such a retry is
        /// refused (exit 14).
        #[arg(long)]
        override_rollout: bool,
    },
    /// Let tenants go without running anything: the next version takes
    /// them like any other.
    Release {
        /// Tenants to release.
        #[arg(required = true)]
        tenants: Vec<String>,
    },
}

#[derive(Debug, Args)]
struct RolloutArgs {
    #[command(subcommand)]
    action: Option<RolloutAction>,
    /// Print as JSON.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum RolloutAction {
    /// Every rollout with its waves and last event (the default).
    List,
    /// Store a new rollout; the service (or `strata rollout drive`) runs it.
    Start {
        /// The name each wave's version starts with.
        #[arg(long = "version", value_name = "NAME")]
        version_name: String,
        /// A wave, in order: `t1,t2` (tenants), `10%` (a stable share) or
        /// `rest`, then optionally `:approve` or `:soak=SECONDS` (what
        /// happens before the next wave) and `:budget=N` or `:budget=N%`
        /// (the wave's own failure budget). Repeat for each wave.
        #[arg(long = "wave", value_name = "WAVE", required_unless_present = "desired")]
        waves: Vec<String>,
        /// Tenants each wave may fail in and go on (N or N%; default:
        /// failureBudget of the configuration).
        #[arg(long, value_name = "N|N%")]
        failure_budget: Option<String>,
        /// Roll out this desired schema (a SQL file of DDL; without FILE,
        /// the configuration's desiredSchema) instead of waves: one wave
        /// per group of tenants sharing a plan (`diff --desired`), largest
        /// first, an approval between each two; each approval approves its
        /// wave's plan, and a tenant whose plan changed since is held back.
        #[arg(long, value_name = "FILE", num_args = 0..=1, conflicts_with = "waves")]
        desired: Option<Option<PathBuf>>,
        /// With --desired: the groups whose plan loses data are waves too.
        #[arg(long, requires = "desired", conflicts_with = "skip_destructive")]
        allow_destructive: bool,
        /// With --desired: the groups whose plan loses data are left out.
        #[arg(long, requires = "desired")]
        skip_destructive: bool,
    },
    /// Let a rollout awaiting approval run its next wave.
    Approve {
        /// The rollout.
        id: i64,
    },
    /// Stop a rollout before its next wave.
    Pause {
        /// The rollout.
        id: i64,
    },
    /// End a rollout before its remaining waves: versions over the fleet
    /// are no longer held by it.
    Cancel {
        /// The rollout.
        id: i64,
    },
    /// Go on with a paused rollout, or run a stopped rollout's failed wave
    /// again.
    Resume {
        /// The rollout.
        id: i64,
    },
    /// Run here every wave due now, until each rollout waits for a gate or
    /// is over (no server needed; a server drives rollouts on its own).
    Drive,
}

#[derive(Debug, Args)]
struct LintArgs {
    /// Every source file, applied or not, read from baseLocation only (no
    /// database connection).
    #[arg(long)]
    all: bool,
    /// Exit 9 when a finding is at or above this severity.
    #[arg(long, value_name = "SEVERITY", default_value = "error")]
    fail_on: Severity,
    /// Print the findings as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct PlanArgs {
    /// Plan `createTenant` for this new tenant instead of `createVersion`.
    #[arg(long, value_name = "NAME")]
    tenant: Option<String>,
    /// Plan a Sync (record without running) instead of an Apply.
    #[arg(long)]
    sync: bool,
    /// Plan a revert (with --steps N or --to FILE) instead of an Apply.
    #[arg(long, requires = "extent")]
    revert: bool,
    #[command(flatten)]
    extent: ExtentArgs,
    /// Exit 6 when a migration is pending (scripts, due on every version, do
    /// not count), 9 on a lint finding at or above --fail-on, 3 on drift:
    /// a CI gate.
    #[arg(long)]
    check: bool,
    /// With --check: the severity of lint findings that fail the check.
    #[arg(long, value_name = "SEVERITY", default_value = "error")]
    fail_on: Severity,
    /// Print the plan as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct ApplyArgs {
    /// The name of the new version.
    #[arg(long = "version", value_name = "NAME")]
    version_name: String,
    /// Record the pending migrations without running them.
    #[arg(long)]
    sync: bool,
    /// With --sync: record the migrations up to and including FILE
    /// (`directory/name`) only, as for a database already at FILE (Flyway's
    /// baseline).
    #[arg(long = "to", value_name = "FILE", requires = "sync", conflicts_with = "tenant")]
    sync_to: Option<String>,
    /// Run everything, then roll it back.
    #[arg(long)]
    dry_run: bool,
    /// Leave the backfills the version started to the service's runner
    /// (or a later `apply`) instead of running them before exiting.
    #[arg(long)]
    no_wait: bool,
    /// Run while a rollout is in progress, past its gates (recorded in each
    /// active rollout's events); without it such an apply is refused
    /// (exit 14).
    #[arg(long)]
    override_rollout: bool,
    /// Create this tenant (`createTenant`) instead of `createVersion`.
    #[arg(long, value_name = "NAME")]
    tenant: Option<String>,
    /// With `--tenant` on a sharded fleet: the shard to create it on
    /// (default: the one with the fewest tenants).
    #[arg(long, value_name = "SHARD", requires = "tenant")]
    shard: Option<String>,
    /// With `--tenant` on Citus: place the new tenant on the node holding
    /// this tenant's shards.
    #[arg(long, value_name = "TENANT", requires = "tenant")]
    colocate_with: Option<String>,
    /// A wave: only these tenants (comma-separated), e.g. a canary.
    #[arg(long, value_name = "NAMES", value_delimiter = ',', conflicts_with_all = ["share", "tenant"])]
    tenants: Option<Vec<String>>,
    /// A wave: a stable share of the tenants, by a hash of their names
    /// (`10%` is the same tenants on every run; 10% ⊂ 50%).
    #[arg(long, value_name = "N%", value_parser = parse_share, conflicts_with_all = ["tenant", "tenants"])]
    share: Option<u8>,
    /// A wave: the tenants whose attribute (a column `tenantSelectSQL`
    /// returns beside the name) has one of the values, e.g. `tier=internal`
    /// or `tier=internal,beta`.
    #[arg(
        long = "where",
        value_name = "NAME=VALUE[,VALUE…]",
        value_parser = parse_attribute,
        conflicts_with_all = ["tenant", "tenants", "share"]
    )]
    attribute: Option<strata_core::migrate::wave::Wave>,
    /// Tenants the version may fail in and go on, each quarantined: a
    /// number (5) or a share of the version's tenants (10%) (default:
    /// failureBudget of the configuration).
    #[arg(long, value_name = "N|N%")]
    failure_budget: Option<strata_core::migrate::quarantine::FailureBudget>,
    /// Bring the tenants to this desired schema (a SQL file of DDL; without
    /// FILE, the configuration's desiredSchema): each group of tenants
    /// sharing a plan (`diff --desired`) as a version of its own, the plan
    /// recorded as `desired/<plan>.sql`; refused while a migration is
    /// pending or a group's plan loses data.
    #[arg(
        long,
        value_name = "FILE",
        num_args = 0..=1,
        conflicts_with_all = ["sync", "tenant", "tenants", "share", "attribute"]
    )]
    desired: Option<Option<PathBuf>>,
    /// With --desired: run the groups whose plan loses data too.
    #[arg(long, requires = "desired", conflicts_with = "skip_destructive")]
    allow_destructive: bool,
    /// With --desired: run the groups whose plan loses no data, leave the
    /// others.
    #[arg(long, requires = "desired")]
    skip_destructive: bool,
    /// With --desired: run only the group of tenants whose plan (as `diff
    /// --desired` shows it) starts with PLAN.
    #[arg(long, value_name = "PLAN", requires = "desired")]
    group: Option<String>,
    /// With --desired: bring this singleMigrations directory's schema
    /// there instead of the tenants (its configured desiredSchema when no
    /// FILE is given), as one version, its plan recorded as
    /// `DIR/desired/<plan>.sql`; refused while any migration is pending.
    #[arg(long, value_name = "DIR", requires = "desired", conflicts_with = "group")]
    dir: Option<String>,
    /// Print the `CreateResults` the API would return, as JSON.
    #[arg(long)]
    json: bool,
}

impl ApplyArgs {
    /// What `--allow-destructive` / `--skip-destructive` ask of a desired
    /// schema's groups that lose data (refused without either).
    fn destructive(&self) -> strata_core::migrate::desired::Destructive {
        destructive(self.allow_destructive, self.skip_destructive)
    }
}

/// What `--allow-destructive` / `--skip-destructive` ask of a desired
/// schema's groups that lose data (refused without either).
fn destructive(allow: bool, skip: bool) -> strata_core::migrate::desired::Destructive {
    use strata_core::migrate::desired::Destructive;
    match (allow, skip) {
        (true, _) => Destructive::Allow,
        (_, true) => Destructive::Skip,
        _ => Destructive::Refuse,
    }
}

#[derive(Debug, Args)]
struct NewArgs {
    /// What the migration does, e.g. "add users" (becomes `add_users` in
    /// the file name).
    name: String,
    /// The configured directory (default: the only migration directory).
    #[arg(long, value_name = "DIR")]
    dir: Option<String>,
    /// Write the plan from the tenants' live schemas to this desired
    /// schema (the largest group's) into the file — with `--dir` naming a
    /// single-schema migration directory, from that schema's; reads the
    /// database. Without FILE: the configuration's desiredSchema.
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    desired: Option<Option<PathBuf>>,
}

/// How far a revert goes back (`revert`, `plan --revert`).
#[derive(Debug, Args)]
#[group(id = "extent", required = false, multiple = false)]
struct ExtentArgs {
    /// Undo the last N migrations applied in each schema.
    #[arg(long, value_name = "N")]
    steps: Option<u32>,
    /// Undo every migration applied after FILE (directory/name), which
    /// stays.
    #[arg(long, value_name = "FILE")]
    to: Option<String>,
}

impl ExtentArgs {
    /// The extent asked for, if any.
    fn extent(&self) -> Option<strata_core::migrate::revert::Extent> {
        use strata_core::migrate::revert::Extent;
        match (&self.steps, &self.to) {
            (Some(n), _) => Some(Extent::Steps(*n)),
            (None, Some(file)) => Some(Extent::To(file.clone())),
            (None, None) => None,
        }
    }
}

#[derive(Debug, Args)]
struct RevertArgs {
    /// The name of the new version (the revert is recorded as one).
    #[arg(long = "version", value_name = "NAME")]
    version_name: String,
    #[command(flatten)]
    extent: ExtentArgs,
    /// Run everything, then roll it back.
    #[arg(long)]
    dry_run: bool,
    /// Run while a rollout is in progress (recorded in its events).
    #[arg(long)]
    override_rollout: bool,
    /// Only these tenants (comma-separated); the single schemas stay.
    #[arg(long, value_name = "NAMES", value_delimiter = ',', conflicts_with_all = ["share", "attribute"])]
    tenants: Option<Vec<String>>,
    /// Only a stable share of the tenants (as `apply --share`).
    #[arg(long, value_name = "N%", value_parser = parse_share, conflicts_with_all = ["tenants", "attribute"])]
    share: Option<u8>,
    /// Only the tenants whose attribute has one of the values (as `apply
    /// --where`).
    #[arg(long = "where", value_name = "NAME=VALUE[,VALUE…]", value_parser = parse_attribute)]
    attribute: Option<strata_core::migrate::wave::Wave>,
    /// Print the `CreateResults` as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct TenantsArgs {
    #[command(subcommand)]
    action: Option<TenantsAction>,
    /// Only the tenants of this shard.
    #[arg(long)]
    shard: Option<String>,
    /// Print as JSON.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum TenantsAction {
    /// Citus: move a tenant's distributed schema to another worker node
    /// (`citus_schema_move`), under the mutation lock — refused while a
    /// version runs.
    Move {
        /// The tenant.
        tenant: String,
        /// The node: HOST:PORT, as `pg_dist_node` names it.
        #[arg(long)]
        to: String,
        /// Citus's shard transfer mode: auto (logical replication; tables
        /// need a primary key or replica identity), force_logical or
        /// block_writes (copies while writes wait).
        #[arg(long, default_value = "auto")]
        mode: String,
    },
    /// Create many tenants and migrate them as one version
    /// (`createTenants`): the list is checked whole first — each name by
    /// the engine's rule, none twice, none existing — and refused (exit 2)
    /// naming every problem before anything runs.
    Add(TenantsAddArgs),
}

#[derive(Debug, Args)]
struct TenantsAddArgs {
    /// The new tenants.
    names: Vec<String>,
    /// A file of names, one a line (blank lines and `#` comments skipped);
    /// `-` reads standard input.
    #[arg(long, value_name = "FILE", conflicts_with = "names", required_unless_present = "names")]
    from: Option<PathBuf>,
    /// The name of the new version.
    #[arg(long = "version", value_name = "NAME")]
    version_name: String,
    /// Record the tenant migrations without running them.
    #[arg(long)]
    sync: bool,
    /// On a sharded fleet: the shard they all go to (default: each to the
    /// shard with the fewest tenants).
    #[arg(long, value_name = "NAME")]
    shard: Option<String>,
}

#[derive(Debug, Args)]
struct StatusArgs {
    /// Versions shown (the newest).
    #[arg(long, default_value_t = 10)]
    versions: usize,
    /// Print as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Validate the configuration and print it with secrets hidden.
    Check {
        /// Without the variables only a connection needs: one unset in
        /// dataSource, shards or webHook… is left as written and named.
        #[arg(long)]
        offline: bool,
    },
}

/// `--share`: `10%` or `10`, 0–100.
fn parse_share(text: &str) -> Result<u8, String> {
    let number = text.trim().trim_end_matches('%').trim();
    match number.parse::<u8>() {
        Ok(share) if share <= 100 => Ok(share),
        _ => Err(format!("{text:?} is not a share between 0% and 100%")),
    }
}

fn parse_attribute(text: &str) -> Result<strata_core::migrate::wave::Wave, String> {
    strata_core::migrate::wave::Wave::attribute(text).map_err(|e| e.to_string())
}

/// Set once stdout's reader has gone away: later output is dropped.
static STDOUT_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Writes to stdout (see [`out!`]): a closed pipe is remembered and every
/// later write dropped; no write panics.
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    use std::sync::atomic::Ordering;
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if stdout.write_fmt(args).and_then(|()| stdout.flush()).is_err() {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
}

/// Parses the command line and runs it.
pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = cli.config.as_deref();
    let verbosity = match (cli.quiet, cli.verbose) {
        (true, _) => crate::startup::Verbosity::Quiet,
        (false, true) => crate::startup::Verbosity::Verbose,
        (false, false) => crate::startup::Verbosity::Configured,
    };
    let cli_server = cli.server.is_some();
    let server = cli.server.or_else(|| std::env::var("STRATA_SERVER").ok().filter(|s| !s.trim().is_empty()));
    let wait = cli.wait_for_db.map(std::time::Duration::from_secs);
    match cli.command.unwrap_or(Command::Serve(ServeArgs { listen: None, port: None })) {
        Command::OnDatabase(OnDatabase::Audit(AuditArgs { action: Some(AuditAction::Keygen), json, .. })) => {
            access::keygen(json).into()
        }
        Command::Serve(args) => {
            let overrides = crate::server::Overrides { listen: args.listen, port: args.port, wait_for_db: wait };
            serve(config, overrides, verbosity)
        }
        Command::OnDatabase(command) => match (server, config) {
            (Some(server), Some(config)) => {
                let from = if cli_server { "--server" } else { "STRATA_SERVER" };
                eprintln!(
                    "strata: --config {} and {from} {} name two targets; give one (unset STRATA_SERVER to run on the \
                     configuration's database): nothing ran",
                    config.display(),
                    server.trim()
                );
                Exit::Usage.into()
            }
            (Some(server), None) => remote::run(&server, command).into(),
            (None, _) => commands::run(config, command, verbosity, wait).into(),
        },
        Command::New(NewArgs { name, dir, desired: Some(desired) }) => {
            let diff =
                DiffArgs { desired: Some(desired), json: false, check: false, dir: None, write: Some((name, dir)) };
            commands::run(config, OnDatabase::Diff(diff), verbosity, wait).into()
        }
        Command::New(args) => {
            commands::local(config, false, |_, config| new::new_migration(config, &args.name, args.dir.as_deref()))
                .into()
        }
        Command::Hash { dir } => commands::local(config, false, |_, config| new::hash(config, dir.as_deref())).into(),
        Command::Config(ConfigCommand::Check { offline }) => {
            commands::local(config, offline, commands::config_check).into()
        }
        Command::Completions { shell } => completions(shell).into(),
    }
}

/// `strata serve`: its error printed once, its status the commands'.
fn serve(
    config: Option<&std::path::Path>,
    overrides: crate::server::Overrides,
    verbosity: crate::startup::Verbosity,
) -> ExitCode {
    match crate::server::serve(config, overrides, verbosity) {
        Ok(()) => Exit::Success.into(),
        Err(error) => {
            eprintln!("strata: {error}");
            Exit::from(&error).into()
        }
    }
}

/// `strata completions SHELL`: the script, generated from this command line.
fn completions(shell: clap_complete::Shell) -> Exit {
    use clap::CommandFactory;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "strata", &mut script);
    out!("{}", String::from_utf8_lossy(&script));
    Exit::Success
}
