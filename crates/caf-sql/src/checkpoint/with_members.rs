//! Parsing an item straight from its row: the payload (the item's JSON object less the members
//! its columns hold) with those members put back in front, typed, with no tree of values in
//! between and no joined text.
//!
//! [`WithMembers`] is a serde `Deserializer` over the payload's text whose map yields the
//! column members first, then the payload's own. A member given as JSON text is parsed by its
//! own parser, which must end where the text ends, so a column value can never add members of
//! its own; a member the payload holds too is a duplicate for the item's type to refuse.

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::Deserializer;
use serde_json::Error;
use std::fmt;

/// A member's value, from a column.
pub(crate) enum Member<'a> {
    /// A string, as it is (a thought's `content`).
    Text(String),
    /// One JSON value's text (a tool call's `args` or `result`).
    Json(&'a str),
}

/// The payload `payload` with `first` (names and values) in front of its members.
pub(crate) struct WithMembers<'a, const N: usize> {
    payload: &'a str,
    first: [Option<(&'static str, Member<'a>)>; N],
}

impl<'a, const N: usize> WithMembers<'a, N> {
    pub fn new(payload: &'a str, first: [Option<(&'static str, Member<'a>)>; N]) -> Self {
        Self { payload, first }
    }

    /// Parses the item: the whole payload, and nothing after it.
    pub fn parse<T: de::DeserializeOwned>(self) -> Result<T, Error> {
        let mut payload = serde_json::Deserializer::from_str(self.payload);
        let members = self.first.into_iter().flatten();
        let item = T::deserialize(Outer {
            payload: &mut payload,
            members,
        })?;
        payload.end()?;
        Ok(item)
    }
}

/// The deserializer handed to the item's type: any request is answered with a map.
struct Outer<'p, 'a, I> {
    payload: &'p mut serde_json::Deserializer<serde_json::de::StrRead<'a>>,
    members: I,
}

impl<'de, 'p, I> Deserializer<'de> for Outer<'p, 'de, I>
where
    I: Iterator<Item = (&'static str, Member<'de>)>,
{
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.payload.deserialize_map(Front {
            visitor,
            members: self.members,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

/// The visitor given to the payload's parser: it hands the item's visitor a map that starts
/// with the members.
struct Front<V, I> {
    visitor: V,
    members: I,
}

impl<'de, V, I> Visitor<'de> for Front<V, I>
where
    V: Visitor<'de>,
    I: Iterator<Item = (&'static str, Member<'de>)>,
{
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object (an item's stored payload)")
    }

    fn visit_map<M: MapAccess<'de>>(self, rest: M) -> Result<V::Value, M::Error> {
        self.visitor.visit_map(Chained {
            members: self.members,
            pending: None,
            rest,
        })
    }
}

/// The members, then the payload's map.
struct Chained<'a, I, M> {
    members: I,
    pending: Option<Member<'a>>,
    rest: M,
}

impl<'de, I, M> MapAccess<'de> for Chained<'de, I, M>
where
    I: Iterator<Item = (&'static str, Member<'de>)>,
    M: MapAccess<'de>,
{
    type Error = M::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, M::Error> {
        match self.members.next() {
            Some((name, value)) => {
                self.pending = Some(value);
                seed.deserialize(BorrowedStrDeserializer::new(name))
                    .map(Some)
            }
            None => self.rest.next_key_seed(seed),
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, M::Error> {
        match self.pending.take() {
            Some(Member::Text(s)) => seed.deserialize(StringDeserializer::new(s)),
            Some(Member::Json(text)) => {
                let mut own = serde_json::Deserializer::from_str(text);
                let value = seed
                    .deserialize(&mut own)
                    .and_then(|v| own.end().map(|()| v));
                value.map_err(de::Error::custom)
            }
            None => self.rest.next_value_seed(seed),
        }
    }
}
