//! Jenkins names a job by its URL below the controller's root: `job/<item>/job/<item>/…/`, each
//! item name URL-encoded. The issuer names the controller (`<root>oidc`) and, for a credential
//! kept in a folder, that folder (`<root>oidc/job/<folder>`).

use percent_encoding::percent_decode_str;

/// A controller's root URL (ending in `/`) and the items of the folder an issuer speaks for
/// (none for the controller's own issuer).
#[derive(Debug, PartialEq, Eq)]
pub struct Controller<'a> {
    pub root: &'a str,
    pub folder: Vec<String>,
}

impl<'a> Controller<'a> {
    /// The controller and folder an issuer URL names, or `None` if it is not a Jenkins issuer.
    /// The first `/oidc` followed by nothing or by a folder's path is the one the plugin added:
    /// the root URL may itself hold `/oidc` (a controller served below `/oidc/`).
    pub fn of_issuer(iss: &'a str) -> Option<Self> {
        iss.match_indices("/oidc").find_map(|(at, _)| {
            let root = &iss[..=at];
            let rest = &iss[at + "/oidc".len()..];
            let folder = match rest {
                "" => Vec::new(),
                _ => items(&format!("{}/", rest.strip_prefix('/')?))?,
            };
            root.contains("://").then_some(Self { root, folder })
        })
    }

    /// The whole controller at `root` (its root URL, ending in `/`).
    pub fn at_root(root: &'a str) -> Self {
        Self { root, folder: Vec::new() }
    }

    /// The items of the job at `url`, when it is a job below this controller and, for a folder's
    /// issuer, inside that folder; the root URL, the folder itself and other hosts are `None`.
    pub fn job_items(&self, url: &str) -> Option<Vec<String>> {
        let job = items(url.strip_prefix(self.root)?)?;
        (job.len() > self.folder.len() && job.starts_with(&self.folder)).then_some(job)
    }
}

/// The item names of a job's path below the root: `job/a/job/b/` is `["a", "b"]`. Anything else
/// (another shape, an empty or dot item, a name that decodes to a `/` or a control character) is
/// `None`: an item's name never holds them.
pub fn items(path: &str) -> Option<Vec<String>> {
    let segments: Vec<&str> = path.strip_suffix('/')?.split('/').collect();
    if !segments.len().is_multiple_of(2) {
        return None;
    }
    segments
        .chunks(2)
        .map(|pair| match pair {
            ["job", encoded] => item_name(encoded),
            _ => None,
        })
        .collect()
}

fn item_name(encoded: &str) -> Option<String> {
    let name = percent_decode_str(encoded).decode_utf8().ok()?;
    let forbidden = name.is_empty() || name == "." || name == ".." || name.contains('/');
    (!forbidden && !name.chars().any(char::is_control)).then(|| name.into_owned())
}

/// A multibranch project names each branch's job by the branch, with `%` and `/` (and a few
/// more) percent-encoded: `feature%2Fx`. The branch is the name decoded once more.
pub fn branch_of_item(name: &str) -> Option<String> {
    percent_decode_str(name).decode_utf8().ok().map(|branch| branch.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(items: &[&str]) -> Option<Vec<String>> {
        Some(items.iter().map(|item| (*item).to_owned()).collect())
    }

    #[test]
    fn an_issuer_names_its_controller_and_folder() {
        for (iss, expected) in [
            ("https://jenkins.example.com/oidc", Some(("https://jenkins.example.com/", vec![]))),
            ("https://jenkins.example.com/oidc/job/team", Some(("https://jenkins.example.com/", vec!["team"]))),
            (
                "https://ci.example.com/jenkins/oidc/job/a/job/b",
                Some(("https://ci.example.com/jenkins/", vec!["a", "b"])),
            ),
            ("https://ci.example.com/oidc/oidc", Some(("https://ci.example.com/oidc/", vec![]))),
            ("https://ci.example.com/oidc/job/oidc", Some(("https://ci.example.com/", vec!["oidc"]))),
            ("https://jenkins.example.com/oidc/", None),
            ("https://jenkins.example.com/oidc/job", None),
            ("https://jenkins.example.com/oidcx", None),
            ("https://jenkins.example.com/", None),
            ("/oidc", None),
        ] {
            let parsed = Controller::of_issuer(iss);
            let expected = expected.map(|(root, folder): (&str, Vec<&str>)| Controller {
                root,
                folder: folder.into_iter().map(str::to_owned).collect(),
            });
            assert_eq!(parsed, expected, "{iss}");
        }
    }

    #[test]
    fn only_a_job_below_the_controller_and_inside_the_folder_has_items() {
        let controller = Controller::of_issuer("https://jenkins.example.com/oidc").unwrap();
        let folder = Controller::of_issuer("https://jenkins.example.com/oidc/job/octo-org").unwrap();
        let main = "https://jenkins.example.com/job/octo-org/job/octo-repo/job/main/";
        for (url, whole, in_folder) in [
            (main, owned(&["octo-org", "octo-repo", "main"]), owned(&["octo-org", "octo-repo", "main"])),
            ("https://jenkins.example.com/job/deploy/", owned(&["deploy"]), None),
            ("https://jenkins.example.com/job/octo-org/", owned(&["octo-org"]), None),
            ("https://jenkins.example.com/job/octo-organisation/job/x/", owned(&["octo-organisation", "x"]), None),
            ("https://jenkins.example.com/", None, None),
            ("https://jenkins.example.com", None, None),
            ("https://jenkins.evil.com/job/octo-org/job/octo-repo/job/main/", None, None),
            ("https://jenkins.example.com.evil.com/job/octo-org/", None, None),
            ("https://jenkins.example.com/job/octo-org/job/octo-repo/job/main", None, None),
            ("https://jenkins.example.com/job/octo-org/job/../job/main/", None, None),
            ("https://jenkins.example.com/job/octo-org/job/%2E%2E/", None, None),
            ("https://jenkins.example.com/job/octo-org/job/a%2Fb/", None, None),
            ("https://jenkins.example.com/job/octo-org/job//", None, None),
            ("https://jenkins.example.com/job/octo-org/view/all/", None, None),
            ("https://jenkins.example.com/job/octo-org/job/x%0Ay/", None, None),
            ("https://jenkins.example.com/job/octo-org/42/", None, None),
        ] {
            assert_eq!(controller.job_items(url), whole, "{url}");
            assert_eq!(folder.job_items(url), in_folder, "{url} in the folder");
        }
    }

    #[test]
    fn a_branch_job_named_with_an_encoded_slash_is_that_branch() {
        let controller = Controller::of_issuer("https://jenkins.example.com/oidc").unwrap();
        let items = controller.job_items("https://jenkins.example.com/job/octo-repo/job/feature%252Fx/").unwrap();
        assert_eq!(items, ["octo-repo", "feature%2Fx"]);
        assert_eq!(branch_of_item(&items[1]).as_deref(), Some("feature/x"));
        assert_eq!(branch_of_item("main").as_deref(), Some("main"));
    }
}
