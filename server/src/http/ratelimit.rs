//! A per-client token bucket for the sign-in routes, keyed by the client's address. Behind a
//! reverse proxy, the address comes from `X-Forwarded-For` only when the direct peer is one of the
//! configured trusted proxies, so a client cannot pick its own key.

use std::{
    collections::HashMap,
    net::{IpAddr, SocketAddr},
    sync::{Arc, Mutex},
    time::Instant,
};

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

/// A token bucket per key: `burst` requests at once, refilled at `per_second`.
#[derive(Clone, Debug)]
pub struct RateLimiter {
    buckets: Arc<Mutex<HashMap<Option<IpAddr>, Bucket>>>,
    burst: f64,
    per_second: f64,
}

impl RateLimiter {
    /// A limiter allowing `burst` requests at once and `per_minute` sustained.
    pub fn new(burst: u32, per_minute: u32) -> Self {
        Self { buckets: Arc::default(), burst: f64::from(burst), per_second: f64::from(per_minute) / 60.0 }
    }

    /// Takes one token for `key`; `false` when the client is over its limit.
    pub fn allow(&self, key: Option<IpAddr>) -> bool {
        let Ok(mut buckets) = self.buckets.lock() else { return true };
        let now = Instant::now();
        if buckets.len() > 10_000 {
            // Forget clients that have been idle long enough to be full again.
            let full_after = self.burst / self.per_second.max(f64::EPSILON);
            buckets.retain(|_, b| now.duration_since(b.updated).as_secs_f64() < full_after);
        }
        let bucket = buckets.entry(key).or_insert(Bucket { tokens: self.burst, updated: now });
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
}
