//! API tokens as the service keeps them: minted here from the system's
//! random source, shown once, stored as a hash only (core's
//! `strata_core::auth::token`), listed and revoked.

use chrono::Utc;
use strata_core::auth::Role;
use strata_core::auth::token::{self, StoredToken};

use crate::error::AppError;
use crate::service::{Caller, Service};

impl Service {
    /// Creates token `name` with `role` for `owner`, valid `days` days
    /// (`None`: until revoked); returns it and its secret, which is not
    /// kept.
    pub(crate) async fn create_token(
        &self,
        name: &str,
        role: Role,
        days: Option<u32>,
        owner: Option<&str>,
        caller: &Caller,
    ) -> Result<(StoredToken, String), AppError> {
        let work = self.create_token_unaudited(name, role, days, owner);
        self.audited(caller, "token create", work, |_| format!("token {name} ({role})")).await
    }

    async fn create_token_unaudited(
        &self,
        name: &str,
        role: Role,
        days: Option<u32>,
        owner: Option<&str>,
    ) -> Result<(StoredToken, String), AppError> {
        token::check_name(name).map_err(|e| AppError::InvalidInput(e.to_string()))?;
        if let Some(owner) = owner {
            token::check_owner(owner).map_err(|e| AppError::InvalidInput(e.to_string()))?;
        }
        if days == Some(0) {
            return Err(AppError::InvalidInput(
                "a token that expires after 0 days would never work: give 1 or more".into(),
            ));
        }
        // Names differ in more than letter case: the rules that compare
        // principals fold case, so `Deployer` beside `deployer` would be
        // one person to them and two tokens to everyone else.
        if let Some(taken) = self.database.tokens().await?.into_iter().find(|t| t.name.eq_ignore_ascii_case(name)) {
            return Err(AppError::InvalidInput(format!(
                "a token named {:?} exists, which differs from {name:?} only in letter case: choose another name",
                taken.name
            )));
        }
        let mut random = [0u8; 32];
        getrandom::fill(&mut random).map_err(|e| AppError::Internal(format!("no random bytes: {e}")))?;
        let secret = token::mint(&random);
        let now = Utc::now().timestamp();
        let stored = StoredToken {
            name: name.to_string(),
            role,
            hash: token::hash(&secret),
            created: now,
            expires: token::expiry(now, days),
            owner: owner.map(str::to_string),
        };
        if !self.database.insert_token(&stored).await? {
            return Err(AppError::InvalidInput(format!(
                "a token named {name:?} exists: revoke it first (strata token revoke {name}) or choose another name"
            )));
        }
        Ok((stored, secret))
    }

    /// Every token, by name (hashes only).
    pub(crate) async fn tokens(&self) -> Result<Vec<StoredToken>, AppError> {
        Ok(self.database.tokens().await?)
    }

    /// Revokes token `name`: it stops working at once here, and within the
    /// token cache's lifetime on other replicas.
    pub(crate) async fn revoke_token(&self, name: &str, caller: &Caller) -> Result<(), AppError> {
        let work = async {
            match self.database.delete_token(name).await? {
                true => Ok(()),
                false => Err(AppError::NotFound(format!("token {name:?}"))),
            }
        };
        self.audited(caller, "token revoke", work, |_| format!("token {name}")).await
    }
}
