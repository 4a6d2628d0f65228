//! `${name}` placeholder scanning, shared by environment substitution in the
//! configuration and by webhook template rendering.
//!
//! A placeholder is `${` followed by a name of ASCII letters, digits, `_` and
//! `.` that does not start with a digit or `.`, and a closing `}`. Anything
//! else (a lone `$`, `${}`, `${a b}`, an unterminated `${`) is literal text.
//! The scan is a single left-to-right pass: linear in the input.

/// Replaces every placeholder for which `resolve` returns `Some`; placeholders
/// for which it returns `None` stay as they are. The first error aborts.
pub(crate) fn substitute<E>(
    input: &str,
    mut resolve: impl FnMut(&str) -> Result<Option<String>, E>,
) -> Result<String, E> {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match placeholder_name(after) {
            Some(name) => {
                let whole = &rest[start..start + 2 + name.len() + 1];
                match resolve(name)? {
                    Some(value) => out.push_str(&value),
                    None => out.push_str(whole),
                }
                rest = &after[name.len() + 1..];
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

/// Lists the names of all placeholders in `input`, in order.
pub(crate) fn placeholder_names(input: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = input;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        match placeholder_name(after) {
            Some(name) => {
                names.push(name);
                rest = &after[name.len() + 1..];
            }
            None => rest = after,
        }
    }
    names
}

/// The name at the start of `text` if it is followed by `}`.
fn placeholder_name(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    let first = *bytes.first()?;
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return None;
    }
    let len = bytes.iter().position(|b| !(b.is_ascii_alphanumeric() || *b == b'_' || *b == b'.'))?;
    (bytes[len] == b'}').then(|| &text[..len])
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
    }

    #[test]
    fn first_error_aborts() {
        let result =
            substitute("${a} ${b}", |name| if name == "b" { Err(name.to_string()) } else { Ok(Some(String::new())) });
        assert_eq!(result, Err("b".to_string()));
    }
}
