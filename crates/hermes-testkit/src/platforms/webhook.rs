//! For tests of the gateway's inbound webhook server: the signatures senders put on their
//! requests (GitHub, GitLab, Svix, the generic V1 and V2 schemes of the Python Hermes),
//! computed here independently of the gateway, and [`CallbackReceiver`], a server that records
//! the callbacks the gateway posts.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::hmac;
use serde_json::json;

use super::server::{BoxFuture, MockRequest, MockResponse, Server, Service};

fn mac(key: &[u8], data: &[u8]) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data)
        .as_ref()
        .to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `X-Hub-Signature-256: sha256=<hex>` (GitHub).
pub fn github_signature(secret: &str, body: &[u8]) -> (String, String) {
    (
        "X-Hub-Signature-256".into(),
        format!("sha256={}", hex(&mac(secret.as_bytes(), body))),
    )
}

/// `X-Webhook-Signature: <hex>` (generic V1, body only).
pub fn v1_signature(secret: &str, body: &[u8]) -> (String, String) {
    (
        "X-Webhook-Signature".into(),
        hex(&mac(secret.as_bytes(), body)),
    )
}

/// `X-Webhook-Timestamp` and `X-Webhook-Signature-V2: <hex of "ts.body">` (generic V2).
pub fn v2_signature(secret: &str, body: &[u8], unix_secs: i64) -> Vec<(String, String)> {
    let ts = unix_secs.to_string();
    let mut signed = format!("{ts}.").into_bytes();
    signed.extend_from_slice(body);
    vec![
        ("X-Webhook-Timestamp".into(), ts),
        (
            "X-Webhook-Signature-V2".into(),
            hex(&mac(secret.as_bytes(), &signed)),
        ),
    ]
}

/// `svix-id`, `svix-timestamp`, `svix-signature: v1,<base64>` (a `whsec_` secret is
/// base64).
pub fn svix_signature(
    secret: &str,
    msg_id: &str,
    body: &[u8],
    unix_secs: i64,
) -> Vec<(String, String)> {
    let key = match secret.strip_prefix("whsec_") {
        Some(k) => STANDARD.decode(k).unwrap_or_default(),
        None => secret.as_bytes().to_vec(),
    };
    let mut signed = format!("{msg_id}.{unix_secs}.").into_bytes();
    signed.extend_from_slice(body);
    vec![
        ("svix-id".into(), msg_id.to_string()),
        ("svix-timestamp".into(), unix_secs.to_string()),
        (
            "svix-signature".into(),
            format!("v1,{}", STANDARD.encode(mac(&key, &signed))),
        ),
    ]
}

/// Now, in Unix seconds.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

/// Records every request posted to it and answers 200 `{"ok": true}`.
pub struct CallbackReceiver {
    server: Server,
    received: Arc<Mutex<Vec<MockRequest>>>,
}

impl std::fmt::Debug for CallbackReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallbackReceiver")
            .field("addr", &self.server.addr)
            .finish()
    }
}

struct Recorder(Arc<Mutex<Vec<MockRequest>>>);

impl Service for Recorder {
    fn http(self: Arc<Self>, req: MockRequest) -> BoxFuture<MockResponse> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(req);
        Box::pin(async { MockResponse::json(200, &json!({"ok": true})) })
    }
}

impl CallbackReceiver {
    #[allow(clippy::expect_used)]
    pub fn start() -> CallbackReceiver {
        let received = Arc::new(Mutex::new(Vec::new()));
        let server = Server::start("callback", Arc::new(Recorder(Arc::clone(&received))))
            .expect("start the callback receiver");
        CallbackReceiver { server, received }
    }

    /// `http://127.0.0.1:PORT/hook`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hook", self.server.addr.port())
    }

    pub fn requests(&self) -> Vec<MockRequest> {
        self.received
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits (polling) for `n` requests; false after `timeout`.
    pub fn wait_for(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.requests().len() < n {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }
}
