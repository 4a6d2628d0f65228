//! `apply --json`: the API's `CreateResults` (every field except the
//! migrations' `contents`), built from the service's typed result.

use serde::Serialize;
use strata_core::migrate::MigrationType;

use crate::db::{MigrationRow, QuarantineRow};
use crate::service::CreateResult;

/// `CreateResults`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CreateResults<'a> {
    summary: Summary<'a>,
    version: Option<Version<'a>>,
    quarantined: &'a [QuarantineRow],
    skipped_tenants: &'a [String],
    released_tenants: &'a [String],
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Summary<'a> {
    started_at: &'a str,
    duration: f64,
    tenants: u64,
    single_migrations: u64,
    tenant_migrations: u64,
    tenant_migrations_total: u64,
    migrations_grand_total: u64,
    single_scripts: u64,
    tenant_scripts: u64,
    tenant_scripts_total: u64,
    scripts_grand_total: u64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Version<'a> {
    id: i64,
    name: &'a str,
    created: &'a str,
    db_migrations: Vec<DbMigration<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct DbMigration<'a> {
    id: i64,
    name: &'a str,
    migration_type: &'static str,
    source_dir: &'a str,
    file: &'a str,
    check_sum: &'a str,
    schema: &'a str,
    created: &'a str,
}

/// The API's name of a migration type (`MigrationType` of the schema).
fn type_name(kind: MigrationType) -> &'static str {
    match kind {
        MigrationType::SingleMigration => "SingleMigration",
        MigrationType::TenantMigration => "TenantMigration",
        MigrationType::SingleScript => "SingleScript",
        MigrationType::TenantScript => "TenantScript",
    }
}

impl<'a> CreateResults<'a> {
    /// The result of a mutation and the rows of its version.
    pub(super) fn new(result: &'a CreateResult, migrations: &'a [MigrationRow]) -> Self {
        let counts = &result.summary.counts;
        CreateResults {
            quarantined: &result.quarantined,
            skipped_tenants: &result.skipped,
            released_tenants: &result.released,
            summary: Summary {
                started_at: &result.summary.started_at,
                duration: result.summary.duration,
                tenants: counts.tenants,
                single_migrations: counts.single_migrations,
                tenant_migrations: counts.tenant_migrations,
                tenant_migrations_total: counts.tenant_migrations_total,
                migrations_grand_total: counts.migrations_grand_total(),
                single_scripts: counts.single_scripts,
                tenant_scripts: counts.tenant_scripts,
                tenant_scripts_total: counts.tenant_scripts_total,
                scripts_grand_total: counts.scripts_grand_total(),
            },
            version: result.version.as_ref().map(|version| Version {
                id: version.id,
                name: &version.name,
                created: &version.created,
                db_migrations: migrations
                    .iter()
                    .map(|row| DbMigration {
                        id: row.id,
                        name: &row.name,
                        migration_type: type_name(row.migration_type),
                        source_dir: &row.source_dir,
                        file: &row.file,
                        check_sum: &row.checksum,
                        schema: &row.schema,
                        created: &row.created,
                    })
                    .collect(),
            }),
        }
    }
}
