//! The words each engine reserves: a new tenant named like one would not
//! parse where `{schema}` puts it unquoted (`create table {schema}.t`,
//! `use {schema}`), so it is refused up front.
//!
//! The lists are what each engine refuses there, read from the engines
//! themselves: PostgreSQL's reserved and type-or-function keywords
//! (`pg_get_keywords()`, catcode `R` and `T`; 13 to 18), the words MariaDB
//! 10.11 refuses as a database name (every `information_schema.KEYWORDS`
//! entry tried) together with MySQL 8's reserved words, the SQLite keywords
//! its parser takes for no schema name (each tried in
//! `create table {schema}.t`), and SQL Server's documented reserved
//! keywords. The e2e suite checks the
//! first three against the servers it runs on.

use crate::migrate::driver::Driver;

/// Whether `name` is a word `driver`'s engine reserves (compared without
/// regard to case).
pub fn is_reserved(driver: Driver, name: &str) -> bool {
    let words = match driver {
        Driver::Postgres => POSTGRES,
        Driver::Mysql => MYSQL,
        Driver::Sqlite => SQLITE,
        Driver::SqlServer => SQL_SERVER,
    };
    let lower = name.to_ascii_lowercase();
    words.binary_search(&lower.as_str()).is_ok()
}

/// Every reserved word of `driver`'s engine, sorted (what the e2e suite
/// compares with the engine's own list).
pub fn reserved_words(driver: Driver) -> &'static [&'static str] {
    match driver {
        Driver::Postgres => POSTGRES,
        Driver::Mysql => MYSQL,
        Driver::Sqlite => SQLITE,
        Driver::SqlServer => SQL_SERVER,
    }
}

/// PostgreSQL 13–18: reserved and type-or-function keywords.
#[rustfmt::skip]
const POSTGRES: &[&str] = &[
    "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "authorization", "binary",
    "both", "case", "cast", "check", "collate", "collation", "column", "concurrently", "constraint", "create",
    "cross", "current_catalog", "current_date", "current_role", "current_schema", "current_time",
    "current_timestamp", "current_user", "default", "deferrable", "desc", "distinct", "do", "else", "end", "except",
    "false", "fetch", "for", "foreign", "freeze", "from", "full", "grant", "group", "having", "ilike", "in",
    "initially", "inner", "intersect", "into", "is", "isnull", "join", "lateral", "leading", "left", "like",
    "limit", "localtime", "localtimestamp", "natural", "not", "notnull", "null", "offset", "on", "only", "or",
    "order", "outer", "overlaps", "placing", "primary", "references", "returning", "right", "select",
    "session_user", "similar", "some", "symmetric", "system_user", "table", "tablesample", "then", "to", "trailing",
    "true", "union", "unique", "user", "using", "variadic", "verbose", "when", "where", "window", "with",
];

/// MariaDB 10.11's words refused as a database name, and MySQL 8's reserved words.
#[rustfmt::skip]
const MYSQL: &[&str] = &[
    "accessible", "add", "all", "alter", "analyze", "and", "as", "asc", "asensitive", "before", "between", "bigint",
    "binary", "blob", "both", "by", "call", "cascade", "case", "change", "char", "character", "check", "collate",
    "column", "condition", "constraint", "continue", "convert", "create", "cross", "cube", "cume_dist",
    "current_date", "current_role", "current_time", "current_timestamp", "current_user", "cursor", "database",
    "databases", "day_hour", "day_microsecond", "day_minute", "day_second", "dec", "decimal", "declare", "default",
    "delayed", "delete", "delete_domain_id", "dense_rank", "desc", "describe", "deterministic", "distinct",
    "distinctrow", "div", "do_domain_ids", "double", "drop", "dual", "each", "else", "elseif", "empty", "enclosed",
    "escaped", "except", "exists", "exit", "explain", "false", "fetch", "first_value", "float", "float4", "float8",
    "for", "force", "foreign", "from", "fulltext", "function", "generated", "get", "grant", "group", "grouping",
    "groups", "having", "high_priority", "hour_microsecond", "hour_minute", "hour_second", "if", "ignore",
    "ignore_domain_ids", "in", "index", "infile", "inner", "inout", "insensitive", "insert", "int", "int1", "int2",
    "int3", "int4", "int8", "integer", "intersect", "interval", "into", "io_after_gtids", "io_before_gtids", "is",
    "iterate", "join", "json_table", "key", "keys", "kill", "lag", "last_value", "lateral", "lead", "leading",
    "leave", "left", "like", "limit", "linear", "lines", "load", "localtime", "localtimestamp", "lock", "long",
    "longblob", "longtext", "loop", "low_priority", "master_bind", "master_demote_to_replica",
    "master_demote_to_slave", "master_ssl_verify_server_cert", "match", "maxvalue", "mediumblob", "mediumint",
    "mediumtext", "middleint", "minute_microsecond", "minute_second", "mod", "modifies", "natural",
    "no_write_to_binlog", "not", "nth_value", "ntile", "null", "numeric", "of", "offset", "on", "optimize",
    "optimizer_costs", "optionally", "or", "order", "out", "outer", "outfile", "over", "page_checksum",
    "parse_vcol_expr", "partition", "percent_rank", "portion", "precision", "primary", "procedure", "purge",
    "range", "rank", "read", "read_write", "reads", "real", "recursive", "ref_system_id", "references", "regexp",
    "release", "rename", "repeat", "replace", "require", "resignal", "restrict", "return", "returning", "revoke",
    "right", "rlike", "row", "row_number", "rows", "schema", "schemas", "second_microsecond", "select", "sensitive",
    "separator", "set", "show", "signal", "smallint", "spatial", "specific", "sql", "sql_big_result",
    "sql_calc_found_rows", "sql_small_result", "sqlexception", "sqlstate", "sqlwarning", "ssl", "starting",
    "stats_auto_recalc", "stats_persistent", "stats_sample_pages", "stored", "straight_join", "system", "table",
    "terminated", "then", "tinyblob", "tinyint", "tinytext", "to", "trailing", "trigger", "true", "undo", "union",
    "unique", "unlock", "unsigned", "update", "usage", "use", "using", "utc_date", "utc_time", "utc_timestamp",
    "values", "varbinary", "varchar", "varcharacter", "varying", "virtual", "when", "where", "while", "window",
    "with", "write", "xor", "year_month", "zerofill",
];

