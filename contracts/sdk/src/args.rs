//! The argument and return convention of contract functions, and the byte-list encoding
//! of docs/abi.md.
//!
//! Clients send every argument as bytes. An argument is decoded as JSON into the
//! parameter's type; if that fails and the bytes are UTF-8, the raw text is decoded as if
//! it were a JSON string, with numbers and booleans parsed from it. So `hello` and
//! `"hello"` both give the `String` `hello`, and `100` gives the `u64` 100. A function's
//! result is its return value as JSON (`()` gives `null`).

use serde::de::{self, DeserializeOwned, Deserializer, IntoDeserializer, Visitor};
use serde::{Serialize, forward_to_deserialize_any};

use crate::{Error, Result};

pub use runnel_abi::encode_byte_list;

/// Decodes a byte list (see [`encode_byte_list`]). Truncated input, lengths that run past
/// the end and trailing bytes are errors.
pub fn decode_byte_list(bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
    runnel_abi::decode_byte_list(bytes).map_err(|e| Error::new(e.to_string()))
}

/// Decodes one argument by the convention of this module. The error is the reason only;
/// the caller adds which function and argument it was.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> core::result::Result<T, String> {
    let json_error = match serde_json::from_slice::<T>(bytes) {
        Ok(value) => return Ok(value),
        Err(e) => e,
    };
    let Ok(text) = core::str::from_utf8(bytes) else {
        return Err(json_error.to_string());
    };
    match T::deserialize(RawText(text)) {
        Ok(value) => Ok(value),
        // Which reason helps more: valid JSON of the wrong shape, or text that was meant as
        // JSON, is best explained by the JSON error; anything else by the raw-text one
        // (`abc` for a number: "invalid digit found in string").
        Err(raw_error) => {
            let meant_as_json = json_error.classify() == serde_json::error::Category::Data
                || text.trim_start().starts_with(['{', '[', '"']);
            Err(if meant_as_json {
                json_error.to_string()
            } else {
                raw_error.to_string()
            })
        }
    }
}

/// Encodes a function's return value (JSON).
pub fn encode_return<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value)
        .map_err(|e| Error::new(format!("could not encode the return value: {e}")))
}

/// Raw argument text seen as a JSON string, with scalars parsed from it.
struct RawText<'a>(&'a str);

type RawError = de::value::Error;

macro_rules! parse_scalar {
    ($($method:ident => $ty:ty, $visit:ident;)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> core::result::Result<V::Value, RawError> {
                match self.0.trim().parse::<$ty>() {
                    Ok(v) => visitor.$visit(v),
                    Err(e) => Err(de::Error::custom(e)),
                }
            }
        )*
    };
}

