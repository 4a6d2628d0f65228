//! Failure isolation for tenant fleets: which tenant failures a version
//! absorbs (its failure budget), and which tenants a version runs in, given
//! those earlier versions put aside.
//!
//! - **Budget.** With a budget of *n*, a version goes on past the failures
//!   of up to *n* tenants; the failure after that stops it (no new unit
//!   starts), as the first failure does with a budget of 0. Only tenant
//!   units are absorbed: a single schema is shared, its failure always
//!   stops the version.
//! - **Quarantine.** A tenant whose failure was absorbed is put aside with
//!   its error; later versions skip it, so it never receives later
//!   migrations while an earlier one is failing. A retry runs a version over
//!   quarantined tenants only (and the single schemas, as any version); a
//!   tenant it completes leaves the quarantine, one that fails again stays
//!   with one more attempt. A release lets the next version take it like
//!   any other tenant.

use rustc_hash::FxHashSet;

use thiserror::Error;

use crate::migrate::fingerprint::DriftReport;

/// The tenants a version runs in, and the quarantined ones it skips.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Tenants the version plans for, in the order given.
    pub run: Vec<String>,
    /// Quarantined tenants it leaves alone, in the order given.
    pub skipped: Vec<String>,
}

/// A retry that names what is not in quarantine.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RetryError {
    /// A named tenant is not quarantined (or not a tenant).
    #[error("tenant {0:?} is not quarantined: only quarantined tenants are retried")]
    NotQuarantined(String),
    /// Nothing is quarantined.
    #[error("no tenant is quarantined: nothing to retry")]
    NothingQuarantined,
    /// A wave names a quarantined tenant (a retry runs those).
    #[error("tenant {0:?} is quarantined: retry it (strata quarantine retry) or release it first")]
    Quarantined(String),
}

/// The tenants a version runs in. `retry`: `None` for a version over the
/// fleet (quarantined tenants skipped); `Some(names)` for a retry of those
/// quarantined tenants (`Some(&[])`: all of them).
pub fn select(tenants: &[String], quarantined: &[String], retry: Option<&[String]>) -> Result<Selection, RetryError> {
    let held: FxHashSet<&str> = quarantined.iter().map(String::as_str).collect();
    match retry {
        None => {
            let (skipped, run) = tenants.iter().cloned().partition(|t| held.contains(t.as_str()));
            Ok(Selection { run, skipped })
        }
        Some(names) => {
            let existing: FxHashSet<&str> = tenants.iter().map(String::as_str).collect();
            if let Some(name) = names.iter().find(|n| !held.contains(n.as_str()) || !existing.contains(n.as_str())) {
                return Err(RetryError::NotQuarantined(name.clone()));
            }
            let wanted: FxHashSet<&str> =
                if names.is_empty() { held } else { names.iter().map(String::as_str).collect() };
            if wanted.is_empty() {
                return Err(RetryError::NothingQuarantined);
            }
            let run: Vec<String> = tenants.iter().filter(|t| wanted.contains(t.as_str())).cloned().collect();
            if run.is_empty() {
                return Err(RetryError::NothingQuarantined);
            }
            Ok(Selection { run, skipped: Vec::new() })
        }
    }
}

/// What `driftPolicy: quarantine` puts aside before a version: every
/// outlier of the fleet drift report, and every tenant changed since its
/// last unit — `(tenant, why)`, sorted by tenant. Single schemas are shared
/// by every tenant: they are never quarantined (`single_schemas`), only
/// reported.
pub fn drift_entries(report: &DriftReport, single_schemas: &[&str]) -> Vec<(String, String)> {
    let mut entries: Vec<(String, String)> = Vec::new();
    for outlier in &report.outliers {
        let shown: Vec<String> =
            outlier.differences.iter().take(3).map(|d| format!("{} {} {}", d.kind, d.name, d.change)).collect();
        let more = outlier.differences.len().saturating_sub(shown.len());
        let more = if more > 0 { format!(", and {more} more") } else { String::new() };
        entries.push((
            outlier.schema.clone(),
            format!(
                "its live schema differs from {}'s, which recorded the same {} migration(s): {}{more}",
                outlier.reference,
                outlier.migrations,
                shown.join(", ")
            ),
        ));
    }
    // Sets: a change made by hand across the fleet changes every tenant.
    let outliers: FxHashSet<&str> = report.outliers.iter().map(|o| o.schema.as_str()).collect();
    let single: FxHashSet<&str> = single_schemas.iter().copied().collect();
    let mut seen: FxHashSet<&str> = FxHashSet::default();
    for changed in &report.changed {
        let schema = changed.schema.as_str();
        if single.contains(schema) || outliers.contains(schema) || !seen.insert(schema) {
            continue;
        }
        entries.push((
            changed.schema.clone(),
            format!(
                "its live schema changed since its last migration (fingerprint {} then, {} now)",
                &changed.stored[..changed.stored.len().min(12)],
                &changed.live[..changed.live.len().min(12)]
            ),
        ));
    }
    entries.sort();
    entries
}

/// How many tenant failures a version absorbs (`failureBudget`): a number
/// of tenants, or a share of the tenants the version runs in (`10%`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FailureBudget {
    /// This many tenants (0: the first failure stops the version).
    #[default]
    None,
    /// This many tenants.
    Tenants(u32),
    /// This percentage of the version's tenants, rounded down.
    Percent(u8),
}

/// A `failureBudget` that is neither a count nor a percentage.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0:?} is not a number of tenants (5) or a share of them (10%)")]
pub struct BadBudget(pub String);

impl std::str::FromStr for FailureBudget {
    type Err = BadBudget;

