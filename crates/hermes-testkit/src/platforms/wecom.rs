//! A WeCom (企业微信) server API double on 127.0.0.1, following WeCom's developer documentation
//! (<https://developer.work.weixin.qq.com/document/path/91039> gettoken,
//! `/document/path/90236` message/send), and the other half of the conversation: WeCom's
//! callbacks to a self-built app's URL, signed and encrypted as `WXBizMsgCrypt` does
//! (`/document/path/90968`).
//!
//! - `GET /cgi-bin/gettoken?corpid&corpsecret` → `{"errcode": 0, "errmsg": "ok",
//!   "access_token", "expires_in": 7200}`; a wrong corp id: `{"errcode": 40013, "errmsg":
//!   "invalid corpid"}`, a wrong secret: `{"errcode": 40001, "errmsg": "invalid credential"}`.
//! - `POST /cgi-bin/message/send?access_token` (`touser`, `msgtype: text`, `agentid`, `text:
//!   {content}` at most 2,048 bytes, `safe`) → `{"errcode": 0, "errmsg": "ok", "invaliduser":
//!   "", "msgid"}`; an expired token ([`WeComMock::expire_token`]): `{"errcode": 42001, "errmsg":
//!   "access_token expired"}`; an unknown one 40014; content over the limit `{"errcode": 45002,
//!   "errmsg": "content size out of limit"}`.
//! - [`CallbackSender`]: WeCom's `GET` URL check (`echostr`) and `POST`ed messages, `<xml>` with
//!   `ToUserName`, `AgentID`, `Encrypt` (AES-256-CBC under the EncodingAESKey, 16 random bytes +
//!   length + message + corp id, PKCS#7 to 32), with `msg_signature` (SHA-1 of the sorted token,
//!   timestamp, nonce and `Encrypt`), `timestamp` and `nonce` in the query.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use aes::cipher::{BlockEncryptMut, KeyIvInit, block_padding::NoPadding};
use base64::Engine;
use ring::digest;
use ring::rand::{SecureRandom, SystemRandom};
use serde_json::{Value, json};

use super::server::{BoxFuture, MockRequest, MockResponse, Server, Service};
use crate::http_client::{HttpReply, http};

pub const CORP_ID: &str = "ww4a7c1e9b2d3f5a60";
pub const AGENT_ID: i64 = 1_000_002;

type Aes256CbcEnc = cbc::Encryptor<aes::Aes256>;

/// A request the double received.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiRequest {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Value,
}

impl ApiRequest {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    requests: Vec<ApiRequest>,
    token_serial: u64,
    next_msg: u64,
}

