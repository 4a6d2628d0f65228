//! Waves: a version over part of the fleet — named tenants (a canary), or a
//! stable share of it — before a version over the rest. A tenant is in a
//! share by a hash of its name alone, so `10%` is the same tenants on every
//! run and on every replica, and a larger share holds every tenant of a
//! smaller one (10 % ⊂ 50 % ⊂ 100 %). Recorded migrations do the rest: the
//! next wave, or a plain version, runs only what each tenant lacks.
//!
//! A wave may also select by an attribute of the tenants: a column that
//! `tenantSelectSQL` returns beside the name (`select name, tier from …`),
//! read with the tenant list ([`Attributes`]); `tier=internal,beta` selects
//! the tenants whose `tier` is one of those values.

use rustc_hash::{FxHashMap, FxHashSet};

use thiserror::Error;

/// Which tenants a version runs in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Wave {
    /// Every tenant (a plain version).
    #[default]
    All,
    /// These tenants.
    Named(Vec<String>),
    /// The tenants whose bucket (0–99, from their name) is below this.
    Share(u8),
    /// The tenants whose attribute `name` (a column of `tenantSelectSQL`)
    /// is one of `values`.
    Attribute {
        /// The column, lowercase.
        name: String,
        /// The values selected.
        values: Vec<String>,
    },
}

impl Wave {
    /// `NAME=VALUE[,VALUE…]`: a wave by attribute. Names are matched
    /// without regard to case, values exactly.
    pub fn attribute(text: &str) -> Result<Wave, WaveError> {
        let bad = || WaveError::BadAttribute(text.to_string());
        let (name, values) = text.split_once('=').ok_or_else(bad)?;
        let name = name.trim().to_ascii_lowercase();
        let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
        let is_name = |n: &str| {
            n.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        if !is_name(&name) || values.iter().any(String::is_empty) {
            return Err(bad());
        }
        Ok(Wave::Attribute { name, values })
    }
}

impl std::fmt::Display for Wave {
    /// As [`Wave::attribute`] and the rollout's wave texts read it back
    /// (`all` for every tenant).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Wave::All => f.write_str("all"),
            Wave::Named(names) => f.write_str(&names.join(",")),
            Wave::Share(share) => write!(f, "{share}%"),
            Wave::Attribute { name, values } => write!(f, "{name}={}", values.join(",")),
        }
    }
}

/// What `tenantSelectSQL` returned beside each tenant's name: its other
/// columns, by (lowercase) column name, as text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    /// The columns after the name, lowercase, in their order.
    pub columns: Vec<String>,
    /// Each tenant's values in `columns` order (`None`: NULL).
    pub values: FxHashMap<String, Vec<Option<String>>>,
}

impl Attributes {
    /// The attributes of a tenant list whose columns after the name are
    /// `columns` (matched without regard to case): each tenant's values in
    /// that order.
    pub fn new(columns: Vec<String>) -> Attributes {
        Attributes {
            columns: columns.into_iter().map(|c| c.to_ascii_lowercase()).collect(),
            values: FxHashMap::default(),
        }
    }

    /// Tenant `tenant`'s value of column `name` (lowercase).
    pub fn get(&self, tenant: &str, name: &str) -> Option<&str> {
        let column = self.columns.iter().position(|c| c == name)?;
        self.values.get(tenant)?.get(column)?.as_deref()
    }
}

/// A wave that names what is not a tenant.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WaveError {
    /// A named tenant does not exist.
    #[error("{0:?} is not a tenant")]
    NotATenant(String),
    /// A share above 100 %.
    #[error("a share of {0} % is not between 0 and 100")]
    BadShare(u32),
    /// An attribute wave's text cannot be read.
    #[error("wave {0:?}: expected NAME=VALUE[,VALUE…], NAME a column of tenantSelectSQL")]
    BadAttribute(String),
    /// The attribute is not a column `tenantSelectSQL` returns.
    #[error(
        "tenantSelectSQL returns no column {name:?} beside the tenant name (it returns {returned}); a wave by \
         attribute selects by such a column, e.g. select name, tier from …"
    )]
    UnknownAttribute {
        /// The attribute asked for.
        name: String,
        /// The columns there are, listed.
        returned: String,
    },
}

/// The bucket of a tenant, 0–99: FNV-1a of its name, modulo 100. Stable
/// across runs, processes and platforms (no random seed).
pub fn bucket(tenant: &str) -> u8 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in tenant.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash % 100) as u8
}

