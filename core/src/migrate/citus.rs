//! Where Citus keeps what a migration file creates (the shell asks only
//! when the database is a Citus coordinator).
//!
//! - A **tenant** file runs in the tenant's distributed schema: Citus
//!   places its tables on the schema's worker by itself.
//! - A **single-schema** file (migration or script) runs with schema-based
//!   sharding off for its transaction, so a schema it creates stays an
//!   ordinary schema of the coordinator, as the service's own does.
//! - A single-schema migration directory listed in `citusReferenceTables`
//!   has the tables its file created made **reference tables** (a copy on
//!   every node, which the tenants' tables may reference), in the file's
//!   transaction: a file that fails makes none.

use crate::migrate::MigrationType;

/// What the shell does around one file on Citus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FilePlacement {
    /// Schema-based sharding off for the file's transaction (a schema it
    /// creates is the coordinator's).
    pub on_coordinator: bool,
    /// After the file, the schema's tables Citus does not know yet become
    /// reference tables.
    pub reference_tables: bool,
}

/// The placement of a file of `directory` holding `kind` migrations;
/// `reference_tables` is `Config::citus_reference_tables`.
pub fn placement(reference_tables: &[String], kind: MigrationType, directory: &str) -> FilePlacement {
    let single = matches!(kind, MigrationType::SingleMigration | MigrationType::SingleScript);
    FilePlacement {
        on_coordinator: single,
        reference_tables: kind == MigrationType::SingleMigration && reference_tables.iter().any(|d| d == directory),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::config::Config;
    use std::collections::BTreeMap;

    #[test]
    fn single_files_stay_on_the_coordinator_and_listed_directories_make_reference_tables() {
        let yaml = "baseLocation: /m\ndriver: postgres\ndataSource: postgres://u@h:5432/d\n\
                    singleMigrations: [ref, config]\ntenantMigrations: [tenants]\nsingleScripts: [jobs]\n\
                    citusReferenceTables: [ref]\n";
        let config = Config::parse(yaml, &BTreeMap::new()).unwrap();
        let both = FilePlacement { on_coordinator: true, reference_tables: true };
        assert_eq!(placement(&config.citus_reference_tables, MigrationType::SingleMigration, "ref"), both);
        let coordinator = FilePlacement { on_coordinator: true, reference_tables: false };
        assert_eq!(placement(&config.citus_reference_tables, MigrationType::SingleMigration, "config"), coordinator);
        assert_eq!(placement(&config.citus_reference_tables, MigrationType::SingleScript, "jobs"), coordinator);
        assert_eq!(
            placement(&config.citus_reference_tables, MigrationType::TenantMigration, "tenants"),
            FilePlacement::default()
        );
        assert!(config.render_redacted().contains("citusReferenceTables:\n- ref\n"), "{}", config.render_redacted());

        let not_single = Config::parse(&yaml.replace("[ref]\n", "[tenants]\n"), &BTreeMap::new()).unwrap_err();
        assert_eq!(not_single.to_string(), "property citusReferenceTables: \"tenants\" is not one of singleMigrations");
        let sqlite = "baseLocation: /m\ndriver: sqlite\ndataSource: sqlite:///tmp/x.db\nsingleMigrations: [ref]\n\
                      citusReferenceTables: [ref]\n";
        let refused = Config::parse(sqlite, &BTreeMap::new()).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "property citusReferenceTables: Citus is a PostgreSQL extension; driver is sqlite"
        );
    }
}
