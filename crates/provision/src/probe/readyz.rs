//! The readiness probe of a silo's clustertenant-manager: one plain HTTP/1.1 `GET /readyz`
//! (in-cluster service traffic and loopback are plain HTTP), with short timeouts.

use std::time::Duration;

/// `GET <base>/readyz` over plain HTTP/1.1; returns the status code.
pub async fn readyz(base: &str) -> Result<u16, String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let authority = base.strip_prefix("http://").ok_or("not an http:// URL")?.trim_end_matches('/');
    let connect = tokio::net::TcpStream::connect(authority);
    let mut stream = tokio::time::timeout(Duration::from_secs(2), connect)
        .await
        .map_err(|_| "timed out")?
        .map_err(|e| e.to_string())?;
    let request = format!("GET /readyz HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.map_err(|e| e.to_string())?;
    let mut head = [0u8; 12];
    tokio::time::timeout(Duration::from_secs(3), stream.read_exact(&mut head))
        .await
        .map_err(|_| "timed out")?
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&head);
    text.get(9..12).and_then(|s| s.parse().ok()).ok_or_else(|| format!("not an HTTP response: {text:?}"))
}
