//! Reading the length-prefixed wire format (see the crate documentation).

use std::borrow::Cow;

use strata_core::endpoint::template::Value;

/// Why a payload could not be read. JavaScript builds every payload, so any
/// of these is a bug in the facade, reported as an error rather than a panic.
#[derive(Debug)]
pub(crate) struct WireError(pub(crate) &'static str);

/// A cursor over a payload.
pub(crate) struct Reader<'a> {
    rest: &'a str,
}

impl<'a> Reader<'a> {
    /// Starts reading `payload`.
    pub(crate) fn new(payload: &'a str) -> Self {
        Self { rest: payload }
    }

    /// Whether everything was read.
    #[cfg_attr(not(feature = "endpoint"), allow(dead_code))]
    pub(crate) fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    fn tag(&mut self) -> Result<u8, WireError> {
        let tag = *self.rest.as_bytes().first().ok_or(WireError("payload ended early"))?;
        self.rest = self.rest.get(1..).ok_or(WireError("tag is not ASCII"))?;
        Ok(tag)
    }

    fn number(&mut self) -> Result<usize, WireError> {
        let bytes = self.rest.as_bytes();
        let mut number: usize = 0;
        let mut index = 0;
        while let Some(&byte) = bytes.get(index) {
            match byte {
                b'0'..=b'9' => {
                    number = number
                        .checked_mul(10)
                        .and_then(|number| number.checked_add(usize::from(byte - b'0')))
                        .ok_or(WireError("length too large"))?;
                }
                b':' if index > 0 => {
                    self.rest = self.rest.get(index + 1..).ok_or(WireError("bad length"))?;
                    return Ok(number);
                }
                _ => break,
            }
            index += 1;
        }
        Err(WireError("bad length"))
    }

    fn text(&mut self) -> Result<&'a str, WireError> {
        let units = self.number()?;
        // JavaScript counts UTF-16 code units; ASCII text (the usual case)
        // has as many bytes, so only other text needs counting.
        let end = match self.rest.as_bytes().get(..units) {
            Some(prefix) if prefix.is_ascii() => units,
            _ => utf8_length_of_utf16_units(self.rest, units)?,
        };
        let text = self.rest.get(..end).ok_or(WireError("string shorter than its length"))?;
        self.rest = self.rest.get(end..).ok_or(WireError("string shorter than its length"))?;
        Ok(text)
    }

    /// Reads `s…`.
    pub(crate) fn string(&mut self) -> Result<&'a str, WireError> {
        match self.tag()? {
            b's' => self.text(),
            _ => Err(WireError("expected a string")),
        }
    }

    #[cfg_attr(not(feature = "endpoint"), allow(dead_code))]
    fn optional_string(&mut self) -> Result<Option<Cow<'a, str>>, WireError> {
        match self.tag()? {
            b'n' => Ok(None),
            b's' => Ok(Some(Cow::Borrowed(self.text()?))),
            _ => Err(WireError("expected a string or n")),
        }
    }

    /// Reads `l…` of strings (no `n` items).
    pub(crate) fn strings(&mut self) -> Result<Vec<&'a str>, WireError> {
        match self.tag()? {
            b'l' => (0..self.number()?).map(|_| self.string()).collect(),
            _ => Err(WireError("expected a list")),
        }
    }

    /// Reads any value.
    #[cfg_attr(not(feature = "endpoint"), allow(dead_code))]
    pub(crate) fn value(&mut self) -> Result<Value<'a>, WireError> {
        Ok(match self.tag()? {
            b'n' => Value::Absent,
            b's' => Value::Scalar(Cow::Borrowed(self.text()?)),
            b'l' => Value::List((0..self.number()?).map(|_| self.optional_string()).collect::<Result<_, _>>()?),
            b'm' => Value::Map(
                (0..self.number()?)
                    .map(|_| Ok((Cow::Borrowed(self.string()?), self.optional_string()?)))
                    .collect::<Result<_, WireError>>()?,
            ),
            _ => return Err(WireError("unknown value tag")),
        })
    }
}

/// The byte length of the first `units` UTF-16 code units of `text`.
fn utf8_length_of_utf16_units(text: &str, units: usize) -> Result<usize, WireError> {
    let mut counted = 0;
    for (offset, character) in text.char_indices() {
        if counted == units {
            return Ok(offset);
        }
        counted += character.len_utf16();
    }
    if counted == units { Ok(text.len()) } else { Err(WireError("string shorter than its length")) }
}

/// Appends a number in decimal (without `core::fmt`, which would weigh more
/// than everything else in the WebAssembly build).
pub(crate) fn write_number(out: &mut String, mut number: usize) {
    let mut digits = [0u8; 20];
    let mut count = 0;
    loop {
        digits[count] = b'0' + (number % 10) as u8;
        count += 1;
        number /= 10;
        if number == 0 {
            break;
        }
    }
    for &digit in digits.iter().take(count).rev() {
        out.push(char::from(digit));
    }
}

/// Appends `s<len>:<text>` to `out`.
pub(crate) fn write_string(out: &mut String, text: &str) {
    let units: usize = text.chars().map(char::len_utf16).sum();
    out.push('s');
    write_number(out, units);
    out.push(':');
    out.push_str(text);
}

/// Appends `l<count>:` and the strings.
pub(crate) fn write_strings<'a>(out: &mut String, list: impl ExactSizeIterator<Item = &'a str>) {
    out.push('l');
    write_number(out, list.len());
    out.push(':');
    list.for_each(|text| write_string(out, text));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_kind_of_value() {
        let mut reader = Reader::new("ns3:abcl2:s1:xnm1:s1:ks2:😀s0:");
        assert_eq!(reader.value().unwrap(), Value::Absent);
        assert_eq!(reader.value().unwrap(), Value::Scalar("abc".into()));
        assert_eq!(reader.value().unwrap(), Value::List(vec![Some("x".into()), None]));
        assert_eq!(reader.value().unwrap(), Value::Map(vec![("k".into(), Some("😀".into()))]));
        assert_eq!(reader.string().unwrap(), "");
        assert!(reader.is_empty());
    }

    #[test]
    fn short_strings_are_errors() {
        assert!(Reader::new("s5:abc").string().is_err());
        assert!(Reader::new("s1:").string().is_err());
        assert!(Reader::new("x").value().is_err());
    }

    #[test]
    fn writes_numbers_and_lists() {
        let mut out = String::new();
        write_number(&mut out, 0);
        write_number(&mut out, 1204);
        write_strings(&mut out, ["a", ""].into_iter());
        assert_eq!(out, "01204l2:s1:as0:");
    }

    #[test]
    fn writes_utf16_lengths() {
        let mut out = String::new();
        write_string(&mut out, "a😀");
        assert_eq!(out, "s3:a😀");
    }
}
