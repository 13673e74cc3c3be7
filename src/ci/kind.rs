//! Which CI issued a job's token: `CiKind`, generated with its dispatch from the one list in
//! `ci/mod.rs` (`every_ci!`), so that adding a CI is its folder and one line there. Here, what
//! is written once for every CI: parsing a name, and the serde form users write.

/// Declares `CiKind` from `variant => "name", module;` lines: the enum, `ALL` in the order given,
/// `name`, `module` and the dispatch `ci` to each module's `CI`.
macro_rules! every_ci {
    ($($variant:ident => $name:literal, $module:ident;)+) => {
        /// Which CI system issued a job's token. What the broker knows of each lives in its
        /// folder under `ci/`, reached through `CiKind::ci`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum CiKind {
            $($variant,)+
        }

        impl CiKind {
            /// Every CI, in the order `ci-creds get` looks for a job's token and `ci-creds
            /// policy` tries their telling claims.
            pub const ALL: [CiKind; [$($name),+].len()] = [$(Self::$variant),+];

            /// The CI's name wherever a user sees or writes it: an issuer's `kind`,
            /// `[webhooks.<name>]`, `/v1/webhooks/<name>`, metric labels, audit text and stored
            /// records.
            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)+
                }
            }

            /// The CI's folder under `src/ci/`, for the tests that check a new CI is wired
            /// everywhere "Adding a CI" (docs/development.md) says.
            pub fn module(self) -> &'static str {
                match self {
                    $(Self::$variant => stringify!($module),)+
                }
            }

            /// The one dispatch to what the broker knows of each CI.
            pub fn ci(self) -> &'static Ci {
                match self {
                    $(Self::$variant => &$module::CI,)+
                }
            }
        }
    };
}
pub(super) use every_ci;

use super::CiKind;

impl CiKind {
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// The names, as an error lists them: `github, gitlab, …`.
    pub fn names() -> String {
        Self::ALL.map(Self::name).join(", ")
    }
}

impl serde::Serialize for CiKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for CiKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Self::from_name(&name).ok_or_else(|| {
            serde::de::Error::custom(format_args!("unknown variant `{name}`, expected one of {}", quoted_names()))
        })
    }
}

fn quoted_names() -> String {
    CiKind::ALL.map(|kind| format!("`{}`", kind.name())).join(", ")
}
