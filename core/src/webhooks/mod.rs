//! GitHub webhooks: signatures (`X-Hub-Signature-256`), the event names a
//! listener may use, and which listeners a delivery reaches.

pub mod events;
pub mod middleware;
pub mod receiver;
pub mod signature;

pub use events::EMITTER_EVENT_NAMES;

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

/// Whether `name` is an event or `event.action` GitHub sends.
pub fn is_known_event_name(name: &str) -> bool {
    EMITTER_EVENT_NAMES.contains(&name)
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
    fn names_match_the_spec_table() {
        // The spec's Events table, copied into the repository.
        let spec_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/webhooks/events.md");
        let Ok(spec) = std::fs::read_to_string(spec_path) else {
            panic!("the events table is expected at {spec_path}");
        };
        let mut expected = Vec::new();
        let table = spec.split("| Event | Actions |").nth(1).expect("the Events table");
        for line in table.lines().skip(2).take_while(|line| line.starts_with('|')) {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            expected.push(cells[1].to_owned());
            if cells[2] != "none" {
                expected.extend(cells[2].split(',').map(|action| format!("{}.{}", cells[1], action.trim())));
            }
        }
        assert_eq!(EMITTER_EVENT_NAMES, expected.as_slice());
        assert_eq!(EMITTER_EVENT_NAMES.len(), 316);
    }

    #[test]
    fn validation() {
        assert_eq!(validate_event_name("push"), Ok(()));
        assert_eq!(validate_event_name("issues.opened"), Ok(()));
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
