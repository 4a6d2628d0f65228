//! What one request to `/v2/service` may cost (`graphQLLimits`): operations
//! per batch, fields written, complexity, depth, and bytes of `contents`
//! answered. Everything but the contents budget is refused before any
//! resolver runs; every refusal names the limit and the value.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_graphql::extensions::{Extension, ExtensionContext, ExtensionFactory, NextValidation};
use async_graphql::parser::types::OperationType;
use async_graphql::{ErrorExtensionValues, ServerError, ValidationResult};
use strata_core::migrate::config::GraphQlLimits;
use strata_core::migrate::source::SourceMigration;
use tokio::sync::{Notify, OnceCell, OwnedSemaphorePermit, Semaphore};

use crate::error::AppError;

/// `extensions.code` of every refusal by a limit.
pub(crate) const LIMIT_CODE: &str = "LIMIT_EXCEEDED";

/// A limit's refusal as a GraphQL error.
pub(crate) fn limit_error(message: String) -> ServerError {
    let mut error = ServerError::new(message, None);
    let mut extensions = ErrorExtensionValues::default();
    extensions.set("code", LIMIT_CODE);
    error.extensions = Some(extensions);
    error
}

/// The slots a request must hold before its operations run
/// ([`check_request`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SlotsNeeded {
    /// An operation selects `contents` ([`RequestScope::take_slot`]).
    pub(crate) contents: bool,
    /// An operation is a query that may read the whole fleet
    /// ([`RequestScope::take_query_slot`]).
    pub(crate) query: bool,
}

/// Every limit a request's operations (one, or a batch's) meet before
/// anything runs, each operation's in turn, then the request's sums (root
/// fields, fields that read the whole fleet); the first refusal ends the
/// check. Returns the slots the request then takes.
pub(crate) fn check_request(
    operations: &[&async_graphql::Request],
    fleet: Fleet,
    limits: &GraphQlLimits,
) -> Result<SlotsNeeded, ServerError> {
    check_batch(operations.len(), limits)?;
    let (mut root_fields, mut fleet_fields, mut introspection, mut contents) = (0usize, 0usize, 0usize, false);
    for request in operations {
        contents |= check_fields_written(&request.query, limits)?;
        let operation = Operation { name: request.operation_name.as_deref(), variables: &request.variables, fleet };
        let roots = check_expanded_cost(&request.query, operation, limits)?;
        root_fields = root_fields.saturating_add(roots.count);
        fleet_fields = fleet_fields.saturating_add(roots.fleet);
        introspection = introspection.saturating_add(roots.introspection);
    }
    check_root_fields(root_fields, limits)?;
    check_introspection_fields(introspection, limits)?;
    check_fleet_fields(fleet_fields, limits)?;
    Ok(SlotsNeeded { contents, query: fleet_fields > 0 })
}

/// The number of operations in a batch, checked against `batch`.
pub(crate) fn check_batch(operations: usize, limits: &GraphQlLimits) -> Result<(), ServerError> {
    if operations > limits.batch {
        return Err(limit_error(format!(
            "a batch of {operations} operations is over the limit of {} (graphQLLimits.batch)",
            limits.batch
        )));
    }
    Ok(())
}

/// Fields written in a query's text, checked against `complexity` before the
/// query is parsed: every field costs at least 1, so a text with more fields
/// than the limit cannot pass, and neither the parser (whose syntax tree of
/// a 1 MiB text of aliases takes tens of megabytes) nor the validator (some
/// of whose rules compare fields pairwise) ever sees it.
///
/// Returns whether the text selects a `contents` field (the caller then
/// takes a contents slot before running it).
///
/// A named fragment spread counts 1 too: a fragment selects at least one
/// field, so each spread adds at least one once expanded, and a text of
/// 200,000 spreads of one fragment is refused here, unparsed.
pub(crate) fn check_fields_written(query: &str, limits: &GraphQlLimits) -> Result<bool, ServerError> {
    let Written { fields: written, spreads, contents, tokens } = fields_written(query);
    if tokens > limits.tokens {
        return Err(limit_error(format!(
            "the query has {tokens} tokens, over the limit of {} (graphQLLimits.tokens)",
            limits.tokens
        )));
    }
    if written.saturating_add(spreads) > limits.complexity {
        let what = match spreads {
            0 => format!("{written} fields"),
            _ => format!("{written} fields and {spreads} fragment spreads"),
        };
        return Err(limit_error(format!(
            "the query has {what}, over the complexity limit of {} (graphQLLimits.complexity)",
            limits.complexity
        )));
    }
    Ok(contents)
}

/// How deep fragment spreads may nest inside each other before the cost
/// walk refuses the query (the walk recurses once per level).
const SPREAD_NESTING: usize = 64;

