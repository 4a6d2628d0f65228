//! Schema and tenant identifiers: what is accepted, and how it is quoted.
//!
//! A name is accepted when it has 1 to 63 characters, each an ASCII letter,
//! digit, `_` or `-` (63 is PostgreSQL's identifier limit). Validation comes
//! first; the drivers then still quote every name they put into SQL, so that
//! a name like `tenant-1` or a reserved word works and nothing is ever
//! spliced raw.

use thiserror::Error;

use crate::migrate::driver::Driver;

/// The longest accepted identifier, in characters.
pub const MAX_IDENTIFIER_LEN: usize = 63;

/// Why a schema or tenant name was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum IdentError {
    /// The name is the empty string.
    #[error("name is empty")]
    Empty,
    /// The name is longer than [`MAX_IDENTIFIER_LEN`] characters.
    #[error("name {name:?} is longer than {MAX_IDENTIFIER_LEN} characters")]
    TooLong {
        /// The refused name.
        name: String,
    },
    /// The name is reserved: `svc` holds the service's own tables.
    #[error("name {name:?} is reserved for the service's own schema")]
    Reserved {
        /// The refused name.
        name: String,
    },
    /// The engine keeps a schema of that name for itself (see
    /// [`Driver::reserves_schema`]).
    #[error("name {name:?} is reserved by {engine}")]
    ReservedByEngine {
        /// The refused name.
        name: String,
        /// The engine, as people call it.
        engine: &'static str,
    },
    /// A configured single schema has that name: the tenant's tables would
    /// land in the shared schema.
    #[error("name {name:?} is a configured single schema")]
    SingleSchema {
        /// The refused name.
        name: String,
    },
    /// The name contains a character outside `[A-Za-z0-9_-]`.
    #[error("name {name:?} contains {found:?}; only letters, digits, '_' and '-' are allowed")]
    InvalidCharacter {
        /// The refused name.
        name: String,
        /// The first offending character.
        found: char,
    },
}

/// Checks that `name` may be used as a schema or tenant name.
pub fn validate_identifier(name: &str) -> Result<(), IdentError> {
    if name.is_empty() {
        return Err(IdentError::Empty);
    }
    if let Some(found) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-')) {
        return Err(IdentError::InvalidCharacter { name: name.to_string(), found });
    }
    if name.len() > MAX_IDENTIFIER_LEN {
        return Err(IdentError::TooLong { name: name.to_string() });
    }
    Ok(())
}

/// The schema holding the service's own tables.
pub const SERVICE_SCHEMA: &str = "svc";

/// Checks a tenant name: a valid identifier other than [`SERVICE_SCHEMA`]
/// (in any case).
pub fn validate_tenant_name(name: &str) -> Result<(), IdentError> {
    validate_identifier(name)?;
    if name.eq_ignore_ascii_case(SERVICE_SCHEMA) {
        return Err(IdentError::Reserved { name: name.to_string() });
    }
    Ok(())
}

/// Checks the name of a tenant about to be created on `driver`: a valid
/// tenant name ([`validate_tenant_name`]) that the engine does not reserve
/// and that is none of `single_schemas`, compared without regard to case
/// (MySQL on a case-insensitive file system, SQL Server's default
/// collation and SQLite's attachment names all ignore it).
pub fn validate_new_tenant_name<'a>(
    name: &str,
    driver: Driver,
    single_schemas: impl IntoIterator<Item = &'a str>,
) -> Result<(), IdentError> {
    validate_tenant_name(name)?;
    if driver.reserves_schema(name) {
        let engine = match driver {
            Driver::Sqlite => "SQLite",
            Driver::Postgres => "PostgreSQL",
            Driver::Mysql => "MySQL and MariaDB",
            Driver::SqlServer => "SQL Server",
        };
        return Err(IdentError::ReservedByEngine { name: name.to_string(), engine });
    }
    if single_schemas.into_iter().any(|schema| schema.eq_ignore_ascii_case(name)) {
        return Err(IdentError::SingleSchema { name: name.to_string() });
    }
    Ok(())
}

