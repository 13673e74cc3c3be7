//! The values a condition accepts, as written in the policy: exact strings, and anchored globs
//! compiled when the policy loads.

use std::fmt;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};

/// Marks a value as an anchored glob instead of an exact string.
const GLOB_PREFIX: &str = "glob:";

/// The values a condition accepts: exact strings, and anchored globs compiled at load time.
#[derive(Clone, Debug)]
pub(super) struct Values {
    exact: Vec<Box<str>>,
    /// The glob patterns as written (without `glob:`), for explanations and lints.
    patterns: Vec<Box<str>>,
    globs: Option<GlobSet>,
}

impl Values {
    pub(super) fn matches(&self, actual: &str) -> bool {
        self.is_named(actual) || self.globs.as_ref().is_some_and(|g| g.is_match(actual))
    }

    /// Whether every listed value is one of `labels`, ignoring case, as CIs match their runners' labels.
    pub(super) fn all_among(&self, labels: &[String]) -> bool {
        self.exact.iter().all(|wanted| labels.iter().any(|label| label.eq_ignore_ascii_case(wanted)))
    }

    /// Whether any value is a glob.
    pub(super) fn has_globs(&self) -> bool {
        !self.patterns.is_empty()
    }

    /// Whether `actual` is listed literally, as dangerous triggers require.
    pub(super) fn is_named(&self, actual: &str) -> bool {
        self.exact.iter().any(|e| **e == *actual)
    }

    /// Whether a glob (not only a literal value) would accept `probe`.
    pub(super) fn glob_matches(&self, probe: &str) -> bool {
        self.globs.as_ref().is_some_and(|g| g.is_match(probe))
    }

    /// Every accepted value as written in the policy, globs with their `glob:` prefix.
    pub(super) fn texts(&self) -> Vec<String> {
        self.exact
            .iter()
            .map(|e| e.to_string())
            .chain(self.patterns.iter().map(|p| format!("{GLOB_PREFIX}{p}")))
            .collect()
    }

    fn build(texts: Vec<String>) -> Result<Self, String> {
        if texts.is_empty() {
            return Err("an empty list matches nothing; hint: list at least one value, or remove the condition".into());
        }
        let mut exact = Vec::new();
        let mut patterns = Vec::new();
        let mut globs = GlobSetBuilder::new();
        for text in texts {
            let Some(pattern) = text.strip_prefix(GLOB_PREFIX) else {
                exact.push(text.into_boxed_str());
                continue;
            };
            if pattern.is_empty() {
                return Err("`glob:` needs a pattern after it, e.g. `glob:refs/heads/release/*`".into());
            }
            // `*` must never cross `/`: otherwise `refs/heads/*` would also admit nested refs.
            let glob = GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("malformed glob: {e}; hint: `*` matches within one path segment, `**` across segments, `[...]` must be closed"))?;
            globs.add(glob);
            patterns.push(pattern.into());
        }
        let globs =
            if !patterns.is_empty() { Some(globs.build().map_err(|e| format!("malformed glob: {e}"))?) } else { None };
        Ok(Self { exact, patterns, globs })
    }
}

impl<'de> Deserialize<'de> for Values {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValuesVisitor)
    }
}

struct ValuesVisitor;

impl<'de> Visitor<'de> for ValuesVisitor {
    type Value = Values;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, integer or boolean, or a non-empty list of them")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Values, E> {
        Values::build(vec![v.to_owned()]).map_err(E::custom)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Values, E> {
        Values::build(vec![bool_text(v).to_owned()]).map_err(E::custom)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Values, E> {
        Values::build(vec![v.to_string()]).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Values, E> {
        Values::build(vec![v.to_string()]).map_err(E::custom)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Values, E> {
        Err(E::custom(FLOAT_HINT))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Values, E> {
        Err(E::custom(EMPTY_HINT))
    }

    fn visit_none<E: de::Error>(self) -> Result<Values, E> {
        Err(E::custom(EMPTY_HINT))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Values, A::Error> {
        let mut texts = Vec::new();
        while let Some(Scalar(text)) = seq.next_element()? {
            texts.push(text);
        }
        Values::build(texts).map_err(de::Error::custom)
    }
}

const FLOAT_HINT: &str = "a decimal number cannot be compared exactly; hint: quote it as a string";
// A bare `ref:` would otherwise vanish and silently widen the rule.
const EMPTY_HINT: &str = "the condition has no value; hint: give a value, or remove the key";

/// One list element: a scalar in its text form.
struct Scalar(String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, integer or boolean (lists may not nest)")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar(v.to_owned()))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar(bool_text(v).to_owned()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        Ok(Scalar(v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Scalar, E> {
        Err(E::custom(FLOAT_HINT))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Err(E::custom("a list element has no value; hint: remove it or give a value"))
    }
}

/// A boolean as policy values and job flags are compared: `true` or `false`.
pub(super) fn bool_text(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}
