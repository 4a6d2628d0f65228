//! `dataSource` in the forms users of other tools already have, turned into
//! the URL form the drivers take.
//!
//! - PostgreSQL: a `postgres://` URL as is, or a libpq keyword/value string
//!   (`host=db port=5432 user=svc password='a b' dbname=app sslmode=require`),
//!   the form lukaszbudnik/migrator's examples use.
//! - MySQL/MariaDB: a `mysql://` URL as is, or a Go driver DSN
//!   (`user:password@tcp(host:3306)/dbname?parseTime=true`). Parameters that
//!   only mean something to the Go driver (`parseTime`, `multiStatements`, …)
//!   are dropped; `tls` maps to `ssl-mode`, `charset` and `collation` pass.
//! - SQLite: a `sqlite:` URL as is, or a plain file path (opened read-write,
//!   created when missing).
//! - SQL Server: an ADO string (`Server=tcp:host,1433;User Id=…;Password=…`)
//!   or a JDBC string as is, or a go-mssqldb URL
//!   (`sqlserver://user:password@host:1433?database=app`), the form
//!   migrator's examples use, turned into an ADO string. As with
//!   go-mssqldb, a URL that sets neither `encrypt` nor
//!   `TrustServerCertificate` trusts the server's certificate (SQL Server
//!   serves a self-signed one unless configured otherwise).
//!
//! [`check_driver`] refuses a `dataSource` whose shape belongs to another
//! driver (a `postgres://` URL under `driver: sqlite` would otherwise become
//! a directory named `postgres:`).

use thiserror::Error;

use crate::migrate::driver::Driver;

/// Why a `dataSource` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DataSourceError {
    /// A keyword/value pair without `=`, or an unterminated quote. Never
    /// quotes the text (it may hold a password).
    #[error("dataSource is not a URL and not a valid keyword=value list (at pair {0})")]
    BadKeywordValue(usize),
    /// A `sqlserver://` URL without a host.
    #[error("dataSource is not a valid sqlserver://user:password@host:port?database=name URL: {0}")]
    BadSqlServerUrl(&'static str),
    /// A Go MySQL DSN without `/dbname` or with a malformed address.
    #[error("dataSource is not a URL and not a valid user:password@tcp(host:port)/dbname DSN: {0}")]
    BadGoDsn(&'static str),
    /// The text has the shape of another driver's connection string.
    #[error("dataSource is {shape}, a form of driver {owner}, but driver is {driver}; {driver} takes {}", accepted(.driver))]
    WrongDriver {
        /// The configured driver.
        driver: &'static str,
        /// What the text looks like (never the text itself).
        shape: &'static str,
        /// The driver that form belongs to.
        owner: &'static str,
    },
    /// A URL with a scheme no driver takes.
    #[error("dataSource is a URL with scheme {scheme}, which no driver takes; {driver} takes {}", accepted(.driver))]
    UnknownScheme {
        /// The configured driver.
        driver: &'static str,
        /// The URL's scheme, lower-cased.
        scheme: String,
    },
}

/// The forms a driver takes, for messages.
fn accepted(driver: &str) -> &'static str {
    match Driver::parse(driver) {
        Some(Driver::Sqlite) => "a sqlite: URL or a file path",
        Some(Driver::Postgres) => "a postgres:// URL or libpq key=value pairs",
        Some(Driver::Mysql) => "a mysql:// URL or a Go DSN user:password@tcp(host:port)/dbname",
        Some(Driver::SqlServer) | None => "an ADO or JDBC connection string or a sqlserver:// URL",
    }
}

