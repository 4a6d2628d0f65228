//! Desired state's wire types (`Destructive`, `DesiredApply`,
//! `DesiredGroupLeft`; added to the spec's schema): what
//! `applyDesiredSchema` is asked and answers — one version per group of
//! tenants sharing a plan, and the groups it left as they are.

use async_graphql::{Enum, SimpleObject};
use strata_core::migrate::desired::Destructive;

use crate::graphql::types::CreateResultsDto;

/// What a group whose plan loses data does (`Destructive`, added).
#[derive(Enum, Copy, Clone, Eq, PartialEq, Default, serde::Serialize)]
#[graphql(name = "Destructive", rename_items = "PascalCase")]
pub(crate) enum DestructiveDto {
    /// Nothing runs while such a group exists (the default).
    #[default]
    Refuse,
    /// Such groups run too.
    Allow,
    /// Such groups are left; the others run.
    Skip,
}

impl From<DestructiveDto> for Destructive {
    fn from(value: DestructiveDto) -> Self {
        match value {
            DestructiveDto::Refuse => Destructive::Refuse,
            DestructiveDto::Allow => Destructive::Allow,
            DestructiveDto::Skip => Destructive::Skip,
        }
    }
}

/// What `applyDesiredSchema` did (`DesiredApply`, added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "DesiredApply")]
pub(crate) struct DesiredApplyDto {
    /// One version per group brought to the desired schema, largest group
    /// first; its plan recorded as `desired/<plan>.sql`.
    pub(crate) versions: Vec<CreateResultsDto>,
    /// The groups left as they are, with why.
    pub(crate) left: Vec<DesiredGroupLeftDto>,
}

/// A group of tenants `applyDesiredSchema` left as they are
/// (`DesiredGroupLeft`, added).
#[derive(SimpleObject, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[graphql(name = "DesiredGroupLeft")]
pub(crate) struct DesiredGroupLeftDto {
    /// Its tenants.
    pub(crate) tenants: Vec<String>,
    /// Why: its plan loses data (`Skip`), or a difference no statement
    /// reaches.
    pub(crate) reason: String,
}