struct Shared {
    secret: String,
    state: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn errcode(code: i64, msg: &str) -> MockResponse {
    MockResponse::json(200, &json!({"errcode": code, "errmsg": msg}))
}

struct WeComService {
    shared: Arc<Shared>,
}

impl WeComService {
    fn handle(&self, req: &MockRequest) -> MockResponse {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let query = req.query();
        let q = |k: &str| {
            query
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let mut st = self.shared.lock();
        st.requests.push(ApiRequest {
            method: req.method.clone(),
            path: req.path().to_string(),
            query: query.clone(),
            body: body.clone(),
        });
        match (req.method.as_str(), req.path()) {
            ("GET", "/cgi-bin/gettoken") => {
                if q("corpid") != CORP_ID {
                    return errcode(40013, "invalid corpid");
                }
                if q("corpsecret") != self.shared.secret {
                    return errcode(40001, "invalid credential");
                }
                MockResponse::json(
                    200,
                    &json!({"errcode": 0, "errmsg": "ok",
                            "access_token": format!("wtok-{}", st.token_serial), "expires_in": 7200}),
                )
            }
            ("POST", "/cgi-bin/message/send") => {
                let token = q("access_token");
                let current = format!("wtok-{}", st.token_serial);
                if token != current {
                    return if token.starts_with("wtok-") {
                        errcode(42001, "access_token expired")
                    } else {
                        errcode(40014, "invalid access_token")
                    };
                }
                if body["agentid"].as_i64() != Some(AGENT_ID) {
                    return errcode(40056, "invalid agentid");
                }
                if body["msgtype"] != "text" || !body["touser"].is_string() {
                    return errcode(40008, "invalid message type");
                }
                let Some(content) = body["text"]["content"].as_str() else {
                    return errcode(41009, "missing content");
                };
                if content.len() > 2048 {
                    return errcode(45002, "content size out of limit");
                }
                st.next_msg += 1;
                MockResponse::json(
                    200,
                    &json!({"errcode": 0, "errmsg": "ok", "invaliduser": "",
                            "msgid": format!("msg-{}", st.next_msg)}),
                )
            }
            _ => MockResponse::json(404, &json!({"errcode": 404, "errmsg": "not found"})),
        }
    }
}

impl Service for WeComService {
    fn http(self: Arc<Self>, req: MockRequest) -> BoxFuture<MockResponse> {
        Box::pin(async move { self.handle(&req) })
    }
}

/// The WeCom API double.
pub struct WeComMock {
    server: Server,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for WeComMock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeComMock")
            .field("addr", &self.server.addr)
            .finish()
    }
}

impl WeComMock {
    /// A WeCom where corp [`CORP_ID`]'s app has the secret `corp_secret`.
    #[allow(clippy::expect_used)]
    pub fn start(corp_secret: &str) -> WeComMock {
        let shared = Arc::new(Shared {
            secret: corp_secret.to_string(),
            state: Mutex::new(State::default()),
        });
        let server = Server::start(
            "wecom",
            Arc::new(WeComService {
                shared: Arc::clone(&shared),
            }),
        )
        .expect("start the WeCom mock");
        WeComMock { server, shared }
    }

    /// The value for `platforms.wecom_callback.extra.api_url`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.server.addr.port())
    }

    pub fn requests(&self) -> Vec<ApiRequest> {
        self.shared.lock().requests.clone()
    }

    /// The current access token expires (WeCom answers 42001 for it from now on).
    pub fn expire_token(&self) {
        self.shared.lock().token_serial += 1;
    }

    /// The `message/send` bodies posted for `user`, in order (refused ones included).
    pub fn sent_to(&self, user: &str) -> Vec<Value> {
        let st = self.shared.lock();
        st.requests
            .iter()
            .filter(|r| r.path == "/cgi-bin/message/send" && r.body["touser"] == user)
            .map(|r| r.body.clone())
            .collect()
    }

    /// The texts sent to `user`.
    pub fn texts_to(&self, user: &str) -> Vec<String> {
        self.sent_to(user)
            .iter()
            .filter_map(|b| b["text"]["content"].as_str().map(str::to_string))
            .collect()
    }
}

/// `WXBizMsgCrypt`'s signature: the hex SHA-1 of the sorted, concatenated values.
pub fn signature(token: &str, timestamp: &str, nonce: &str, encrypted: &str) -> String {
    let mut parts = [token, timestamp, nonce, encrypted];
    parts.sort_unstable();
    let d = digest::digest(&digest::SHA1_FOR_LEGACY_USE_ONLY, parts.concat().as_bytes());
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// `WXBizMsgCrypt`'s encryption of `message` for `corp_id` under `encoding_aes_key`.
#[allow(clippy::expect_used)]
pub fn encrypt(encoding_aes_key: &str, corp_id: &str, message: &str) -> String {
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
    );
    let key: [u8; 32] = engine
        .decode(format!("{encoding_aes_key}="))
        .expect("a 43-character EncodingAESKey")
        .try_into()
        .expect("32 bytes");
    let mut random = [0u8; 16];
    SystemRandom::new().fill(&mut random).expect("random bytes");
    let mut plain = random.to_vec();
    plain.extend((message.len() as u32).to_be_bytes());
    plain.extend(message.as_bytes());
    plain.extend(corp_id.as_bytes());
    let pad = 32 - plain.len() % 32;
    plain.extend(std::iter::repeat_n(pad as u8, pad));
    let n = plain.len();
    let iv: [u8; 16] = key[..16].try_into().expect("16 bytes");
    let sealed = Aes256CbcEnc::new((&key).into(), &iv.into())
        .encrypt_padded_mut::<NoPadding>(&mut plain, n)
        .expect("whole blocks")
        .to_vec();
    base64::engine::general_purpose::STANDARD.encode(sealed)
}