/// Each operation's cost with its fragments expanded, checked against
/// `complexity` and `depth` in time linear in the document: every
/// fragment's cost and depth is computed once and each spread counts it
/// again (no field merging). A query built to expand exponentially (nested
/// fragments each spreading the next twice) is refused here in
/// microseconds, before async-graphql's validator expands it. A text that
/// does not parse passes (the parser refuses it afterwards, with its
/// message).
///
/// Returns the root fields of the operation that runs (`operation.name`,
/// else every operation of the text), for [`check_root_fields`], and those
/// of its queries that may read the whole fleet, for [`check_fleet_fields`]
/// (the request then takes a query slot).
pub(crate) fn check_expanded_cost(
    query: &str,
    operation: Operation<'_>,
    limits: &GraphQlLimits,
) -> Result<RootFields, ServerError> {
    let Ok(document) = async_graphql::parser::parse_query(query) else { return Ok(RootFields::default()) };
    let mut walk = CostWalk { document: &document, known: HashMap::new(), visiting: Vec::new() };
    let mut roots = RootWalk { document: &document, operation, known: HashMap::new(), depth: 0 };
    let operation = operation.name;
    let mut root_fields = RootFields::default();
    for (name, definition) in document.operations.iter() {
        let cost = walk.set(&definition.node.selection_set.node).map_err(limit_error)?;
        if cost.fields > limits.complexity {
            return Err(limit_error(format!(
                "query complexity {} is over the limit of {} (graphQLLimits.complexity), fragments expanded",
                cost.fields, limits.complexity
            )));
        }
        if cost.depth > limits.depth {
            return Err(limit_error(format!(
                "query depth {} is over the limit of {} (graphQLLimits.depth)",
                cost.depth, limits.depth
            )));
        }
        if operation.is_none() || name.map(|name| name.as_str()) == operation {
            let found = roots.set(&definition.node.selection_set.node);
            root_fields.count = root_fields.count.saturating_add(found.fields);
            root_fields.introspection = root_fields.introspection.saturating_add(found.introspection);
            if definition.node.ty == OperationType::Query {
                root_fields.fleet = root_fields.fleet.saturating_add(found.fleet);
            }
        }
    }
    Ok(root_fields)
}

/// What the fleet is, as far as the cost of a field goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fleet {
    /// One database server.
    OneServer,
    /// Several (`shards:`): `shards` and `tenantCount` read every shard's
    /// tenant list ([`LISTED_ON_SHARDS`]).
    Sharded,
}

/// The operation of a request that [`check_expanded_cost`] weighs: its
/// name (none: every operation of the text), the request's variables (a
/// page's size may be one), the fleet it runs on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Operation<'a> {
    /// `operationName`.
    pub(crate) name: Option<&'a str>,
    /// The request's variables.
    pub(crate) variables: &'a async_graphql::Variables,
    /// One server or several.
    pub(crate) fleet: Fleet,
}

/// The root fields of the operation a request runs ([`check_expanded_cost`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RootFields {
    /// How many (introspection's apart).
    pub(crate) count: usize,
    /// How many of them, in its queries, may read the whole fleet: not
    /// light, nor a page ([`LIGHT_ROOT_FIELDS`], [`PAGED_ROOT_FIELDS`]).
    pub(crate) fleet: usize,
    /// Introspection's `__schema` and `__type` among them (not counted
    /// above), for [`check_introspection_fields`].
    pub(crate) introspection: usize,
}

/// What [`RootWalk`] counts in a selection set.
#[derive(Debug, Clone, Copy, Default)]
struct Roots {
    fields: usize,
    fleet: usize,
    introspection: usize,
}

impl Roots {
    fn add(self, other: Roots) -> Roots {
        Roots {
            fields: self.fields.saturating_add(other.fields),
            fleet: self.fleet.saturating_add(other.fleet),
            introspection: self.introspection.saturating_add(other.introspection),
        }
    }
}

/// The introspection root fields of a request's operations (each
/// [`check_expanded_cost`] counted), checked against
/// `introspectionFields`: a client reads the schema once; 400 aliases of
/// `__schema { types { fields { … } } }` in a batch answered 33 MB for
/// 6.5 s of processor time, within every other limit.
pub(crate) fn check_introspection_fields(fields: usize, limits: &GraphQlLimits) -> Result<(), ServerError> {
    if fields > limits.introspection_fields {
        return Err(limit_error(format!(
            "the request has {fields} introspection fields (__schema, __type), over the limit of {} \
             (graphQLLimits.introspectionFields): read the schema once",
            limits.introspection_fields
        )));
    }
    Ok(())
}

/// The root fields of a request's operations (each [`check_expanded_cost`]
/// counted), checked against `rootFields`: each reads the fleet's books or
/// changes them on its own, so their number bounds the request's work
/// whatever the fleet's size (76 aliases of `backfills` over 10,000
/// tenants took 7.8 s and 269 MB, within the complexity limit).
pub(crate) fn check_root_fields(fields: usize, limits: &GraphQlLimits) -> Result<(), ServerError> {
    if fields > limits.root_fields {
        return Err(limit_error(format!(
            "the request has {fields} root fields, over the limit of {} (graphQLLimits.rootFields): each reads or \
             changes the books on its own; ask for fewer at a time",
            limits.root_fields
        )));
    }
    Ok(())
}

