//! A backfill's key values as the shell reads and binds them, and their
//! text in the books (`svc_backfills.after_key`, `upper_key`): a JSON array,
//! one element per key column.

use serde::{Deserialize, Serialize};

/// One key column's value as the shell reads and binds it: an integer
/// column's as an integer, any other's as text (PostgreSQL's reads select
/// every key column as text; its batches cast each placeholder back to the
/// column's type).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum KeyValue {
    /// An integer.
    Int(i64),
    /// Text: any value the engine reads or writes as text.
    Text(String),
}

impl std::fmt::Display for KeyValue {
    /// The value itself: the number, or the text unquoted (a type name
    /// read by [`crate::migrate::backfill::sql::key_types`] is shown as the
    /// name).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyValue::Int(n) => write!(f, "{n}"),
            KeyValue::Text(text) => f.write_str(text),
        }
    }
}

/// One value per key column, in the directive's order.
pub type Key = Vec<KeyValue>;

/// The books' text of `key`: a JSON array, `[5,"a"]`.
pub fn encode_key(key: &Key) -> String {
    serde_json::to_string(key).unwrap_or_else(|_| "[]".to_string())
}

/// The key the books' `text` holds (see [`encode_key`]): a JSON array of
/// at least one integer or string.
pub fn decode_key(text: &str) -> Result<Key, String> {
    let key: Key = serde_json::from_str(text)
        .map_err(|e| format!("{text:?} is not a backfill key (a JSON array of integers and strings): {e}"))?;
    if key.is_empty() {
        return Err(format!("{text:?} is not a backfill key: it holds no value"));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_their_json_text() {
        let key = vec![KeyValue::Int(5), KeyValue::Text("a\"b".into())];
        assert_eq!(encode_key(&key), r#"[5,"a\"b"]"#);
        assert_eq!(decode_key(&encode_key(&key)), Ok(key));
        let uuid = vec![KeyValue::Text("0b7e5a4c-2f3e-4c55-9d8f-36e1a4d1c0aa".into())];
        assert_eq!(decode_key(&encode_key(&uuid)), Ok(uuid));
        assert_eq!(decode_key("[-9223372036854775808]"), Ok(vec![KeyValue::Int(i64::MIN)]));
        // A number in a string stays text: the column was read as text.
        assert_eq!(decode_key(r#"["5"]"#), Ok(vec![KeyValue::Text("5".into())]));
    }

    #[test]
    fn anything_else_is_refused() {
        for text in ["", "5", "[]", "[1.5]", "[null]", "[true]", "[[1]]", "{\"a\":1}", "[18446744073709551616]"] {
            assert!(decode_key(text).is_err(), "{text}");
        }
        assert_eq!(decode_key("[]"), Err("\"[]\" is not a backfill key: it holds no value".into()));
    }

    #[test]
    fn a_value_shows_as_itself() {
        assert_eq!(KeyValue::Int(-3).to_string(), "-3");
        assert_eq!(KeyValue::Text("timestamp with time zone".into()).to_string(), "timestamp with time zone");
    }
}
