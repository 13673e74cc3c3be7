use std::net::IpAddr;

use super::{ForwardedForError, MAX_FORWARDED_ENTRIES, TrustedProxies, exchange_address};

fn proxies(blocks: &[&str]) -> TrustedProxies {
    TrustedProxies::parse(&blocks.iter().map(|block| (*block).to_owned()).collect::<Vec<_>>()).unwrap()
}

fn address(peer: &str, lines: &[&str], trusted: &[&str]) -> Result<IpAddr, ForwardedForError> {
    exchange_address(peer.parse().unwrap(), lines.iter().map(|line| line.as_bytes()), &proxies(trusted))
}

fn ip(text: &str) -> Result<IpAddr, ForwardedForError> {
    Ok(text.parse().unwrap())
}

/// A case's name, the peer, the `X-Forwarded-For` lines, the trusted proxies, and the address.
type Case<'a> = (&'a str, &'a str, &'a [&'a str], &'a [&'a str], Result<IpAddr, ForwardedForError>);

#[test]
fn the_address_is_chosen_as_the_trusted_proxies_allow() {
    let proxy = &["127.0.0.5/32"];
    let two_proxies = &["127.0.0.5/32", "10.0.0.0/8"];
    let cases: &[Case] = &[
        ("no proxy trusted: the peer", "127.0.0.6", &["203.0.113.9"], &[], ip("127.0.0.6")),
        ("an untrusted peer's header is never read", "127.0.0.6", &["203.0.113.9"], proxy, ip("127.0.0.6")),
        (
            "an untrusted peer's malformed header is never read",
            "127.0.0.6",
            &["not an address"],
            proxy,
            ip("127.0.0.6"),
        ),
        ("a trusted proxy's client", "127.0.0.5", &["203.0.113.9"], proxy, ip("203.0.113.9")),
        (
            "the rightmost untrusted, not the forged left",
            "127.0.0.5",
            &["198.51.100.1, 203.0.113.9, 127.0.0.5"],
            proxy,
            ip("203.0.113.9"),
        ),
        ("through two trusted proxies", "127.0.0.5", &["203.0.113.9, 10.1.2.3"], two_proxies, ip("203.0.113.9")),
        ("all trusted: the leftmost", "127.0.0.5", &["10.0.0.1, 10.0.0.2"], two_proxies, ip("10.0.0.1")),
        ("a trusted proxy without the header: itself", "127.0.0.5", &[], proxy, ip("127.0.0.5")),
        (
            "header lines are one list, in order",
            "127.0.0.5",
            &["203.0.113.9", "198.51.100.7"],
            proxy,
            ip("198.51.100.7"),
        ),
        ("spaces and tabs around entries", "127.0.0.5", &[" 203.0.113.9 ,\t127.0.0.5"], proxy, ip("203.0.113.9")),
        ("IPv6 entries", "127.0.0.5", &["2001:db8::9"], proxy, ip("2001:db8::9")),
        ("an IPv4-mapped peer is its IPv4 address", "::ffff:127.0.0.5", &["203.0.113.9"], proxy, ip("203.0.113.9")),
        ("an IPv4-mapped entry is its IPv4 address", "127.0.0.5", &["::ffff:203.0.113.9"], proxy, ip("203.0.113.9")),
        ("an IPv4-mapped untrusted peer", "::ffff:127.0.0.6", &["203.0.113.9"], proxy, ip("127.0.0.6")),
        ("an empty entry", "127.0.0.5", &["203.0.113.9,,127.0.0.5"], proxy, Err(ForwardedForError::Malformed)),
        ("an empty header", "127.0.0.5", &[""], proxy, Err(ForwardedForError::Malformed)),
        ("a host name", "127.0.0.5", &["runner.example"], proxy, Err(ForwardedForError::Malformed)),
        ("an address with a port", "127.0.0.5", &["203.0.113.9:4711"], proxy, Err(ForwardedForError::Malformed)),
        ("a CIDR", "127.0.0.5", &["203.0.113.0/24"], proxy, Err(ForwardedForError::Malformed)),
        (
            "a malformed entry left of the chosen one",
            "127.0.0.5",
            &["nonsense, 203.0.113.9"],
            proxy,
            Err(ForwardedForError::Malformed),
        ),
    ];
    for (name, peer, lines, trusted, expected) in cases {
        assert_eq!(&address(peer, lines, trusted), expected, "{name}");
    }
}

#[test]
fn a_trusted_proxys_header_is_bounded() {
    let proxy = &["127.0.0.5/32"];
    let most = vec!["203.0.113.9"; MAX_FORWARDED_ENTRIES].join(",");
    assert_eq!(address("127.0.0.5", &[&most], proxy), ip("203.0.113.9"));
    let too_many = format!("{most},203.0.113.9");
    assert_eq!(address("127.0.0.5", &[&too_many], proxy), Err(ForwardedForError::TooMany));
    let too_many_lines = vec!["203.0.113.9"; MAX_FORWARDED_ENTRIES + 1];
    assert_eq!(address("127.0.0.5", &too_many_lines, proxy), Err(ForwardedForError::TooMany));
    let too_long = format!("203.0.113.9,{}", " ".repeat(super::MAX_FORWARDED_BYTES));
    assert_eq!(address("127.0.0.5", &[&too_long], proxy), Err(ForwardedForError::TooLong));
}

#[test]
fn a_header_that_is_not_text_is_malformed() {
    let line: &[u8] = b"203.0.113.9\xff";
    let got = exchange_address("127.0.0.5".parse().unwrap(), std::iter::once(line), &proxies(&["127.0.0.5/32"]));
    assert_eq!(got, Err(ForwardedForError::Malformed));
}

#[test]
fn trusted_proxies_parse_blocks_and_bare_addresses_and_name_a_bad_entry() {
    let parsed = proxies(&["10.1.2.3/8", "127.0.0.5", "fd00::/8"]);
    assert!(parsed.trusts("10.200.0.1".parse().unwrap()), "host bits are dropped: 10.0.0.0/8");
    assert!(parsed.trusts("127.0.0.5".parse().unwrap()) && !parsed.trusts("127.0.0.6".parse().unwrap()));
    assert!(parsed.trusts("fd00::1".parse().unwrap()));
    let bad = TrustedProxies::parse(&["10.0.0.0/8".into(), "10.0.0.0/33".into()]).unwrap_err();
    assert_eq!(bad.0, 1);
    assert!(bad.1.contains("10.0.0.0/33"), "{}", bad.1);
    assert!(TrustedProxies::parse(&["proxy.internal".into()]).is_err());
}
