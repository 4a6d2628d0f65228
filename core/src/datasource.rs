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
//!   migrator's examples use, turned into an ADO string.

use thiserror::Error;

use crate::config::Driver;

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
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = decode(value);
        match key.to_ascii_lowercase().as_str() {
            "database" => parts.push(format!("Database={}", ado_value(&value))),
            "encrypt" => parts.push(format!("Encrypt={}", ado_value(&value))),
            "trustservercertificate" => parts.push(format!("TrustServerCertificate={}", ado_value(&value))),
            "app name" | "app+name" => parts.push(format!("Application Name={}", ado_value(&value))),
            _ => {}
        }
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
            "Server=tcp:h\\SQLEXPRESS;User Id=u;Password=p;Database=x"
        );
        assert_eq!(normalize(Driver::SqlServer, "sqlserver://"), Err(DataSourceError::BadSqlServerUrl("missing host")));
    }

    #[test]
    fn sqlite_paths_become_urls() {
        assert_eq!(normalize(Driver::Sqlite, "./data/main.db").unwrap(), "sqlite://./data/main.db?mode=rwc");
    }
}
