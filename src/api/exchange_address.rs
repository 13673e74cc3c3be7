//! The address an exchange came from: the TCP peer, or what a trusted proxy forwarded for it.
//!
//! `X-Forwarded-For` is a comma-separated list of addresses, the client's first and each proxy
//! appending the address it received the request from (MDN, "X-Forwarded-For": "<client>,
//! <proxy1>, <proxy2>"; several header lines are one list, RFC 9110 §5.3). Anyone can write the
//! left of it; only what trusted proxies appended on the right means anything. So the list is read
//! only from a trusted proxy, from the right, and the first address that is not a trusted proxy is
//! the client's.

use std::net::IpAddr;

use ipnet::IpNet;

/// `X-Forwarded-For`'s name, as hyper keeps it (lower case).
pub const X_FORWARDED_FOR: &str = "x-forwarded-for";
/// More hops than any real chain of proxies; bounds the work one request can cause.
pub const MAX_FORWARDED_ENTRIES: usize = 32;
/// All `X-Forwarded-For` lines together, in bytes: room for the entries above as IPv6 addresses.
pub const MAX_FORWARDED_BYTES: usize = 2048;

/// The proxies whose `X-Forwarded-For` the broker reads (config `trusted_proxies`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies {
    blocks: Vec<IpNet>,
}

/// Why a trusted proxy's `X-Forwarded-For` cannot be read; all are `invalid_forwarded_for`.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ForwardedForError {
    #[error("X-Forwarded-For from a trusted proxy is longer than {MAX_FORWARDED_BYTES} bytes")]
    TooLong,
    #[error("X-Forwarded-For from a trusted proxy names more than {MAX_FORWARDED_ENTRIES} addresses")]
    TooMany,
    #[error("X-Forwarded-For from a trusted proxy holds something that is not an IP address")]
    Malformed,
}

impl TrustedProxies {
    /// Parses the config's CIDRs (a bare address is a block of one); the error names the
    /// entry's index and what is wrong with it.
    pub fn parse(entries: &[String]) -> Result<Self, (usize, String)> {
        let blocks = entries
            .iter()
            .enumerate()
            .map(|(n, entry)| {
                let entry = entry.trim();
                entry
                    .parse::<IpNet>()
                    .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
                    .map(|block| block.trunc())
                    .map_err(|_| (n, format!("`{entry}` is not a CIDR block like 10.0.0.0/8 or fd00::/8")))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { blocks })
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    fn trusts(&self, address: IpAddr) -> bool {
        self.blocks.iter().any(|block| block.contains(&address))
    }
}

/// The exchange's address, from its TCP `peer` and the request's `X-Forwarded-For` lines (their
/// bytes) in order. The lines are read only when the peer is a trusted proxy.
pub fn exchange_address<'a>(
    peer: IpAddr,
    forwarded_for: impl Iterator<Item = &'a [u8]>,
    trusted: &TrustedProxies,
) -> Result<IpAddr, ForwardedForError> {
    let peer = canonical(peer);
    if !trusted.trusts(peer) {
        return Ok(peer);
    }
    let chain = forwarded_chain(forwarded_for)?;
    // The peer is trusted: walk left from it until an address is not a trusted proxy. A chain of
    // trusted proxies only is a request from one of them; its leftmost is the farthest known.
    let farthest_untrusted = chain.iter().rev().copied().find(|&address| !trusted.trusts(address));
    Ok(farthest_untrusted.or_else(|| chain.first().copied()).unwrap_or(peer))
}

/// Every address of every line, left to right, bounded in bytes and entries.
fn forwarded_chain<'a>(lines: impl Iterator<Item = &'a [u8]>) -> Result<Vec<IpAddr>, ForwardedForError> {
    let mut chain = Vec::new();
    let mut bytes = 0usize;
    for line in lines {
        bytes += line.len();
        if bytes > MAX_FORWARDED_BYTES {
            return Err(ForwardedForError::TooLong);
        }
        let text = std::str::from_utf8(line).map_err(|_| ForwardedForError::Malformed)?;
        for entry in text.split(',') {
            if chain.len() == MAX_FORWARDED_ENTRIES {
                return Err(ForwardedForError::TooMany);
            }
            // Spaces and tabs around a list element are HTTP's optional whitespace (RFC 9110 §5.6.1).
            let address =
                entry.trim_matches([' ', '\t']).parse::<IpAddr>().map_err(|_| ForwardedForError::Malformed)?;
            chain.push(canonical(address));
        }
    }
    Ok(chain)
}

/// An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, a dual-stack socket's view of an IPv4 client)
/// as the IPv4 address it is, so that IPv4 blocks match it.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        IpAddr::V4(_) => address,
    }
}

#[cfg(test)]
mod tests;