/// The root fields of a request's queries that may read the whole fleet
/// (each [`check_expanded_cost`] counted), checked against `fleetFields`:
/// each `drift`, `plan` or unpaged list reads every tenant or every row.
pub(crate) fn check_fleet_fields(fields: usize, limits: &GraphQlLimits) -> Result<(), ServerError> {
    if fields > limits.fleet_fields {
        return Err(limit_error(format!(
            "the request has {fields} fields that read the whole fleet, over the limit of {} \
             (graphQLLimits.fleetFields): ask for fewer at a time, or for pages (`first`)",
            limits.fleet_fields
        )));
    }
    Ok(())
}

/// Root fields of a query that read little whatever the fleet's size: the
/// caller's identity, counts, the shards and rollouts, the source files, one
/// recorded migration.
const LIGHT_ROOT_FIELDS: [&str; 7] =
    ["identity", "tenantCount", "versionCount", "shards", "rollouts", "sourceMigrations", "dbMigration"];

/// Light root fields that read every shard's tenant list on a sharded
/// fleet (the shards' directory is built from the lists; the count is
/// theirs): there they read the whole fleet.
const LISTED_ON_SHARDS: [&str; 2] = ["shards", "tenantCount"];

/// Root fields that read little when asked for a page (`first` or `last`
/// of at most [`LIGHT_PAGE`]): the database is asked for the page alone.
/// (`quarantine` is not one: it reads the whole list, then takes the page;
/// nor is `versions(file:)`, which reads every version of the file.)
const PAGED_ROOT_FIELDS: [&str; 2] = ["tenants", "versions"];

/// The largest page that reads little, and `strata tenants --server`'s
/// page (`cli/remote.rs` asks for this size, so its pages stay light). A
/// larger one, or one whose size the request does not say (a variable
/// without a value), reads like the whole list.
pub(crate) const LIGHT_PAGE: i64 = 5_000;

/// Whether a field asks for a page (`first` or `last`) of at most
/// [`LIGHT_PAGE`] items, as a literal or in a variable the request gives.
/// A `first` or `last` of 2^31 - 1 is no page.
fn light_page(field: &async_graphql::parser::types::Field, variables: &async_graphql::Variables) -> bool {
    let argument = |wanted: &str| field.get_argument(wanted).map(|value| &value.node);
    let size = argument("first").or_else(|| argument("last")).and_then(|value| {
        match value.clone().into_const_with(|name| variables.get(&name).cloned().ok_or(())) {
            Ok(async_graphql::Value::Number(number)) => number.as_i64(),
            _ => None,
        }
    });
    matches!(size, Some(size) if size <= LIGHT_PAGE)
}

/// The root fields of a selection set, fragments expanded (but
/// introspection's `__schema`, `__type` and `__typename`, which read no
/// storage), and how many of them may read the whole fleet. The cost walk
/// ran first, so no fragment spreads itself.
struct RootWalk<'a> {
    document: &'a async_graphql::parser::types::ExecutableDocument,
    operation: Operation<'a>,
    known: HashMap<&'a str, Roots>,
    depth: usize,
}

impl<'a> RootWalk<'a> {
    /// The root fields of `set`, those of them that may read the fleet,
    /// and the introspection ones.
    fn set(&mut self, set: &'a async_graphql::parser::types::SelectionSet) -> Roots {
        use async_graphql::parser::types::Selection;
        let mut total = Roots::default();
        for item in &set.items {
            let more = match &item.node {
                Selection::Field(field) => match field.node.name.node.as_str() {
                    "__schema" | "__type" => Roots { introspection: 1, ..Roots::default() },
                    name if name.starts_with("__") => Roots::default(),
                    _ => Roots { fields: 1, fleet: usize::from(self.reads_fleet(&field.node)), introspection: 0 },
                },
                Selection::InlineFragment(fragment) => self.set(&fragment.node.selection_set.node),
                Selection::FragmentSpread(spread) => self.fragment(spread.node.fragment_name.node.as_str()),
            };
            total = total.add(more);
        }
        total
    }

    /// Whether a root field may read the whole fleet: not light, nor a
    /// light page of a list ([`LIGHT_ROOT_FIELDS`], [`PAGED_ROOT_FIELDS`],
    /// [`light_page`]) that asks for no version's every row
    /// ([`RootWalk::reads_every_row`]).
    fn reads_fleet(&self, field: &'a async_graphql::parser::types::Field) -> bool {
        let name = field.name.node.as_str();
        if LIGHT_ROOT_FIELDS.contains(&name) {
            return self.operation.fleet == Fleet::Sharded && LISTED_ON_SHARDS.contains(&name);
        }
        !PAGED_ROOT_FIELDS.contains(&name)
            || field.get_argument("file").is_some()
            || !light_page(field, self.operation.variables)
            || self.reads_every_row(&field.selection_set.node, 0)
    }

    /// Whether a selection asks for a version's `dbMigrations` without a
    /// light page: every row the version recorded (200,000 for a version
    /// over 10,000 tenants), for every version of the page.
    fn reads_every_row(&self, set: &'a async_graphql::parser::types::SelectionSet, depth: usize) -> bool {
        use async_graphql::parser::types::Selection;
        if depth > SPREAD_NESTING {
            return true;
        }
        set.items.iter().any(|item| match &item.node {
            Selection::Field(field) => {
                field.node.name.node.as_str() == "dbMigrations" && !light_page(&field.node, self.operation.variables)
            }
            Selection::InlineFragment(fragment) => self.reads_every_row(&fragment.node.selection_set.node, depth + 1),
            Selection::FragmentSpread(spread) => self
                .document
                .fragments
                .get(spread.node.fragment_name.node.as_str())
                .is_some_and(|definition| self.reads_every_row(&definition.node.selection_set.node, depth + 1)),
        })
    }

