//! Many new tenants at once (`createTenants`, `strata tenants add --from
//! FILE`): the list read, and every problem of it found before anything
//! runs — a name its engine refuses, a name listed twice, a tenant that
//! exists already — so a list is taken whole or not at all.

use thiserror::Error;

use crate::migrate::driver::Driver;
use crate::migrate::ident::{IdentError, validate_new_tenant_name};

/// One name of a list, with where it was given: its line in a file, or its
/// position (from 1) in the API's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The line or position, from 1.
    pub at: usize,
    /// The name, trimmed.
    pub name: String,
}

/// The names of a tenant file: one a line, surrounding blanks trimmed;
/// blank lines and lines starting with `#` skipped.
pub fn read_file(text: &str) -> Vec<Entry> {
    text.lines()
        .enumerate()
        .map(|(index, line)| (index + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
        .map(|(at, name)| Entry { at, name: name.to_string() })
        .collect()
}

/// The names of the API's list, positions from 1.
pub fn from_names(names: &[String]) -> Vec<Entry> {
    names.iter().enumerate().map(|(index, name)| Entry { at: index + 1, name: name.clone() }).collect()
}

/// One problem of a list.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Problem {
    /// The name is refused ([`validate_new_tenant_name`]).
    #[error("{at}: {error}")]
    Invalid {
        /// Where.
        at: usize,
        /// Why.
        error: IdentError,
    },
    /// The name was listed before.
    #[error("{at}: {name:?} is listed twice (first at {first})")]
    Duplicate {
        /// Where again.
        at: usize,
        /// The name.
        name: String,
        /// Where first.
        first: usize,
    },
    /// A tenant of that name exists.
    #[error("{at}: tenant {name:?} already exists")]
    Exists {
        /// Where.
        at: usize,
        /// The name.
        name: String,
    },
}

/// Why a list was refused: every problem of it (the message names the
/// first few and how many more), or no name at all.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ListError {
    /// Nothing to add.
    #[error("the tenant list names no tenant")]
    Empty,
    /// Problems, in list order.
    #[error("{} problem(s) in the tenant list, nothing was added: {}", .0.len(), shown(.0))]
    Problems(Vec<Problem>),
}

/// The problems shown in one message.
const SHOWN: usize = 10;

fn shown(problems: &[Problem]) -> String {
    let mut text = problems.iter().take(SHOWN).map(Problem::to_string).collect::<Vec<_>>().join("; ");
    if problems.len() > SHOWN {
        text.push_str(&format!("; and {} more", problems.len() - SHOWN));
    }
    text
}

/// Checks a list of new tenants on `driver`: each name valid
/// ([`validate_new_tenant_name`]), none twice (letter case aside, as the
/// engines compare schema names) and none an existing tenant. Returns the
/// names in list order.
pub fn check<'a>(
    entries: &[Entry],
    driver: Driver,
    single_schemas: impl IntoIterator<Item = &'a str> + Clone,
    existing: &[String],
) -> Result<Vec<String>, ListError> {
    if entries.is_empty() {
        return Err(ListError::Empty);
    }
    let existing: rustc_hash::FxHashSet<String> = existing.iter().map(|t| t.to_ascii_lowercase()).collect();
    let mut seen: rustc_hash::FxHashMap<String, usize> = Default::default();
    let mut problems = Vec::new();
    for Entry { at, name } in entries {
        if let Err(error) = validate_new_tenant_name(name, driver, single_schemas.clone()) {
            problems.push(Problem::Invalid { at: *at, error });
            continue;
        }
        let key = name.to_ascii_lowercase();
        if let Some(first) = seen.get(&key) {
            problems.push(Problem::Duplicate { at: *at, name: name.clone(), first: *first });
            continue;
        }
        seen.insert(key.clone(), *at);
        if existing.contains(&key) {
            problems.push(Problem::Exists { at: *at, name: name.clone() });
        }
    }
    if problems.is_empty() {
        Ok(entries.iter().map(|e| e.name.clone()).collect())
    } else {
        Err(ListError::Problems(problems))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_one_name_a_line_without_blanks_and_comments() {
        let entries = read_file("# tenants of eu-1\nacme\n\n  beta  \n#gamma\n\t\ndelta\n");
        let got: Vec<(usize, &str)> = entries.iter().map(|e| (e.at, e.name.as_str())).collect();
        assert_eq!(got, [(2, "acme"), (4, "beta"), (7, "delta")]);
        assert_eq!(read_file(""), []);
    }

    #[test]
    fn every_problem_is_found_before_anything_runs() {
        let entries = read_file("acme\n1bad\nbeta\nACME\nold\nsvc\nbeta\n");
        let err = check(&entries, Driver::Mysql, ["ref"], &["old".to_string()]).unwrap_err();
        let ListError::Problems(problems) = &err else { panic!("{err}") };
        assert_eq!(problems.len(), 5, "{err}");
        assert!(matches!(problems[0], Problem::Invalid { at: 2, error: IdentError::NotPlain { .. } }));
        assert_eq!(problems[1], Problem::Duplicate { at: 4, name: "ACME".into(), first: 1 });
        assert_eq!(problems[2], Problem::Exists { at: 5, name: "old".into() });
        assert!(matches!(problems[3], Problem::Invalid { at: 6, error: IdentError::Reserved { .. } }));
        assert_eq!(problems[4], Problem::Duplicate { at: 7, name: "beta".into(), first: 3 });
        assert!(err.to_string().starts_with("5 problem(s) in the tenant list, nothing was added: 2: tenant name"));
        assert!(
            err.to_string().contains("; 4: \"ACME\" is listed twice (first at 1); 5: tenant \"old\" already exists;")
        );
    }

    #[test]
    fn a_clean_list_is_its_names_in_order_and_an_empty_one_is_refused() {
        let names = vec!["b".to_string(), "a".to_string()];
        assert_eq!(check(&from_names(&names), Driver::Postgres, [], &[]), Ok(names));
        assert_eq!(check(&read_file("# none\n"), Driver::Postgres, [], &[]), Err(ListError::Empty));
    }

    #[test]
    fn a_long_list_of_problems_is_one_line() {
        let text: String = (0..25).map(|i| format!("{i}bad\n")).collect();
        let message = check(&read_file(&text), Driver::Sqlite, [], &[]).unwrap_err().to_string();
        assert!(message.starts_with("25 problem(s)"), "{message}");
        assert!(message.ends_with("; and 15 more"), "{message}");
        assert!(!message.contains('\n'));
    }
}
