//! The rows of the fleet matrix a reader asks for, and what rows add up
//! to: the filter of the API's `fleet.tenants(nameContains:, shard:)` and of
//! the console's search, and the tally of tenants behind, drifted and
//! unknown that a page of rows cannot give (the console shows a page of a
//! 100,000-tenant fleet, and the fleet's counts beside it).

use serde::Serialize;

use crate::migrate::report::CellState;

/// Which rows to keep: those whose name contains `name_contains` and whose
/// shard is `shard`, both ignoring case; an absent or empty one keeps every
/// row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowFilter {
    name_contains: Option<String>,
    shard: Option<String>,
}

impl RowFilter {
    /// The filter of a name's part and a shard's name (either may be absent).
    pub fn new(name_contains: Option<&str>, shard: Option<&str>) -> RowFilter {
        let folded = |text: Option<&str>| text.filter(|text| !text.is_empty()).map(str::to_lowercase);
        RowFilter { name_contains: folded(name_contains), shard: folded(shard) }
    }

    /// Whether it keeps the row of tenant `name` on `shard` (none on one
    /// server: a shard asked for keeps none of those).
    pub fn keeps(&self, name: &str, shard: Option<&str>) -> bool {
        let shard_kept = match (&self.shard, shard) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(wanted), Some(shard)) => shard.to_lowercase() == *wanted,
        };
        shard_kept && self.name_contains.as_ref().is_none_or(|part| name.to_lowercase().contains(part.as_str()))
    }
}

/// Tenants counted by where their rows stand; a tenant counts once in each
/// of `behind`, `drifted` and `unknown` whatever its number of such cells.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Rows counted.
    pub tenants: u64,
    /// Rows with a pending file: the next version applies something there.
    pub behind: u64,
    /// Rows with a file changed since it was applied.
    pub drifted: u64,
    /// Rows not known now (their shard did not answer).
    pub unknown: u64,
}

impl Tally {
    /// Counts a row given as its letters ([`super::letters`]).
    pub fn add_letters(&mut self, letters: &str) {
        let has = |state: CellState| letters.contains(state.letter());
        self.tenants += 1;
        self.behind += u64::from(has(CellState::Pending));
        self.drifted += u64::from(has(CellState::Drifted));
        self.unknown += u64::from(has(CellState::Unknown));
    }
}

/// Each shard's tally, in order of the shard's name, from the rows as
/// `(shard, letters)`; rows on no shard (one server) are left out.
pub fn tally_by_shard<'a>(rows: impl IntoIterator<Item = (Option<&'a str>, &'a str)>) -> Vec<(String, Tally)> {
    let mut shards: std::collections::BTreeMap<&str, Tally> = std::collections::BTreeMap::new();
    for (shard, letters) in rows {
        if let Some(shard) = shard {
            shards.entry(shard).or_default().add_letters(letters);
        }
    }
    shards.into_iter().map(|(shard, tally)| (shard.to_owned(), tally)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_keeps_a_part_of_the_name_and_a_shard_ignoring_case() {
        let all = RowFilter::new(None, Some(""));
        assert!(all == RowFilter::default() && all.keeps("acme", None) && all.keeps("acme", Some("b")));
        let named = RowFilter::new(Some("CM"), None);
        assert_ne!(named, RowFilter::default());
        assert!(named.keeps("acme", None) && named.keeps("ACME", Some("b")));
        assert!(!named.keeps("globex", None));
        let on_b = RowFilter::new(None, Some("B"));
        assert!(on_b.keeps("acme", Some("b")) && on_b.keeps("acme", Some("B")));
        assert!(!on_b.keeps("acme", Some("bb")) && !on_b.keeps("acme", None), "a shard is matched whole");
        let both = RowFilter::new(Some("ac"), Some("b"));
        assert!(both.keeps("acme", Some("b")));
        assert!(!both.keeps("acme", Some("a")) && !both.keeps("globex", Some("b")));
    }

    #[test]
    fn a_tenant_counts_once_however_many_of_its_files_are_behind() {
        let mut tally = Tally::default();
        for letters in ["AA", "APP", "PD", "UU", "", "DA"] {
            tally.add_letters(letters);
        }
        assert_eq!(tally, Tally { tenants: 6, behind: 2, drifted: 2, unknown: 1 });
    }

    #[test]
    fn shards_are_tallied_apart_in_order_of_name_and_one_server_has_none() {
        let rows = [(Some("b"), "AP"), (Some("a"), "AA"), (Some("b"), "UU"), (None, "PP"), (Some("a"), "AP")];
        let shards = tally_by_shard(rows);
        assert_eq!(
            shards,
            vec![
                ("a".to_owned(), Tally { tenants: 2, behind: 1, drifted: 0, unknown: 0 }),
                ("b".to_owned(), Tally { tenants: 2, behind: 1, drifted: 0, unknown: 1 }),
            ]
        );
        assert!(tally_by_shard([(None, "PP")]).is_empty());
    }
}
