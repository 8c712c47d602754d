//! Fixtures the provisioning tests share: the fleet row a test starts from.

use opencrane_fleet_db::cluster_tenants::{self, DesiredState};
use sqlx::PgPool;

/// A shared-tier customer's desired state with no vanity domain, seat cap or version pin.
pub fn desired<'a>(display_name: &'a str, quota: &'a serde_json::Value, policy: &'a str) -> DesiredState<'a> {
    DesiredState::shared(display_name, quota, policy)
}

/// Inserts the customer `name` with `desired`.
pub async fn seed(pool: &PgPool, name: &str, desired: &DesiredState<'_>) {
    cluster_tenants::insert(pool, name, desired).await.unwrap();
}

/// A loopback port nothing listens on (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
