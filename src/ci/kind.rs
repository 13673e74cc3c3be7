//! Which CI issued a job's token: `CiKind`, generated with its dispatch from the one list in
//! `ci/mod.rs` (`every_ci!`), so that adding a CI is its folder and one line there. Here, what
//! is written once for every CI: parsing a name, and listing the names.

/// Declares `CiKind` from `variant => "name", module;` lines: the enum, `ALL` in the order given,
/// `name`, `module` and the dispatch `ci` to each module's `CI`.
macro_rules! every_ci {
    ($($variant:ident => $name:literal, $module:ident;)+) => {
        /// Which CI system issued a job's token. What the broker knows of each lives in its
        /// folder under `ci/`, reached through `CiKind::ci`.
        /// Users write and see it by its name (`CiKind::name`), as serde reads and writes it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
        pub enum CiKind {
            $(#[serde(rename = $name)] $variant,)+
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

#[cfg(test)]
mod tests {
    use super::CiKind;

    #[test]
    fn a_kind_is_read_and_written_by_its_name_and_an_unknown_one_lists_them() {
        for kind in CiKind::ALL {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.name()));
            assert_eq!(serde_json::from_str::<CiKind>(&json).unwrap(), kind);
        }
        let unknown = serde_json::from_str::<CiKind>("\"teamcity\"").unwrap_err().to_string();
        let listed = CiKind::ALL.map(|kind| format!("`{}`", kind.name())).join(", ");
        assert!(unknown.contains(&format!("unknown variant `teamcity`, expected one of {listed}")), "{unknown}");
    }
}