    fn fragment(&mut self, name: &'a str) -> Roots {
        if let Some(fields) = self.known.get(name) {
            return *fields;
        }
        let Some(definition) = self.document.fragments.get(name) else { return Roots::default() };
        if self.depth >= SPREAD_NESTING {
            return Roots::default();
        }
        self.depth += 1;
        let fields = self.set(&definition.node.selection_set.node);
        self.depth -= 1;
        self.known.insert(name, fields);
        fields
    }
}

/// Fields and depth of a selection set, fragments expanded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Cost {
    fields: usize,
    depth: usize,
}

/// The cost walk over one document, each fragment's cost kept once known.
struct CostWalk<'a> {
    document: &'a async_graphql::parser::types::ExecutableDocument,
    known: HashMap<&'a str, Cost>,
    /// The fragments being walked, outermost first.
    visiting: Vec<&'a str>,
}

impl<'a> CostWalk<'a> {
    fn set(&mut self, set: &'a async_graphql::parser::types::SelectionSet) -> Result<Cost, String> {
        use async_graphql::parser::types::Selection;
        let mut total = Cost::default();
        for item in &set.items {
            let cost = match &item.node {
                Selection::Field(field) => {
                    let inner = self.set(&field.node.selection_set.node)?;
                    Cost { fields: inner.fields.saturating_add(1), depth: inner.depth + 1 }
                }
                Selection::InlineFragment(fragment) => self.set(&fragment.node.selection_set.node)?,
                Selection::FragmentSpread(spread) => self.fragment(spread.node.fragment_name.node.as_str())?,
            };
            total = Cost { fields: total.fields.saturating_add(cost.fields), depth: total.depth.max(cost.depth) };
        }
        Ok(total)
    }

    fn fragment(&mut self, name: &'a str) -> Result<Cost, String> {
        if let Some(cost) = self.known.get(name) {
            return Ok(*cost);
        }
        let Some(definition) = self.document.fragments.get(name) else { return Ok(Cost::default()) };
        if self.visiting.contains(&name) {
            return Err(format!("fragment {name} spreads itself"));
        }
        if self.visiting.len() >= SPREAD_NESTING {
            return Err(format!("fragment spreads nest more than {SPREAD_NESTING} deep"));
        }
        self.visiting.push(name);
        let cost = self.set(&definition.node.selection_set.node);
        self.visiting.pop();
        let cost = cost?;
        self.known.insert(name, cost);
        Ok(cost)
    }
}

/// What [`fields_written`] found.
#[derive(Debug, PartialEq, Eq)]
struct Written {
    /// Fields selected.
    fields: usize,
    /// Named fragment spreads (`...Name`, not `... on Type`).
    spreads: usize,
    /// Whether one of them is `contents`.
    contents: bool,
    /// Lexical tokens: names, punctuators, numbers, strings.
    tokens: usize,
}

/// Counts the fields of a GraphQL document in one pass over its tokens,
/// without building a syntax tree: a name in a selection set is a field
/// unless it is an alias (followed by `:`), a fragment name or type
/// condition (after `...`, `on`, `fragment`), a directive (after `@`), or
/// inside arguments (parentheses) or an operation's header. Strings, block
/// strings and comments are skipped. Exact for valid documents; for invalid
/// ones any count will do (the parser refuses them afterwards).
fn fields_written(text: &str) -> Written {
    let bytes = text.as_bytes();
    let (mut i, mut fields, mut spreads, mut contents, mut tokens) = (0usize, 0usize, 0usize, false, 0usize);
    let (mut braces, mut parens) = (0usize, 0usize);
    // The previous significant token: a name, or a punctuator byte.
    let mut previous: Option<&[u8]> = None;
    let mut skip_next_name = false;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'#' => {
                i = after_comment(bytes, i);
                continue;
            }
            b'"' => {
                i = after_string(bytes, i);
                previous = Some(b"\"");
                tokens += 1;
                continue;
            }
            b'-' | b'0'..=b'9' => {
                while i < bytes.len() && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    i += 1;
                }
                previous = Some(b"");
                tokens += 1;
                continue;
            }
            b'{' if parens == 0 => braces += 1,
            b'}' if parens == 0 => braces = braces.saturating_sub(1),
            b'(' => parens += 1,
            b')' => parens = parens.saturating_sub(1),
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                let name = &bytes[start..i];
                tokens += 1;
                if parens == 0 && braces > 0 {
                    let after_colon = colon_follows(bytes, i);
                    if previous == Some(b"...") && name != b"on" {
                        spreads += 1;
                    }
                    let fragment_part = matches!(previous, Some(b"...") | Some(b"on") | Some(b"@")) || skip_next_name;
                    skip_next_name = name == b"fragment";
                    if !after_colon && !fragment_part && name != b"on" && name != b"fragment" {
                        fields += 1;
                        contents |= name == b"contents";
                    }
                }
                previous = Some(name);
                continue;
            }
            b'.' if bytes[i..].starts_with(b"...") => {
                previous = Some(b"...");
                tokens += 1;
                i += 3;
                continue;
            }
            _ => {}
        }
        if !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b',') {
            tokens += 1;
            previous = Some(match b {
                b'@' => b"@",
                _ => b"",
            });
        }
        i += 1;
    }
    Written { fields, spreads, contents, tokens }
}