/// The driver a connection string's shape belongs to, and a name for the
/// shape; `Err(scheme)` for a URL scheme no driver takes. Judged from the
/// shape alone: a URL by its scheme, a Go MySQL DSN by its `@tcp(…)` or
/// `@unix(…)` address, an ADO string by its `;`-separated `key=value`
/// pairs, libpq pairs by their `key=value` words, anything else as a path.
fn shape_of(text: &str) -> Result<(Driver, &'static str), String> {
    let lower = text.to_ascii_lowercase();
    if lower.starts_with("sqlite:") {
        return Ok((Driver::Sqlite, "a sqlite: URL"));
    }
    if lower.starts_with("jdbc:sqlserver:") {
        return Ok((Driver::SqlServer, "a JDBC connection string"));
    }
    if let Some((scheme, _)) = lower.split_once("://")
        && !scheme.is_empty()
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return match scheme {
            "postgres" | "postgresql" => Ok((Driver::Postgres, "a postgres:// URL")),
            "mysql" | "mariadb" => Ok((Driver::Mysql, "a mysql:// URL")),
            "sqlserver" => Ok((Driver::SqlServer, "a sqlserver:// URL")),
            _ => Err(scheme.to_string()),
        };
    }
    if lower.contains("@tcp(") || lower.contains("@unix(") || lower.starts_with("tcp(") || lower.starts_with("unix(") {
        return Ok((Driver::Mysql, "a Go MySQL DSN"));
    }
    let first_key = lower.split(['=', ';']).next().unwrap_or("").trim();
    let ado_keys = ["server", "data source", "address", "addr", "network address", "user id", "uid", "initial catalog"];
    if lower.contains(';') && lower.contains('=') && ado_keys.contains(&first_key) {
        return Ok((Driver::SqlServer, "an ADO connection string"));
    }
    let libpq_keys = [
        "host",
        "hostaddr",
        "port",
        "dbname",
        "user",
        "password",
        "passfile",
        "sslmode",
        "connect_timeout",
        "application_name",
        "options",
        "service",
        "target_session_attrs",
    ];
    if lower.contains('=') && libpq_keys.contains(&first_key) {
        return Ok((Driver::Postgres, "a list of libpq key=value pairs"));
    }
    Ok((Driver::Sqlite, "a file path"))
}

/// Refuses a `dataSource` whose shape belongs to another driver than
/// `driver`, or a URL whose scheme no driver takes. The error names the
/// shape and both drivers, never the text (it may hold a password).
pub fn check_driver(driver: Driver, data_source: &str) -> Result<(), DataSourceError> {
    let text = data_source.trim();
    match shape_of(text) {
        Err(scheme) => Err(DataSourceError::UnknownScheme { driver: driver.name(), scheme }),
        // SQL Server takes any ADO text it is given; an unrecognised
        // key=value string is left for its parser to judge.
        Ok((Driver::Postgres, _)) if driver == Driver::SqlServer && text.contains(';') => Ok(()),
        Ok((owner, _)) if owner == driver => Ok(()),
        Ok((owner, shape)) => Err(DataSourceError::WrongDriver { driver: driver.name(), shape, owner: owner.name() }),
    }
}

/// The URL form of `data_source` for `driver`.
pub fn normalize(driver: Driver, data_source: &str) -> Result<String, DataSourceError> {
    let text = data_source.trim();
    match driver {
        Driver::Postgres if text.starts_with("postgres://") || text.starts_with("postgresql://") => Ok(text.into()),
        Driver::Postgres => postgres_from_keywords(text),
        Driver::Mysql if text.starts_with("mysql://") || text.starts_with("mariadb://") => Ok(text.into()),
        Driver::Mysql => mysql_from_go_dsn(text),
        Driver::Sqlite if text.starts_with("sqlite:") => Ok(text.into()),
        Driver::Sqlite => Ok(format!("sqlite://{text}?mode=rwc")),
        Driver::SqlServer if text.starts_with("sqlserver://") => sqlserver_from_url(text),
        Driver::SqlServer => Ok(text.into()),
    }
}

