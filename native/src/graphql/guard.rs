//! Authorization per GraphQL field: before each root field of a query or
//! mutation resolves, core's `auth::role::required` names the permission
//! it needs and the request's identity must hold it. Checked per resolved
//! field, so an alias, a batch or a fragment meets the same rule as the
//! plain field; a refused field answers `FORBIDDEN` (the handler makes the
//! answer a 403), is written to the audit log, and runs nothing. A mutation
//! the validator refuses (an unknown argument, a wrong type) is written to
//! the log too: every refusal of a change is on record.

use std::sync::{Arc, Mutex};

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextParseQuery, NextResolve, NextValidation, ResolveInfo,
};
use async_graphql::parser::types::{ExecutableDocument, OperationType, Selection};
use async_graphql::{PathSegment, ServerError, ServerResult, ValidationResult, Value, Variables};

use crate::identity::{Identity, forbidden_message};
use crate::service::{RequestId, Service};

/// The extension's factory (one [`FieldGuard`] per request).
pub(crate) struct Guard;

impl ExtensionFactory for Guard {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(FieldGuard::default())
    }
}

/// One request's guard: the first root field of the mutation its document
/// holds, if any, for the log when validation refuses it.
#[derive(Default)]
struct FieldGuard {
    mutation: Mutex<Option<String>>,
}

/// The first root field of the document's first mutation.
fn first_mutation_field(document: &ExecutableDocument) -> Option<String> {
    document.operations.iter().find(|(_, op)| op.node.ty == OperationType::Mutation).and_then(|(_, op)| {
        op.node.selection_set.node.items.iter().find_map(|item| match &item.node {
            Selection::Field(field) => Some(field.node.name.node.to_string()),
            _ => None,
        })
    })
}

#[async_trait::async_trait]
impl Extension for FieldGuard {
    async fn parse_query(
        &self,
        ctx: &ExtensionContext<'_>,
        query: &str,
        variables: &Variables,
        next: NextParseQuery<'_>,
    ) -> ServerResult<ExecutableDocument> {
        let document = next.run(ctx, query, variables).await?;
        if let Ok(mut mutation) = self.mutation.lock() {
            *mutation = first_mutation_field(&document);
        }
        Ok(document)
    }

    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        let result = next.run(ctx).await;
        let field = self.mutation.lock().ok().and_then(|mutation| mutation.clone());
        if let (Err(errors), Some(field)) = (&result, field)
            && let (Some(identity), Some(service)) = (ctx.data_opt::<Identity>(), ctx.data_opt::<Arc<Service>>())
        {
            let request_id = ctx.data_opt::<RequestId>().map(|id| id.0.as_str()).unwrap_or("");
            let first = errors.first().map(|e| e.message.as_str()).unwrap_or("");
            let outcome = format!("refused: GRAPHQL_VALIDATION_FAILED {first}");
            service.audit(&identity.caller(request_id), &field, "", outcome).await;
        }
        result
    }

    async fn resolve(
        &self,
        ctx: &ExtensionContext<'_>,
        info: ResolveInfo<'_>,
        next: NextResolve<'_>,
    ) -> ServerResult<Option<Value>> {
        let given = |name: &str| info.field.get_argument(name).is_some();
        let Some(permission) = strata_core::auth::role::required(info.parent_type, info.name, given) else {
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
        // Every refused field is on record, a query's too (`audit` to a
        // viewer): each is an authenticated identity's, not a flood's.
        if let (Some(identity), Some(service)) = (identity, ctx.data_opt::<Arc<Service>>()) {
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
