//! Which verified deliveries are forwarded: by event name (`issues`) or by
//! event and action (`issues.opened`), as the `EVENTS` variable lists them.

use crate::webhooks::{ANY, is_known_event_name};

/// An `EVENTS` item that is not an event name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("\"{0}\" is not an event name or event.action")]
pub struct EventFilterError(pub String);

/// The events to forward; empty (or containing `*`) forwards everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFilter {
    /// Event names and `event.action`s, as configured. Empty means all.
    pub names: Vec<String>,
}

/// `snake_case` words GitHub uses for events and actions.
fn is_word(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_')
}

/// `event`, `event.action` (actions may themselves contain dots, as
/// `repository_dispatch` ones do), or `*`.
fn is_event_pattern(item: &str) -> bool {
    item == ANY || item.split('.').all(is_word)
}

impl EventFilter {
    /// Parses the items of `EVENTS`. Returns the filter and a warning for
    /// each name GitHub is not known to send.
    pub fn parse<'a>(items: impl IntoIterator<Item = &'a str>) -> Result<(Self, Vec<String>), EventFilterError> {
        let mut names = Vec::new();
        let mut warnings = Vec::new();
        for item in items {
            if !is_event_pattern(item) {
                return Err(EventFilterError(item.to_owned()));
            }
            if item == ANY {
                return Ok((Self::default(), warnings));
            }
            if !is_known_event_name(item) {
                warnings.push(format!("EVENTS: \"{item}\" is not an event GitHub is known to send"));
            }
            if !names.iter().any(|name| name == item) {
                names.push(item.to_owned());
            }
        }
        Ok((Self { names }, warnings))
    }

    /// Whether a delivery of event `name` with payload `action` is forwarded.
    pub fn accepts(&self, name: &str, action: Option<&str>) -> bool {
        if self.names.is_empty() {
            return true;
        }
        self.names.iter().any(|entry| match entry.strip_prefix(name).and_then(|rest| rest.strip_prefix('.')) {
            Some(wanted) => action == Some(wanted),
            None => entry == name,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(items: &[&str]) -> EventFilter {
        EventFilter::parse(items.iter().copied()).unwrap().0
    }

    #[test]
    fn empty_and_star_forward_everything() {
        assert!(filter(&[]).accepts("push", None));
        assert!(filter(&["push", "*"]).accepts("issues", Some("opened")));
    }

    #[test]
    fn names_and_actions() {
        let only = filter(&["push", "issues.opened", "repository_dispatch.sample.collected"]);
        assert!(only.accepts("push", None));
        assert!(only.accepts("push", Some("anything")));
        assert!(only.accepts("issues", Some("opened")));
        assert!(!only.accepts("issues", Some("closed")));
        assert!(!only.accepts("issues", None));
        assert!(!only.accepts("issue", Some("opened")));
        assert!(!only.accepts("pushy", None));
        assert!(only.accepts("repository_dispatch", Some("sample.collected")));
        assert!(!only.accepts("repository_dispatch", Some("sample")));
    }

    #[test]
    fn malformed_items_are_refused_unknown_ones_warned_about() {
        for bad in ["Push", "issues.", ".opened", "issues opened", "a..b", "push*"] {
            assert_eq!(EventFilter::parse([bad]), Err(EventFilterError(bad.to_owned())), "{bad}");
        }
        let (only, warnings) = EventFilter::parse(["push", "push", "new_event.created"]).unwrap();
        assert_eq!(only.names, ["push", "new_event.created"]);
        assert_eq!(warnings, ["EVENTS: \"new_event.created\" is not an event GitHub is known to send"]);
    }
}
