//! `extensions.code` on the errors async-graphql raises itself before any
//! resolver runs: a query that does not parse (`GRAPHQL_PARSE_FAILED`) or
//! does not validate against the schema (`GRAPHQL_VALIDATION_FAILED`), so
//! every error of the API carries a code. An error that has one (a limit's
//! `LIMIT_EXCEEDED`) keeps it.

use std::sync::Arc;

use async_graphql::extensions::{Extension, ExtensionContext, ExtensionFactory, NextParseQuery, NextValidation};
use async_graphql::parser::types::ExecutableDocument;
use async_graphql::{ServerError, ServerResult, ValidationResult, Variables};

/// `extensions.code` of a query that does not parse.
pub(crate) const PARSE_FAILED: &str = "GRAPHQL_PARSE_FAILED";

/// `extensions.code` of a query the schema's validation refuses.
pub(crate) const VALIDATION_FAILED: &str = "GRAPHQL_VALIDATION_FAILED";

/// The schema extension giving parse and validation errors their code.
pub(crate) struct RequestErrorCodes;

impl ExtensionFactory for RequestErrorCodes {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(RequestErrorCodes)
    }
}

#[async_trait::async_trait]
impl Extension for RequestErrorCodes {
    async fn parse_query(
        &self,
        ctx: &ExtensionContext<'_>,
        query: &str,
        variables: &Variables,
        next: NextParseQuery<'_>,
    ) -> ServerResult<ExecutableDocument> {
        next.run(ctx, query, variables).await.map_err(|error| with_code(error, PARSE_FAILED))
    }

    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        next.run(ctx)
            .await
            .map_err(|errors| errors.into_iter().map(|error| with_code(error, VALIDATION_FAILED)).collect())
    }
}

/// `error` with `extensions.code` set to `code`, unless it has one.
fn with_code(mut error: ServerError, code: &'static str) -> ServerError {
    let extensions = error.extensions.get_or_insert_with(Default::default);
    if extensions.get("code").is_none() {
        extensions.set("code", code);
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_is_added_and_an_existing_one_kept() {
        let added = with_code(ServerError::new("unknown field", None), VALIDATION_FAILED);
        let code = added.extensions.as_ref().and_then(|e| e.get("code")).cloned();
        assert_eq!(code, Some(async_graphql::Value::from(VALIDATION_FAILED)));
        let kept = with_code(crate::graphql::limits::limit_error("over".into()), VALIDATION_FAILED);
        let code = kept.extensions.as_ref().and_then(|e| e.get("code")).cloned();
        assert_eq!(code, Some(async_graphql::Value::from(crate::graphql::limits::LIMIT_CODE)));
    }
}
