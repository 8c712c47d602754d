//! A per-client token bucket for the sign-in routes, keyed by the client's address (IPv6 by its
//! /64: one host holds a whole /64). Behind a reverse proxy, the address comes from
//! `X-Forwarded-For` only when the direct peer is one of the configured trusted proxies, so a
//! client cannot pick its own key. At most [`CAPACITY`] clients are remembered, least recently
//! seen forgotten first, so every request costs the same whatever the number of addresses seen.

use std::{
    net::{IpAddr, Ipv6Addr, SocketAddr},
    num::NonZeroUsize,
    sync::{Arc, Mutex},
    time::Instant,
};

use lru::LruCache;

use axum::{
    extract::{ConnectInfo, Request},
    http::HeaderMap,
};

/// An IP network (`10.0.0.0/8`, `::1/128`, or a bare address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
}

impl std::str::FromStr for IpNet {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (addr, prefix) = match s.trim().split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s.trim(), None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| format!("“{s}” is not an IP address or CIDR"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => {
                p.parse::<u8>().ok().filter(|p| *p <= max).ok_or_else(|| format!("“{s}” has a bad prefix length"))?
            }
            None => max,
        };
        Ok(Self { addr, prefix })
    }
}

impl IpNet {
    /// Whether `ip` is inside the network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// The client address of `req`: the peer, or — when the peer is a trusted proxy — the right-most
/// `X-Forwarded-For` entry that is not itself a trusted proxy.
pub fn client_ip(req: &Request, trusted: &[IpNet]) -> Option<IpAddr> {
    let peer = req.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip())?;
    Some(forwarded_client(peer, req.headers(), trusted))
}

fn forwarded_client(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    let hops: Vec<IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|hop| hop.trim().parse().ok())
        .collect();
    hops.into_iter().rev().find(|ip| !is_trusted(*ip)).unwrap_or(peer)
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

/// How many clients the limiter remembers. A forgotten client comes back with a full bucket, so
/// forgetting never locks anyone out; one flooding from more addresses than this only resets
/// buckets, each of which still allows no more than a burst.
pub const CAPACITY: usize = 50_000;

/// The bucket key of a client address: IPv4 as it is (an IPv4-mapped IPv6 address as its IPv4),
/// IPv6 by its /64.
fn key(ip: Option<IpAddr>) -> Option<IpAddr> {
    ip.map(|ip| match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !u128::from(u64::MAX))),
        },
        v4 @ IpAddr::V4(_) => v4,
    })
}

/// A token bucket per key: `burst` requests at once, refilled at `per_second`.
#[derive(Clone, Debug)]
pub struct RateLimiter {
    buckets: Arc<Mutex<LruCache<Option<IpAddr>, Bucket>>>,
    burst: f64,
    per_second: f64,
}

impl RateLimiter {
    /// A limiter allowing `burst` requests at once and `per_minute` sustained.
    pub fn new(burst: u32, per_minute: u32) -> Self {
        Self::with_capacity(burst, per_minute, CAPACITY)
    }

    /// The same, remembering at most `capacity` clients.
    pub fn with_capacity(burst: u32, per_minute: u32, capacity: usize) -> Self {
        let capacity = NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN);
        Self {
            buckets: Arc::new(Mutex::new(LruCache::new(capacity))),
            burst: f64::from(burst),
            per_second: f64::from(per_minute) / 60.0,
        }
    }

    /// How many clients it remembers now.
    pub fn remembered(&self) -> usize {
        self.buckets.lock().map_or(0, |b| b.len())
    }

    /// Takes one token for `client`; `false` when the client is over its limit. Constant time.
    pub fn allow(&self, client: Option<IpAddr>) -> bool {
        let Ok(mut buckets) = self.buckets.lock() else { return true };
        let now = Instant::now();
        let bucket = buckets.get_or_insert_mut(key(client), || Bucket { tokens: self.burst, updated: now });
        let elapsed = now.duration_since(bucket.updated).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.per_second).min(self.burst);
        bucket.updated = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_contain_what_they_should() {
        let net: IpNet = "10.0.0.0/8".parse().unwrap();
        assert!(net.contains("10.1.2.3".parse().unwrap()));
        assert!(!net.contains("11.0.0.1".parse().unwrap()));
        let one: IpNet = "::1".parse().unwrap();
        assert!(one.contains("::1".parse().unwrap()));
        assert!(!one.contains("127.0.0.1".parse().unwrap()));
        assert!("10.0.0.0/33".parse::<IpNet>().is_err());
        assert!("nope".parse::<IpNet>().is_err());
    }

    #[test]
    fn forwarded_for_is_only_believed_from_trusted_proxies() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", "1.2.3.4, 6.6.6.6, 10.0.0.9".parse().unwrap());
        // From the proxy: the right-most untrusted hop.
        assert_eq!(
            forwarded_client("10.0.0.1".parse().unwrap(), &headers, &trusted),
            "6.6.6.6".parse::<IpAddr>().unwrap()
        );
        // From anyone else: the header is ignored (spoofing does not change the key).
        assert_eq!(
            forwarded_client("8.8.8.8".parse().unwrap(), &headers, &trusted),
            "8.8.8.8".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn buckets_allow_a_burst_then_refuse() {
        let limiter = RateLimiter::new(3, 1);
        let a = Some("1.1.1.1".parse().unwrap());
        let b = Some("2.2.2.2".parse().unwrap());
        assert!((0..3).all(|_| limiter.allow(a)));
        assert!(!limiter.allow(a));
        assert!(limiter.allow(b), "another client has its own bucket");
    }

    #[test]
    fn an_ipv6_host_is_one_client_per_64_and_memory_stays_bounded() {
        let limiter = RateLimiter::new(2, 1);
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let same_64: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        assert!(limiter.allow(Some(a)) && limiter.allow(Some(same_64)));
        assert!(!limiter.allow(Some(a)), "the /64 shares one bucket");
        assert!(limiter.allow(Some("2001:db8:1:3::1".parse().unwrap())), "the next /64 is another client");
        let mapped: IpAddr = "::ffff:1.2.3.4".parse().unwrap();
        assert_eq!(key(Some(mapped)), Some("1.2.3.4".parse().unwrap()));

        // 200,000 distinct addresses: the limiter remembers no more than its capacity, and a
        // client over its limit is still refused afterwards.
        let limiter = RateLimiter::with_capacity(1, 1, 1_000);
        let victim = Some("9.9.9.9".parse().unwrap());
        assert!(limiter.allow(victim));
        assert!(!limiter.allow(victim));
        for i in 0..200_000u32 {
            limiter.allow(Some(IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i))));
            assert!(limiter.remembered() <= 1_000);
        }
        assert_eq!(limiter.remembered(), 1_000);
        assert!(limiter.allow(victim), "a forgotten client comes back with a full bucket");
        assert!(!limiter.allow(victim), "and is limited again");
    }
}
