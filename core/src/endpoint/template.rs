//! URL templates as the upstream package expands them: RFC 6570 operators and
//! modifiers, plus the package's own rules (legacy `:name` placeholders,
//! stray braces kept, one trailing `/` dropped), as of `@octokit/endpoint`
//! 11.0.6 (which gave exploded values and undefined variables RFC 6570's
//! separators; 11.0.5 joined exploded values with `,` and kept an
//! undefined variable's separator and operator). Compiling and expanding are single passes; nothing backtracks.

use std::borrow::Cow;

use crate::endpoint::{EndpointError, cut, encode};

/// A parameter value as the expander sees it. JavaScript callers' numbers,
/// booleans and bigints arrive already converted to their string form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value<'a> {
    /// `undefined` or `null`.
    Absent,
    /// A string (possibly empty) or a converted scalar.
    Scalar(Cow<'a, str>),
    /// An array; `None` marks `null`/`undefined` elements, which are skipped.
    List(Vec<Option<Cow<'a, str>>>),
    /// An object's own enumerable entries in order; `None` values are skipped.
    Map(Vec<(Cow<'a, str>, Option<Cow<'a, str>>)>),
}

/// The expression operator (first character of an expression).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    Simple,
    Reserved,
    Fragment,
    Label,
    Path,
    PathParameter,
    Query,
    QueryContinuation,
}

impl Operator {
    fn from_char(character: char) -> Option<Self> {
        Some(match character {
            '+' => Self::Reserved,
            '#' => Self::Fragment,
            '.' => Self::Label,
            '/' => Self::Path,
            ';' => Self::PathParameter,
            '?' => Self::Query,
            '&' => Self::QueryContinuation,
            _ => return None,
        })
    }

    /// What is written before the expansion, and between variables.
    fn prefix_and_separator(self) -> (&'static str, &'static str) {
        match self {
            Self::Simple | Self::Reserved => ("", ","),
            Self::Fragment => ("#", ","),
            Self::Label => (".", "."),
            Self::Path => ("/", "/"),
            Self::PathParameter => (";", ";"),
            Self::Query => ("?", "&"),
            Self::QueryContinuation => ("&", "&"),
        }
    }

    fn is_keyed(self) -> bool {
        matches!(self, Self::PathParameter | Self::Query | Self::QueryContinuation)
    }

    fn allows_reserved(self) -> bool {
        matches!(self, Self::Reserved | Self::Fragment)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Modifier {
    None,
    Prefix(usize),
    Explode,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Variable {
    name: String,
    modifier: Modifier,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    /// Literal text, already encoded.
    Literal(String),
    Expression {
        operator: Operator,
        variables: Vec<Variable>,
    },
}

/// A compiled URL template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
    /// Names as upstream extracts them to decide which parameters the URL
    /// consumes (`{?a*,b}` gives `a*` and `b`, `{v:3}` gives `v:3`).
    consumed_names: Vec<String>,
}

/// Rewrites legacy `:name` placeholders (a lowercase letter and at least one
/// more word character) to `{name}`.
pub fn rewrite_legacy_placeholders(url: &str) -> Cow<'_, str> {
    let bytes = url.as_bytes();
    if !bytes.contains(&b':') {
        return Cow::Borrowed(url);
    }
    let mut out = String::with_capacity(url.len() + 8);
    let mut index = 0;
    let mut copied = 0;
    while index < bytes.len() {
        let starts_name = bytes[index] == b':'
            && bytes.get(index + 1).is_some_and(u8::is_ascii_lowercase)
            && bytes.get(index + 2).copied().is_some_and(is_word);
        if starts_name {
            let end = index + 2 + bytes.iter().skip(index + 2).take_while(|&&byte| is_word(byte)).count();
            out.push_str(cut(url, copied, index));
            out.push('{');
            out.push_str(cut(url, index + 1, end));
            out.push('}');
            index = end;
            copied = end;
        } else {
            index += 1;
        }
    }
    out.push_str(cut(url, copied, url.len()));
    Cow::Owned(out)
}

fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

impl Template {
    /// Compiles a template (after legacy placeholders were rewritten).
    pub fn compile(template: &str) -> Self {
        let bytes = template.as_bytes();
        let mut pieces = Vec::new();
        let mut consumed_names = Vec::new();
        let mut literal = String::new();
        let mut index = 0;
        while index < bytes.len() {
            let brace_end = match bytes[index] {
                b'{' => bytes.iter().skip(index + 1).position(|&byte| byte == b'{' || byte == b'}'),
                b'}' => None,
                _ => {
                    let end = bytes
                        .iter()
                        .skip(index)
                        .position(|&byte| byte == b'{' || byte == b'}')
                        .map_or(bytes.len(), |offset| index + offset);
                    encode::reserved(&mut literal, cut(template, index, end));
                    index = end;
                    continue;
                }
            };
            match brace_end {
                Some(offset) if offset > 0 && bytes.get(index + 1 + offset) == Some(&b'}') => {
                    let body = cut(template, index + 1, index + 1 + offset);
                    if !literal.is_empty() {
                        pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                    }
                    consumed_names.extend(consumed_variable_names(body));
                    pieces.push(compile_expression(body));
                    index += offset + 2;
                }
                _ => {
                    // A brace that opens no expression stays as it is.
                    literal.push(bytes[index] as char);
                    index += 1;
                }
            }
        }
        if !literal.is_empty() {
            pieces.push(Piece::Literal(literal));
        }
        Self { pieces, consumed_names }
    }

