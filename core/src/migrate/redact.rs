//! Hiding secrets in connection strings before they are served or logged.
//!
//! Covers the forms the drivers accept: URLs with user info
//! (`postgres://user:secret@host/db`), Go-style MySQL DSNs
//! (`user:secret@tcp(host:3306)/db`), key/value strings (`password=secret`
//! and `sslpassword=secret` in libpq, `Password=secret;` in ADO/SQL
//! Server, `pwd=`), and `password`
//! query parameters. The scan is linear and never fails: unknown shapes are
//! returned unchanged apart from the rules above.

/// The text shown in place of a secret.
pub const MASK: &str = "***";

/// Returns `data_source` with every password replaced by [`MASK`].
///
/// User info goes first: a key/value value runs to the next separator, so
/// hiding it first could swallow the `@` that ends a URL's user info.
pub fn redact_data_source(data_source: &str) -> String {
    redact_key_values(&redact_user_info(data_source))
}

/// A webhook's URL as it may be shown: its scheme, host and port; user
/// info and everything after the host replaced by [`MASK`]. Chat services
/// put a webhook's secret in its path (Slack's `/services/T…/B…/<secret>`,
/// Discord's `/api/webhooks/<id>/<token>`), others in the query.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return MASK.to_string();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let (user, host) = match authority.rfind('@') {
        Some(at) => (format!("{MASK}@"), &authority[at + 1..]),
        None => (String::new(), authority),
    };
    let tail = if rest[authority_end..].trim_start_matches('/').is_empty() { "" } else { "/***" };
    format!("{}://{user}{host}{tail}", &url[..scheme_end])
}

/// `user:secret@` → `user:***@`, for URLs and Go-style DSNs.
fn redact_user_info(text: &str) -> String {
    let start = text.find("://").map_or(0, |i| i + 3);
    let rest = &text[start..];
    let region_end = rest.find(['?', '#', ';']).unwrap_or(rest.len());
    let Some(at) = rest[..region_end].rfind('@') else {
        return text.to_string();
    };
    let user_info = &rest[..at];
    let Some(colon) = user_info.find(':') else {
        return text.to_string();
    };
    if user_info[colon + 1..] == *MASK {
        return text.to_string();
    }
    format!("{}{}:{MASK}{}", &text[..start], &user_info[..colon], &rest[at..])
}

/// `password=secret` (and `pwd=`), in any case, after a separator.
fn redact_key_values(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let at_boundary = i == 0 || matches!(bytes[i - 1], b' ' | b';' | b'?' | b'&' | b'\t');
        let key_len = if at_boundary { secret_key_len(&bytes[i..]) } else { 0 };
        if key_len == 0 {
            i += 1;
            continue;
        }
        let mut j = i + key_len;
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        if j >= bytes.len() || bytes[j] != b'=' {
            i += key_len;
            continue;
        }
        j += 1;
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        let value_end = value_end(bytes, j);
        out.push_str(&text[copied..j]);
        out.push_str(MASK);
        copied = value_end;
        i = value_end.max(i + 1);
    }
    out.push_str(&text[copied..]);
    out
}

/// Length of a `password`, `pwd` or `sslpassword` (libpq's client key's
/// pass phrase) key at the start of `bytes`, else 0.
fn secret_key_len(bytes: &[u8]) -> usize {
    ["sslpassword", "password", "pwd"]
        .iter()
        .find(|key| bytes.len() >= key.len() && bytes[..key.len()].eq_ignore_ascii_case(key.as_bytes()))
        .map_or(0, |key| key.len())
}

/// End of a value starting at `start`: a quoted value runs to its closing
/// quote (`'`, `"` or `{}`), a bare one to the next separator.
fn value_end(bytes: &[u8], start: usize) -> usize {
    let close = match bytes.get(start) {
        Some(b'\'') => Some(b'\''),
        Some(b'"') => Some(b'"'),
        Some(b'{') => Some(b'}'),
        _ => None,
    };
    match close {
        Some(close) => bytes[start + 1..].iter().position(|b| *b == close).map_or(bytes.len(), |p| start + 1 + p + 1),
        None => bytes[start..]
            .iter()
            .position(|b| matches!(b, b' ' | b';' | b'&' | b'\t'))
            .map_or(bytes.len(), |p| start + p),
    }
}

#[cfg(test)]
mod tests {
    use super::redact_data_source as r;
    use super::{MASK, redact_url};

    #[test]
    fn a_webhook_url_keeps_its_scheme_host_and_port_only() {
        assert_eq!(
            redact_url("https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXX"),
            "https://hooks.slack.com/***"
        );
        assert_eq!(redact_url("http://bot:s3cret@127.0.0.1:9000/hook?token=abc#x"), "http://***@127.0.0.1:9000/***");
        assert_eq!(redact_url("https://example.com?key=abc"), "https://example.com/***");
        assert_eq!(redact_url("https://example.com/"), "https://example.com");
        assert_eq!(redact_url("https://example.com"), "https://example.com");
        assert_eq!(redact_url("not a url secret"), MASK);
    }

    #[test]
    fn urls_with_user_info() {
        assert_eq!(r("postgres://u:s3cr3t@db:5432/x?sslmode=disable"), "postgres://u:***@db:5432/x?sslmode=disable");
        assert_eq!(r("mysql://root:p@ss@h/db"), "mysql://root:***@h/db");
        assert_eq!(r("postgres://u@db/x"), "postgres://u@db/x");
        assert_eq!(r("sqlite://./data/main.db?mode=rwc"), "sqlite://./data/main.db?mode=rwc");
    }

    #[test]
    fn go_style_dsn() {
        assert_eq!(
            r("root:hunter2@tcp(127.0.0.1:3306)/db?parseTime=true"),
            "root:***@tcp(127.0.0.1:3306)/db?parseTime=true"
        );
    }

    #[test]
    fn key_values() {
        assert_eq!(r("host=h user=u password=pw dbname=d"), "host=h user=u password=*** dbname=d");
        assert_eq!(r("host=h password='a b c' dbname=d"), "host=h password=*** dbname=d");
        assert_eq!(
            r("Server=h;User Id=sa;Password=Pa;ss;Database=d"),
            "Server=h;User Id=sa;Password=***;ss;Database=d"
        );
        assert_eq!(r("Server=h;PWD={x;y};Database=d"), "Server=h;PWD=***;Database=d");
        assert_eq!(
            r("postgres://h/db?user=u&password=pw&sslmode=require"),
            "postgres://h/db?user=u&password=***&sslmode=require"
        );
        assert_eq!(r("host=h mypassword=x"), "host=h mypassword=x");
    }

    #[test]
    fn a_password_looking_like_a_key_value_pair_is_still_hidden() {
        // Found by the data_source fuzz target (tests/data/fuzz/data_source/regression-userinfo-first).
        let text = "postgres://user:SECRET\0\0\0\0\tPassword=r{a@host/db";
        assert_eq!(r(text), "postgres://user:***@host/db");
    }

    #[test]
    fn combined_forms_hide_both() {
        assert_eq!(r("postgres://u:a@h/db?password=b"), "postgres://u:***@h/db?password=***");
    }
}
