//! Which IP addresses the agent may connect to on the model's behalf. Everything that is not a
//! public unicast address is refused: private (RFC 1918), loopback, link-local, carrier-grade
//! NAT (100.64.0.0/10), unique-local, multicast, unspecified, documentation, benchmarking and
//! reserved ranges, and the IPv6 forms that embed an IPv4 address (mapped, compatible, NAT64,
//! 6to4), judged by the address they embed. Cloud metadata endpoints and IPv4 link-local are
//! refused even when private addresses are allowed (`security.allow_private_urls`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not public.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blocked {
    /// What the address is, for the refusal message (`a loopback address`, ...).
    pub kind: &'static str,
    /// Refused even with `security.allow_private_urls: true` (cloud metadata, link-local).
    pub always: bool,
}

const fn private(kind: &'static str) -> Option<Blocked> {
    Some(Blocked {
        kind,
        always: false,
    })
}

const fn always(kind: &'static str) -> Option<Blocked> {
    Some(Blocked { kind, always: true })
}

/// Cloud metadata services reachable without credentials from inside an instance.
const METADATA_V4: &[Ipv4Addr] = &[
    Ipv4Addr::new(169, 254, 169, 254), // AWS, GCP, Azure, DigitalOcean, Oracle
    Ipv4Addr::new(169, 254, 170, 2),   // AWS ECS task credentials
    Ipv4Addr::new(169, 254, 169, 253), // Azure wire server
    Ipv4Addr::new(100, 100, 100, 200), // Alibaba Cloud
];
const METADATA_V6: &[Ipv6Addr] = &[Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x254)];

/// Host names of metadata services, refused before any lookup.
pub const METADATA_HOSTS: &[&str] = &["metadata.google.internal", "metadata.goog"];

/// `None` for a public address, else why it is refused.
pub fn classify(ip: IpAddr) -> Option<Blocked> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix)
    };
    (u32::from(ip) & mask) == (u32::from(Ipv4Addr::from(net)) & mask)
}

fn classify_v4(ip: Ipv4Addr) -> Option<Blocked> {
    if METADATA_V4.contains(&ip) {
        return always("a cloud metadata address");
    }
    let ranges: &[([u8; 4], u32, &'static str)] = &[
        ([0, 0, 0, 0], 8, "an unspecified (\"this network\") address"),
        ([10, 0, 0, 0], 8, "a private address"),
        ([100, 64, 0, 0], 10, "a carrier-grade NAT address"),
        ([127, 0, 0, 0], 8, "a loopback address"),
        ([172, 16, 0, 0], 12, "a private address"),
        ([192, 0, 0, 0], 24, "a reserved (IETF protocol) address"),
        ([192, 0, 2, 0], 24, "a documentation address"),
        ([192, 88, 99, 0], 24, "a reserved (6to4 relay) address"),
        ([192, 168, 0, 0], 16, "a private address"),
        ([198, 18, 0, 0], 15, "a benchmarking address"),
        ([198, 51, 100, 0], 24, "a documentation address"),
        ([203, 0, 113, 0], 24, "a documentation address"),
        ([224, 0, 0, 0], 4, "a multicast address"),
        ([240, 0, 0, 0], 4, "a reserved address"),
    ];
    if in_v4(ip, [169, 254, 0, 0], 16) {
        return always("a link-local address");
    }
    ranges
        .iter()
        .find(|(net, prefix, _)| in_v4(ip, *net, *prefix))
        .and_then(|(_, _, kind)| private(kind))
}

fn in_v6(ip: Ipv6Addr, net: [u16; 8], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - prefix)
    };
    (u128::from(ip) & mask) == (u128::from(Ipv6Addr::from(net)) & mask)
}

fn embedded_v4(ip: Ipv6Addr, at_bits: u32) -> Ipv4Addr {
    Ipv4Addr::from(((u128::from(ip) >> at_bits) & 0xffff_ffff) as u32)
}

