//! A Twilio double on 127.0.0.1 for the SMS platform, following Twilio's REST API reference
//! (<https://www.twilio.com/docs/messaging/api/message-resource>), and the other half of the
//! conversation: Twilio's signed webhook requests to the gateway.
//!
//! - `POST /2010-04-01/Accounts/{AccountSid}/Messages.json` with HTTP Basic `AccountSid:AuthToken`
//!   and a form `From`, `To`, `Body`: 201 with the message resource (`sid` `SM…`, `status`
//!   `queued`, ...), each recorded. A body over 1,600 characters is error 21617, a `To` that is
//!   not E.164 is 21211, a `From` that is not the account's number is 21606, as Twilio
//!   answers them (HTTP 400, `{code, message, more_info, status}`).
//! - `GET /2010-04-01/Accounts/{AccountSid}.json`: the account (`friendly_name`, `status`).
//! - Wrong credentials: HTTP 401, error 20003. Faults: the next send answers a given error
//!   ([`TwilioMock::fail_next`], e.g. 429 / 20429 "Too Many Requests").
//! - [`TwilioWebhook`]: posts an inbound SMS to the gateway's webhook, form-encoded, with
//!   `X-Twilio-Signature` computed as Twilio does (base64 HMAC-SHA1 of the URL and the sorted
//!   parameters, keyed with the auth token), or a given signature.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use base64::Engine as _;
use ring::hmac;
use serde_json::json;

use super::server::{BoxFuture, MockRequest, MockResponse, Server, Service};
use crate::http_client::{HttpReply, http};

pub const ACCOUNT_SID: &str = "AC00000000000000000000000000000001";
pub const AUTH_TOKEN: &str = "twilio-auth-token";
pub const PHONE_NUMBER: &str = "+15550001111";
pub const FRIENDLY_NAME: &str = "Hermes test account";

/// One message the double accepted.
#[derive(Debug, Clone, PartialEq)]
pub struct SentSms {
    pub sid: String,
    pub from: String,
    pub to: String,
    pub body: String,
    /// The request's `Authorization` header.
    pub authorization: String,
}

#[derive(Debug, Default)]
struct State {
    sent: Vec<SentSms>,
    /// Every request as `METHOD path`.
    requests: Vec<String>,
    faults: VecDeque<(u16, i64, String)>,
    next: u64,
}

struct TwilioService {
    state: Mutex<State>,
}

impl TwilioService {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn handle(&self, req: &MockRequest) -> MockResponse {
        let path = req.path().to_string();
        self.lock().requests.push(format!("{} {path}", req.method));
        let expected = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{ACCOUNT_SID}:{AUTH_TOKEN}"))
        );
        let authorization = req.header("authorization").unwrap_or_default().to_string();
        if authorization != expected {
            return error(401, 20003, "Authenticate");
        }
        let account = format!("/2010-04-01/Accounts/{ACCOUNT_SID}");
        if req.method == "GET" && path == format!("{account}.json") {
            return MockResponse::json(
                200,
                &json!({"sid": ACCOUNT_SID, "friendly_name": FRIENDLY_NAME, "status": "active", "type": "Full"}),
            );
        }
        if req.method == "POST" && path == format!("{account}/Messages.json") {
            if let Some((status, code, message)) = self.lock().faults.pop_front() {
                return error(status, code, &message);
            }
            let params = req.params();
            let field = |k: &str| params[k].as_str().unwrap_or_default().to_string();
            let (from, to, body) = (field("From"), field("To"), field("Body"));
            if body.chars().count() > 1600 {
                return error(
                    400,
                    21617,
                    "The concatenated message body exceeds the 1600 character limit.",
                );
            }
            let e164 = |n: &str| {
                n.strip_prefix('+').is_some_and(|d| {
                    (8..=15).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit())
                })
            };
            if !e164(&to) {
                return error(
                    400,
                    21211,
                    &format!("The 'To' number {to} is not a valid phone number."),
                );
            }
            if from != PHONE_NUMBER {
                return error(
                    400,
                    21606,
                    &format!(
                        "The From phone number {from} is not a valid, SMS-capable inbound phone number or short code for your account."
                    ),
                );
            }
            let mut st = self.lock();
            st.next += 1;
            let sid = format!("SM{:032x}", st.next);
            st.sent.push(SentSms {
                sid: sid.clone(),
                from: from.clone(),
                to: to.clone(),
                body: body.clone(),
                authorization,
            });
            return MockResponse::json(
                201,
                &json!({
                    "account_sid": ACCOUNT_SID, "api_version": "2010-04-01", "body": body,
                    "direction": "outbound-api", "from": from, "to": to, "num_segments": "1",
                    "sid": sid, "status": "queued", "error_code": null, "error_message": null,
                    "uri": format!("{account}/Messages/{sid}.json"),
                }),
            );
        }
        error(
            404,
            20404,
            &format!("The requested resource {path} was not found"),
        )
    }
}

