//! A long list answered one item after another.
//!
//! async-graphql resolves a `Vec<T>` by making a future for every item and
//! joining them all; for a list of 50,000 tenants those futures, alive at
//! once, raised the service's peak RSS by 66 MiB for an answer of under
//! 1 MB. [`OneByOne`] has the same GraphQL type as `Vec<T>` and resolves its
//! items in order, one at a time: what stays is each item's answer, each
//! object's map shrunk to the fields it holds.

use std::borrow::Cow;

use async_graphql::parser::types::Field;
use async_graphql::registry::Registry;
use async_graphql::{ContextSelectionSet, OutputType, Positioned, ServerResult, Value};

/// How many items resolve before the list lets the runtime's other tasks
/// run.
const YIELD_EVERY: usize = 256;

/// A list whose items resolve one at a time (GraphQL type `[T!]!`, as
/// `Vec<T>`; as a `Vec<T>` in serde too).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub(crate) struct OneByOne<T>(pub(crate) Vec<T>);

impl<T: OutputType> OutputType for OneByOne<T> {
    fn type_name() -> Cow<'static, str> {
        Vec::<T>::type_name()
    }

    fn qualified_type_name() -> String {
        Vec::<T>::qualified_type_name()
    }

    fn create_type_info(registry: &mut Registry) -> String {
        Vec::<T>::create_type_info(registry)
    }

    async fn resolve(&self, ctx: &ContextSelectionSet<'_>, field: &Positioned<Field>) -> ServerResult<Value> {
        let mut values = Vec::with_capacity(self.0.len());
        for (index, item) in self.0.iter().enumerate() {
            // An item resolves without waiting: a list of 20,000 held a
            // runtime thread for the whole list, and the tasks behind it
            // (the database pool returning connections) waited past the
            // pool's 5 s. Others run between each run of items.
            if index % YIELD_EVERY == YIELD_EVERY - 1 {
                tokio::task::yield_now().await;
            }
            let item_ctx = ctx.with_index(index);
            let mut value = item.resolve(&item_ctx, field).await.map_err(|error| item_ctx.set_error_path(error))?;
            // An object's answer is a map that reserved room for more fields
            // than it holds (three entries of ~100 bytes for a `{ name }`):
            // kept for each of 100,000 items, that room was 20 MiB.
            if let Value::Object(fields) = &mut value {
                fields.shrink_to_fit();
            }
            values.push(value);
        }
        Ok(Value::List(values))
    }
}

impl<T> std::ops::Deref for OneByOne<T> {
    type Target = Vec<T>;

    fn deref(&self) -> &Vec<T> {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use async_graphql::{EmptyMutation, EmptySubscription, Object, Schema, SimpleObject};

    use super::OneByOne;

    #[derive(SimpleObject)]
    struct Item {
        name: String,
        tags: OneByOne<String>,
    }

    struct Query;

    #[Object]
    impl Query {
        async fn items(&self) -> OneByOne<Item> {
            OneByOne(
                ["a", "b", "c"]
                    .iter()
                    .map(|name| Item {
                        name: name.to_string(),
                        tags: OneByOne(vec![format!("{name}1"), format!("{name}2")]),
                    })
                    .collect(),
            )
        }
    }

    #[tokio::test]
    async fn answers_and_types_as_a_vec_does() {
        let schema = Schema::new(Query, EmptyMutation, EmptySubscription);
        let answer = schema.execute("{ items { name tags } first: items { name } }").await;
        assert!(answer.errors.is_empty(), "{:?}", answer.errors);
        assert_eq!(
            answer.data.into_json().unwrap(),
            serde_json::json!({
                "items": [
                    { "name": "a", "tags": ["a1", "a2"] },
                    { "name": "b", "tags": ["b1", "b2"] },
                    { "name": "c", "tags": ["c1", "c2"] },
                ],
                "first": [{ "name": "a" }, { "name": "b" }, { "name": "c" }],
            })
        );
        let sdl = schema.sdl();
        assert!(sdl.contains("items: [Item!]!"), "{sdl}");
        assert!(sdl.contains("tags: [String!]!"), "{sdl}");
    }

    #[tokio::test]
    async fn errors_are_answered_as_a_vec_answers_them() {
        struct Failing(i32);
        #[Object]
        impl Failing {
            async fn value(&self) -> async_graphql::Result<i32> {
                if self.0 == 1 { Err("no".into()) } else { Ok(self.0) }
            }
            async fn maybe(&self) -> async_graphql::Result<Option<i32>> {
                if self.0 == 1 { Err("not this one".into()) } else { Ok(Some(self.0)) }
            }
        }
        struct Root;
        #[Object]
        impl Root {
            async fn one_by_one(&self) -> OneByOne<Failing> {
                OneByOne(vec![Failing(0), Failing(1), Failing(2)])
            }
            async fn plain_vec(&self) -> Vec<Failing> {
                vec![Failing(0), Failing(1), Failing(2)]
            }
        }
        let schema = Schema::new(Root, EmptyMutation, EmptySubscription);
        for fields in ["value", "maybe", "value maybe"] {
            // Names of one length: the errors' locations compare alike.
            let ours = schema.execute(format!("{{ list: oneByOne {{ {fields} }} }}")).await;
            let theirs = schema.execute(format!("{{ list: plainVec {{ {fields} }} }}")).await;
            assert!(!ours.errors.is_empty(), "{fields}");
            assert_eq!(serde_json::to_value(&ours).unwrap(), serde_json::to_value(&theirs).unwrap(), "{fields}");
        }
    }
}