/// Where a comment starting at `i` (`#`) ends: its line break.
fn after_comment(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && bytes[i] != b'\n' && bytes[i] != b'\r' {
        i += 1;
    }
    i
}

/// Just past a string starting at `i`: a block string (`"""`, escaped
/// `\"""` inside) or a one-line string (backslash escapes).
fn after_string(bytes: &[u8], mut i: usize) -> usize {
    if bytes[i..].starts_with(b"\"\"\"") {
        i += 3;
        while i < bytes.len() && !bytes[i..].starts_with(b"\"\"\"") {
            i += if bytes[i..].starts_with(b"\\\"\"\"") { 4 } else { 1 };
        }
        return i + 3;
    }
    i += 1;
    while i < bytes.len() && bytes[i] != b'"' && bytes[i] != b'\n' {
        i += if bytes[i] == b'\\' { 2 } else { 1 };
    }
    i + 1
}

/// Whether the next significant character from `i` is `:` (the name
/// before it is an alias).
fn colon_follows(bytes: &[u8], mut i: usize) -> bool {
    while i < bytes.len() && matches!(bytes[i], b' ' | b'\t' | b'\n' | b'\r' | b',') {
        i += 1;
    }
    bytes.get(i) == Some(&b':')
}

/// The schema extension checking complexity (fragments expanded, storage
/// fields weighted) and depth once the query is validated, before it runs.
pub(crate) struct CostLimits(pub(crate) GraphQlLimits);

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

/// How many requests may build answers holding `contents` at once, process
/// wide; the others wait for a slot (asynchronously, costing nothing). With
/// the per-request budget this bounds the memory all answers with contents
/// take together: about `CONTENTS_SLOTS × contentsBytes × 2` (the answer's
/// values and its serialised body), whatever the number of clients.
pub(crate) const CONTENTS_SLOTS: usize = 4;

/// How many requests holding a query that may read the whole fleet (an
/// unpaged list, `fleet`, `plan`, `drift`, `backfills`… — every root field
/// but the light ones and pages) may run at once, process wide; the others
/// wait for a slot (asynchronously, in order), light queries and mutations
/// never. A query's root fields each read the books at once: without the slots, clients
/// at once asked for more connections than the service's pool holds (the
/// pool a running version's units take theirs from), readers failed after
/// its 5 s wait (`POOL_EXHAUSTED`), and their answers, built at once, grew
/// the service's memory with the number of clients. With them a burst of
/// reads holds at most `QUERY_SLOTS × rootFields` connections and answers.
pub(crate) const QUERY_SLOTS: usize = 2;

/// The process's slots for requests whose answers are large or many at
/// once: those holding `contents`, and those holding a query that may read
/// the whole fleet.
#[derive(Clone)]
pub(crate) struct AnswerSlots {
    contents: Arc<Semaphore>,
    queries: Arc<Semaphore>,
}

impl AnswerSlots {
    /// [`CONTENTS_SLOTS`] and [`QUERY_SLOTS`] free slots.
    pub(crate) fn new() -> Self {
        AnswerSlots {
            contents: Arc::new(Semaphore::new(CONTENTS_SLOTS)),
            queries: Arc::new(Semaphore::new(QUERY_SLOTS)),
        }
    }
}

/// What the operations of one HTTP request share: the source migrations,
/// read once however many fields ask for them, what is left of the
/// request's `contents` budget, and — from its first `contents` field until
/// the scope is dropped after the answer is serialised — one of the
/// process's contents slots.
pub(crate) struct RequestScope {
    /// When the request arrived, among reads' starts
    /// (`service::shared_read::ticket`).
    arrived: u64,
    sources: OnceCell<Arc<Vec<SourceMigration>>>,
    contents_left: AtomicUsize,
    contents_limit: usize,
    slots: AnswerSlots,
    slot: OnceCell<OwnedSemaphorePermit>,
    query_slot: OnceCell<OwnedSemaphorePermit>,
    exceeded: Notify,
}

impl RequestScope {
    /// A fresh scope with the whole contents budget.
    pub(crate) fn new(limits: &GraphQlLimits, slots: &AnswerSlots) -> Self {
        RequestScope {
            arrived: crate::service::shared_read::ticket(),
            sources: OnceCell::new(),
            contents_left: AtomicUsize::new(limits.contents_bytes),
            contents_limit: limits.contents_bytes,
            slots: slots.clone(),
            slot: OnceCell::new(),
            query_slot: OnceCell::new(),
            exceeded: Notify::new(),
        }
    }

    /// When the request arrived (`service::shared_read::ticket`): a read
    /// of the whole fleet that started later may answer it.
    pub(crate) fn arrived(&self) -> u64 {
        self.arrived
    }

