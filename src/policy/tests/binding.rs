//! `bind_to_address`: what a bound role holds once loaded, the block an address falls in, and
//! each combination the loader refuses with its reason.

use std::net::IpAddr;

use super::aws_roles::load;
use crate::policy::AddressBinding;

const VAULT: &str = "backend: vault\nmax_ttl: 15m\nvault: { policies: [deploy] }\n";
const AWS: &str = "backend: aws\nmax_ttl: 1h\naws: { role_arn: \"arn:aws:iam::123456789012:role/deploy\" }\n";

fn binding(role: &str) -> Option<AddressBinding> {
    load(role).expect("loads").role("r").expect("role r").bind
}

#[test]
fn a_role_is_unbound_unless_it_says_so() {
    assert_eq!(binding(VAULT), None);
    assert_eq!(binding(&format!("{VAULT}bind_to_address: false\nbind_prefix: 24\n")), None);
}

#[test]
fn a_bound_role_defaults_to_the_single_address() {
    assert_eq!(
        binding(&format!("{VAULT}bind_to_address: true\n")),
        Some(AddressBinding { prefix_v4: 32, prefix_v6: 128 })
    );
    assert_eq!(
        binding(&format!("{AWS}bind_to_address: true\nbind_prefix: 24\nbind_prefix_v6: 64\n")),
        Some(AddressBinding { prefix_v4: 24, prefix_v6: 64 })
    );
}

#[test]
fn the_block_is_the_address_truncated_to_its_familys_prefix() {
    let binding = AddressBinding { prefix_v4: 24, prefix_v6: 64 };
    for (address, block) in [
        ("127.0.0.5", "127.0.0.0/24"),
        ("203.0.113.77", "203.0.113.0/24"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        // A dual-stack listener reports an IPv4 peer as IPv4-mapped IPv6: bound as IPv4.
        ("::ffff:198.51.100.9", "198.51.100.0/24"),
    ] {
        let address: IpAddr = address.parse().unwrap();
        assert_eq!(binding.block(address).to_string(), block, "{address}");
    }
    let single = AddressBinding { prefix_v4: 32, prefix_v6: 128 };
    assert_eq!(single.block("127.0.0.5".parse().unwrap()).to_string(), "127.0.0.5/32");
}

#[test]
fn refuses_what_binding_cannot_honour_and_says_why() {
    let github = "backend: github\nmax_ttl: 1h\ngithub: { owner: octo-org, repositories: [octo-repo], permissions: { contents: read } }\n";
    let dynamic = "backend: vault\nmax_ttl: 15m\nvault: { policies: [db], secret_path: database/creds/ro }\n";
    for (case, role, expected) in [
        ("github role", format!("{github}bind_to_address: true\n"), "GitHub App installation tokens cannot be bound"),
        (
            "dynamic secret",
            format!("{dynamic}bind_to_address: true\n"),
            "reads the dynamic secret with the job's token",
        ),
        (
            "ipv4 /0",
            format!("{VAULT}bind_to_address: true\nbind_prefix: 0\n"),
            "`bind_prefix` 0 is not between 8 and 32",
        ),
        (
            "ipv4 /7",
            format!("{VAULT}bind_to_address: true\nbind_prefix: 7\n"),
            "`bind_prefix` 7 is not between 8 and 32",
        ),
        ("ipv4 /33", format!("{VAULT}bind_to_address: true\nbind_prefix: 33\n"), "`bind_prefix` 33 is not between"),
        (
            "ipv6 /0",
            format!("{AWS}bind_to_address: true\nbind_prefix_v6: 0\n"),
            "`bind_prefix_v6` 0 is not between 32 and 128",
        ),
        ("ipv6 /129", format!("{AWS}bind_to_address: true\nbind_prefix_v6: 129\n"), "`bind_prefix_v6` 129"),
        ("negative prefix", format!("{VAULT}bind_to_address: true\nbind_prefix: -1\n"), "bind_prefix"),
        ("text flag", format!("{VAULT}bind_to_address: yes-please\n"), "bind_to_address"),
    ] {
        let error = load(&role).err().unwrap_or_else(|| panic!("{case}: loaded"));
        assert!(error.contains(expected), "{case}: {error}");
    }
}

#[test]
fn unbound_roles_keep_what_binding_would_refuse() {
    let github = "backend: github\nmax_ttl: 1h\ngithub: { owner: octo-org, repositories: [octo-repo], permissions: { contents: read } }\n";
    assert!(load(&format!("{github}bind_to_address: false\n")).is_ok());
    assert!(load("backend: vault\nmax_ttl: 15m\nvault: { policies: [db], secret_path: database/creds/ro }\n").is_ok());
}