/// SQLite's keywords that are no identifier.
#[rustfmt::skip]
const SQLITE: &[&str] = &[
    "add", "all", "alter", "and", "as", "autoincrement", "between", "case", "check", "collate", "commit",
    "constraint", "create", "default", "deferrable", "delete", "distinct", "drop", "else", "escape", "except",
    "exists", "foreign", "from", "group", "having", "if", "in", "index", "insert", "intersect", "into", "is",
    "isnull", "join", "limit", "not", "nothing", "notnull", "null", "on", "or", "order", "primary", "references",
    "returning", "select", "set", "table", "then", "to", "transaction", "union", "unique", "update", "using",
    "values", "when", "where",
];

/// SQL Server's reserved keywords, as Microsoft documents them.
#[rustfmt::skip]
const SQL_SERVER: &[&str] = &[
    "add", "all", "alter", "and", "any", "as", "asc", "authorization", "backup", "begin", "between", "break",
    "browse", "bulk", "by", "cascade", "case", "check", "checkpoint", "close", "clustered", "coalesce", "collate",
    "column", "commit", "compute", "constraint", "contains", "containstable", "continue", "convert", "create",
    "cross", "current", "current_date", "current_time", "current_timestamp", "current_user", "cursor", "database",
    "dbcc", "deallocate", "declare", "default", "delete", "deny", "desc", "disk", "distinct", "distributed",
    "double", "drop", "dump", "else", "end", "errlvl", "escape", "except", "exec", "execute", "exists", "exit",
    "external", "fetch", "file", "fillfactor", "for", "foreign", "freetext", "freetexttable", "from", "full",
    "function", "goto", "grant", "group", "having", "holdlock", "identity", "identity_insert", "identitycol", "if",
    "in", "index", "inner", "insert", "intersect", "into", "is", "join", "key", "kill", "left", "like", "lineno",
    "load", "merge", "national", "nocheck", "nonclustered", "not", "null", "nullif", "of", "off", "offsets", "on",
    "open", "opendatasource", "openquery", "openrowset", "openxml", "option", "or", "order", "outer", "over",
    "percent", "pivot", "plan", "precision", "primary", "print", "proc", "procedure", "public", "raiserror", "read",
    "readtext", "reconfigure", "references", "replication", "restore", "restrict", "return", "revert", "revoke",
    "right", "rollback", "rowcount", "rowguidcol", "rule", "save", "schema", "securityaudit", "select",
    "semantickeyphrasetable", "semanticsimilaritydetailstable", "semanticsimilaritytable", "session_user", "set",
    "setuser", "shutdown", "some", "statistics", "system_user", "table", "tablesample", "textsize", "then", "to",
    "top", "tran", "transaction", "trigger", "truncate", "try_convert", "tsequal", "union", "unique", "unpivot",
    "update", "updatetext", "use", "user", "values", "varying", "view", "waitfor", "when", "where", "while", "with",
    "writetext",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lists_are_sorted_and_lower_case_so_lookups_find_every_word() {
        for driver in [Driver::Postgres, Driver::Mysql, Driver::Sqlite, Driver::SqlServer] {
            let words = reserved_words(driver);
            assert!(words.windows(2).all(|pair| pair[0] < pair[1]), "{driver:?}");
            assert!(words.iter().all(|word| *word == word.to_ascii_lowercase() && is_reserved(driver, word)));
        }
    }

    #[test]
    fn reserved_words_are_found_in_any_case_and_plain_names_are_not() {
        assert!(is_reserved(Driver::Postgres, "select") && is_reserved(Driver::Postgres, "USER"));
        assert!(!is_reserved(Driver::Postgres, "name") && !is_reserved(Driver::Postgres, "tenant_1"));
        assert!(is_reserved(Driver::Mysql, "Key") && !is_reserved(Driver::Mysql, "user"));
        assert!(is_reserved(Driver::Sqlite, "table") && !is_reserved(Driver::Sqlite, "left"));
        assert!(is_reserved(Driver::SqlServer, "user") && !is_reserved(Driver::SqlServer, "acme"));
    }
}
