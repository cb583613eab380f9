//! Which addresses `fetch_url` may reach: the classification of special-purpose IP ranges,
//! the opt-in ([`Access`]), and the checks run on a URL's literal host, on every address a
//! name resolves to (inside the resolver the client connects through), and on each
//! redirect hop.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use url::Url;

/// Why an address is not public, as it reads in a refusal ("a loopback address"); `None`
/// for an ordinary public unicast address.
///
/// IPv6 forms that embed an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible
/// `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4 `2002:AABB:CCDD::`) are judged by the
/// address they embed.
///
/// ```
/// use harnessx_builtin::web::guard::classify;
///
/// assert_eq!(classify("127.0.0.1".parse().unwrap()), Some("a loopback address"));
/// assert_eq!(classify("::ffff:169.254.169.254".parse().unwrap()), Some("a link-local address (cloud metadata services live there)"));
/// assert_eq!(classify("93.184.216.34".parse().unwrap()), None);
/// ```
pub fn classify(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - prefix) };
    (u32::from(ip) & mask) == (u32::from(Ipv4Addr::from(net)) & mask)
}

fn classify_v4(ip: Ipv4Addr) -> Option<&'static str> {
    const RANGES: [([u8; 4], u32, &str); 17] = [
        ([0, 0, 0, 0], 8, "an unspecified (\"this network\") address"),
        ([127, 0, 0, 0], 8, "a loopback address"),
        ([10, 0, 0, 0], 8, "a private address"),
        ([172, 16, 0, 0], 12, "a private address"),
        ([192, 168, 0, 0], 16, "a private address"),
        ([169, 254, 0, 0], 16, "a link-local address (cloud metadata services live there)"),
        ([100, 64, 0, 0], 10, "a shared (carrier-grade NAT) address"),
        ([192, 0, 0, 0], 24, "an IETF protocol assignment address"),
        ([192, 0, 2, 0], 24, "a documentation address"),
        ([198, 51, 100, 0], 24, "a documentation address"),
        ([203, 0, 113, 0], 24, "a documentation address"),
        ([198, 18, 0, 0], 15, "a benchmarking address"),
        ([192, 88, 99, 0], 24, "a 6to4 relay address"),
        ([224, 0, 0, 0], 4, "a multicast address"),
        ([255, 255, 255, 255], 32, "the broadcast address"),
        ([240, 0, 0, 0], 4, "a reserved address"),
        ([192, 31, 196, 0], 24, "an IETF protocol assignment address"),
    ];
    RANGES.iter().find(|(net, prefix, _)| in_v4(ip, *net, *prefix)).map(|(_, _, what)| *what)
}

fn in_v6(ip: Ipv6Addr, net: Ipv6Addr, prefix: u32) -> bool {
    let mask = if prefix == 0 { 0 } else { u128::MAX << (128 - prefix) };
    (u128::from(ip) & mask) == (u128::from(net) & mask)
}

fn classify_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let bits = u128::from(ip);
    if ip.is_unspecified() {
        return Some("the unspecified address");
    }
    if ip.is_loopback() {
        return Some("a loopback address");
    }
    // IPv4-mapped (::ffff:0:0/96) and the deprecated IPv4-compatible (::/96) forms.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    if bits >> 32 == 0 {
        return classify_v4(Ipv4Addr::from(bits as u32));
    }
    // NAT64, well-known prefix 64:ff9b::/96: judged by the IPv4 address it reaches.
    if in_v6(ip, Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96) {
        return classify_v4(Ipv4Addr::from(bits as u32));
    }
    // 6to4 (2002::/16): the IPv4 address is bits 16..48.
    if in_v6(ip, Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16) {
        return classify_v4(Ipv4Addr::from((bits >> 80) as u32));
    }
    const RANGES: [(Ipv6Addr, u32, &str); 9] = [
        (Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0), 48, "a local-use NAT64 address"),
        (Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7, "a unique-local (private) address"),
        (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, "a link-local address"),
        (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, "a site-local (private) address"),
        (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, "a multicast address"),
        (Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32, "a documentation address"),
        (Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20, "a documentation address"),
        (Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0), 64, "a discard-only address"),
        (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 23, "an IETF protocol assignment address"),
    ];
    RANGES.iter().find(|(net, prefix, _)| in_v6(ip, *net, *prefix)).map(|(_, _, what)| *what)
}

/// One entry of [`Access`]'s allow-list: a host name (`intranet.example`, matched
/// exactly, case-insensitively; `.example` also matches every subdomain) or an address
/// range (`10.0.0.0/8`, `::1/128`; a bare address is the range of that one address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostRule {
    /// A host name, lowercased; a leading dot matches subdomains too.
    Name(String),
    /// An address range: network and prefix length.
    Cidr(IpAddr, u8),
}

