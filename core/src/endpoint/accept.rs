//! The `accept` header rewriting of `mediaType.format` and `mediaType.previews`.

use std::borrow::Cow;

use crate::endpoint::{cut, find_bytes};

/// The header value upstream writes for an `application/octet-stream` request:
/// such requests keep their `accept` header untouched.
fn is_binary(accept: &str) -> bool {
    const NEEDLE: &[u8] = b"application/octet-stream";
    accept.as_bytes().windows(NEEDLE.len()).any(|window| window.eq_ignore_ascii_case(NEEDLE))
}

/// The `accept` header after `mediaType.format` and (for URLs ending in
/// `/graphql`) `mediaType.previews` were applied.
pub fn rewrite<'a>(accept: &'a str, format: &str, previews: &[&str], url: &str) -> Cow<'a, str> {
    if is_binary(accept) {
        return Cow::Borrowed(accept);
    }
    let mut accept = Cow::Borrowed(accept);
    if !format.is_empty() {
        let mut rewritten = String::with_capacity(accept.len() + format.len());
        for (position, range) in accept.split(',').enumerate() {
            if position > 0 {
                rewritten.push(',');
            }
            apply_format(&mut rewritten, range, format);
        }
        accept = Cow::Owned(rewritten);
    }
    if url.ends_with("/graphql") && !previews.is_empty() {
        let listed = previews_in_accept(&accept);
        let mut rewritten = String::new();
        for (position, preview) in listed.iter().chain(previews).enumerate() {
            if position > 0 {
                rewritten.push(',');
            }
            rewritten.push_str("application/vnd.github.");
            rewritten.push_str(preview);
            rewritten.push_str("-preview");
            if format.is_empty() {
                rewritten.push_str("+json");
            } else {
                rewritten.push('.');
                rewritten.push_str(format);
            }
        }
        accept = Cow::Owned(rewritten);
    }
    accept
}

/// `application/vnd.<name>[.v3][.<word>][+json]` at the end of one media
/// range becomes `application/vnd.<name>[.v3].<format>`; other ranges stay.
fn apply_format(out: &mut String, range: &str, format: &str) {
    const VND: &str = "application/vnd";
    let mut search_from = 0;
    while let Some(start) = find_bytes(range.as_bytes(), VND.as_bytes(), search_from) {
        let rest = cut(range, start + VND.len(), range.len());
        if let Some((name, version)) = match_vendor_suffix(rest) {
            out.push_str(cut(range, 0, start));
            out.push_str(VND);
            out.push('.');
            out.push_str(name);
            out.push_str(version);
            out.push('.');
            out.push_str(format);
            return;
        }
        search_from = start + 1;
    }
    out.push_str(range);
}

fn word_len(text: &str) -> usize {
    text.bytes().take_while(|byte| byte.is_ascii_alphanumeric() || *byte == b'_').count()
}

/// Matches `.<name>(.v3)?(.<word>)?(+json)?` up to the end of `rest`, with
/// the same preference as the upstream regular expression: `.v3` is taken as
/// the version when the rest still matches, otherwise as the optional word.
fn match_vendor_suffix(rest: &str) -> Option<(&str, &str)> {
    let after_dot = rest.strip_prefix('.')?;
    let name_len = word_len(after_dot);
    if name_len == 0 {
        return None;
    }
    let name = cut(after_dot, 0, name_len);
    let tail = cut(after_dot, name_len, after_dot.len());
    if tail.strip_prefix(".v3").is_some_and(optional_word_then_json) {
        return Some((name, ".v3"));
    }
    optional_word_then_json(tail).then_some((name, ""))
}

fn optional_word_then_json(text: &str) -> bool {
    let text = match text.strip_prefix('.') {
        Some(after_dot) if word_len(after_dot) > 0 => cut(after_dot, word_len(after_dot), after_dot.len()),
        _ => text,
    };
    text.is_empty() || text == "+json"
}

/// The preview names already in the `accept` header: for each run of word
/// characters and `-`, the longest prefix followed by `-preview`.
fn previews_in_accept(accept: &str) -> Vec<&str> {
    const SUFFIX: &[u8] = b"-preview";
    let is_name_byte = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-';
    let bytes = accept.as_bytes();
    let mut found = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        if !is_name_byte(bytes[index]) {
            index += 1;
            continue;
        }
        let end = index + bytes.iter().skip(index).take_while(|&&byte| is_name_byte(byte)).count();
        let run = cut(accept, index, end);
        let last_suffix = run.as_bytes().windows(SUFFIX.len()).rposition(|window| window == SUFFIX);
        if let Some(position) = last_suffix.filter(|&position| position > 0) {
            found.push(cut(run, 0, position));
        }
        index = end;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_rewrites_vendor_ranges() {
        assert_eq!(rewrite("application/vnd.github.v3+json", "raw", &[], "/"), "application/vnd.github.v3.raw");
        assert_eq!(rewrite("application/vnd.github+json", "diff", &[], "/"), "application/vnd.github.diff");
        assert_eq!(rewrite("application/vnd.github.v3.raw+json", "html", &[], "/"), "application/vnd.github.v3.html");
        assert_eq!(rewrite("application/vnd.github.v3x+json", "raw", &[], "/"), "application/vnd.github.raw");
        assert_eq!(
            rewrite("text/html,application/vnd.github.v3+json", "raw", &[], "/"),
            "text/html,application/vnd.github.v3.raw"
        );
        assert_eq!(
            rewrite("application/vnd.github.foo-bar+json", "raw", &[], "/"),
            "application/vnd.github.foo-bar+json"
        );
    }

    #[test]
    fn octet_stream_is_never_rewritten() {
        assert_eq!(rewrite("Application/Octet-Stream", "raw", &["a"], "/graphql"), "Application/Octet-Stream");
    }

    #[test]
    fn previews_only_for_graphql() {
        assert_eq!(rewrite("application/vnd.github.v3+json", "", &["foo"], "/repos"), "application/vnd.github.v3+json");
        assert_eq!(
            rewrite("application/vnd.github.v3+json", "", &["foo", "bar"], "https://api.github.com/graphql"),
            "application/vnd.github.foo-preview+json,application/vnd.github.bar-preview+json"
        );
        assert_eq!(
            rewrite("application/vnd.github.baz-preview+json", "raw", &["foo"], "/graphql"),
            "application/vnd.github.baz-preview.raw,application/vnd.github.foo-preview.raw"
        );
    }

    #[test]
    fn preview_names_take_the_longest_prefix() {
        assert_eq!(previews_in_accept("application/vnd.github.a-preview-preview+json, x-preview"), ["a-preview", "x"]);
        assert!(previews_in_accept("-preview").is_empty());
    }
}