    /// Resolves once the request has gone over its contents budget: the
    /// handler then stops executing it (every resolver still running is
    /// dropped) and answers with [`RequestScope::exceeded_error`] alone, so
    /// a request over the budget costs no more than the budget.
    pub(crate) async fn exceeded(&self) {
        self.exceeded.notified().await;
    }

    /// The one error of a request that went over its contents budget.
    pub(crate) fn exceeded_error(&self) -> ServerError {
        limit_error(format!(
            "the answer would hold more than {} bytes of contents (graphQLLimits.contentsBytes); \
             ask for fewer migrations' contents at a time",
            self.contents_limit
        ))
    }

    /// The source migrations, read by `load` on first use.
    pub(crate) async fn sources<F, Fut>(&self, load: F) -> Result<Arc<Vec<SourceMigration>>, AppError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Vec<SourceMigration>, AppError>>,
    {
        self.sources.get_or_try_init(|| async { load().await.map(Arc::new) }).await.cloned()
    }

    /// Takes one of the process's contents slots for this request (waits
    /// for one; a no-op once taken). The handler takes it before running a
    /// request whose text selects `contents`, so requests waiting for a slot
    /// hold nothing but their text.
    pub(crate) async fn take_slot(&self) -> Result<(), async_graphql::Error> {
        hold(&self.slot, &self.slots.contents).await
    }

    /// Takes one of the process's query slots for this request (waits for
    /// one; a no-op once taken), held until the scope is dropped after the
    /// answer is serialised. The handler takes it before running a request
    /// holding a query that may read the whole fleet, and before the
    /// contents slot: no request holding a contents slot ever waits for a
    /// query slot.
    pub(crate) async fn take_query_slot(&self) -> Result<(), async_graphql::Error> {
        hold(&self.query_slot, &self.slots.queries).await
    }

    /// Takes `bytes` of `contents` from the budget, waiting for a contents
    /// slot first. Once the request would answer with more than the limit it
    /// signals [`RequestScope::exceeded`] and never returns.
    pub(crate) async fn charge_contents(&self, bytes: usize) -> Result<(), async_graphql::Error> {
        self.take_slot().await?;
        let taken =
            self.contents_left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| left.checked_sub(bytes));
        if taken.is_err() {
            // Stored as a permit when nobody waits yet: the handler sees it,
            // drops the execution and answers with the one error. This
            // field never completes, so neither does the execution, however
            // much of it is ready in the same poll: an over-budget request
            // builds no more values, and no error per remaining field.
            self.exceeded.notify_one();
            std::future::pending::<()>().await;
        }
        Ok(())
    }
}

