//! The one error type of the policy layer: what is wrong with a policy file, and where.

/// A policy file that cannot be loaded. Every variant names the file; those found while reading
/// the YAML also carry the line and column, so an editor can jump to the spot.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Malformed YAML, an unknown key, a bad value: anything the parser can place.
    #[error("{path}:{line}:{column}: {message}")]
    Invalid { path: String, line: usize, column: usize, message: String },
    /// A YAML error the parser could not place (e.g. a second document in the file).
    #[error("{path}: {message}")]
    Unplaced { path: String, message: String },
    #[error(
        "{path}: role `{name}` is already defined in {first_path}; hint: role names must be unique across all policy files, rename one or merge them"
    )]
    DuplicateRole { path: String, name: String, first_path: String },
    #[error(
        "{path}: runner tier `{name}` is already defined in {first_path}; hint: tier names must be unique across all policy files, rename one or merge them"
    )]
    DuplicateTier { path: String, name: String, first_path: String },
    /// An allow rule that would match a job of any CI: names in one CI can spell names of another
    /// (`ci::NAMES_ACROSS_CIS`).
    #[error(
        "{path}: role `{role}`, allow rule {rule} {problem}, so it matches a job of any CI ({across}); hint: add `issuer: <name>` naming the broker's issuer whose jobs it is for",
        across = crate::ci::NAMES_ACROSS_CIS
    )]
    AllowRuleWithoutIssuer { path: String, role: String, rule: usize, problem: &'static str },
}

impl Error {
    /// The stable, machine-readable name of what is wrong.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Invalid { .. } | Self::Unplaced { .. } => "policy_invalid",
            Self::DuplicateRole { .. } => "duplicate_role",
            Self::DuplicateTier { .. } => "duplicate_tier",
            Self::AllowRuleWithoutIssuer { .. } => "allow_rule_without_issuer",
        }
    }

    pub(super) fn from_yaml(path: &str, err: &serde_yaml_ng::Error) -> Self {
        let text = err.to_string();
        match err.location() {
            Some(loc) => {
                // The YAML error repeats the position (at its end, or mid-way for syntax errors);
                // ours leads with it.
                let position = format!(" at line {} column {}", loc.line(), loc.column());
                let message = text.replacen(&position, "", 1);
                Self::Invalid { path: path.to_owned(), line: loc.line(), column: loc.column(), message }
            }
            None => Self::Unplaced { path: path.to_owned(), message: text },
        }
    }
}