    /// The names upstream treats as consumed by the URL; parameters with these
    /// names are not sent as query parameters or body keys.
    pub fn consumed_names(&self) -> &[String] {
        &self.consumed_names
    }

    /// The parameter names the expansion reads, in template order.
    pub fn lookup_names(&self) -> impl Iterator<Item = &str> {
        self.pieces
            .iter()
            .flat_map(|piece| match piece {
                Piece::Literal(_) => [].iter(),
                Piece::Expression { variables, .. } => variables.iter(),
            })
            .map(|variable| variable.name.as_str())
    }

    /// Expands the template. `lookup` returns the value of a parameter.
    pub fn expand<'v>(&self, mut lookup: impl FnMut(&str) -> Value<'v>) -> Result<String, EndpointError> {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Literal(text) => out.push_str(text),
                Piece::Expression { operator, variables } => {
                    let mut values = Values::new(&mut out, *operator);
                    for variable in variables {
                        expand_variable(&mut values, *operator, variable, &lookup(&variable.name))?;
                    }
                }
            }
        }
        if out != "/" && out.ends_with('/') {
            out.pop();
        }
        Ok(out)
    }
}

fn compile_expression(body: &str) -> Piece {
    let mut characters = body.chars();
    let (operator, list) = match characters.next().and_then(Operator::from_char) {
        Some(operator) => (operator, characters.as_str()),
        None => (Operator::Simple, body),
    };
    let variables = list.split(',').map(compile_variable).collect();
    Piece::Expression { operator, variables }
}

fn compile_variable(spec: &str) -> Variable {
    let name_end = spec.bytes().position(|byte| byte == b':' || byte == b'*').unwrap_or(spec.len());
    let rest = spec.as_bytes().get(name_end..).unwrap_or_default();
    let modifier = match rest.first() {
        Some(b'*') => Modifier::Explode,
        Some(b':') => {
            let digits = rest.iter().skip(1).take_while(|byte| byte.is_ascii_digit());
            let mut length: Option<usize> = None;
            for digit in digits {
                let value = usize::from(digit - b'0');
                length = Some(length.unwrap_or(0).saturating_mul(10).saturating_add(value));
            }
            length.map_or(Modifier::None, Modifier::Prefix)
        }
        _ => Modifier::None,
    };
    Variable { name: cut(spec, 0, name_end).to_owned(), modifier }
}

/// Upstream's name extraction: strip leading non-word characters and the
/// trailing run of non-word characters, then split at commas.
fn consumed_variable_names(body: &str) -> impl Iterator<Item = String> + '_ {
    let is_word_char = |character: char| character.is_ascii_alphanumeric() || character == '_';
    let trimmed = body.trim_start_matches(|character| !is_word_char(character));
    let trimmed = trimmed.trim_end_matches(|character| !is_word_char(character));
    trimmed.split(',').map(str::to_owned)
}

fn push_encoded_value(out: &mut String, operator: Operator, value: &str, key: &str) {
    if !key.is_empty() {
        encode::unreserved(out, key);
        out.push('=');
    }
    if operator.allows_reserved() {
        encode::reserved(out, value);
    } else {
        encode::unreserved(out, value);
    }
}

/// An expression's values as they are written: the operator's prefix
/// before the first, its separator between the others, nothing at all when
/// no variable gives a value (an undefined one gives none; an empty string
/// gives an empty one, so its separator stays).
struct Values<'o> {
    out: &'o mut String,
    prefix: &'static str,
    separator: &'static str,
    started: bool,
}

