//! Free-form JSON values that refuse duplicate keys, for the typed model's `deserialize_with`.
//!
//! serde derive already refuses a struct field given twice, but `serde_json::Value` and
//! `serde_json::Map` keep the last of two equal keys without a word. The model's free-form fields
//! (variables, tool arguments and results, extensions, …) are read through these functions
//! instead, so that a checkpoint typed straight from bytes ([`super::decode_known`]) is as strict
//! about keys as [`super::json::parse_strict`]. Otherwise they behave like serde's own
//! `Deserialize` for `Value`, `Map` and `Vec` (the same values, the same words when a value has
//! the wrong type), so reading from an already parsed `Value`, which cannot hold a duplicate, is
//! unchanged.

use super::model::JsonObject;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Number, Value};
use std::fmt;

/// Builds a `Value` like serde_json's own visitor, but refuses an object that repeats a key.
struct UniqueValue;

impl<'de> Visitor<'de> for UniqueValue {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element_seed(Seed)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        UniqueObject.visit_map(map).map(Value::Object)
    }
}

/// Builds a JSON object, refusing a repeated key.
struct UniqueObject;

impl<'de> Visitor<'de> for UniqueObject {
    type Value = JsonObject;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonObject, A::Error> {
        let mut out = JsonObject::new();
        while let Some(key) = map.next_key::<String>()? {
            match out.entry(key) {
                Entry::Vacant(slot) => {
                    slot.insert(map.next_value_seed(Seed)?);
                }
                Entry::Occupied(slot) => {
                    return Err(de::Error::custom(format_args!(
                        "duplicate key {:?}",
                        slot.key()
                    )));
                }
            }
        }
        Ok(out)
    }
}

#[derive(Clone, Copy)]
struct Seed;

impl<'de> de::DeserializeSeed<'de> for Seed {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(UniqueValue)
    }
}

/// Any JSON value, refusing duplicate keys at every level.
pub(crate) fn value<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    d.deserialize_any(UniqueValue)
}

/// A JSON object, refusing duplicate keys at every level.
pub(crate) fn object<'de, D: Deserializer<'de>>(d: D) -> Result<JsonObject, D::Error> {
    d.deserialize_map(UniqueObject)
}

/// An array of JSON values, refusing duplicate keys at every level.
pub(crate) fn values<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Value>, D::Error> {
    struct Values;
    impl<'de> Visitor<'de> for Values {
        type Value = Vec<Value>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a sequence")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Value>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
            while let Some(v) = seq.next_element_seed(Seed)? {
                out.push(v);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(Values)
}

/// A present value as `Some`, `null` included (with `#[serde(default)]`, only an absent member
/// is `None`), so that a result of `null` survives a round trip; duplicate keys are refused.
pub(crate) fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    value(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Holder {
        #[serde(deserialize_with = "value")]
        v: Value,
        #[serde(default, deserialize_with = "object")]
        o: JsonObject,
        #[serde(default, deserialize_with = "values")]
        a: Vec<Value>,
    }

    #[test]
    fn reads_like_serde_json_without_duplicates() {
        let text = r#"{"v": {"x": [1, -2, 3.5, "s", null, true, {"y": {}}]}, "o": {"k": [1]},
            "a": [{"z": 1}, [], 18446744073709551615]}"#;
        let h: Holder = serde_json::from_str(text).unwrap();
        let plain: Value = serde_json::from_str(text).unwrap();
        assert_eq!(h.v, plain["v"]);
        assert_eq!(Value::Object(h.o.clone()), plain["o"]);
        assert_eq!(Value::Array(h.a.clone()), plain["a"]);
        // From an already parsed value, too.
        assert_eq!(Holder::deserialize(&plain).unwrap(), h);
    }

    #[test]
    fn refuses_a_repeated_key_at_any_depth() {
        for text in [
            r#"{"v": {"x": 1, "x": 2}}"#,
            r#"{"v": [[{"a": {"b": 1, "b": 1}}]]}"#,
            r#"{"v": 1, "o": {"k": 1, "k": 2}}"#,
            r#"{"v": 1, "o": {"k": {"j": 1, "j": 2}}}"#,
            r#"{"v": 1, "a": [{"q": 1, "q": 2}]}"#,
        ] {
            let err = serde_json::from_str::<Holder>(text).unwrap_err();
            assert!(err.to_string().contains("duplicate key"), "{text}: {err}");
        }
        // serde_json's own Value keeps the last one: this is what the module is for.
        let v: Value = serde_json::from_str(r#"{"x": 1, "x": 2}"#).unwrap();
        assert_eq!(v["x"], 2);
    }

    #[test]
    fn present_keeps_null() {
        #[derive(Deserialize)]
        struct R {
            #[serde(default, deserialize_with = "present")]
            r: Option<Value>,
        }
        let r: R = serde_json::from_str(r#"{"r": null}"#).unwrap();
        assert_eq!(r.r, Some(Value::Null));
        let r: R = serde_json::from_str("{}").unwrap();
        assert_eq!(r.r, None);
    }
}
