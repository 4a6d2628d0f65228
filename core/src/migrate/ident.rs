//! Schema and tenant identifiers: what is accepted, and how it is quoted.
//!
//! A name is accepted when it has 1 to 63 characters, each an ASCII letter,
//! digit, `_` or `-` (63 is PostgreSQL's identifier limit). Validation comes
//! first; the drivers then still quote every name they put into SQL, so that
//! a name like `tenant-1` or a reserved word works and nothing is ever
//! spliced raw.
//!
//! A *new* tenant's name must also work where the project cannot quote it:
//! migration files get it as plain text for `{schema}`. So it is refused
//! unless it is an identifier the engine reads as written without quotes
//! ([`tenant_name_rule`]): an ASCII letter or `_` first, then letters,
//! digits and `_` — and on PostgreSQL, which folds unquoted names to lower
//! case, lower-case letters only — and not a word the engine reserves
//! ([`keywords`]). Tenants that exist already are not judged again.

use thiserror::Error;

use crate::migrate::driver::Driver;
use crate::migrate::keywords;

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
    /// A new tenant's name that the engine would not read as written
    /// without quotes, as `{schema}` puts it in migration files.
    #[error("tenant name {name:?} cannot be used as written in SQL on {engine}: {}", tenant_name_rule(*driver))]
    NotPlain {
        /// The refused name.
        name: String,
        /// The engine, as people call it.
        engine: &'static str,
        /// The driver whose rule it breaks.
        driver: Driver,
    },
    /// A new tenant's name that is a word the engine reserves (see
    /// [`keywords`](crate::migrate::keywords)): `{schema}` puts it in
    /// migrations unquoted, where it would not parse.
    #[error(
        "tenant name {name:?} is a reserved word on {engine}: {{schema}} puts it in migrations unquoted, where it \
         does not parse; choose another name"
    )]
    Keyword {
        /// The refused name.
        name: String,
        /// The engine, as people call it.
        engine: &'static str,
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

/// Checks that `name` may be used as a schema or tenant name. A refused
/// name is kept in the error [`shortened`]: a megabyte sent as a name is
/// not echoed back, nor logged.
pub fn validate_identifier(name: &str) -> Result<(), IdentError> {
    if name.is_empty() {
        return Err(IdentError::Empty);
    }
    if let Some(found) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-')) {
        return Err(IdentError::InvalidCharacter { name: shortened(name), found });
    }
    if name.len() > MAX_IDENTIFIER_LEN {
        return Err(IdentError::TooLong { name: shortened(name) });
    }
    Ok(())
}

/// Longest text a refusal quotes of what it refuses, in characters.
const SHOWN_CHARS: usize = 80;

/// `text` as a refusal quotes it: whole up to [`SHOWN_CHARS`] characters,
/// else its start and its length.
pub fn shortened(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}… ({} characters)", &text[..cut], text.chars().count()),
    }
}

/// Longest version name, in characters.
pub const MAX_VERSION_NAME_CHARS: usize = 500;

/// Checks a version's name (a version, a rollout, a repair): not blank, at
/// most [`MAX_VERSION_NAME_CHARS`] characters, and no control character —
/// a line break or an escape sequence in a name would forge a log line or
/// reach an operator's terminal.
pub fn check_version_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("versionName must not be empty".into());
    }
    let length = name.chars().count();
    if length > MAX_VERSION_NAME_CHARS {
        return Err(format!("versionName has {length} characters, over {MAX_VERSION_NAME_CHARS}"));
    }
    match name.chars().find(|c| c.is_control()) {
        Some(found) => Err(format!("versionName {:?} holds the control character {found:?}", shortened(name))),
        None => Ok(()),
    }
}

/// The schema holding the service's own tables.
pub const SERVICE_SCHEMA: &str = "svc";

/// The scratch schema (MySQL and MariaDB: database) a desired schema is
/// applied into to be read, dropped and made again at each reading.
pub const DESIRED_SCRATCH: &str = "strata_desired";

/// Whether `name` is one of the service's own: [`SERVICE_SCHEMA`] or
/// [`DESIRED_SCRATCH`], in any case.
pub fn is_service_schema(name: &str) -> bool {
    name.eq_ignore_ascii_case(SERVICE_SCHEMA) || name.eq_ignore_ascii_case(DESIRED_SCRATCH)
}