/// The one TCP address (host, port) a PostgreSQL or MySQL/MariaDB
/// `dataSource` connects to, for a shell that asks whether anything
/// listens there before it waits on a connection pool. `None` when it is
/// not one TCP address: a Unix socket, several hosts, another driver, or
/// a form this cannot read.
pub fn tcp_address(driver: Driver, data_source: &str) -> Option<(String, u16)> {
    let default_port = match driver {
        Driver::Postgres => 5432,
        Driver::Mysql => 3306,
        Driver::Sqlite | Driver::SqlServer => return None,
    };
    let url = normalize(driver, data_source).ok()?;
    let (_, rest) = url.split_once("://")?;
    let (authority, query) = match rest.find(['/', '?']) {
        Some(end) => (&rest[..end], rest[end..].split_once('?').map_or("", |(_, query)| query)),
        None => (rest, ""),
    };
    // The query's host and port win over the authority's (libpq, sqlx).
    let mut given = (None, None);
    for (key, value) in query.split('&').filter_map(|pair| pair.split_once('=')) {
        match key {
            "host" => given.0 = Some(decode(value)),
            "port" => given.1 = Some(decode(value)),
            "hostaddr" | "socket" => return None,
            _ => {}
        }
    }
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, after)| after);
    if host_port.is_empty() || host_port.contains(',') {
        return None;
    }
    let (host, port) = match host_port.strip_prefix('[') {
        Some(bracketed) => {
            let (host, after) = bracketed.split_once(']')?;
            (host, after.strip_prefix(':'))
        }
        None => match host_port.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        },
    };
    let port = match given.1.as_deref().or(port) {
        Some(port) => port.parse().ok()?,
        None => default_port,
    };
    let host = given.0.unwrap_or_else(|| decode(host));
    if host.is_empty() || host.starts_with('/') || host.contains(',') {
        return None;
    }
    Some((host, port))
}

/// Decodes `%XX` escapes (invalid ones stay as written).
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Quotes an ADO value in `{…}` when it holds a separator or a brace.
fn ado_value(value: &str) -> String {
    if value.contains([';', '{', '}', '=']) || value.trim() != value {
        format!("{{{}}}", value.replace('}', "}}"))
    } else {
        value.to_string()
    }
}

fn sqlserver_from_url(text: &str) -> Result<String, DataSourceError> {
    let rest = &text["sqlserver://".len()..];
    let (authority_path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (user_info, host_part) = match authority_path.rfind('@') {
        Some(at) => (Some(&authority_path[..at]), &authority_path[at + 1..]),
        None => (None, authority_path),
    };
    let (host_port, instance) = host_part.split_once('/').unwrap_or((host_part, ""));
    if host_port.is_empty() {
        return Err(DataSourceError::BadSqlServerUrl("missing host"));
    }
    let (host, port) = host_port.split_once(':').unwrap_or((host_port, ""));
    let mut server = format!("tcp:{}", decode(host));
    if !instance.is_empty() {
        server.push('\\');
        server.push_str(&decode(instance));
    }
    if !port.is_empty() {
        server.push(',');
        server.push_str(port);
    }
    let mut parts = vec![format!("Server={}", ado_value(&server))];
    if let Some(info) = user_info {
        let (user, password) = info.split_once(':').unwrap_or((info, ""));
        parts.push(format!("User Id={}", ado_value(&decode(user))));
        parts.push(format!("Password={}", ado_value(&decode(password))));
    }
    let mut encryption_set = false;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = decode(value);
        match key.to_ascii_lowercase().as_str() {
            "database" => parts.push(format!("Database={}", ado_value(&value))),
            "encrypt" => {
                encryption_set = true;
                parts.push(format!("Encrypt={}", ado_value(&value)));
            }
            "trustservercertificate" => {
                encryption_set = true;
                parts.push(format!("TrustServerCertificate={}", ado_value(&value)));
            }
            "app name" | "app+name" => parts.push(format!("Application Name={}", ado_value(&value))),
            _ => {}
        }
    }
    // go-mssqldb trusts the server certificate when `encrypt` is not given;
    // the URL form keeps that default for the users it is there for.
    if !encryption_set {
        parts.push("TrustServerCertificate=true".into());
    }
    Ok(parts.join(";"))
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Splits a libpq keyword/value string: `key = value` pairs separated by
/// whitespace; values may be single-quoted with `\'` and `\\` escapes.
fn keyword_pairs(text: &str) -> Result<Vec<(String, String)>, DataSourceError> {
    let mut pairs = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(pairs);
        }
        let position = pairs.len() + 1;
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') || key.is_empty() {
            return Err(DataSourceError::BadKeywordValue(position));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    Some('\\') => value.push(chars.next().ok_or(DataSourceError::BadKeywordValue(position))?),
                    Some('\'') => break,
                    Some(c) => value.push(c),
                    None => return Err(DataSourceError::BadKeywordValue(position)),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                value.push(c);
            }
        }
        pairs.push((key, value));
    }
}