impl<'de> Deserializer<'de> for RawText<'de> {
    type Error = RawError;

    fn deserialize_any<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> core::result::Result<V::Value, RawError> {
        visitor.visit_borrowed_str(self.0)
    }

    parse_scalar! {
        deserialize_bool => bool, visit_bool;
        deserialize_i8 => i8, visit_i8;
        deserialize_i16 => i16, visit_i16;
        deserialize_i32 => i32, visit_i32;
        deserialize_i64 => i64, visit_i64;
        deserialize_i128 => i128, visit_i128;
        deserialize_u8 => u8, visit_u8;
        deserialize_u16 => u16, visit_u16;
        deserialize_u32 => u32, visit_u32;
        deserialize_u64 => u64, visit_u64;
        deserialize_u128 => u128, visit_u128;
        deserialize_f32 => f32, visit_f32;
        deserialize_f64 => f64, visit_f64;
    }

    fn deserialize_bytes<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> core::result::Result<V::Value, RawError> {
        visitor.visit_borrowed_bytes(self.0.as_bytes())
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> core::result::Result<V::Value, RawError> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> core::result::Result<V::Value, RawError> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> core::result::Result<V::Value, RawError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> core::result::Result<V::Value, RawError> {
        // A unit variant by name, as JSON `"Variant"` would give.
        self.0
            .into_deserializer()
            .deserialize_enum(name, variants, visitor)
    }

    forward_to_deserialize_any! {
        char str string unit unit_struct seq tuple tuple_struct map struct identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn a_malformed_byte_list_is_a_contract_error_with_the_reason() {
        let mut trailing = encode_byte_list(&["ab", "c"]);
        trailing.push(0);
        assert_eq!(
            decode_byte_list(&trailing).unwrap_err().message(),
            "byte list: 1 bytes after the last item"
        );
    }

    #[test]
    fn strings_decode_from_raw_text_or_json() {
        assert_eq!(decode::<String>(b"hello").unwrap(), "hello");
        assert_eq!(decode::<String>(b"\"hello\"").unwrap(), "hello");
        assert_eq!(decode::<String>(b"").unwrap(), "");
        assert_eq!(decode::<String>(b"100").unwrap(), "100");
        assert_eq!(decode::<String>(br#"{"a":1}"#).unwrap(), r#"{"a":1}"#);
        assert_eq!(decode::<String>(b"hello, runnel").unwrap(), "hello, runnel");
        assert!(decode::<String>(&[0xff, 0xfe]).is_err());
    }

    #[test]
    fn numbers_decode_from_raw_text_or_json() {
        assert_eq!(decode::<u64>(b"100").unwrap(), 100);
        assert_eq!(
            decode::<u64>(b"\"100\"").unwrap_err(),
            "invalid type: string \"100\", expected u64 at line 1 column 5"
        );
        assert_eq!(
            decode::<u64>(b"abc").unwrap_err(),
            "invalid digit found in string"
        );
        assert_eq!(
            decode::<u64>(b"").unwrap_err(),
            "cannot parse integer from empty string"
        );
        assert!(decode::<u64>(b"-5").unwrap_err().contains("expected u64"));
        assert_eq!(decode::<u64>(b"18446744073709551615").unwrap(), u64::MAX);
        assert!(decode::<u64>(b"18446744073709551616").is_err());
        assert_eq!(
            decode::<u32>(b"-1").unwrap_err(),
            "invalid value: integer `-1`, expected u32 at line 1 column 2"
        );
        assert_eq!(decode::<i32>(b"-7").unwrap(), -7);
        assert_eq!(decode::<f64>(b"1.5").unwrap(), 1.5);
        assert!(decode::<bool>(b"true").unwrap());
        assert_eq!(
            decode::<bool>(b"yes").unwrap_err(),
            "provided string was not `true` or `false`"
        );
    }

    #[test]
    fn structures_decode_from_json() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Pair {
            a: u32,
        }
        #[derive(Deserialize, Debug, PartialEq)]
        enum Color {
            Red,
        }
        #[derive(Deserialize, Debug, PartialEq)]
        struct Name(String);
        assert_eq!(decode::<Pair>(br#"{"a": 1}"#).unwrap(), Pair { a: 1 });
        assert_eq!(
            decode::<Pair>(br#"{"a": 1"#).unwrap_err(),
            "EOF while parsing an object at line 1 column 7"
        );
        assert!(
            decode::<Pair>(br#"{"b": 1}"#)
                .unwrap_err()
                .contains("missing field `a`")
        );
        assert!(
            decode::<Pair>(b"a=1")
                .unwrap_err()
                .contains("expected struct Pair")
        );
        assert_eq!(decode::<Vec<u8>>(b"[1,2]").unwrap(), vec![1, 2]);
        assert_eq!(decode::<Option<String>>(b"null").unwrap(), None);
        assert_eq!(decode::<Option<String>>(b"x").unwrap(), Some("x".into()));
        assert_eq!(decode::<Color>(b"Red").unwrap(), Color::Red);
        assert_eq!(decode::<Color>(b"\"Red\"").unwrap(), Color::Red);
        assert!(
            decode::<Color>(b"Blue")
                .unwrap_err()
                .contains("unknown variant")
        );
        assert_eq!(decode::<Name>(b"bob").unwrap(), Name("bob".into()));
        assert_eq!(decode::<char>(b"x").unwrap(), 'x');
    }

    #[test]
    fn return_values_are_json() {
        assert_eq!(encode_return(&()).unwrap(), b"null");
        assert_eq!(encode_return(&Some("v")).unwrap(), b"\"v\"");
        assert_eq!(encode_return(&7u64).unwrap(), b"7");
    }
}