impl<'o> Values<'o> {
    fn new(out: &'o mut String, operator: Operator) -> Self {
        let (prefix, separator) = operator.prefix_and_separator();
        Self { out, prefix, separator, started: false }
    }

    /// Starts the next value and returns where to write it.
    fn next(&mut self) -> &mut String {
        self.out.push_str(if self.started { self.separator } else { self.prefix });
        self.started = true;
        self.out
    }
}

fn expand_variable(
    values: &mut Values<'_>,
    operator: Operator,
    variable: &Variable,
    value: &Value<'_>,
) -> Result<(), EndpointError> {
    let key = if operator.is_keyed() { variable.name.as_str() } else { "" };
    match value {
        Value::Absent => {}
        Value::Scalar(text) if text.is_empty() => {
            let out = values.next();
            match operator {
                Operator::PathParameter => encode::unreserved(out, &variable.name),
                Operator::Query | Operator::QueryContinuation => {
                    encode::unreserved(out, &variable.name);
                    out.push('=');
                }
                _ => {}
            }
        }
        Value::Scalar(text) => {
            let text = match variable.modifier {
                Modifier::Prefix(length) => encode::utf16_prefix(text, length)?,
                _ => text,
            };
            push_encoded_value(values.next(), operator, text, key);
        }
        Value::List(items) if variable.modifier == Modifier::Explode => {
            for item in items.iter().flatten() {
                push_encoded_value(values.next(), operator, item, key);
            }
        }
        Value::Map(entries) if variable.modifier == Modifier::Explode => {
            let defined = entries.iter().filter_map(|(name, value)| Some((name, value.as_ref()?)));
            for (name, item) in defined {
                push_encoded_value(values.next(), operator, item, name);
            }
        }
        Value::List(items) => {
            let mut defined = items.iter().flatten().peekable();
            if defined.peek().is_none() && !operator.is_keyed() {
                return Ok(());
            }
            let out = values.next();
            push_key_prefix(out, operator, &variable.name);
            for (position, item) in defined.enumerate() {
                if position > 0 {
                    out.push(',');
                }
                push_encoded_value(out, operator, item, "");
            }
        }
        Value::Map(entries) => {
            let mut defined = entries.iter().filter_map(|(name, value)| Some((name, value.as_ref()?))).peekable();
            if defined.peek().is_none() && !operator.is_keyed() {
                return Ok(());
            }
            let out = values.next();
            push_key_prefix(out, operator, &variable.name);
            for (position, (name, item)) in defined.enumerate() {
                if position > 0 {
                    out.push(',');
                }
                encode::unreserved(out, name);
                out.push(',');
                push_encoded_value(out, operator, item, "");
            }
        }
    }
    Ok(())
}