fn postgres_from_keywords(text: &str) -> Result<String, DataSourceError> {
    let pairs = keyword_pairs(text)?;
    let query: Vec<String> = pairs.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect();
    Ok(format!("postgres://localhost/?{}", query.join("&")))
}

fn mysql_from_go_dsn(text: &str) -> Result<String, DataSourceError> {
    let (before_query, query) = text.split_once('?').unwrap_or((text, ""));
    let slash = before_query.rfind('/').ok_or(DataSourceError::BadGoDsn("missing /dbname"))?;
    let (head, database) = (&before_query[..slash], &before_query[slash + 1..]);
    let (user_info, address) = match head.rfind('@') {
        Some(at) => (Some(&head[..at]), &head[at + 1..]),
        None => (None, head),
    };
    let mut params: Vec<String> = Vec::new();
    let host_port = if address.is_empty() {
        "127.0.0.1:3306".to_string()
    } else {
        let open =
            address.find('(').ok_or(DataSourceError::BadGoDsn("address must be tcp(host:port) or unix(path)"))?;
        if !address.ends_with(')') {
            return Err(DataSourceError::BadGoDsn("unterminated address"));
        }
        let (network, inner) = (&address[..open], &address[open + 1..address.len() - 1]);
        match network {
            "tcp" | "" => {
                if inner.is_empty() {
                    "127.0.0.1:3306".to_string()
                } else if inner.contains(':') {
                    inner.to_string()
                } else {
                    format!("{inner}:3306")
                }
            }
            "unix" => {
                params.push(format!("socket={}", encode(inner)));
                "localhost".to_string()
            }
            _ => return Err(DataSourceError::BadGoDsn("network must be tcp or unix")),
        }
    };
    let credentials = match user_info {
        Some(info) => match info.split_once(':') {
            Some((user, password)) if !password.is_empty() => format!("{}:{}@", encode(user), encode(password)),
            Some((user, _)) => format!("{}@", encode(user)),
            None => format!("{}@", encode(info)),
        },
        None => String::new(),
    };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "tls" => {
                let mode = match value {
                    "true" | "skip-verify" => "required",
                    "preferred" => "preferred",
                    _ => "disabled",
                };
                params.push(format!("ssl-mode={mode}"));
            }
            "charset" | "collation" => params.push(format!("{key}={value}")),
            _ => {}
        }
    }
    let query = if params.is_empty() { String::new() } else { format!("?{}", params.join("&")) };
    Ok(format!("mysql://{credentials}{host_port}/{database}{query}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_addresses_of_data_sources() {
        let address = |host: &str, port| Some((host.to_string(), port));
        for (driver, source, expected) in [
            (Driver::Postgres, "postgres://u:p@db.example:6432/app?sslmode=require", address("db.example", 6432)),
            (Driver::Postgres, "postgresql://db/app", address("db", 5432)),
            (Driver::Postgres, "postgres://u:p%40ss@[::1]:5433/app", address("::1", 5433)),
            (Driver::Postgres, "postgres://[fe80::1]/app", address("fe80::1", 5432)),
            (Driver::Postgres, "host=db port=5439 user=svc dbname=app", address("db", 5439)),
            (Driver::Postgres, "postgres://u@h1:5432,h2:5432/app", None),
            (Driver::Postgres, "postgres:///app?host=/var/run/postgresql", None),
            (Driver::Postgres, "postgres://u@localhost/app?port=5439", address("localhost", 5439)),
            (Driver::Postgres, "postgres://u@localhost/app?hostaddr=10.0.0.1", None),
            (Driver::Postgres, "host=/var/run/postgresql dbname=app", None),
            (Driver::Mysql, "mysql://root@127.0.0.1:33069/mysql", address("127.0.0.1", 33069)),
            (Driver::Mysql, "mariadb://root@db", address("db", 3306)),
            (Driver::Mysql, "svc:secret@tcp(db:3307)/app?parseTime=true", address("db", 3307)),
            (Driver::Mysql, "mysql://root@localhost/app?socket=/run/mysqld.sock", None),
            (Driver::Mysql, "mysql://root@db:notaport/app", None),
            (Driver::Sqlite, "sqlite://./data/main.db?mode=rwc", None),
            (Driver::SqlServer, "Server=tcp:h,1433;User Id=sa;Password=x", None),
        ] {
            assert_eq!(tcp_address(driver, source), expected, "{source}");
        }
    }

    #[test]
    fn urls_pass_unchanged() {
        for (driver, url) in [
            (Driver::Postgres, "postgres://u:p@h:5432/db?sslmode=require"),
            (Driver::Postgres, "postgresql://h/db"),
            (Driver::Mysql, "mysql://root@127.0.0.1:3306/mysql"),
            (Driver::Sqlite, "sqlite://./data/main.db?mode=rwc"),
            (Driver::SqlServer, "Server=tcp:h,1433;User Id=sa;Password=x"),
        ] {
            assert_eq!(normalize(driver, url).unwrap(), url);
        }
    }

    #[test]
    fn libpq_keywords_become_url_parameters() {
        assert_eq!(
            normalize(
                Driver::Postgres,
                "user=svc password='p a\\'ss' dbname=app host=127.0.0.1 port=5432 sslmode=disable"
            )
            .unwrap(),
            "postgres://localhost/?user=svc&password=p%20a%27ss&dbname=app&host=127.0.0.1&port=5432&sslmode=disable"
        );
        assert_eq!(
            normalize(Driver::Postgres, "host = db  dbname=x").unwrap(),
            "postgres://localhost/?host=db&dbname=x"
        );
        assert_eq!(normalize(Driver::Postgres, "host=db dbname"), Err(DataSourceError::BadKeywordValue(2)));
        assert_eq!(normalize(Driver::Postgres, "password='open"), Err(DataSourceError::BadKeywordValue(1)));
        let err = normalize(Driver::Postgres, "password='s3cret").unwrap_err().to_string();
        assert!(!err.contains("s3cret"), "{err}");
    }

    #[test]
    fn go_mysql_dsns_become_urls() {
        assert_eq!(
            normalize(Driver::Mysql, "root:p@ss@tcp(127.0.0.1:3306)/migrator?parseTime=true&charset=utf8mb4").unwrap(),
            "mysql://root:p%40ss@127.0.0.1:3306/migrator?charset=utf8mb4"
        );
        assert_eq!(normalize(Driver::Mysql, "root:@tcp(db)/app").unwrap(), "mysql://root@db:3306/app");
        assert_eq!(normalize(Driver::Mysql, "/app").unwrap(), "mysql://127.0.0.1:3306/app");
        assert_eq!(
            normalize(Driver::Mysql, "u@unix(/run/mysqld/mysqld.sock)/app?tls=true").unwrap(),
            "mysql://u@localhost/app?socket=%2Frun%2Fmysqld%2Fmysqld.sock&ssl-mode=required"
        );
        assert_eq!(normalize(Driver::Mysql, "root@tcp(h:1)"), Err(DataSourceError::BadGoDsn("missing /dbname")));
        assert!(normalize(Driver::Mysql, "root@udp(h)/x").is_err());
    }

    #[test]
    fn go_mssqldb_urls_become_ado_strings() {
        assert_eq!(
            normalize(Driver::SqlServer, "sqlserver://sa:Pa%3Bss@db.example.com:1433?database=app&encrypt=true")
                .unwrap(),
            "Server=tcp:db.example.com,1433;User Id=sa;Password={Pa;ss};Database=app;Encrypt=true"
        );
        assert_eq!(
            normalize(Driver::SqlServer, "sqlserver://u:p@h/SQLEXPRESS?database=x").unwrap(),
            "Server=tcp:h\\SQLEXPRESS;User Id=u;Password=p;Database=x;TrustServerCertificate=true"
        );
        // The peer's own form: no encrypt, so the certificate is trusted as go-mssqldb does.
        assert_eq!(
            normalize(
                Driver::SqlServer,
                "sqlserver://sa:Pass1@127.0.0.1:1433?database=migrator&connection+timeout=1&dial+timeout=1"
            )
            .unwrap(),
            "Server=tcp:127.0.0.1,1433;User Id=sa;Password=Pass1;Database=migrator;TrustServerCertificate=true"
        );
        assert_eq!(
            normalize(Driver::SqlServer, "sqlserver://u:p@h?TrustServerCertificate=false").unwrap(),
            "Server=tcp:h;User Id=u;Password=p;TrustServerCertificate=false"
        );
        assert_eq!(normalize(Driver::SqlServer, "sqlserver://"), Err(DataSourceError::BadSqlServerUrl("missing host")));
    }

    #[test]
    fn sqlite_paths_become_urls() {
        assert_eq!(normalize(Driver::Sqlite, "./data/main.db").unwrap(), "sqlite://./data/main.db?mode=rwc");
    }

    #[test]
    fn a_data_source_of_another_driver_is_refused_naming_both() {
        let own = [
            (Driver::Sqlite, "sqlite:///data/svc.db"),
            (Driver::Sqlite, "./data/main.db"),
            (Driver::Sqlite, "/var/lib/strata/main.db"),
            (Driver::Postgres, "postgres://u:p@h:5432/db"),
            (Driver::Postgres, "postgresql://h/db"),
            (Driver::Postgres, "host=db port=5432 user=svc password='a b' dbname=app"),
            (Driver::Postgres, "dbname=app"),
            (Driver::Mysql, "mysql://root@127.0.0.1:3306/mysql"),
            (Driver::Mysql, "MariaDB://root@h/db"),
            (Driver::Mysql, "user:pa@ss@tcp(h:3306)/db?parseTime=true"),
            (Driver::Mysql, "root@unix(/run/mysqld.sock)/db"),
            (Driver::SqlServer, "Server=tcp:h,1433;User Id=sa;Password=x"),
            (Driver::SqlServer, "Data Source=h;Initial Catalog=db;User Id=sa;Password=x"),
            (Driver::SqlServer, "host=h;user=sa;password=x"),
            (Driver::SqlServer, "jdbc:sqlserver://h:1433;databaseName=db"),
            (Driver::SqlServer, "sqlserver://sa:p@h?database=db"),
        ];
        for (driver, text) in own {
            assert_eq!(check_driver(driver, text), Ok(()), "{driver:?} {text}");
        }
        assert_eq!(
            check_driver(Driver::Sqlite, "postgres://user:s3cret@host:5432/db").unwrap_err().to_string(),
            "dataSource is a postgres:// URL, a form of driver postgres, but driver is sqlite; \
             sqlite takes a sqlite: URL or a file path"
        );
        assert_eq!(
            check_driver(Driver::Sqlite, "mysql://root@h/db").unwrap_err(),
            DataSourceError::WrongDriver { driver: "sqlite", shape: "a mysql:// URL", owner: "mysql" }
        );
        assert_eq!(
            check_driver(Driver::Postgres, "user:s3cret@tcp(h:3306)/db").unwrap_err().to_string(),
            "dataSource is a Go MySQL DSN, a form of driver mysql, but driver is postgres; \
             postgres takes a postgres:// URL or libpq key=value pairs"
        );
        assert_eq!(
            check_driver(Driver::Mysql, "/data/main.db").unwrap_err(),
            DataSourceError::WrongDriver { driver: "mysql", shape: "a file path", owner: "sqlite" }
        );
        assert_eq!(
            check_driver(Driver::SqlServer, "host=h port=5432").unwrap_err(),
            DataSourceError::WrongDriver {
                driver: "sqlserver",
                shape: "a list of libpq key=value pairs",
                owner: "postgres"
            }
        );
        assert_eq!(
            check_driver(Driver::Postgres, "Server=tcp:h;User Id=sa;Password=s3cret").unwrap_err(),
            DataSourceError::WrongDriver { driver: "postgres", shape: "an ADO connection string", owner: "sqlserver" }
        );
        assert_eq!(
            check_driver(Driver::Postgres, "http://user:s3cret@h/x").unwrap_err().to_string(),
            "dataSource is a URL with scheme http, which no driver takes; postgres takes a postgres:// URL or libpq key=value pairs"
        );
        for driver in Driver::ALL {
            for text in ["postgres://u:s3cret@h/db", "mysql://u:s3cret@h/db", "file:///s3cret"] {
                if let Err(error) = check_driver(driver, text) {
                    assert!(!error.to_string().contains("s3cret"), "{error}");
                }
            }
        }
    }
}