fn classify_v6(ip: Ipv6Addr) -> Option<Blocked> {
    if METADATA_V6.contains(&ip) {
        return always("a cloud metadata address");
    }
    if ip.is_unspecified() {
        return private("an unspecified address");
    }
    if ip.is_loopback() {
        return private("a loopback address");
    }
    // Forms that carry an IPv4 address are judged by it: ::ffff:a.b.c.d (mapped),
    // ::a.b.c.d (compatible), 64:ff9b::a.b.c.d (NAT64), 2002:aabb:ccdd:: (6to4).
    let embedded = if in_v6(ip, [0, 0, 0, 0, 0, 0xffff, 0, 0], 96)
        || in_v6(ip, [0; 8], 96)
        || in_v6(ip, [0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96)
    {
        Some(embedded_v4(ip, 0))
    } else if in_v6(ip, [0x2002, 0, 0, 0, 0, 0, 0, 0], 16) {
        Some(embedded_v4(ip, 80))
    } else {
        None
    };
    if let Some(v4) = embedded {
        return classify_v4(v4);
    }
    let ranges: &[([u16; 8], u32, &'static str)] = &[
        (
            [0x64, 0xff9b, 1, 0, 0, 0, 0, 0],
            48,
            "a reserved (local NAT64) address",
        ),
        ([0x100, 0, 0, 0, 0, 0, 0, 0], 64, "a discard-only address"),
        (
            [0x2001, 0, 0, 0, 0, 0, 0, 0],
            23,
            "a reserved (IETF protocol) address",
        ),
        (
            [0x2001, 0xdb8, 0, 0, 0, 0, 0, 0],
            32,
            "a documentation address",
        ),
        ([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, "a unique-local address"),
        ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "a link-local address"),
        ([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, "a site-local address"),
        ([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, "a multicast address"),
    ];
    if let Some((_, _, kind)) = ranges
        .iter()
        .find(|(net, prefix, _)| in_v6(ip, *net, *prefix))
    {
        return private(kind);
    }
    // Only 2000::/3 is allocated global unicast; everything else is reserved.
    if !in_v6(ip, [0x2000, 0, 0, 0, 0, 0, 0, 0], 3) {
        return private("a reserved address");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(s: &str) -> Option<Blocked> {
        classify(s.parse().unwrap())
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.216.34",
            "2606:4700::1111",
            "2a00:1450::1",
        ] {
            assert_eq!(kind(ip), None, "{ip}");
        }
    }

    #[test]
    fn every_internal_range_is_refused() {
        for (ip, what) in [
            ("127.0.0.1", "loopback"),
            ("127.255.1.2", "loopback"),
            ("10.1.2.3", "private"),
            ("172.31.255.255", "private"),
            ("192.168.0.1", "private"),
            ("100.64.0.1", "carrier-grade NAT"),
            ("100.127.255.254", "carrier-grade NAT"),
            ("0.0.0.0", "unspecified"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "reserved"),
            ("198.18.0.1", "benchmarking"),
            ("192.0.2.5", "documentation"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fc00::1", "unique-local"),
            ("fd12:3456::1", "unique-local"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
            ("2001:db8::1", "documentation"),
        ] {
            let b = kind(ip).unwrap_or_else(|| panic!("{ip} passed"));
            assert!(b.kind.contains(what), "{ip}: {}", b.kind);
            assert!(!b.always, "{ip}");
        }
    }

    #[test]
    fn metadata_and_link_local_are_always_refused() {
        for ip in [
            "169.254.169.254",
            "169.254.170.2",
            "169.254.1.1",
            "100.100.100.200",
            "fd00:ec2::254",
            "::ffff:169.254.169.254",
        ] {
            assert!(kind(ip).unwrap().always, "{ip}");
        }
    }

    #[test]
    fn ipv6_forms_are_judged_by_the_ipv4_they_embed() {
        assert!(kind("::ffff:127.0.0.1").unwrap().kind.contains("loopback"));
        assert!(kind("::ffff:10.0.0.1").unwrap().kind.contains("private"));
        assert!(kind("::127.0.0.1").unwrap().kind.contains("loopback"));
        assert!(
            kind("64:ff9b::192.168.1.1")
                .unwrap()
                .kind
                .contains("private")
        );
        assert!(kind("2002:7f00:1::").unwrap().kind.contains("loopback"));
        assert_eq!(kind("::ffff:8.8.8.8"), None);
        assert_eq!(kind("2002:0808:0808::1"), None);
    }
}
