//! Runner tiers: named classes of runners (hosted, release …) that rules can require, so a
//! rule says `runner_tier: hosted` instead of repeating which runners count as hosted.

use serde::de::{Deserialize, Deserializer};

use super::checked_section::from_map;
use super::condition::Condition;
use super::field::Ctx;
use super::rule::{ConditionsVisitor, Purpose};

/// One entry of `runner_tiers`.
#[derive(Clone, Debug)]
pub(super) struct RunnerTier {
    pub(super) name: String,
    /// A runner of this tier may serve one job only: the broker refuses a second.
    pub(super) single_use: bool,
    pub(super) conditions: Vec<Condition>,
}

impl RunnerTier {
    fn holds(&self, ctx: &Ctx<'_>) -> bool {
        self.conditions.iter().all(|c| c.holds(ctx))
    }
}

/// The first tier whose match holds; a tier match cannot test `runner_tier`, so none is known yet.
pub(super) fn first_match<'t>(tiers: &'t [RunnerTier], job: &crate::ci::Job) -> Option<&'t RunnerTier> {
    let ctx = Ctx { job, tier: None };
    tiers.iter().find(|t| t.holds(&ctx))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TierDoc {
    name: String,
    #[serde(default)]
    single_use: bool,
    #[serde(rename = "match")]
    conditions: TierMatch,
}

struct TierMatch(Vec<Condition>);

impl<'de> Deserialize<'de> for TierMatch {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ConditionsVisitor(Purpose::TierMatch)).map(TierMatch)
    }
}

impl<'de> Deserialize<'de> for RunnerTier {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_map(d, "a runner tier mapping with `name` and `match`", |doc: TierDoc| {
            if doc.name.is_empty() {
                return Err("a runner tier needs a non-empty `name`".to_owned());
            }
            Ok(RunnerTier { name: doc.name, single_use: doc.single_use, conditions: doc.conditions.0 })
        })
    }
}