/// Checks a tenant name: a valid identifier other than [`SERVICE_SCHEMA`]
/// (in any case). A new tenant may not take [`DESIRED_SCRATCH`] either
/// ([`validate_new_tenant_name`]).
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
    let engine = engine_name(driver);
    match validate_tenant_name(name) {
        // A new tenant's rule is narrower than a name's: say that one.
        Err(IdentError::InvalidCharacter { name, .. }) => return Err(IdentError::NotPlain { name, engine, driver }),
        checked => checked?,
    }
    if is_service_schema(name) {
        return Err(IdentError::Reserved { name: name.to_string() });
    }
    if driver.reserves_schema(name) {
        return Err(IdentError::ReservedByEngine { name: name.to_string(), engine });
    }
    if single_schemas.into_iter().any(|schema| schema.eq_ignore_ascii_case(name)) {
        return Err(IdentError::SingleSchema { name: name.to_string() });
    }
    if !is_plain_identifier(driver, name) {
        return Err(IdentError::NotPlain { name: name.to_string(), engine, driver });
    }
    if keywords::is_reserved(driver, name) {
        return Err(IdentError::Keyword { name: name.to_string(), engine });
    }
    Ok(())
}

/// The engine of `driver`, as people call it.
fn engine_name(driver: Driver) -> &'static str {
    match driver {
        Driver::Sqlite => "SQLite",
        Driver::Postgres => "PostgreSQL",
        Driver::Mysql => "MySQL and MariaDB",
        Driver::SqlServer => "SQL Server",
    }
}

/// What a new tenant's name must be on `driver`, in words (the refusal
/// says it).
pub fn tenant_name_rule(driver: Driver) -> &'static str {
    match driver {
        Driver::Postgres => {
            "a tenant name starts with a lower-case letter or '_' and has only lower-case letters, digits and '_' \
             (at most 63), as {schema} puts it in migrations unquoted and PostgreSQL folds unquoted names to lower case"
        }
        _ => {
            "a tenant name starts with a letter or '_' and has only letters, digits and '_' (at most 63), \
             as {schema} puts it in migrations unquoted"
        }
    }
}

