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
//! - A new tenant created **with** another (`colocateWith`) goes to the
//!   node holding the other's shards ([`colocation_node`]).

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

/// Why a new tenant cannot be placed with another (`colocateWith`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ColocationError {
    /// The database does not run Citus.
    #[error("colocateWith needs Citus: the database does not run it")]
    NotCitus,
    /// The tenant named is none.
    #[error("colocateWith: {0} is not a tenant")]
    Unknown(String),
    /// The tenant named has no shards, so no node yet.
    #[error("colocateWith: {0} has no tables yet, so Citus has placed it on no node")]
    Unplaced(String),
    /// Citus named the node in a form that is not `host:port`.
    #[error("colocateWith: {0}'s node {1:?} is not host:port")]
    BadNode(String, String),
}

/// Where a new tenant placed with `with` goes (`createTenant`'s
/// `colocateWith`): the node (host, port) holding `with`'s shards, from the
/// tenants and their placements (schema, `host:port`) as Citus lists them.
/// Citus gives every distributed schema a colocation group of its own, so
/// the new tenant shares `with`'s node, where their queries stay local.
pub fn colocation_node(
    citus: bool,
    tenants: &[String],
    placements: &[(String, String)],
    with: &str,
) -> Result<(String, u16), ColocationError> {
    if !citus {
        return Err(ColocationError::NotCitus);
    }
    if !tenants.iter().any(|t| t == with) {
        return Err(ColocationError::Unknown(with.to_string()));
    }
    let node = placements
        .iter()
        .find(|(schema, _)| schema == with)
        .map(|(_, node)| node.as_str())
        .ok_or_else(|| ColocationError::Unplaced(with.to_string()))?;
    let bad = || ColocationError::BadNode(with.to_string(), node.to_string());
    let (host, port) = node.rsplit_once(':').ok_or_else(bad)?;
    let port = port.parse::<u16>().map_err(|_| bad())?;
    Ok((host.to_string(), port))
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

        let tenants = vec!["t0".to_string(), "t1".to_string()];
        let placed = vec![("t0".to_string(), "10.0.0.2:5432".to_string())];
        assert_eq!(colocation_node(true, &tenants, &placed, "t0"), Ok(("10.0.0.2".to_string(), 5432)));
        assert_eq!(colocation_node(true, &tenants, &placed, "t1"), Err(ColocationError::Unplaced("t1".into())));
        assert_eq!(colocation_node(true, &tenants, &placed, "t9"), Err(ColocationError::Unknown("t9".into())));
        assert_eq!(colocation_node(false, &tenants, &placed, "t0"), Err(ColocationError::NotCitus));
        let odd = vec![("t0".to_string(), "nowhere".to_string())];
        assert!(matches!(colocation_node(true, &tenants, &odd, "t0"), Err(ColocationError::BadNode(..))));

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
