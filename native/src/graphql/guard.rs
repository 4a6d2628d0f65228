//! Authorization per GraphQL field: before each root field of a query or
//! mutation resolves, core's `auth::role::required` names the permission
//! it needs and the request's identity must hold it. Checked per resolved
//! field, so an alias, a batch or a fragment meets the same rule as the
//! plain field; a refused field answers `FORBIDDEN` (the handler makes the
//! answer a 403), is written to the audit log, and runs nothing.

use std::sync::Arc;

use async_graphql::extensions::{Extension, ExtensionContext, ExtensionFactory, NextResolve, ResolveInfo};
use async_graphql::{PathSegment, ServerError, ServerResult, Value};

use crate::identity::{Identity, forbidden_message};
use crate::service::{RequestId, Service};

/// The extension's factory (one [`FieldGuard`] per request).
pub(crate) struct Guard;

impl ExtensionFactory for Guard {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(FieldGuard)
    }
}

struct FieldGuard;

#[async_trait::async_trait]
impl Extension for FieldGuard {
    async fn resolve(
        &self,
        ctx: &ExtensionContext<'_>,
        info: ResolveInfo<'_>,
        next: NextResolve<'_>,
    ) -> ServerResult<Option<Value>> {
        let Some(permission) = strata_core::auth::role::required(info.parent_type, info.name) else {
            return next.run(ctx, info).await;
        };
        let identity = ctx.data_opt::<Identity>();
        if let Some(identity) = identity
            && identity.roles.grants(permission)
        {
            return next.run(ctx, info).await;
        }
        let message = match identity {
            Some(identity) => forbidden_message(identity, permission),
            None => "no identity: the request was not authenticated".to_string(),
        };
        if info.parent_type == "Mutation"
            && let (Some(identity), Some(service)) = (identity, ctx.data_opt::<Arc<Service>>())
        {
            let request_id = ctx.data_opt::<RequestId>().map(|id| id.0.as_str()).unwrap_or("");
            let caller = identity.caller(request_id);
            service.audit(&caller, info.name, "", format!("refused: FORBIDDEN {message}")).await;
        }
        let mut error = ServerError::new(message, None);
        error.path = vec![PathSegment::Field(info.alias.unwrap_or(info.name).to_string())];
        let mut extensions = async_graphql::ErrorExtensionValues::default();
        extensions.set("code", "FORBIDDEN");
        error.extensions = Some(extensions);
        Err(error)
    }
}