/// A permit of `slots` kept in `held` (waiting for one when none is kept
/// yet).
async fn hold(held: &OnceCell<OwnedSemaphorePermit>, slots: &Arc<Semaphore>) -> Result<(), async_graphql::Error> {
    held.get_or_try_init(|| Arc::clone(slots).acquire_owned())
        .await
        .map(|_| ())
        .map_err(|_| async_graphql::Error::new("the service is stopping"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> GraphQlLimits {
        GraphQlLimits {
            complexity: 5,
            depth: 3,
            batch: 2,
            contents_bytes: 10,
            root_fields: 3,
            fleet_fields: 2,
            tokens: 60,
            introspection_fields: 1,
        }
    }

    #[test]
    fn a_text_of_too_many_tokens_is_refused_before_it_is_parsed() {
        // One field, 300,000 directives: the validator answered an error for
        // each (38.7 MB, 3.6 s of processor time).
        let directives = format!("{{ identity {} {{ actor }} }}", "@a ".repeat(300_000));
        let error = check_fields_written(&directives, &limits()).unwrap_err();
        assert_eq!(error.message, "the query has 600006 tokens, over the limit of 60 (graphQLLimits.tokens)");
        let numbers = "{ tenants(first: -12.5e3, last: 100000) { name } }";
        assert_eq!(fields_written(numbers).tokens, 14);
        let strings = "{ sourceMigration(file: \"a b c d e f\") { file } } # one two three";
        assert_eq!(fields_written(strings).tokens, 11);
        assert_eq!(GraphQlLimits::default().tokens, 10_000);
    }

    #[test]
    fn introspection_fields_are_counted_and_limited_per_request() {
        let schema = "{ a: __schema { types { name } } b: __schema { description } }";
        let error = check_request(&[&async_graphql::Request::new(schema)], Fleet::OneServer, &limits()).unwrap_err();
        assert_eq!(
            error.message,
            "the request has 2 introspection fields (__schema, __type), over the limit of 1 \
             (graphQLLimits.introspectionFields): read the schema once"
        );
        let one = async_graphql::Request::new("{ __schema { types { name } } __typename }");
        assert!(check_request(&[&one], Fleet::OneServer, &limits()).is_ok());
        let first = async_graphql::Request::new("{ __type(name: \"Query\") { name } }");
        assert!(check_request(&[&first, &one], Fleet::OneServer, &limits()).is_err(), "summed over a batch");
    }

    #[test]
    fn written_fields_count_aliases_and_fragments_once_each() {
        let query = "query { a: tenants { name } b: tenants { name } ...F } fragment F on Query { tenants { name } }";
        assert_eq!(fields_written(query), Written { fields: 6, spreads: 1, contents: false, tokens: 27 });
        let error = check_fields_written(query, &limits()).unwrap_err();
        assert_eq!(
            error.message,
            "the query has 6 fields and 1 fragment spreads, over the complexity limit of 5 (graphQLLimits.complexity)"
        );
        // Spreads of one small fragment, many times: refused unparsed.
        let spreads = format!("{{ {} }} fragment F on Query {{ versions {{ id }} }}", "...F ".repeat(200_000));
        assert_eq!(fields_written(&spreads), Written { fields: 2, spreads: 200_000, contents: false, tokens: 400_012 });
        assert!(check_fields_written(&spreads, &limits()).is_err());
        // Inline fragments are no spreads.
        assert_eq!(fields_written("{ ... on Query { tenants { name } } }").spreads, 0);
        assert_eq!(check_fields_written("{ tenants { name } }", &limits()), Ok(false));
        assert_eq!(check_fields_written("{ a: sourceMigrations { contents } }", &limits()), Ok(true));
        assert_eq!(
            check_fields_written("{ sourceMigrations(filters: {name: \"contents\"}) { file } }", &limits()),
            Ok(false)
        );
        for (text, expected) in [
            ("{ tenants { name } }", 2),
            ("query Q($f: SourceMigrationFilters = {name: \"a{b\"}) { sourceMigrations(filters: $f) { file } }", 2),
            ("mutation { createVersion(input: {versionName: \"x\", dryRun: true}) { version { id } } }", 3),
            ("{ a: tenants @include(if: true) { name } # tenants { name }\n }", 2),
            ("{ ... on Query { tenants { name } } ...F } fragment F on Query { versions { id } }", 4),
            ("{ __typename s: sourceMigration(file: \"\"\" {x} \"\"\") { contents } }", 3),
            ("{ not closed", 2),
        ] {
            assert_eq!(fields_written(text).fields, expected, "{text}");
        }
    }

    #[test]
    fn the_count_agrees_with_the_parser_on_valid_documents() {
        fn parsed(query: &str) -> usize {
            use async_graphql::parser::types::{Selection, SelectionSet};
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
            let document = async_graphql::parser::parse_query(query).unwrap();
            document.operations.iter().map(|(_, op)| count(&op.node.selection_set.node)).sum::<usize>()
                + document.fragments.values().map(|f| count(&f.node.selection_set.node)).sum::<usize>()
        }
        for query in [
            "query IntrospectionQuery { __schema { queryType { name } types { ...FullType } } } \
             fragment FullType on __Type { kind name fields(includeDeprecated: true) { name args { ...InputValue } } } \
             fragment InputValue on __InputValue { name type { kind name ofType { kind name } } defaultValue }",
            "query A { x: versions { id name created dbMigrations { file schema } } } query B { tenants { name } }",
            "{ sourceMigrations(filters: {migrationType: TenantMigration, sourceDir: \"t\"}) { name, file, checkSum } }",
        ] {
            assert_eq!(fields_written(query).fields, parsed(query), "{query}");
        }
    }

    #[test]
    fn root_fields_count_every_alias_and_spread_of_the_operation_that_runs() {
        let big = GraphQlLimits { complexity: 1000, depth: 32, ..limits() };
        let none = async_graphql::Variables::default();
        fn on<'a>(name: Option<&'a str>, variables: &'a async_graphql::Variables, fleet: Fleet) -> Operation<'a> {
            Operation { name, variables, fleet }
        }
        let roots = |query: &str, name: Option<&str>| {
            check_expanded_cost(query, on(name, &none, Fleet::OneServer), &big).unwrap().count
        };
        assert_eq!(roots("{ a: tenants { name } b: tenants { name } versions { id } }", None), 3);
        // Introspection reads no storage.
        assert_eq!(roots("{ __typename __schema { queryType { name } } tenants { name } }", None), 1);
        // Inline fragments and spreads at the root count their fields, each spread again.
        let spread = "{ ... on Query { a: versions { id } } ...F ...F } fragment F on Query { b: tenants { name } c: quarantine { tenant } }";
        assert_eq!(roots(spread, None), 5);
        // Nested fragments: a root field's selections are not root fields.
        let nested = "{ ...A } fragment A on Query { ...B versions { ...V } } fragment B on Query { tenants { name } } \
                      fragment V on Version { id name }";
        assert_eq!(roots(nested, None), 2);
        // Only the named operation runs; unnamed, every operation counts.
        let two = "query A { a: tenants { name } b: tenants { name } } query B { versions { id } }";
        assert_eq!((roots(two, Some("A")), roots(two, Some("B")), roots(two, None)), (2, 1, 3));
        assert_eq!(roots("{ not closed", None), 0);
        // Queries that may read the whole fleet take a query slot; light
        // ones, pages, mutations and introspection do not.
        let fleet = |text: &str, name: Option<&str>| {
            check_expanded_cost(text, on(name, &none, Fleet::OneServer), &big).unwrap().fleet
        };
        let mixed = "query A { tenants { name } } mutation B { pauseBackfills(tenantNames: null) }";
        assert_eq!((fleet(mixed, Some("A")), fleet(mixed, Some("B")), fleet(mixed, None)), (1, 0, 1));
        assert_eq!(fleet("{ __schema { queryType { name } } }", None), 0);
        let light = "{ identity { actor } tenantCount t: tenants(first: 10) { name } versions(last: 5) { id } }";
        assert_eq!(fleet(light, None), 0);
        assert_eq!(fleet("{ tenantCount drift { tenants } p: plan { pending } }", None), 2);
        assert_eq!(fleet("{ ...F ...F } fragment F on Query { plan { pending } }", None), 2, "through fragments");
        assert_eq!(fleet("{ quarantine(after: \"t\") { tenant } }", None), 1, "after alone reads the rest");
        // A page larger than LIGHT_PAGE, of a size the request does not
        // say, of the quarantine, or of one file's versions reads like the
        // whole list.
        assert_eq!(fleet("{ tenants(first: 5000) { name } versions(first: 5000) { id } }", None), 0);
        assert_eq!(fleet("{ tenants(first: 2147483647) { name } v: versions(last: 5001) { id } }", None), 2);
        assert_eq!(fleet("{ quarantine(first: 1) { tenant } versions(file: \"a.sql\", first: 1) { id } }", None), 2);
        let paged = "query($n: Int) { tenants(first: $n) { name } }";
        let with = |n: serde_json::Value| async_graphql::Variables::from_json(serde_json::json!({ "n": n }));
        let by_variable = |variables: &async_graphql::Variables| {
            check_expanded_cost(paged, on(None, variables, Fleet::OneServer), &big).unwrap().fleet
        };
        assert_eq!((by_variable(&with(100.into())), by_variable(&with(100_000.into()))), (0, 1));
        assert_eq!((by_variable(&none), by_variable(&with(serde_json::Value::Null))), (1, 1));
        // A page of versions asking for each one's every row reads the
        // fleet's whole history; a page of those rows does not.
        let rows = "{ versions(last: 5) { id dbMigrations { file } } }";
        let in_fragment =
            "{ versions(last: 5) { ...V } } fragment V on Version { ... on Version { dbMigrations { file } } }";
        let paged_rows = "{ versions(last: 5) { dbMigrations(first: 200) { file } } }";
        assert_eq!((fleet(rows, None), fleet(in_fragment, None), fleet(paged_rows, None)), (1, 1, 0));
        // On shards, the shards and the count read every shard's list.
        let counts = "{ shards { name } tenantCount versionCount identity { actor } }";
        let sharded = check_expanded_cost(counts, on(None, &none, Fleet::Sharded), &big).unwrap().fleet;
        assert_eq!((fleet(counts, None), sharded), (0, 2));
        assert!(check_fleet_fields(2, &limits()).is_ok());
        assert_eq!(
            check_fleet_fields(3, &limits()).unwrap_err().message,
            "the request has 3 fields that read the whole fleet, over the limit of 2 (graphQLLimits.fleetFields): \
             ask for fewer at a time, or for pages (`first`)"
        );
        assert!(check_root_fields(3, &limits()).is_ok());
        assert_eq!(
            check_root_fields(4, &limits()).unwrap_err().message,
            "the request has 4 root fields, over the limit of 3 (graphQLLimits.rootFields): each reads or changes \
             the books on its own; ask for fewer at a time"
        );
    }

    #[test]
    fn batches_and_contents_are_bounded() {
        assert!(check_batch(2, &limits()).is_ok());
        assert_eq!(
            check_batch(3, &limits()).unwrap_err().message,
            "a batch of 3 operations is over the limit of 2 (graphQLLimits.batch)"
        );
    }

    #[tokio::test]
    async fn the_contents_budget_is_per_request_and_slots_are_process_wide() {
        let slots = AnswerSlots { contents: Arc::new(Semaphore::new(1)), queries: Arc::new(Semaphore::new(1)) };
        let scope = RequestScope::new(&limits(), &slots);
        assert!(scope.charge_contents(6).await.is_ok());
        assert!(scope.charge_contents(4).await.is_ok());
        let over = tokio::time::timeout(std::time::Duration::from_millis(50), scope.charge_contents(1)).await;
        assert!(over.is_err(), "an over-budget field never completes");
        tokio::time::timeout(std::time::Duration::from_secs(1), scope.exceeded()).await.expect("signalled");
        assert_eq!(slots.contents.available_permits(), 0, "held until the scope is dropped");
        let second = RequestScope::new(&limits(), &slots);
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(50), second.charge_contents(1)).await;
        assert!(waiting.is_err(), "waits for a slot");
        drop(scope);
        assert!(second.charge_contents(1).await.is_ok());
        // Query slots the same way, apart from the contents slots.
        assert!(second.take_query_slot().await.is_ok());
        assert!(second.take_query_slot().await.is_ok(), "taken once per request");
        let third = RequestScope::new(&limits(), &slots);
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(50), third.take_query_slot()).await;
        assert!(waiting.is_err(), "waits for a query slot");
        drop(second);
        assert!(third.take_query_slot().await.is_ok());
    }
}