/// Whether `name` is read as written without quotes on `driver` (see
/// [`tenant_name_rule`]).
fn is_plain_identifier(driver: Driver, name: &str) -> bool {
    let letter = |c: char| match driver {
        Driver::Postgres => c.is_ascii_lowercase(),
        _ => c.is_ascii_alphabetic(),
    };
    let mut chars = name.chars();
    chars.next().is_some_and(|c| letter(c) || c == '_')
        && chars.all(|c| letter(c) || c.is_ascii_digit() || c == '_')
        && name.len() <= MAX_IDENTIFIER_LEN
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

/// A SQLite string literal holding `value`: `'…'` with quotes doubled, or,
/// for a value with a NUL (which would end the statement's text),
/// `cast(x'…' as text)` of its UTF-8 bytes. For text sent with other
/// statements in one call, where nothing can be bound.
pub fn quote_string_sqlite(value: &str) -> String {
    if value.contains('\0') {
        let mut out = String::with_capacity(value.len() * 2 + 16);
        out.push_str("cast(x'");
        for byte in value.bytes() {
            out.push_str(&format!("{byte:02x}"));
        }
        out.push_str("' as text)");
        return out;
    }
    format!("'{}'", value.replace('\'', "''"))
}

/// A T-SQL string literal holding `value`: `N'…'` (Unicode), each `'`
/// doubled (T-SQL's only escape in a string). For text written into a
/// batch, where nothing can be bound.
pub fn quote_string_sqlserver(value: &str) -> String {
    format!("N'{}'", value.replace('\'', "''"))
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
    fn a_version_name_is_short_printable_text_and_a_long_refused_name_is_not_echoed() {
        assert_eq!(check_version_name("release 42 — ü"), Ok(()));
        assert_eq!(check_version_name("  "), Err("versionName must not be empty".into()));
        let forged = "v1\n2026-12-06T00:00:00Z INFO audit actor=token:admin";
        assert!(check_version_name(forged).unwrap_err().contains("control character '\\n'"));
        assert!(check_version_name("v1\u{1b}[31m").is_err());
        assert_eq!(check_version_name(&"x".repeat(501)), Err("versionName has 501 characters, over 500".into()));
        let huge = validate_identifier(&"a".repeat(1_000_000)).unwrap_err().to_string();
        assert!(huge.len() < 200 && huge.contains("(1000000 characters)"), "{huge}");
    }

    #[test]
    fn a_sqlserver_string_literal_holds_any_text_whole() {
        assert_eq!(quote_string_sqlserver("it's"), "N'it''s'");
        let hostile = "'); drop table svc.svc_migrations; --";
        assert_eq!(quote_string_sqlserver(hostile), "N'''); drop table svc.svc_migrations; --'");
        assert_eq!(quote_string_sqlserver(""), "N''");
    }

    #[test]
    fn postgres_string_constants_escape_quotes_and_backslashes() {
        assert_eq!(quote_string_postgres("plain"), "E'plain'");
        assert_eq!(quote_string_postgres("it's"), "E'it''s'");
        assert_eq!(quote_string_postgres("a\\'; drop table t; --"), "E'a\\\\''; drop table t; --'");
        assert_eq!(quote_string_postgres("line\nnext $$ \"q\""), "E'line\nnext $$ \"q\"'");
    }

    #[test]
    fn sqlite_string_literals_double_quotes_and_hex_a_nul() {
        assert_eq!(quote_string_sqlite("plain"), "'plain'");
        assert_eq!(quote_string_sqlite("it's \\ $1"), "'it''s \\ $1'");
        assert_eq!(quote_string_sqlite("a'; drop table t; --"), "'a''; drop table t; --'");
        assert_eq!(quote_string_sqlite("a\0b"), "cast(x'610062' as text)");
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
        let scratch = validate_new_tenant_name("Strata_Desired", Driver::Mysql, []);
        assert_eq!(scratch, Err(IdentError::Reserved { name: "Strata_Desired".into() }));
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
    fn new_tenant_names_are_identifiers_the_engine_reads_unquoted() {
        for driver in Driver::ALL {
            for good in ["acme", "_t1", "tenant_2", "a1b2"] {
                assert_eq!(validate_new_tenant_name(good, driver, []), Ok(()), "{driver:?} {good}");
            }
            for bad in ["1bad", "a-b", "-a", "9"] {
                assert!(
                    matches!(validate_new_tenant_name(bad, driver, []), Err(IdentError::NotPlain { .. })),
                    "{driver:?} {bad}"
                );
            }
            // Existing tenants are not judged again.
            assert_eq!(validate_tenant_name("a-b"), Ok(()));
        }
        for driver in Driver::ALL {
            assert!(
                matches!(validate_new_tenant_name("select", driver, []), Err(IdentError::Keyword { .. })),
                "{driver:?}"
            );
        }
        assert_eq!(
            validate_new_tenant_name("user", Driver::Postgres, []).unwrap_err().to_string(),
            "tenant name \"user\" is a reserved word on PostgreSQL: {schema} puts it in migrations unquoted, where it \
             does not parse; choose another name"
        );
        assert_eq!(validate_new_tenant_name("user", Driver::Mysql, []), Ok(()));
        assert_eq!(validate_new_tenant_name("Acme", Driver::Mysql, []), Ok(()));
        assert_eq!(validate_new_tenant_name("Acme", Driver::Sqlite, []), Ok(()));
        assert_eq!(
            validate_new_tenant_name("Acme", Driver::Postgres, []).unwrap_err().to_string(),
            "tenant name \"Acme\" cannot be used as written in SQL on PostgreSQL: a tenant name starts with a \
             lower-case letter or '_' and has only lower-case letters, digits and '_' (at most 63), as {schema} puts \
             it in migrations unquoted and PostgreSQL folds unquoted names to lower case"
        );
        assert_eq!(
            validate_new_tenant_name("a-b", Driver::Mysql, []).unwrap_err().to_string(),
            "tenant name \"a-b\" cannot be used as written in SQL on MySQL and MariaDB: a tenant name starts with a \
             letter or '_' and has only letters, digits and '_' (at most 63), as {schema} puts it in migrations \
             unquoted"
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
