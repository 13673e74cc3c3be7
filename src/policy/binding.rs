//! Binding a role's credentials to the address block the job asked from (`bind_to_address`),
//! and its prefix lengths checked when the policy loads (the backends that cannot honour a
//! binding are refused beside the role's other checks, in `model.rs`).

use std::net::IpAddr;

use ipnet::IpNet;

/// The address block a bound role's credentials work from: the job's address truncated to
/// `prefix_v4` or `prefix_v6` bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressBinding {
    pub prefix_v4: u8,
    pub prefix_v6: u8,
}

pub(super) const DEFAULT_PREFIX_V4: u8 = 32;
pub(super) const DEFAULT_PREFIX_V6: u8 = 128;
/// Shorter prefixes span whole networks (a /8 is 16 million addresses, a /32 of IPv6 a whole
/// ISP's allocation): a binding that wide still looks like a control but no longer is one, and a
/// /0 binds nothing. A NAT pool needing more is better served unbound and said so plainly.
pub(super) const MIN_PREFIX_V4: u8 = 8;
pub(super) const MIN_PREFIX_V6: u8 = 32;

impl AddressBinding {
    /// The block `address` lies in. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, what a
    /// dual-stack listener reports for an IPv4 peer) is bound as the IPv4 address it is.
    pub fn block(&self, address: IpAddr) -> IpNet {
        let address = match address {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
            v4 => v4,
        };
        let prefix = match address {
            IpAddr::V4(_) => self.prefix_v4,
            IpAddr::V6(_) => self.prefix_v6,
        };
        // The prefixes were checked against each family's width when the policy loaded.
        IpNet::new(address, prefix).map_or_else(|_| IpNet::from(address), |net| net.trunc())
    }
}

/// The role keys `bind_to_address`, `bind_prefix` and `bind_prefix_v6` checked together.
pub(super) fn check(
    role: &str,
    bind: bool,
    prefix_v4: Option<u8>,
    prefix_v6: Option<u8>,
) -> Result<Option<AddressBinding>, String> {
    let prefix_v4 = prefix_v4.unwrap_or(DEFAULT_PREFIX_V4);
    let prefix_v6 = prefix_v6.unwrap_or(DEFAULT_PREFIX_V6);
    if !(MIN_PREFIX_V4..=32).contains(&prefix_v4) {
        return Err(format!(
            "role `{role}`: `bind_prefix` {prefix_v4} is not between {MIN_PREFIX_V4} and 32; hint: a shorter prefix binds to a whole network (/0 binds nothing), use the NAT pool's own prefix such as 24"
        ));
    }
    if !(MIN_PREFIX_V6..=128).contains(&prefix_v6) {
        return Err(format!(
            "role `{role}`: `bind_prefix_v6` {prefix_v6} is not between {MIN_PREFIX_V6} and 128; hint: a shorter prefix binds to a whole provider's allocation, use the runners' subnet such as 64"
        ));
    }
    Ok(bind.then_some(AddressBinding { prefix_v4, prefix_v6 }))
}