fn error(status: u16, code: i64, message: &str) -> MockResponse {
    MockResponse::json(
        status,
        &json!({"code": code, "message": message, "more_info": format!("https://www.twilio.com/docs/errors/{code}"), "status": status}),
    )
}

impl Service for TwilioService {
    fn http(self: Arc<Self>, req: MockRequest) -> BoxFuture<MockResponse> {
        Box::pin(async move { self.handle(&req) })
    }
}

/// The Twilio REST API double (account [`ACCOUNT_SID`], token [`AUTH_TOKEN`], number
/// [`PHONE_NUMBER`]).
pub struct TwilioMock {
    server: Server,
    service: Arc<TwilioService>,
}

impl std::fmt::Debug for TwilioMock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwilioMock")
            .field("addr", &self.server.addr)
            .finish()
    }
}

impl TwilioMock {
    #[allow(clippy::expect_used)]
    pub fn start() -> TwilioMock {
        let service = Arc::new(TwilioService {
            state: Mutex::new(State::default()),
        });
        let server = Server::start("twilio", Arc::clone(&service)).expect("start the Twilio mock");
        TwilioMock { server, service }
    }

    /// The value for `platforms.sms.extra.api_base`.
    pub fn api_base(&self) -> String {
        format!("http://127.0.0.1:{}/2010-04-01", self.server.addr.port())
    }

    pub fn sent(&self) -> Vec<SentSms> {
        self.service.lock().sent.clone()
    }

    /// Bodies sent to `to`, in order.
    pub fn bodies_to(&self, to: &str) -> Vec<String> {
        self.sent()
            .into_iter()
            .filter(|s| s.to == to)
            .map(|s| s.body)
            .collect()
    }

    /// Every request as `METHOD path`.
    pub fn requests(&self) -> Vec<String> {
        self.service.lock().requests.clone()
    }

    /// The next send answers HTTP `status` with Twilio error `code`.
    pub fn fail_next(&self, status: u16, code: i64, message: &str) {
        self.service
            .lock()
            .faults
            .push_back((status, code, message.to_string()));
    }
}

/// Twilio's `X-Twilio-Signature` for a request to `url` with form `params`.
pub fn signature(auth_token: &str, url: &str, params: &[(&str, &str)]) -> String {
    let sorted: BTreeMap<&str, &str> = params.iter().copied().collect();
    let mut data = url.to_string();
    for (k, v) in sorted {
        data.push_str(k);
        data.push_str(v);
    }
    let tag = hmac::sign(
        &hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, auth_token.as_bytes()),
        data.as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(tag.as_ref())
}

/// Twilio's side of the webhook: posts inbound SMS to the gateway's listener.
#[derive(Debug, Clone)]
pub struct TwilioWebhook {
    /// `127.0.0.1:PORT` of the gateway's SMS listener.
    pub addr: String,
    /// The public URL Twilio signs (`SMS_WEBHOOK_URL`).
    pub signed_url: String,
    pub auth_token: String,
}

impl TwilioWebhook {
    /// The form Twilio posts for an SMS from `from` to our number.
    pub fn form(from: &str, body: &str, sid: &str) -> Vec<(String, String)> {
        [
            ("AccountSid", ACCOUNT_SID),
            ("ApiVersion", "2010-04-01"),
            ("Body", body),
            ("From", from),
            ("FromCountry", "US"),
            ("MessageSid", sid),
            ("NumMedia", "0"),
            ("NumSegments", "1"),
            ("SmsMessageSid", sid),
            ("SmsSid", sid),
            ("SmsStatus", "received"),
            ("To", PHONE_NUMBER),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// Posts an SMS, signed as Twilio signs it.
    pub fn deliver(&self, from: &str, body: &str, sid: &str) -> HttpReply {
        let form = Self::form(from, body, sid);
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let sig = signature(&self.auth_token, &self.signed_url, &pairs);
        self.deliver_signed(&form, &sig)
    }

    /// Posts `form` with `X-Twilio-Signature: signature` as given.
    pub fn deliver_signed(&self, form: &[(String, String)], signature: &str) -> HttpReply {
        let body = form
            .iter()
            .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let header = format!("X-Twilio-Signature: {signature}");
        http(
            &self.addr,
            "POST",
            "/webhooks/twilio",
            &[&header, "Content-Type: application/x-www-form-urlencoded"],
            &body,
        )
    }
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