/// A text message as WeCom puts it inside `Encrypt`.
pub fn text_xml(to_corp: &str, from_user: &str, msg_id: &str, content: &str) -> String {
    format!(
        "<xml><ToUserName><![CDATA[{to_corp}]]></ToUserName><FromUserName><![CDATA[{from_user}]]></FromUserName>\
         <CreateTime>1764756000</CreateTime><MsgType><![CDATA[text]]></MsgType>\
         <Content><![CDATA[{content}]]></Content><MsgId>{msg_id}</MsgId><AgentID>{AGENT_ID}</AgentID></xml>"
    )
}

/// An event (e.g. `enter_agent`) as WeCom puts it inside `Encrypt`.
pub fn event_xml(to_corp: &str, from_user: &str, event: &str) -> String {
    format!(
        "<xml><ToUserName><![CDATA[{to_corp}]]></ToUserName><FromUserName><![CDATA[{from_user}]]></FromUserName>\
         <CreateTime>1764756001</CreateTime><MsgType><![CDATA[event]]></MsgType>\
         <Event><![CDATA[{event}]]></Event><EventKey><![CDATA[]]></EventKey><AgentID>{AGENT_ID}</AgentID></xml>"
    )
}

/// WeCom calling a self-built app's callback URL.
#[derive(Debug, Clone)]
pub struct CallbackSender {
    /// `127.0.0.1:PORT` of the gateway's callback listener.
    pub addr: String,
    pub path: String,
    pub token: String,
    pub encoding_aes_key: String,
    pub corp_id: String,
}

impl CallbackSender {
    /// The URL check WeCom makes when the callback settings are saved: the body is the
    /// decrypted `echostr` when the app passes.
    pub fn verify_url(&self, echo: &str) -> HttpReply {
        let echostr = encrypt(&self.encoding_aes_key, &self.corp_id, echo);
        let (ts, nonce) = ("1764756000", "1372623149");
        let sig = signature(&self.token, ts, nonce, &echostr);
        let target = format!(
            "{}?msg_signature={sig}&timestamp={ts}&nonce={nonce}&echostr={}",
            self.path,
            urlencode(&echostr)
        );
        http(&self.addr, "GET", &target, &[], "")
    }

    /// The body WeCom posts for `message` (already encrypted) and its signature.
    pub fn envelope(&self, message: &str) -> (String, String) {
        let encrypted = encrypt(&self.encoding_aes_key, &self.corp_id, message);
        let sig = signature(&self.token, "1764756000", "1597212914", &encrypted);
        let body = format!(
            "<xml><ToUserName><![CDATA[{}]]></ToUserName><AgentID><![CDATA[{AGENT_ID}]]></AgentID>\
             <Encrypt><![CDATA[{encrypted}]]></Encrypt></xml>",
            self.corp_id
        );
        (body, sig)
    }

    /// Posts `message` (plain XML), encrypted and signed.
    pub fn deliver(&self, message: &str) -> HttpReply {
        let (body, sig) = self.envelope(message);
        self.deliver_raw(&body, &sig)
    }

    /// Posts `body` with `msg_signature` as given.
    pub fn deliver_raw(&self, body: &str, msg_signature: &str) -> HttpReply {
        let target = format!(
            "{}?msg_signature={msg_signature}&timestamp=1764756000&nonce=1597212914",
            self.path
        );
        http(
            &self.addr,
            "POST",
            &target,
            &["Content-Type: text/xml"],
            body,
        )
    }
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
