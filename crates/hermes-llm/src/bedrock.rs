//! AWS Bedrock Converse (`POST https://bedrock-runtime.{region}.amazonaws.com/model/{id}/converse-stream`),
//! behind the `bedrock` cargo feature: a Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`) or SigV4
//! with the standard AWS credentials, and the AWS event-stream framing of the response.

pub mod eventstream;
pub mod sigv4;
mod wire;

use hermes_protocol::StreamEvent;

use crate::{ChatRequest, EventStream, LlmError, Provider, ProviderOptions, ProviderSpec, http};

/// AWS credentials for SigV4 signing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AwsCredentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
    pub region: String,
}

enum Auth {
    Bearer(String),
    SigV4(AwsCredentials),
}

pub struct Bedrock {
    name: String,
    base: String,
    region: String,
    auth: Auth,
    client: reqwest::Client,
    limits: crate::limits::StreamLimits,
}

impl Bedrock {
    pub fn new(spec: &ProviderSpec, options: &ProviderOptions) -> Result<Self, LlmError> {
        let aws = options.aws.clone().unwrap_or_default();
        let region = if aws.region.is_empty() {
            "us-east-1".to_string()
        } else {
            aws.region.clone()
        };
        let auth = match (&spec.api_key, aws.access_key_id.is_empty()) {
            (Some(key), _) => Auth::Bearer(key.clone()),
            (None, false) => Auth::SigV4(AwsCredentials {
                region: region.clone(),
                ..aws
            }),
            (None, true) => {
                return Err(LlmError::Config(
                    "Bedrock needs AWS_BEARER_TOKEN_BEDROCK, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_REGION)".into(),
                ));
            }
        };
        let base = if spec.base_url.is_empty() {
            format!("https://bedrock-runtime.{region}.amazonaws.com")
        } else {
            spec.base_url.trim_end_matches('/').to_string()
        };
        Ok(Bedrock {
            name: spec.provider.clone(),
            base,
            region,
            auth,
            client: http::client_for(&options.timeouts, &spec.base_url)?,
            limits: options.limits,
        })
    }

    fn headers(&self, path: &str, body: &[u8]) -> Vec<(&'static str, String)> {
        match &self.auth {
            Auth::Bearer(key) => vec![("authorization", format!("Bearer {key}"))],
            Auth::SigV4(creds) => {
                let host = self
                    .base
                    .split_once("://")
                    .map_or(self.base.as_str(), |(_, h)| h)
                    .split('/')
                    .next()
                    .unwrap_or("")
                    .to_string();
                let amz_date = amz_date_now();
                let mut signed = vec![("host", host), ("x-amz-date", amz_date.clone())];
                if let Some(t) = &creds.session_token {
                    signed.push(("x-amz-security-token", t.clone()));
                }
                // SigV4 encodes each (already encoded) path segment once more.
                let canonical_uri: String = path
                    .split('/')
                    .map(sigv4::encode_segment)
                    .collect::<Vec<_>>()
                    .join("/");
                let auth = sigv4::authorization(
                    &sigv4::SigningScope {
                        access_key: &creds.access_key_id,
                        secret_key: &creds.secret_access_key,
                        region: &self.region,
                        service: "bedrock",
                        amz_date: &amz_date,
                    },
                    &sigv4::CanonicalRequest {
                        method: "POST",
                        uri: &canonical_uri,
                        query: "",
                        headers: signed.clone(),
                        payload: body,
                    },
                );
                let mut headers: Vec<(&'static str, String)> =
                    signed.into_iter().filter(|(n, _)| *n != "host").collect();
                headers.push(("authorization", auth));
                headers
            }
        }
    }
}

fn amz_date_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d) = crate::util::civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[async_trait::async_trait]
impl Provider for Bedrock {
    fn name(&self) -> &str {
        &self.name
    }

    fn endpoint(&self) -> &str {
        &self.base
    }

    async fn stream(&self, request: &ChatRequest<'_>) -> Result<EventStream, LlmError> {
        let body = serde_json::to_vec(&wire::request_body(request))
            .map_err(|e| LlmError::Config(format!("cannot encode the request: {e}")))?;
        let path = format!(
            "/model/{}/converse-stream",
            sigv4::encode_segment(request.model)
        );
        let headers = self.headers(&path, &body);
        let url = format!("{}{path}", self.base);
        let sent = http::post_json(&self.client, &url, &headers, body, &self.limits).await?;
        Ok(crate::stream::decode_body(
            sent,
            eventstream::FrameDecoder::new(),
            wire::Decoder::default(),
        ))
    }
}

impl crate::stream::Framing for eventstream::FrameDecoder {
    type Frame = eventstream::Frame;
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<eventstream::Frame>, crate::stream::FrameError> {
        eventstream::FrameDecoder::push(self, bytes).map_err(crate::stream::FrameError::Malformed)
    }
}

/// A Converse stream is complete once `messageStop` arrived; usage (`metadata`) follows it, so
/// the body is read to its end.
impl crate::stream::Decode<eventstream::Frame> for wire::Decoder {
    fn decode(&mut self, frame: eventstream::Frame) -> Result<Vec<StreamEvent>, LlmError> {
        self.frame(&frame)
    }
    fn is_done(&self) -> bool {
        false
    }
    fn is_complete(&self) -> bool {
        self.finished
    }
}
