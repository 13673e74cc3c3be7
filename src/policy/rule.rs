//! A rule, and a runner tier's match: a mapping of conditions that must all hold, read so that
//! nothing in it can widen or confuse what it matches.

use std::fmt;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, Visitor};

use super::condition::Condition;
use super::field::Field;
use super::values::Values;

/// Conditions that must all hold for the rule to match; never empty.
#[derive(Clone, Debug)]
pub struct Rule {
    pub(super) conditions: Vec<Condition>,
}

/// Issuer names no config would give, to tell an `issuer` glob that admits any issuer.
const ANY_ISSUER: [&str; 2] = ["ci-creds-probe-issuer", "someone-else"];

impl Rule {
    /// Why the rule is not bound to the jobs of named issuers, if it is not: without `issuer`
    /// it matches a job of any CI, whose names can spell another CI's repository.
    pub(super) fn unbound_issuer(&self) -> Option<&'static str> {
        match self.conditions.iter().find(|c| c.field == Field::Issuer) {
            None => Some("names no `issuer`"),
            Some(c) if ANY_ISSUER.iter().all(|probe| c.values.glob_matches(probe)) => {
                Some("has an `issuer` glob that admits any issuer")
            }
            Some(_) => None,
        }
    }
}

/// Where a set of conditions is used; tiers are computed from conditions, so they cannot
/// themselves test a tier.
#[derive(Clone, Copy)]
pub(super) enum Purpose {
    Rule,
    TierMatch,
}

impl<'de> Deserialize<'de> for Rule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let conditions = d.deserialize_map(ConditionsVisitor(Purpose::Rule))?;
        Ok(Rule { conditions })
    }
}

/// Reads a mapping of condition keys to values, rejecting what would widen or confuse a rule.
pub(super) struct ConditionsVisitor(pub(super) Purpose);

impl<'de> Visitor<'de> for ConditionsVisitor {
    type Value = Vec<Condition>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping of conditions such as `repository: octo-org/octo-repo`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<Condition>, A::Error> {
        let mut conditions: Vec<Condition> = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed(self.0))? {
            match key {
                Key::Field(field) => {
                    if conditions.iter().any(|c| c.field == field) {
                        return Err(de::Error::custom(format!("`{field}` is given twice")));
                    }
                    let values: Values = map.next_value()?;
                    if field == Field::RunnerLabels && values.has_globs() {
                        return Err(de::Error::custom(
                            "`runner_labels` lists label names, not globs; hint: it holds when the runner has every label listed",
                        ));
                    }
                    conditions.push(Condition { field, values });
                }
                Key::Claims => {
                    if conditions.iter().any(|c| matches!(c.field, Field::Claim(_))) {
                        return Err(de::Error::duplicate_field("claims"));
                    }
                    let ClaimConditions(claims) = map.next_value()?;
                    conditions.extend(claims);
                }
            }
        }
        if conditions.is_empty() {
            return Err(de::Error::custom(match self.0 {
                Purpose::Rule => {
                    "a rule with no condition would match every job; hint: add conditions such as `repository:` and `ref:`"
                }
                Purpose::TierMatch => {
                    "a tier `match` with no condition would put every job in this tier; hint: add conditions such as `runner_environment:`"
                }
            }));
        }
        Ok(conditions)
    }
}

enum Key {
    Field(Field),
    Claims,
}

struct KeySeed(Purpose);

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeySeed {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a condition key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        if v == "claims" {
            return Ok(Key::Claims);
        }
        match (Field::from_key(v), self.0) {
            (Some(Field::RunnerTier), Purpose::TierMatch) => Err(E::custom(
                "`runner_tier` cannot be used in a runner tier's `match`; hint: tiers are computed from the other conditions, first match wins",
            )),
            (Some(field), _) => Ok(Key::Field(field)),
            (None, _) => Err(E::unknown_field(v, Field::KEYS)),
        }
    }
}

/// `claims: {name: value}`; `sub` is refused because it packs several claims into one string
/// whose layout differs per CI, so matching it invites mistakes.
struct ClaimConditions(Vec<Condition>);

impl<'de> Deserialize<'de> for ClaimConditions {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ClaimsVisitor;
        impl<'de> Visitor<'de> for ClaimsVisitor {
            type Value = ClaimConditions;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping of claim names to values, such as `{ actor: octocat }`")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ClaimConditions, A::Error> {
                let mut conditions: Vec<Condition> = Vec::new();
                while let Some(ClaimName(name)) = map.next_key()? {
                    if conditions.iter().any(|c| matches!(&c.field, Field::Claim(n) if *n == name)) {
                        return Err(de::Error::custom(format!("claim `{name}` is given twice")));
                    }
                    let values: Values = map.next_value()?;
                    conditions.push(Condition { field: Field::Claim(name), values });
                }
                if conditions.is_empty() {
                    return Err(de::Error::custom(
                        "`claims:` is empty; hint: name at least one claim, or remove the key",
                    ));
                }
                Ok(ClaimConditions(conditions))
            }
        }
        d.deserialize_map(ClaimsVisitor)
    }
}

struct ClaimName(Box<str>);

impl<'de> Deserialize<'de> for ClaimName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct NameVisitor;
        impl Visitor<'_> for NameVisitor {
            type Value = ClaimName;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a claim name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ClaimName, E> {
                match v {
                    "sub" => Err(E::custom(
                        "`sub` cannot be a condition: policy must use the individual claims; hint: match `repository`, `ref`, `environment` … or `claims.<name>` instead",
                    )),
                    "" => Err(E::custom("a claim name cannot be empty")),
                    _ => Ok(ClaimName(v.into())),
                }
            }
        }
        d.deserialize_str(NameVisitor)
    }
}
