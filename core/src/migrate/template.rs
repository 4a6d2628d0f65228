//! `${name}` placeholder scanning, shared by environment substitution in the
//! configuration and by webhook template rendering.
//!
//! A placeholder is `${` followed by a name of ASCII letters, digits, `_` and
//! `.` that does not start with a digit or `.`, and a closing `}`. Anything
//! else (a lone `$`, `${}`, `${a b}`, an unterminated `${`) is literal text.
//! After the name, before the `}`, a placeholder may carry one of the POSIX
//! shell's (and compose files') operators, whose word runs to the first `}`:
//!
//! - `${name:-word}`: `word` when the variable is unset or empty;
//! - `${name-word}`: `word` when the variable is unset;
//! - `${name:?message}`: an error naming the variable, with `message`, when
//!   it is unset or empty;
//! - `${name?message}`: the same, when it is unset.
//!
//! The scan is a single left-to-right pass: linear in the input.

/// What a placeholder asks for when its variable has no usable value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fallback<'a> {
    /// `${name}`: nothing; the caller decides.
    None,
    /// `${name:-word}` (`empty_too`) or `${name-word}`: this word.
    Default {
        /// The word.
        word: &'a str,
        /// Whether an empty value also takes the word (`:-`).
        empty_too: bool,
    },
    /// `${name:?message}` (`empty_too`) or `${name?message}`: an error.
    Required {
        /// The message (may be empty).
        message: &'a str,
        /// Whether an empty value is also an error (`:?`).
        empty_too: bool,
    },
}

/// One placeholder: the variable's name and its fallback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placeholder<'a> {
    /// The name.
    pub name: &'a str,
    /// What to do when it has no usable value.
    pub fallback: Fallback<'a>,
}

/// Replaces every placeholder for which `resolve` returns `Some`; placeholders
/// for which it returns `None` stay as they are. The first error aborts.
pub(crate) fn substitute_placeholders<E>(
    input: &str,
    mut resolve: impl FnMut(&Placeholder<'_>) -> Result<Option<String>, E>,
) -> Result<String, E> {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match placeholder(after) {
            Some((found, len)) => {
                match resolve(&found)? {
                    Some(value) => out.push_str(&value),
                    None => out.push_str(&rest[start..start + 2 + len]),
                }
                rest = &after[len..];
            }
            None => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// [`substitute_placeholders`] for plain `${name}` placeholders only: those
/// with an operator stay as they are.
pub(crate) fn substitute<E>(
    input: &str,
    mut resolve: impl FnMut(&str) -> Result<Option<String>, E>,
) -> Result<String, E> {
    substitute_placeholders(input, |found| match found.fallback {
        Fallback::None => resolve(found.name),
        _ => Ok(None),
    })
}

/// Lists the names of all placeholders in `input`, in order.
pub(crate) fn placeholder_names(input: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = input;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        match placeholder(after) {
            Some((found, len)) => {
                names.push(found.name);
                rest = &after[len..];
            }
            None => rest = after,
        }
    }
    names
}

/// The placeholder at the start of `text` (just after its `${`) and its
/// length up to and including the closing `}`.
fn placeholder(text: &str) -> Option<(Placeholder<'_>, usize)> {
    let bytes = text.as_bytes();
    let first = *bytes.first()?;
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return None;
    }
    let len = bytes.iter().position(|b| !(b.is_ascii_alphanumeric() || *b == b'_' || *b == b'.'))?;
    let name = &text[..len];
    let rest = &text[len..];
    if rest.starts_with('}') {
        return Some((Placeholder { name, fallback: Fallback::None }, len + 1));
    }
    let (operator, empty_too) = match rest.as_bytes() {
        [b':', op @ (b'-' | b'?'), ..] => (*op, true),
        [op @ (b'-' | b'?'), ..] => (*op, false),
        _ => return None,
    };
    let operator_len = if empty_too { 2 } else { 1 };
    let word_start = len + operator_len;
    let word_len = text[word_start..].find('}')?;
    let word = &text[word_start..word_start + word_len];
    let fallback = if operator == b'-' {
        Fallback::Default { word, empty_too }
    } else {
        Fallback::Required { message: word, empty_too }
    };
    Some((Placeholder { name, fallback }, word_start + word_len + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upper(input: &str) -> String {
        substitute::<()>(input, |name| Ok((name != "keep").then(|| name.to_ascii_uppercase()))).unwrap()
    }

    #[test]
    fn replaces_names_and_keeps_everything_else() {
        assert_eq!(upper("a ${x} b ${y_1}"), "a X b Y_1");
        assert_eq!(upper("${keep} ${a.b}"), "${keep} A.B");
        assert_eq!(upper("$ ${} ${1x} ${a b} ${open"), "$ ${} ${1x} ${a b} ${open");
        assert_eq!(upper("$${x}}"), "$X}");
        assert_eq!(upper("ünï ${x}ç"), "ünï Xç");
    }

    #[test]
    fn lists_placeholder_names() {
        assert_eq!(placeholder_names("${a} ${ b} ${c.d}${"), vec!["a", "c.d"]);
        assert_eq!(placeholder_names("${a:-x} ${b?} ${c:x}"), vec!["a", "b"]);
    }

    fn scan(input: &str) -> Vec<(String, Fallback<'_>)> {
        let mut found = Vec::new();
        let mut rest = input;
        while let Some(start) = rest.find("${") {
            let after = &rest[start + 2..];
            match placeholder(after) {
                Some((p, len)) => {
                    found.push((p.name.to_string(), p.fallback));
                    rest = &after[len..];
                }
                None => rest = after,
            }
        }
        found
    }

    #[test]
    fn operators_are_read_with_their_word_up_to_the_first_brace() {
        assert_eq!(
            scan("${A:-x y} ${B-} ${C:?set C} ${D?} ${E:-a:b-c?d}"),
            vec![
                ("A".into(), Fallback::Default { word: "x y", empty_too: true }),
                ("B".into(), Fallback::Default { word: "", empty_too: false }),
                ("C".into(), Fallback::Required { message: "set C", empty_too: true }),
                ("D".into(), Fallback::Required { message: "", empty_too: false }),
                ("E".into(), Fallback::Default { word: "a:b-c?d", empty_too: true }),
            ]
        );
        // No operator, no closing brace, or another operator: literal text.
        assert_eq!(scan("${A:x} ${C=1} ${D:+x} ${B:-open"), vec![]);
        // The word ends at the first brace: the rest is literal.
        assert_eq!(scan("${A:-{x}}"), vec![("A".into(), Fallback::Default { word: "{x", empty_too: true })]);
    }

    #[test]
    fn plain_substitution_keeps_placeholders_with_operators() {
        assert_eq!(upper("${a:-x} ${b}"), "${a:-x} B");
    }

    #[test]
    fn first_error_aborts() {
        let result =
            substitute("${a} ${b}", |name| if name == "b" { Err(name.to_string()) } else { Ok(Some(String::new())) });
        assert_eq!(result, Err("b".to_string()));
    }
}
