//! The database kinds the service knows, and what each engine reserves.

/// The database kinds the service knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Driver {
    /// Embedded SQLite: one database file per schema, attached by name.
    Sqlite,
    /// PostgreSQL and protocol-compatible engines: schema per tenant.
    Postgres,
    /// MySQL and MariaDB: database per tenant.
    Mysql,
    /// Microsoft SQL Server 2008 R2 and later.
    SqlServer,
}

impl Driver {
    /// Every driver, in the order the documentation lists them.
    pub const ALL: [Driver; 4] = [Driver::Sqlite, Driver::Postgres, Driver::Mysql, Driver::SqlServer];

    /// The value of `driver` in the configuration file.
    pub fn name(self) -> &'static str {
        match self {
            Driver::Sqlite => "sqlite",
            Driver::Postgres => "postgres",
            Driver::Mysql => "mysql",
            Driver::SqlServer => "sqlserver",
        }
    }

    /// The driver named `text` in the configuration file, if any.
    pub fn parse(text: &str) -> Option<Driver> {
        Driver::ALL.into_iter().find(|driver| driver.name() == text)
    }

    /// The tenant insert statement used when `tenantInsertSQL` is not set;
    /// it binds the tenant name as its one parameter.
    pub fn default_tenant_insert_sql(self) -> &'static str {
        match self {
            Driver::Sqlite | Driver::Postgres => "insert into svc.svc_tenants (name) values ($1)",
            Driver::Mysql => "insert into svc.svc_tenants (name) values (?)",
            Driver::SqlServer => "insert into svc.svc_tenants (name) values (@P1)",
        }
    }

    /// Whether the engine keeps `name` (any case) for itself, so that a
    /// tenant of that name would land in a system schema:
    ///
    /// - SQLite: `main`, `temp` (attachment names);
    /// - PostgreSQL: `pg_*`, `information_schema`, `public`;
    /// - MySQL/MariaDB: `mysql`, `sys`, `performance_schema`,
    ///   `information_schema`;
    /// - SQL Server: `sys`, `INFORMATION_SCHEMA`, `guest`, `dbo`, `db_*`.
    pub fn reserves_schema(self, name: &str) -> bool {
        let lower = name.to_ascii_lowercase();
        match self {
            Driver::Sqlite => matches!(lower.as_str(), "main" | "temp"),
            Driver::Postgres => lower.starts_with("pg_") || matches!(lower.as_str(), "information_schema" | "public"),
            Driver::Mysql => matches!(lower.as_str(), "mysql" | "sys" | "performance_schema" | "information_schema"),
            Driver::SqlServer => {
                lower.starts_with("db_") || matches!(lower.as_str(), "sys" | "information_schema" | "guest" | "dbo")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for driver in Driver::ALL {
            assert_eq!(Driver::parse(driver.name()), Some(driver));
        }
        assert_eq!(Driver::parse("Postgres"), None);
        assert_eq!(Driver::parse("mssql"), None);
    }

    #[test]
    fn each_engine_reserves_its_own_schemas_in_any_case() {
        let cases: [(Driver, &[&str], &[&str]); 4] = [
            (Driver::Sqlite, &["main", "TEMP"], &["public", "mysql", "pg_x", "db_x", "sys"]),
            (
                Driver::Postgres,
                &["pg_catalog", "pg_toast", "PG_anything", "information_schema", "Public"],
                &["main", "mysql", "sys", "pgx", "db_x", "tenant_pg_1"],
            ),
            (
                Driver::Mysql,
                &["mysql", "SYS", "performance_schema", "information_schema"],
                &["main", "public", "pg_x", "db_x", "mysql2"],
            ),
            (
                Driver::SqlServer,
                &["sys", "INFORMATION_SCHEMA", "guest", "dbo", "db_owner", "DB_datareader"],
                &["main", "public", "pg_x", "mysql", "dbx"],
            ),
        ];
        for (driver, reserved, free) in cases {
            for name in reserved {
                assert!(driver.reserves_schema(name), "{driver:?} {name}");
            }
            for name in free {
                assert!(!driver.reserves_schema(name), "{driver:?} {name}");
            }
        }
    }
}