    /// `5` (tenants) or `10%` (of the version's tenants, 0–100).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || BadBudget(text.to_string());
        let trimmed = text.trim();
        let budget = match trimmed.strip_suffix('%') {
            Some(share) => {
                let share: u8 = share.trim().parse().map_err(|_| bad())?;
                if share > 100 {
                    return Err(bad());
                }
                FailureBudget::Percent(share)
            }
            None => FailureBudget::Tenants(trimmed.parse().map_err(|_| bad())?),
        };
        Ok(match budget {
            FailureBudget::Tenants(0) | FailureBudget::Percent(0) => FailureBudget::None,
            other => other,
        })
    }
}

impl serde::Serialize for FailureBudget {
    /// A count as a number, a share as its text (`10%`).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            FailureBudget::None => serializer.serialize_u32(0),
            FailureBudget::Tenants(n) => serializer.serialize_u32(*n),
            FailureBudget::Percent(_) => serializer.collect_str(self),
        }
    }
}

impl std::fmt::Display for FailureBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FailureBudget::None => f.write_str("0"),
            FailureBudget::Tenants(n) => write!(f, "{n}"),
            FailureBudget::Percent(p) => write!(f, "{p}%"),
        }
    }
}

impl FailureBudget {
    /// Whether failures are absorbed at all.
    pub fn is_none(self) -> bool {
        self == FailureBudget::None
    }

    /// The number of tenant failures absorbed in a version over `tenants`
    /// tenants.
    pub fn allowed(self, tenants: usize) -> usize {
        match self {
            FailureBudget::None => 0,
            FailureBudget::Tenants(n) => n as usize,
            FailureBudget::Percent(p) => tenants * usize::from(p) / 100,
        }
    }
}

/// Whether a version over `tenants` tenants that has now seen `failures`
/// tenant failures (this one included) goes on under `budget`.
pub fn absorbs(failures: usize, budget: FailureBudget, tenants: usize) -> bool {
    failures <= budget.allowed(tenants)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_version_skips_quarantined_tenants() {
        let selection = select(&names(&["a", "b", "c", "d"]), &names(&["c", "a", "gone"]), None).unwrap();
        assert_eq!(selection, Selection { run: names(&["b", "d"]), skipped: names(&["a", "c"]) });
        assert_eq!(select(&names(&["a"]), &[], None).unwrap().run, names(&["a"]));
    }

    #[test]
    fn a_retry_runs_quarantined_tenants_only() {
        let tenants = names(&["a", "b", "c"]);
        let held = names(&["c", "a"]);
        assert_eq!(select(&tenants, &held, Some(&[])).unwrap().run, names(&["a", "c"]));
        assert_eq!(select(&tenants, &held, Some(&names(&["c"]))).unwrap().run, names(&["c"]));
        assert_eq!(select(&tenants, &held, Some(&names(&["b"]))), Err(RetryError::NotQuarantined("b".into())));
        assert_eq!(
            select(&tenants, &names(&["zz"]), Some(&names(&["zz"]))),
            Err(RetryError::NotQuarantined("zz".into()))
        );
        assert_eq!(select(&tenants, &[], Some(&[])), Err(RetryError::NothingQuarantined));
    }

    pub(crate) fn drifted_report() -> DriftReport {
        use crate::migrate::fingerprint::{ChangedSchema, Difference, OutlierReport};
        let difference = |name: &str| Difference {
            kind: "column".into(),
            name: name.into(),
            change: "added",
            expected: None,
            found: Some("integer".into()),
        };
        DriftReport {
            tenants: 3,
            groups: Vec::new(),
            outliers: vec![OutlierReport {
                schema: "t2".into(),
                reference: "t1".into(),
                migrations: 4,
                differences: vec![
                    difference("users.a"),
                    difference("users.b"),
                    difference("users.c"),
                    difference("users.d"),
                ],
            }],
            changed: ["ref", "t2", "t3"]
                .iter()
                .map(|s| ChangedSchema { schema: s.to_string(), stored: "a".repeat(64), live: "b".repeat(64) })
                .collect(),
        }
    }

    #[test]
    fn drift_quarantines_outliers_and_changed_tenants_not_single_schemas() {
        let report = drifted_report();
        let entries = drift_entries(&report, &["ref"]);
        assert_eq!(entries.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(), ["t2", "t3"]);
        assert_eq!(
            entries[0].1,
            "its live schema differs from t1's, which recorded the same 4 migration(s): column users.a added, \
             column users.b added, column users.c added, and 1 more"
        );
        assert_eq!(
            entries[1].1,
            "its live schema changed since its last migration (fingerprint aaaaaaaaaaaa then, bbbbbbbbbbbb now)"
        );
    }

    #[test]
    fn the_budget_absorbs_up_to_n_failures_or_a_share() {
        let budget = |text: &str| text.parse::<FailureBudget>().unwrap();
        assert!(!absorbs(1, budget("0"), 100));
        assert!(absorbs(1, budget("1"), 100));
        assert!(absorbs(3, budget("3"), 2));
        assert!(!absorbs(4, budget("3"), 1000));
        assert!(absorbs(10, budget("10%"), 100));
        assert!(!absorbs(11, budget("10%"), 100));
        assert!(!absorbs(1, budget("10%"), 9), "10 % of 9 tenants rounds down to none");
        assert_eq!(budget("0%"), FailureBudget::None);
        assert_eq!(budget(" 25 % "), FailureBudget::Percent(25));
        assert_eq!(budget("25%").to_string(), "25%");
        assert_eq!("101%".parse::<FailureBudget>(), Err(BadBudget("101%".into())));
        assert!("-1".parse::<FailureBudget>().is_err());
        assert!("ten".parse::<FailureBudget>().is_err());
    }
}