/// Quotes an identifier the ANSI way (PostgreSQL, SQLite): `"name"`, with any
/// embedded `"` doubled. Callers validate first; quoting is the second fence.
pub fn quote_ansi(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Writes `value` as a PostgreSQL string constant with C-style escapes,
/// `E'…'`, every backslash and quote doubled, so it reads the same whatever
/// `standard_conforming_strings` says. For text sent with other statements
/// in one simple-query message, where nothing can be bound.
pub fn quote_string_postgres(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 3);
    out.push_str("E'");
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("''"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Quotes an identifier for MySQL and MariaDB: `` `name` ``, with any
/// embedded backtick doubled.
pub fn quote_mysql(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// Quotes an identifier for SQL Server: `[name]`, with any embedded `]`
/// doubled.
pub fn quote_sqlserver(name: &str) -> String {
    format!("[{}]", name.replace(']', "]]"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_string_constants_escape_quotes_and_backslashes() {
        assert_eq!(quote_string_postgres("plain"), "E'plain'");
        assert_eq!(quote_string_postgres("it's"), "E'it''s'");
        assert_eq!(quote_string_postgres("a\\'; drop table t; --"), "E'a\\\\''; drop table t; --'");
        assert_eq!(quote_string_postgres("line\nnext $$ \"q\""), "E'line\nnext $$ \"q\"'");
    }

    #[test]
    fn accepts_the_documented_set() {
        for ok in ["a", "tenant_1", "Tenant-2", "0abc", &"x".repeat(63)] {
            assert_eq!(validate_identifier(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn refuses_everything_else_with_a_reason() {
        assert_eq!(validate_identifier(""), Err(IdentError::Empty));
        assert_eq!(validate_identifier(&"x".repeat(64)), Err(IdentError::TooLong { name: "x".repeat(64) }));
        let hostile = "a\"; drop table svc.svc_versions; --";
        assert_eq!(
            validate_identifier(hostile),
            Err(IdentError::InvalidCharacter { name: hostile.into(), found: '"' })
        );
        for bad in ["a b", "a.b", "é", "a\0", "a`b", "a]b", "a'b"] {
            assert!(validate_identifier(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            validate_identifier("a'b").unwrap_err().to_string(),
            "name \"a'b\" contains '\\''; only letters, digits, '_' and '-' are allowed"
        );
    }

    #[test]
    fn tenant_names_exclude_the_service_schema() {
        assert_eq!(validate_tenant_name("acme"), Ok(()));
        assert_eq!(validate_tenant_name("SVC"), Err(IdentError::Reserved { name: "SVC".into() }));
        assert_eq!(validate_tenant_name("a b"), Err(IdentError::InvalidCharacter { name: "a b".into(), found: ' ' }));
    }

    #[test]
    fn new_tenants_avoid_engine_schemas_and_single_schemas() {
        let singles = ["ref", "config"];
        for driver in Driver::ALL {
            assert_eq!(validate_new_tenant_name("acme", driver, singles), Ok(()));
            assert_eq!(
                validate_new_tenant_name("Ref", driver, singles),
                Err(IdentError::SingleSchema { name: "Ref".into() })
            );
            assert_eq!(
                validate_new_tenant_name("svc", driver, singles),
                Err(IdentError::Reserved { name: "svc".into() })
            );
        }
        assert_eq!(
            validate_new_tenant_name("pg_temp_1", Driver::Postgres, singles).unwrap_err().to_string(),
            "name \"pg_temp_1\" is reserved by PostgreSQL"
        );
        assert_eq!(validate_new_tenant_name("pg_temp_1", Driver::Mysql, singles), Ok(()));
        assert_eq!(
            validate_new_tenant_name("performance_schema", Driver::Mysql, []).unwrap_err().to_string(),
            "name \"performance_schema\" is reserved by MySQL and MariaDB"
        );
        assert_eq!(
            validate_new_tenant_name("db_owner", Driver::SqlServer, []).unwrap_err().to_string(),
            "name \"db_owner\" is reserved by SQL Server"
        );
        assert_eq!(
            validate_new_tenant_name("Main", Driver::Sqlite, []).unwrap_err().to_string(),
            "name \"Main\" is reserved by SQLite"
        );
        assert_eq!(
            validate_new_tenant_name("config", Driver::Sqlite, singles).unwrap_err().to_string(),
            "name \"config\" is a configured single schema"
        );
    }

    #[test]
    fn quotes_per_dialect() {
        assert_eq!(quote_ansi("t-1"), "\"t-1\"");
        assert_eq!(quote_ansi("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_mysql("a`b"), "`a``b`");
        assert_eq!(quote_sqlserver("a]b"), "[a]]b]");
    }
}