/// The tenants of `tenants` (in their order) that `wave` selects;
/// `attributes` as `tenantSelectSQL` returned them. An attribute is known
/// once a tenant was read with it: an empty fleet selects nobody.
pub fn select(tenants: &[String], wave: &Wave, attributes: &Attributes) -> Result<Vec<String>, WaveError> {
    match wave {
        Wave::Attribute { name, .. } if !tenants.is_empty() && !attributes.columns.contains(name) => {
            Err(WaveError::UnknownAttribute {
                name: name.clone(),
                returned: match attributes.columns.is_empty() {
                    true => "the name only".to_string(),
                    false => attributes.columns.join(", "),
                },
            })
        }
        Wave::Attribute { name, values } => Ok(tenants
            .iter()
            .filter(|t| attributes.get(t, name).is_some_and(|value| values.iter().any(|v| v == value)))
            .cloned()
            .collect()),
        Wave::All => Ok(tenants.to_vec()),
        Wave::Named(names) => {
            let existing: FxHashSet<&str> = tenants.iter().map(String::as_str).collect();
            if let Some(name) = names.iter().find(|n| !existing.contains(n.as_str())) {
                return Err(WaveError::NotATenant(name.clone()));
            }
            let wanted: FxHashSet<&str> = names.iter().map(String::as_str).collect();
            Ok(tenants.iter().filter(|t| wanted.contains(t.as_str())).cloned().collect())
        }
        Wave::Share(share) if *share > 100 => Err(WaveError::BadShare(u32::from(*share))),
        Wave::Share(share) => Ok(tenants.iter().filter(|t| bucket(t) < *share).cloned().collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none() -> Attributes {
        Attributes::default()
    }

    fn fleet(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("t{i:05}")).collect()
    }

    #[test]
    fn a_share_is_stable_nested_and_close_to_its_size() {
        let tenants = fleet(10_000);
        let ten = select(&tenants, &Wave::Share(10), &none()).unwrap();
        let fifty = select(&tenants, &Wave::Share(50), &none()).unwrap();
        assert_eq!(ten, select(&tenants, &Wave::Share(10), &none()).unwrap());
        assert!(ten.iter().all(|t| fifty.contains(t)));
        assert!((900..=1100).contains(&ten.len()), "{}", ten.len());
        assert!((4800..=5200).contains(&fifty.len()), "{}", fifty.len());
        assert_eq!(select(&tenants, &Wave::Share(100), &none()).unwrap().len(), 10_000);
        assert_eq!(select(&tenants, &Wave::Share(0), &none()).unwrap(), Vec::<String>::new());
        assert_eq!(bucket("acme"), bucket("acme"));
    }

    #[test]
    fn named_tenants_must_exist() {
        let tenants = fleet(5);
        let wave = Wave::Named(vec!["t00003".into(), "t00001".into()]);
        assert_eq!(select(&tenants, &wave, &none()).unwrap(), ["t00001", "t00003"]);
        assert_eq!(
            select(&tenants, &Wave::Named(vec!["nope".into()]), &none()),
            Err(WaveError::NotATenant("nope".into()))
        );
        assert_eq!(select(&tenants, &Wave::Share(101), &none()), Err(WaveError::BadShare(101)));
    }

    #[test]
    fn an_attribute_selects_by_a_column_of_the_tenant_list() {
        let tenants = fleet(4);
        let tier = |v: Option<&str>| vec![v.map(str::to_string), Some("eu".to_string())];
        let attributes = Attributes {
            columns: vec!["tier".into(), "region".into()],
            values: FxHashMap::from_iter([
                ("t00000".into(), tier(Some("internal"))),
                ("t00001".into(), tier(Some("beta"))),
                ("t00002".into(), tier(None)),
                ("t00003".into(), tier(Some("internal"))),
            ]),
        };
        let wave = Wave::attribute("Tier=internal").unwrap();
        assert_eq!(wave, Wave::Attribute { name: "tier".into(), values: vec!["internal".into()] });
        assert_eq!(select(&tenants, &wave, &attributes).unwrap(), ["t00000", "t00003"]);
        let wave = Wave::attribute("tier=beta, internal").unwrap();
        assert_eq!(wave.to_string(), "tier=beta,internal");
        assert_eq!(select(&tenants, &wave, &attributes).unwrap(), ["t00000", "t00001", "t00003"]);
        assert_eq!(
            select(&tenants, &Wave::attribute("tier=gold").unwrap(), &attributes).unwrap(),
            Vec::<String>::new()
        );
        assert_eq!(
            select(&tenants, &Wave::attribute("plan=gold").unwrap(), &attributes),
            Err(WaveError::UnknownAttribute { name: "plan".into(), returned: "tier, region".into() })
        );
        assert_eq!(
            select(&tenants, &Wave::attribute("tier=x").unwrap(), &none()),
            Err(WaveError::UnknownAttribute { name: "tier".into(), returned: "the name only".into() })
        );
        assert_eq!(select(&[], &Wave::attribute("tier=x").unwrap(), &none()).unwrap(), Vec::<String>::new());
        for bad in ["tier", "=x", "tier=", "tier=a,,b", "1tier=a", "ti-er=a"] {
            assert_eq!(Wave::attribute(bad), Err(WaveError::BadAttribute(bad.to_string())), "{bad}");
        }
    }
}
