//! "Did you mean …" for a misspelt property: the YAML parser's unknown-field
//! error read back (the name, where, the names it expected) and the closest
//! expected name by Jaro-Winkler similarity (`strsim`), letter case aside.

use crate::migrate::config::ConfigError;

/// How similar a name must be to be suggested (Jaro-Winkler, 0 to 1).
const CLOSE_ENOUGH: f64 = 0.8;

/// The [`ConfigError::UnknownProperty`] the parser's one-line `message`
/// reports, if it reports one: `… line L column C: unknown field `NAME`,
/// expected one of A, B, … --> …`.
pub(super) fn unknown_property(message: &str) -> Option<ConfigError> {
    let (before, after) = message.split_once("unknown field `")?;
    let (name, rest) = after.split_once('`')?;
    let expected_text = rest.split_once("expected ")?.1;
    let expected_text = expected_text.split_once(" -->").map_or(expected_text, |(list, _)| list);
    let expected: Vec<String> = expected_text
        .split([',', ' '])
        .map(|word| word.trim_matches('`'))
        .filter(|word| !word.is_empty() && !matches!(*word, "one" | "of" | "or"))
        .map(str::to_string)
        .collect();
    let at = before
        .find("line ")
        .map_or_else(String::new, |start| before[start..].trim_end().trim_end_matches(':').to_string());
    Some(ConfigError::UnknownProperty {
        name: name.to_string(),
        at,
        suggestion: closest(name, &expected).map(str::to_string),
        expected,
    })
}

/// The name of `candidates` most like `name`, if any is close enough.
fn closest<'a>(name: &str, candidates: &'a [String]) -> Option<&'a str> {
    let name = name.to_lowercase();
    candidates
        .iter()
        .map(|candidate| (strsim::jaro_winkler(&name, &candidate.to_lowercase()), candidate.as_str()))
        .filter(|(similarity, _)| *similarity >= CLOSE_ENOUGH)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closest_name_is_suggested_letter_case_aside() {
        let names: Vec<String> = ["baseLocation", "dataSource", "webHookURL", "port"].map(String::from).to_vec();
        assert_eq!(closest("dataSourse", &names), Some("dataSource"));
        assert_eq!(closest("webhookUrl", &names), Some("webHookURL"));
        assert_eq!(closest("datasource", &names), Some("dataSource"));
        assert_eq!(closest("tenantSelectStatement", &names), None);
    }

    #[test]
    fn a_message_without_an_unknown_field_is_left_alone() {
        assert_eq!(unknown_property("error: line 2 column 7: invalid type: string, expected a sequence"), None);
    }
}