impl HostRule {
    fn matches_name(&self, host: &str) -> bool {
        match self {
            HostRule::Name(name) if name.starts_with('.') => {
                host.ends_with(name.as_str()) || host == &name[1..]
            }
            HostRule::Name(name) => host == name,
            HostRule::Cidr(..) => false,
        }
    }

    fn matches_ip(&self, ip: IpAddr) -> bool {
        match (self, ip) {
            (HostRule::Cidr(IpAddr::V4(net), p), IpAddr::V4(ip)) => in_v4(ip, net.octets(), u32::from(*p)),
            (HostRule::Cidr(IpAddr::V6(net), p), IpAddr::V6(ip)) => in_v6(ip, *net, u32::from(*p)),
            // An IPv4 range also covers the IPv4-mapped spelling of its addresses.
            (HostRule::Cidr(IpAddr::V4(net), p), IpAddr::V6(ip)) => {
                ip.to_ipv4_mapped().is_some_and(|v4| in_v4(v4, net.octets(), u32::from(*p)))
            }
            _ => false,
        }
    }
}

impl FromStr for HostRule {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let bad = || {
            format!(
                "`{s}` is neither a host name nor an address range (e.g. `intranet.example`, `10.0.0.0/8`, `::1`)"
            )
        };
        if s.is_empty() {
            return Err(bad());
        }
        if let Some((net, prefix)) = s.split_once('/') {
            let net: IpAddr = net.trim_matches(['[', ']']).parse().map_err(|_| bad())?;
            let max = if net.is_ipv4() { 32 } else { 128 };
            let prefix: u8 = prefix.parse().ok().filter(|p| *p <= max).ok_or_else(bad)?;
            return Ok(HostRule::Cidr(net, prefix));
        }
        if let Ok(ip) = s.trim_matches(['[', ']']).parse::<IpAddr>() {
            return Ok(HostRule::Cidr(ip, if ip.is_ipv4() { 32 } else { 128 }));
        }
        let name = s.to_ascii_lowercase();
        let valid = name.trim_start_matches('.').split('.').all(|label| {
            !label.is_empty() && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        });
        if valid { Ok(HostRule::Name(name)) } else { Err(bad()) }
    }
}

impl fmt::Display for HostRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostRule::Name(name) => f.write_str(name),
            HostRule::Cidr(ip, prefix) => write!(f, "{ip}/{prefix}"),
        }
    }
}

/// What `fetch_url` may reach beyond public addresses. The default reaches public
/// addresses only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Access {
    /// Every address, loopback and private included.
    pub allow_private: bool,
    /// Hosts and ranges reachable even when not public.
    pub allow_hosts: Vec<HostRule>,
}

/// A refused URL or address: one line, for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

const HOW_TO_OPEN: &str =
    "fetch_url only reaches public addresses (allow_private or allow_hosts opens local ones)";

impl Access {
    /// Whether `ip`, reached under the name `host`, may be connected to.
    fn allows(&self, host: &str, ip: IpAddr) -> Result<(), &'static str> {
        let Some(what) = classify(ip) else { return Ok(()) };
        if self.allow_private || self.allow_hosts.iter().any(|r| r.matches_name(host) || r.matches_ip(ip)) {
            return Ok(());
        }
        Err(what)
    }

    /// The checks on a URL before it is requested (and on each redirect target): `http` or
    /// `https`, a host, and, when the host is an IP address, an allowed one. The `url`
    /// crate has already normalised the spellings (`127.1`, `0x7f000001`, `[::ffff:7f00:1]`).
    pub fn check_url(&self, url: &Url) -> Result<(), Refusal> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refusal(format!(
                "refused: {url} uses the `{}` scheme; fetch_url only fetches http and https URLs",
                url.scheme()
            )));
        }
        let ip = match url.host() {
            None => return Err(Refusal(format!("refused: {url} has no host"))),
            Some(url::Host::Domain(_)) => return Ok(()),
            Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
            Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
        };
        let host = url.host_str().unwrap_or_default();
        self.allows(host, ip).map_err(|what| Refusal(format!("refused: {host} is {what}; {HOW_TO_OPEN}")))
    }

    /// The addresses `host` resolved to that may be connected to; when none may, the
    /// refusal names the first.
    pub fn filter_resolved(&self, host: &str, addrs: Vec<IpAddr>) -> Result<Vec<IpAddr>, Refusal> {
        let host = host.to_ascii_lowercase();
        let mut first_refused = None;
        let mut kept = Vec::with_capacity(addrs.len());
        for ip in addrs {
            match self.allows(&host, ip) {
                Ok(()) => kept.push(ip),
                Err(what) => {
                    first_refused.get_or_insert((ip, what));
                }
            }
        }
        match (kept.is_empty(), first_refused) {
            (false, _) => Ok(kept),
            (true, Some((ip, what))) => {
                Err(Refusal(format!("refused: {host} resolves to {ip}, {what}; {HOW_TO_OPEN}")))
            }
            (true, None) => Err(Refusal(format!("{host} did not resolve to any address"))),
        }
    }
}
