//! Percent-encoding with the exact character sets of JavaScript's
//! `encodeURIComponent` and `encodeURI`, which the upstream package relies on.
//!
//! Every function here is a single pass over its input.

use crate::endpoint::{EndpointError, cut};

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Builds a 256-entry membership table at compile time.
const fn table(extra: &[u8]) -> [bool; 256] {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 128 {
        table[byte] = (byte as u8).is_ascii_alphanumeric();
        byte += 1;
    }
    let mut index = 0;
    while index < extra.len() {
        table[extra[index] as usize] = true;
        index += 1;
    }
    table
}

/// Characters `encodeURIComponent` leaves alone: `A-Z a-z 0-9 - _ . ! ~ * ' ( )`.
static COMPONENT_SAFE: [bool; 256] = table(b"-_.!~*'()");

/// RFC 3986 unreserved characters: `A-Z a-z 0-9 - _ . ~`.
static UNRESERVED: [bool; 256] = table(b"-_.~");

/// Characters `encodeURI` leaves alone, plus `[` and `]`, which the upstream
/// template expander restores after `encodeURI`.
static RESERVED_SAFE: [bool; 256] = table(b"-_.!~*'();,/?:@&=+$#[]");

fn push_escaped(out: &mut String, byte: u8) {
    out.push('%');
    out.push(HEX[usize::from(byte >> 4)] as char);
    out.push(HEX[usize::from(byte & 0x0f)] as char);
}

fn encode_with(out: &mut String, input: &str, keep: &[bool; 256]) {
    let bytes = input.as_bytes();
    let mut start = 0;
    for (index, &byte) in bytes.iter().enumerate() {
        if !keep[usize::from(byte)] {
            // Only ASCII bytes are kept, so a non-empty kept stretch starts
            // and ends on character boundaries.
            if start < index {
                out.push_str(cut(input, start, index));
            }
            push_escaped(out, byte);
            start = index + 1;
        }
    }
    if start < bytes.len() {
        out.push_str(cut(input, start, bytes.len()));
    }
}

/// `encodeURIComponent`: what the upstream package applies to query values.
pub(super) fn component(out: &mut String, input: &str) {
    encode_with(out, input, &COMPONENT_SAFE);
}

/// `encodeURIComponent` followed by escaping `! ' ( ) *`: RFC 6570 simple
/// expansion (only unreserved characters pass).
pub(super) fn unreserved(out: &mut String, input: &str) {
    encode_with(out, input, &UNRESERVED);
}

fn is_hex(byte: u8) -> bool {
    byte.is_ascii_hexdigit()
}

/// Reserved expansion (`{+var}`, `{#var}` and template literals) as upstream
/// does it: existing `%XX` triplets are kept, the text between them is passed
/// through `encodeURI` with `[` and `]` kept, except that a stretch holding a
/// `%` followed by one hex digit (but not a full triplet) is left unencoded.
pub(super) fn reserved(out: &mut String, input: &str) {
    let bytes = input.as_bytes();
    let mut segment_start = 0;
    let mut index = 0;
    while index < bytes.len() {
        if is_triplet(bytes, index) {
            reserved_segment(out, cut(input, segment_start, index));
            out.push_str(cut(input, index, index + 3));
            index += 3;
            segment_start = index;
        } else {
            index += 1;
        }
    }
    reserved_segment(out, cut(input, segment_start, input.len()));
}

fn is_triplet(bytes: &[u8], index: usize) -> bool {
    matches!(bytes.get(index..index + 3), Some([b'%', high, low]) if is_hex(*high) && is_hex(*low))
}

fn reserved_segment(out: &mut String, segment: &str) {
    let bytes = segment.as_bytes();
    let has_half_escape = bytes.windows(2).any(|pair| pair[0] == b'%' && is_hex(pair[1]));
    if has_half_escape {
        out.push_str(segment);
    } else {
        encode_with(out, segment, &RESERVED_SAFE);
    }
}

/// Counts UTF-16 code units the way `String.prototype.substring` does and
/// returns the byte offset of the first `units` of them. A cut through a
/// surrogate pair is an error: upstream would then hand a lone surrogate to
/// `encodeURIComponent`, which throws `URIError`.
pub(super) fn utf16_prefix(input: &str, units: usize) -> Result<&str, EndpointError> {
    let mut counted = 0;
    for (offset, character) in input.char_indices() {
        if counted >= units {
            return Ok(cut(input, 0, offset));
        }
        counted += character.len_utf16();
        if counted > units {
            return Err(EndpointError::MalformedUri);
        }
    }
    Ok(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(f: fn(&mut String, &str), input: &str) -> String {
        let mut out = String::new();
        f(&mut out, input);
        out
    }

    #[test]
    fn component_matches_encode_uri_component() {
        assert_eq!(run(component, "a b/c?d=e&f+g!*'()~"), "a%20b%2Fc%3Fd%3De%26f%2Bg!*'()~");
        assert_eq!(run(component, "ü€😀"), "%C3%BC%E2%82%AC%F0%9F%98%80");
    }

    #[test]
    fn unreserved_also_escapes_sub_delims() {
        assert_eq!(run(unreserved, "!*'()~-_."), "%21%2A%27%28%29~-_.");
    }

    #[test]
    fn reserved_keeps_triplets_brackets_and_half_escapes() {
        assert_eq!(run(reserved, "/a b/[x]?y=%20z"), "/a%20b/[x]?y=%20z");
        assert_eq!(run(reserved, "100%"), "100%25");
        assert_eq!(run(reserved, "a b%Az"), "a b%Az");
        assert_eq!(run(reserved, "a b%20%Az c"), "a%20b%20%Az c");
        assert_eq!(run(reserved, "{}|\\^`\""), "%7B%7D%7C%5C%5E%60%22");
    }

    #[test]
    fn utf16_prefix_counts_code_units() {
        assert_eq!(utf16_prefix("héllo", 2), Ok("hé"));
        assert_eq!(utf16_prefix("abc", 10), Ok("abc"));
        assert_eq!(utf16_prefix("😀x", 2), Ok("😀"));
        assert_eq!(utf16_prefix("😀x", 1), Err(EndpointError::MalformedUri));
        assert_eq!(utf16_prefix("abc", 0), Ok(""));
    }
}