/// Non-exploded composite values in keyed expressions always get `name=`,
/// even when nothing follows.
fn push_key_prefix(out: &mut String, operator: Operator, name: &str) {
    if operator.is_keyed() {
        encode::unreserved(out, name);
        out.push('=');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(template: &str, values: &[(&str, Value<'static>)]) -> String {
        let template = Template::compile(&rewrite_legacy_placeholders(template));
        template
            .expand(|name| {
                values.iter().find(|(key, _)| *key == name).map_or(Value::Absent, |(_, value)| value.clone())
            })
            .unwrap()
    }

    fn s(text: &'static str) -> Value<'static> {
        Value::Scalar(Cow::Borrowed(text))
    }

    fn list(items: &[Option<&'static str>]) -> Value<'static> {
        Value::List(items.iter().map(|item| item.map(Cow::Borrowed)).collect())
    }

    #[test]
    fn legacy_placeholders_need_a_lowercase_letter_and_one_more_word_character() {
        assert_eq!(rewrite_legacy_placeholders("/repos/:owner/:r/:Repo/:a1"), "/repos/{owner}/:r/:Repo/{a1}");
        assert_eq!(rewrite_legacy_placeholders("http://localhost:3000/:id_x"), "http://localhost:3000/{id_x}");
    }

    #[test]
    fn stray_braces_stay_and_literals_are_encoded() {
        assert_eq!(expand("/a b/{x/}y{/{}z", &[("x", s("1"))]), "/a%20b/y{/{}z");
        assert_eq!(expand("/{x}", &[("x", s("a/b c"))]), "/a%2Fb%20c");
    }

    #[test]
    fn every_operator() {
        let values = [("x", s("1")), ("y", s("a b")), ("list", list(&[Some("r"), None, Some("g")]))];
        assert_eq!(expand("{x,y}", &values), "1,a%20b");
        assert_eq!(expand("{+y}/{#y}", &values), "a%20b/#a%20b");
        assert_eq!(expand("X{.x,y}", &values), "X.1.a%20b");
        assert_eq!(expand("{/x,list}", &values), "/1/r,g");
        assert_eq!(expand("{;x,list*}", &values), ";x=1;list=r;list=g");
        assert_eq!(expand("{?x,list*}{&y}", &values), "?x=1&list=r&list=g&y=a%20b");
    }

    #[test]
    fn absent_variables_and_empty_composites_write_nothing_not_even_the_operator() {
        assert_eq!(expand("/x{?a,b}", &[("b", s("1"))]), "/x?b=1");
        assert_eq!(expand("/x{?a}", &[]), "/x");
        assert_eq!(expand("/x{/a,b}", &[("a", list(&[])), ("b", s("1"))]), "/x/1");
        assert_eq!(expand("/x{?a*}", &[("a", list(&[None]))]), "/x");
    }

    #[test]
    fn empty_values() {
        assert_eq!(expand("/x{?a}", &[("a", s(""))]), "/x?a=");
        assert_eq!(expand("/x{;a}", &[("a", s(""))]), "/x;a");
        assert_eq!(expand("/x{?a}", &[("a", list(&[]))]), "/x?a=");
        assert_eq!(expand("/x/{a}/y", &[("a", list(&[]))]), "/x//y");
        assert_eq!(expand("/x{a,b}", &[("a", s("")), ("b", s("2"))]), "/x,2");
        assert_eq!(expand("/x{/a,b}", &[("a", s("")), ("b", s("2"))]), "/x//2");
    }

    #[test]
    fn prefixes_count_utf16_units_and_ignore_composites() {
        assert_eq!(expand("{v:3}", &[("v", s("abcdef"))]), "abc");
        assert_eq!(expand("{v:0}", &[("v", s("abc"))]), "");
        assert_eq!(expand("{v:2}", &[("v", list(&[Some("ab"), Some("cd")]))]), "ab,cd");
        let template = Template::compile("{v:1}");
        assert_eq!(template.expand(|_| s("😀")), Err(EndpointError::MalformedUri));
    }

    #[test]
    fn maps_expand_as_pairs_or_exploded_assignments() {
        let map = Value::Map(vec![
            (Cow::Borrowed("a"), Some(Cow::Borrowed("1"))),
            (Cow::Borrowed("b"), None),
            (Cow::Borrowed("c d"), Some(Cow::Borrowed("2"))),
        ]);
        assert_eq!(expand("{?m}", &[("m", map.clone())]), "?m=a,1,c%20d,2");
        assert_eq!(expand("{/m*}", &[("m", map)]), "/a=1/c%20d=2");
        assert_eq!(expand("{?m}", &[("m", Value::Map(Vec::new()))]), "?m=");
        assert_eq!(expand("/x{/m}", &[("m", Value::Map(vec![(Cow::Borrowed("b"), None)]))]), "/x");
    }

    #[test]
    fn one_trailing_slash_is_dropped_but_not_a_lone_slash() {
        assert_eq!(expand("/a/{b}/", &[("b", s("c"))]), "/a/c");
        assert_eq!(expand("/", &[]), "/");
        assert_eq!(expand("/a//", &[]), "/a/");
    }

    #[test]
    fn consumed_names_are_upstreams() {
        let template = Template::compile("/{owner}{?a*,b}{/list*}{v:3}{?}");
        assert_eq!(template.consumed_names(), ["owner", "a*", "b", "list", "v:3", ""]);
        assert_eq!(template.lookup_names().collect::<Vec<_>>(), ["owner", "a", "b", "list", "v", ""]);
    }
}

/// The official RFC 6570 test suite (`tests/data/uritemplate-test`, with its licence)
/// through this upstream-compatible expander: which cases give the RFC's
/// answer, and that every other case is one of upstream's documented
/// deviations. (`pkg/endpoint`'s tests check the same 270 templates give
/// exactly `@octokit/endpoint`'s URLs.)
#[cfg(test)]
mod rfc6570_suite {
    use std::path::PathBuf;

    use serde_json::Value as Json;

    use super::*;

    fn suite_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/uritemplate-test")
    }

    fn js_string(value: &Json) -> String {
        match value {
            Json::String(text) => text.clone(),
            other => other.to_string(),
        }
    }

    fn value(json: Option<&Json>) -> Value<'static> {
        let item = |item: &Json| if item.is_null() { None } else { Some(Cow::Owned(js_string(item))) };
        match json {
            None | Some(Json::Null) => Value::Absent,
            Some(Json::Array(items)) => Value::List(items.iter().map(item).collect()),
            Some(Json::Object(entries)) => {
                Value::Map(entries.iter().map(|(key, entry)| (Cow::Owned(key.clone()), item(entry))).collect())
            }
            Some(scalar) => Value::Scalar(Cow::Owned(js_string(scalar))),
        }
    }

    /// Upstream's deviations, recognisable from the template and its result.
    fn deviation(
        template: &str,
        expanded: &str,
        accepted: &[&str],
        variables: &serde_json::Map<String, Json>,
    ) -> Option<&'static str> {
        if accepted.iter().any(|answer| answer.strip_suffix('/') == Some(expanded)) {
            return Some("one trailing '/' dropped");
        }
        let empty_composite = |name: &str| match variables.get(name) {
            Some(Json::Array(items)) => items.is_empty(),
            Some(Json::Object(entries)) => entries.is_empty(),
            _ => false,
        };
        let names: Vec<&str> = template
            .split(['{', '}', ',', '*', ':', '+', '#', '.', '/', ';', '?', '&', '='])
            .filter(|part| !part.is_empty())
            .collect();
        if (template.contains('+') || template.contains('#'))
            && expanded.as_bytes().windows(2).any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit())
        {
            let raw_percent = expanded
                .as_bytes()
                .windows(3)
                .any(|w| w[0] == b'%' && !(w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit()));
            if raw_percent || expanded.ends_with(|c: char| c.is_ascii_hexdigit()) {
                return Some("a '%' before one hex digit is kept raw in reserved expansion");
            }
        }
        if names.iter().any(|name| name.contains('%')) && expanded.contains("%25") {
            return Some("a percent-encoded variable name is encoded again as a key");
        }
        if names.iter().any(|name| empty_composite(name)) {
            return Some("empty lists and maps are not undefined");
        }
        if template.contains(':')
            && names.iter().any(|name| matches!(variables.get(*name), Some(Json::Array(_) | Json::Object(_))))
        {
            return Some("prefix on a composite value ignored");
        }
        None
    }

    #[test]
    fn official_suite() {
        let mut conforming = 0;
        let mut deviating = 0;
        let mut negative = 0;
        let mut unexplained = Vec::new();
        let mut reasons = std::collections::BTreeMap::new();
        let files =
            ["spec-examples.json", "spec-examples-by-section.json", "extended-tests.json", "negative-tests.json"];
        for file in files {
            let text = std::fs::read_to_string(suite_dir().join(file))
                .expect("the uritemplate-test suite beside the checkout");
            let groups: serde_json::Map<String, Json> = serde_json::from_str(&text).unwrap();
            for group in groups.values() {
                let variables = group["variables"].as_object().unwrap();
                for case in group["testcases"].as_array().unwrap() {
                    let template_text = case[0].as_str().unwrap();
                    let template = Template::compile(template_text);
                    let result = template.expand(|name| value(variables.get(name)));
                    let accepted: Vec<&str> = match &case[1] {
                        Json::String(one) => vec![one.as_str()],
                        Json::Array(many) => many.iter().filter_map(Json::as_str).collect(),
                        _ => {
                            // A template the RFC rejects: upstream never rejects one.
                            negative += 1;
                            continue;
                        }
                    };
                    let Ok(expanded) = result else {
                        // Upstream throws URIError where a prefix cuts a
                        // surrogate pair in two.
                        assert_eq!(result, Err(EndpointError::MalformedUri), "{template_text}");
                        deviating += 1;
                        *reasons.entry("a prefix that cuts a character throws").or_insert(0) += 1;
                        continue;
                    };
                    if accepted.contains(&expanded.as_str()) {
                        conforming += 1;
                    } else {
                        match deviation(template_text, &expanded, &accepted, variables) {
                            Some(reason) => {
                                deviating += 1;
                                *reasons.entry(reason).or_insert(0) += 1;
                            }
                            None => {
                                unexplained.push(format!("{file}: {template_text} gave {expanded}, RFC: {accepted:?}"))
                            }
                        }
                    }
                }
            }
        }
        assert!(unexplained.is_empty(), "not a documented deviation:\n{}", unexplained.join("\n"));
        assert_eq!(conforming + deviating + negative, 270);
        println!("{conforming} conforming, {deviating} deviating {reasons:?}, {negative} negative");
        assert_eq!((conforming, deviating, negative), (226, 8, 36), "suite counts changed: {reasons:?}");
    }
}
