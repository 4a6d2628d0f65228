//! Remaining parameters of GET and HEAD requests appended as a query string.

use crate::endpoint::encode;

/// Appends `name=value` pairs; `q` keeps its `+` separators (GitHub's search
/// syntax), every other value is encoded like `encodeURIComponent`. Names are
/// written as given.
pub(super) fn append<'a>(url: &mut String, parameters: impl IntoIterator<Item = (&'a str, &'a str)>) {
    let mut separator = if url.as_bytes().contains(&b'?') { '&' } else { '?' };
    for (name, value) in parameters {
        url.push(separator);
        separator = '&';
        url.push_str(name);
        url.push('=');
        if name == "q" {
            for (position, part) in value.split('+').enumerate() {
                if position > 0 {
                    url.push('+');
                }
                encode::component(url, part);
            }
        } else {
            encode::component(url, value);
        }
    }
}
