//! What one request to `/v2/service` may cost (`graphQLLimits`): operations
//! per batch, fields written, complexity, depth, and bytes of `contents`
//! answered. Everything but the contents budget is refused before any
//! resolver runs; every refusal names the limit and the value.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_graphql::extensions::{Extension, ExtensionContext, ExtensionFactory, NextValidation};
use async_graphql::parser::types::{ExecutableDocument, Selection, SelectionSet};
use async_graphql::{ErrorExtensionValues, ServerError, ValidationResult};
use strata_core::config::GraphQlLimits;
use strata_core::source::SourceMigration;
use tokio::sync::OnceCell;

use crate::error::AppError;

/// `extensions.code` of every refusal by a limit.
pub const LIMIT_CODE: &str = "LIMIT_EXCEEDED";

/// A limit's refusal as a GraphQL error.
pub fn limit_error(message: String) -> ServerError {
    let mut error = ServerError::new(message, None);
    let mut extensions = ErrorExtensionValues::default();
    extensions.set("code", LIMIT_CODE);
    error.extensions = Some(extensions);
    error
}

/// The number of operations in a batch, checked against `batch`.
pub fn check_batch(operations: usize, limits: &GraphQlLimits) -> Result<(), ServerError> {
    if operations > limits.batch {
        return Err(limit_error(format!(
            "a batch of {operations} operations is over the limit of {} (graphQLLimits.batch)",
            limits.batch
        )));
    }
    Ok(())
}

/// Fields written in a query's text, checked against `complexity` before the
/// query is validated: every field costs at least 1, so a text with more
/// fields than the limit cannot pass, and the validator (some of whose rules
/// compare fields pairwise) never sees it. Text that does not parse is left
/// to the executor, which answers with the parser's error.
pub fn check_fields_written(query: &str, limits: &GraphQlLimits) -> Result<(), ServerError> {
    let Ok(document) = async_graphql::parser::parse_query(query) else { return Ok(()) };
    let written = fields_written(&document);
    if written > limits.complexity {
        return Err(limit_error(format!(
            "the query has {written} fields, over the complexity limit of {} (graphQLLimits.complexity)",
            limits.complexity
        )));
    }
    Ok(())
}

fn fields_written(document: &ExecutableDocument) -> usize {
    fn count(set: &SelectionSet) -> usize {
        set.items
            .iter()
            .map(|item| match &item.node {
                Selection::Field(field) => 1 + count(&field.node.selection_set.node),
                Selection::InlineFragment(fragment) => count(&fragment.node.selection_set.node),
                Selection::FragmentSpread(_) => 0,
            })
            .sum()
    }
    let operations: usize = document.operations.iter().map(|(_, op)| count(&op.node.selection_set.node)).sum();
    let fragments: usize = document.fragments.values().map(|f| count(&f.node.selection_set.node)).sum();
    operations + fragments
}

/// The schema extension checking complexity (fragments expanded, storage
/// fields weighted) and depth once the query is validated, before it runs.
pub struct CostLimits(pub GraphQlLimits);

impl ExtensionFactory for CostLimits {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(CostCheck(self.0))
    }
}

struct CostCheck(GraphQlLimits);

#[async_trait::async_trait]
impl Extension for CostCheck {
    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        let result = next.run(ctx).await?;
        if result.complexity > self.0.complexity {
            return Err(vec![limit_error(format!(
                "query complexity {} is over the limit of {} (graphQLLimits.complexity)",
                result.complexity, self.0.complexity
            ))]);
        }
        if result.depth > self.0.depth {
            return Err(vec![limit_error(format!(
                "query depth {} is over the limit of {} (graphQLLimits.depth)",
                result.depth, self.0.depth
            ))]);
        }
        Ok(result)
    }
}

/// What the operations of one HTTP request share: the source migrations,
/// read once however many fields ask for them, and what is left of the
/// request's `contents` budget.
pub struct RequestScope {
    sources: OnceCell<Arc<Vec<SourceMigration>>>,
    contents_left: AtomicUsize,
    contents_limit: usize,
}

impl RequestScope {
    /// A fresh scope with the whole contents budget.
    pub fn new(limits: &GraphQlLimits) -> Self {
        RequestScope {
            sources: OnceCell::new(),
            contents_left: AtomicUsize::new(limits.contents_bytes),
            contents_limit: limits.contents_bytes,
        }
    }

    /// The source migrations, read by `load` on first use.
    pub async fn sources<F, Fut>(&self, load: F) -> Result<Arc<Vec<SourceMigration>>, AppError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Vec<SourceMigration>, AppError>>,
    {
        self.sources.get_or_try_init(|| async { load().await.map(Arc::new) }).await.cloned()
    }

    /// Takes `bytes` of `contents` from the budget; refuses once the request
    /// would answer with more than the limit.
    pub fn charge_contents(&self, bytes: usize) -> Result<(), async_graphql::Error> {
        let taken =
            self.contents_left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| left.checked_sub(bytes));
        if taken.is_err() {
            let mut error = async_graphql::Error::new(format!(
                "the answer would hold more than {} bytes of contents (graphQLLimits.contentsBytes); \
                 ask for fewer migrations' contents at a time",
                self.contents_limit
            ));
            error = async_graphql::ErrorExtensions::extend_with(error, |_, e| e.set("code", LIMIT_CODE));
            return Err(error);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> GraphQlLimits {
        GraphQlLimits { complexity: 5, depth: 3, batch: 2, contents_bytes: 10 }
    }

    #[test]
    fn written_fields_count_aliases_and_fragments_once_each() {
        let query = "query { a: tenants { name } b: tenants { name } ...F } fragment F on Query { tenants { name } }";
        let document = async_graphql::parser::parse_query(query).unwrap();
        assert_eq!(fields_written(&document), 6);
        let error = check_fields_written(query, &limits()).unwrap_err();
        assert_eq!(error.message, "the query has 6 fields, over the complexity limit of 5 (graphQLLimits.complexity)");
        assert!(check_fields_written("{ tenants { name } }", &limits()).is_ok());
        assert!(check_fields_written("{ not closed", &limits()).is_ok(), "left to the executor");
    }

    #[test]
    fn batches_and_contents_are_bounded() {
        assert!(check_batch(2, &limits()).is_ok());
        assert_eq!(
            check_batch(3, &limits()).unwrap_err().message,
            "a batch of 3 operations is over the limit of 2 (graphQLLimits.batch)"
        );
        let scope = RequestScope::new(&limits());
        assert!(scope.charge_contents(6).is_ok());
        assert!(scope.charge_contents(4).is_ok());
        assert!(scope.charge_contents(1).is_err());
    }
}
