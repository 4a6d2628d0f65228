//! A page of a list in order of a key (a name, an id), GitHub's way
//! (`first`, `after`): the first `first` items after the one whose key is
//! `after` — the last item of the page before, which need not exist any
//! more, so a page never repeats or skips an item that stayed.

use std::ops::Range;

use async_graphql::Result;

use crate::error::{AppError, graphql_error};

/// Where in `sorted` (in order of `key`) the page `first` and `after` ask
/// for lies; every item from `after` on without `first`.
pub(crate) fn page<T, K: Ord + ?Sized>(
    sorted: &[T],
    key: impl Fn(&T) -> &K,
    first: Option<i32>,
    after: Option<&K>,
) -> Result<Range<usize>> {
    let start = after.map_or(0, |after| sorted.partition_point(|item| key(item) <= after));
    let rest = &sorted[start..];
    let count = self::first(first)?.map_or(rest.len(), |first| first.min(rest.len()));
    Ok(start..start + count)
}

/// `first` as a count (none: every item), refused when negative.
pub(crate) fn first(first: Option<i32>) -> Result<Option<usize>> {
    first
        .map(|first| {
            usize::try_from(first).map_err(|_| {
                graphql_error(AppError::InvalidInput(format!("`first` is {first}: it counts items, 0 or more")))
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::page;

    #[test]
    fn pages_follow_the_last_name_seen_even_when_it_is_gone() {
        let names = ["a", "b", "c", "d"].map(String::from);
        let name = String::as_str;
        assert_eq!(page(&names, name, Some(2), None).unwrap(), 0..2);
        assert_eq!(page(&names, name, Some(2), Some("b")).unwrap(), 2..4);
        assert_eq!(page(&names, name, Some(2), Some("bb")).unwrap(), 2..4);
        assert_eq!(page(&names, name, None, Some("c")).unwrap(), 3..4);
        assert!(page(&names, name, Some(5), Some("d")).unwrap().is_empty());
        assert!(page(&names, name, Some(-1), None).is_err());
    }

    #[test]
    fn pages_of_ids_follow_the_last_id_seen() {
        let ids = [3_i64, 5, 8, 13];
        fn id(id: &i64) -> &i64 {
            id
        }
        assert_eq!(page(&ids, id, Some(2), None).unwrap(), 0..2);
        assert_eq!(page(&ids, id, Some(2), Some(&5)).unwrap(), 2..4);
        assert_eq!(page(&ids, id, Some(1), Some(&6)).unwrap(), 2..3);
        assert!(page(&ids, id, None, Some(&13)).unwrap().is_empty());
    }
}
