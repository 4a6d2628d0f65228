//! GitHub webhooks: signatures (`X-Hub-Signature-256`), the event names a
//! listener may use, and which listeners a delivery reaches.

pub mod events;
pub mod middleware;
pub mod receiver;
pub mod signature;

pub use events::{EMITTER_EVENT_NAMES, SOURCE_VERSION};

/// The listener key of `onAny`.
pub const ANY: &str = "*";

/// The listener key of `onError`.
pub const ERROR: &str = "error";

/// Why `on` refuses an event name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventNameError {
    /// `*` belongs to `onAny`.
    #[error(
        "Using the \"*\" event with the regular Webhooks.on() function is not supported. Please use the Webhooks.onAny() method instead"
    )]
    Any,
    /// `error` belongs to `onError`.
    #[error(
        "Using the \"error\" event with the regular Webhooks.on() function is not supported. Please use the Webhooks.onError() method instead"
    )]
    Error,
    /// Not in [`EMITTER_EVENT_NAMES`]; `on` only warns about these.
    #[error("\"{0}\" is not a known webhook name (https://developer.github.com/v3/activity/events/types/)")]
    Unknown(String),
}

/// Whether `name` is an event or `event.action` GitHub sends (a binary
/// search: the generated list is sorted bytewise, which a test holds).
pub fn is_known_event_name(name: &str) -> bool {
    EMITTER_EVENT_NAMES.binary_search(&name).is_ok()
}

/// Checks a listener name: `*` and `error` are refused (they have their own
/// methods), unknown names are reported as [`EventNameError::Unknown`].
pub fn validate_event_name(name: &str) -> Result<(), EventNameError> {
    match name {
        ANY => Err(EventNameError::Any),
        ERROR => Err(EventNameError::Error),
        known if is_known_event_name(known) => Ok(()),
        unknown => Err(EventNameError::Unknown(unknown.to_owned())),
    }
}

/// The listener keys a delivery of event `name` with payload `action`
/// reaches, in the order their handlers are started: `name.action` (when the
/// payload has a non-empty action), `name`, then `*`.
pub fn listener_keys(name: &str, action: Option<&str>) -> Vec<String> {
    let mut keys = Vec::with_capacity(3);
    if let Some(action) = action.filter(|action| !action.is_empty()) {
        keys.push([name, ".", action].concat());
    }
    keys.push(name.to_owned());
    keys.push(ANY.to_owned());
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_table_is_a_subset_of_the_generated_names() {
        // The spec's Events table, copied into the repository.
        let spec_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/webhooks/events.md");
        let Ok(spec) = std::fs::read_to_string(spec_path) else {
            panic!("the events table is expected at {spec_path}");
        };
        let mut from_spec = Vec::new();
        let table = spec.split("| Event | Actions |").nth(1).expect("the Events table");
        for line in table.lines().skip(2).take_while(|line| line.starts_with('|')) {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            from_spec.push(cells[1].to_owned());
            if cells[2] != "none" {
                from_spec.extend(cells[2].split(',').map(|action| format!("{}.{}", cells[1], action.trim())));
            }
        }
        assert_eq!(from_spec.len(), 316);
        // The one name the table spells differently: GitHub's definition (and
        // @octokit/webhooks) calls repository_dispatch's action
        // `sample.collected`, which the table shortens to `sample`.
        let missing: Vec<&String> = from_spec.iter().filter(|name| !is_known_event_name(name)).collect();
        assert_eq!(missing, ["repository_dispatch.sample"]);
        assert!(is_known_event_name("repository_dispatch.sample.collected"));
    }

    #[test]
    fn generated_names_are_sorted_unique_and_complete() {
        assert_eq!(SOURCE_VERSION, "12.1.0");
        assert_eq!(EMITTER_EVENT_NAMES.len(), 323);
        assert!(EMITTER_EVENT_NAMES.windows(2).all(|pair| pair[0] < pair[1]));
        // Every `event.action` has its bare event too.
        for name in EMITTER_EVENT_NAMES {
            if let Some((event, _)) = name.split_once('.') {
                assert!(is_known_event_name(event), "{name} without {event}");
            }
        }
        // The names of @octokit/openapi-webhooks-types 12.1.0 the spec's
        // table predates.
        for name in [
            "issue_dependencies",
            "issue_dependencies.blocked_by_added",
            "issue_dependencies.blocked_by_removed",
            "issue_dependencies.blocking_added",
            "issue_dependencies.blocking_removed",
            "secret_scanning_alert.assigned",
            "secret_scanning_alert.unassigned",
        ] {
            assert!(is_known_event_name(name), "{name}");
        }
        assert!(!is_known_event_name("issue_dependencies.nope"));
        assert!(!is_known_event_name(""));
    }

    #[test]
    fn validation() {
        assert_eq!(validate_event_name("push"), Ok(()));
        assert_eq!(validate_event_name("issues.opened"), Ok(()));
        assert_eq!(validate_event_name("issue_dependencies.blocked_by_added"), Ok(()));
        assert_eq!(validate_event_name("*"), Err(EventNameError::Any));
        assert_eq!(validate_event_name("error"), Err(EventNameError::Error));
        assert_eq!(
            validate_event_name("issues.nope").unwrap_err().to_string(),
            "\"issues.nope\" is not a known webhook name (https://developer.github.com/v3/activity/events/types/)"
        );
    }

    #[test]
    fn routing_order() {
        assert_eq!(listener_keys("issues", Some("opened")), ["issues.opened", "issues", "*"]);
        assert_eq!(listener_keys("push", None), ["push", "*"]);
        assert_eq!(listener_keys("push", Some("")), ["push", "*"]);
    }
}
