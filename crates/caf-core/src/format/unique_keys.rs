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

use super::json::{with_unlimited_seed, Seed};
use super::model::JsonObject;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::fmt;

/// Any JSON value, refusing duplicate keys at every level.
pub(crate) fn value<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    with_unlimited_seed(|seed| d.deserialize_any(seed))
}

/// A JSON object, refusing duplicate keys at every level.
pub(crate) fn object<'de, D: Deserializer<'de>>(d: D) -> Result<JsonObject, D::Error> {
    struct Object<'a>(Seed<'a>);
    impl<'de> Visitor<'de> for Object<'_> {
        type Value = JsonObject;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a map")
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<JsonObject, A::Error> {
            self.0.object(map)
        }
    }
    with_unlimited_seed(|seed| d.deserialize_map(Object(seed)))
}

/// An array of JSON values, refusing duplicate keys at every level.
pub(crate) fn values<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Value>, D::Error> {
    struct Values<'a>(Seed<'a>);
    impl<'de> Visitor<'de> for Values<'_> {
        type Value = Vec<Value>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a sequence")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Value>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
            while let Some(v) = seq.next_element_seed(self.0)? {
                out.push(v);
            }
            Ok(out)
        }
    }
    with_unlimited_seed(|seed| d.deserialize_seq(Values(seed)))
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
