//! Reading a section of the policy file into a checked value, with errors placed at it.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserializer, MapAccess, Visitor};

/// Deserializes `Raw` from a mapping and converts it inside the map visitor, so a conversion
/// error is placed at the mapping rather than at the end of the enclosing list.
pub(super) fn from_map<'de, D, Raw, T>(
    d: D,
    expecting: &'static str,
    convert: fn(Raw) -> Result<T, String>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    Raw: Deserialize<'de>,
{
    struct MapVisitor<Raw, T> {
        expecting: &'static str,
        convert: fn(Raw) -> Result<T, String>,
        raw: PhantomData<Raw>,
    }
    impl<'de, Raw: Deserialize<'de>, T> Visitor<'de> for MapVisitor<Raw, T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.expecting)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            let raw = Raw::deserialize(MapAccessDeserializer::new(map))?;
            (self.convert)(raw).map_err(de::Error::custom)
        }
    }
    d.deserialize_map(MapVisitor { expecting, convert, raw: PhantomData })
}
