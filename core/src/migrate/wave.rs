//! Waves: a version over part of the fleet — named tenants (a canary), or a
//! stable share of it — before a version over the rest. A tenant is in a
//! share by a hash of its name alone, so `10%` is the same tenants on every
//! run and on every replica, and a larger share holds every tenant of a
//! smaller one (10 % ⊂ 50 % ⊂ 100 %). Recorded migrations do the rest: the
//! next wave, or a plain version, runs only what each tenant lacks.

use std::collections::HashSet;

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

/// The tenants of `tenants` (in their order) that `wave` selects.
pub fn select(tenants: &[String], wave: &Wave) -> Result<Vec<String>, WaveError> {
    match wave {
        Wave::All => Ok(tenants.to_vec()),
        Wave::Named(names) => {
            let existing: HashSet<&str> = tenants.iter().map(String::as_str).collect();
            if let Some(name) = names.iter().find(|n| !existing.contains(n.as_str())) {
                return Err(WaveError::NotATenant(name.clone()));
            }
            let wanted: HashSet<&str> = names.iter().map(String::as_str).collect();
            Ok(tenants.iter().filter(|t| wanted.contains(t.as_str())).cloned().collect())
        }
        Wave::Share(share) if *share > 100 => Err(WaveError::BadShare(u32::from(*share))),
        Wave::Share(share) => Ok(tenants.iter().filter(|t| bucket(t) < *share).cloned().collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fleet(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("t{i:05}")).collect()
    }

    #[test]
    fn a_share_is_stable_nested_and_close_to_its_size() {
        let tenants = fleet(10_000);
        let ten = select(&tenants, &Wave::Share(10)).unwrap();
        let fifty = select(&tenants, &Wave::Share(50)).unwrap();
        assert_eq!(ten, select(&tenants, &Wave::Share(10)).unwrap());
        assert!(ten.iter().all(|t| fifty.contains(t)));
        assert!((900..=1100).contains(&ten.len()), "{}", ten.len());
        assert!((4800..=5200).contains(&fifty.len()), "{}", fifty.len());
        assert_eq!(select(&tenants, &Wave::Share(100)).unwrap().len(), 10_000);
        assert_eq!(select(&tenants, &Wave::Share(0)).unwrap(), Vec::<String>::new());
        assert_eq!(bucket("acme"), bucket("acme"));
    }

    #[test]
    fn named_tenants_must_exist() {
        let tenants = fleet(5);
        let wave = Wave::Named(vec!["t00003".into(), "t00001".into()]);
        assert_eq!(select(&tenants, &wave).unwrap(), ["t00001", "t00003"]);
        assert_eq!(select(&tenants, &Wave::Named(vec!["nope".into()])), Err(WaveError::NotATenant("nope".into())));
        assert_eq!(select(&tenants, &Wave::Share(101)), Err(WaveError::BadShare(101)));
    }
}
