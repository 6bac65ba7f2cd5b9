//! Media against mocks of each provider's documented API: `image_generate` over FAL (the image
//! downloaded through the fetcher) and the OpenAI images API (base64), `text_to_speech` over
//! OpenAI, ElevenLabs and Edge TTS (a WebSocket server speaking Edge's protocol) and local
//! espeak-ng when installed, and transcription over the OpenAI and Groq Whisper APIs. Each test
//! asserts the request sent (method, path, headers, body) and the file or text produced.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::http::header;
use axum::routing::post;
use base64::Engine;
use common::TestServer;
use futures_util::{SinkExt, StreamExt};
use hermes_config::{Config, Environment};
use hermes_tools::{Registry, Tool, ToolContext};
use hermes_web::api::ApiClient;
use hermes_web::media::image::ImageSettings;
use hermes_web::media::tts::TtsSettings;
use hermes_web::media::{ImageGenerateTool, SttProvider, TextToSpeechTool, Transcriber};
use hermes_web::net::{Fetcher, StaticResolver, UrlPolicy};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};

/// 1x1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

fn config(yaml: &str, env: &Environment) -> (Config, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, yaml).unwrap();
    (Config::load(&path, env).unwrap(), dir)
}

fn api() -> ApiClient {
    ApiClient::new(Duration::from_secs(10))
}

async fn call(tool: &dyn Tool, args: Value) -> (Value, bool) {
    let out = Registry::execute(tool, args, &ToolContext::new(std::env::temp_dir())).await;
    (serde_json::from_str(&out.content).unwrap(), out.ok)
}

#[tokio::test]
async fn fal_generates_and_the_image_is_downloaded_through_the_fetcher() {
    let srv = TestServer::start(Router::new().route(
        "/files/out.png",
        axum::routing::get(|| async { ([(header::CONTENT_TYPE, "image/png")], PNG) }),
    ))
    .await;
    let image_url = srv.url("/files/out.png");
    let fal = TestServer::start(Router::new().route(
        "/fal-ai/flux-2/klein/9b",
        post(move || {
            let url = image_url.clone();
            async move {
                axum::Json(
                    json!({"images": [{"url": url, "content_type": "image/png"}], "seed": 7}),
                )
            }
        }),
    ))
    .await;
    let env = Environment::isolated([
        ("FAL_KEY", "fal-secret"),
        ("FAL_BASE_URL", fal.url("").as_str()),
    ]);
    let (cfg, _d) = config("", &env);
    let out = tempfile::tempdir().unwrap();
    let fetcher = Fetcher::with_resolver(
        UrlPolicy::strict().trusting(srv.addr),
        Arc::new(StaticResolver::new()),
    );
    let tool = ImageGenerateTool::new(
        api(),
        fetcher,
        env.clone(),
        ImageSettings::from_config(&cfg, &env),
        out.path().into(),
    );
    assert!(tool.check_available().is_ok());
    let (result, ok) = call(
        &tool,
        json!({"prompt": "a lighthouse at dusk", "size": "landscape"}),
    )
    .await;
    assert!(ok, "{result}");
    assert_eq!(result["provider"], "fal");
    assert_eq!(result["model"], "fal-ai/flux-2/klein/9b");
    let path = result["image"].as_str().unwrap();
    assert!(
        path.starts_with(out.path().to_str().unwrap()) && path.ends_with(".png"),
        "{path}"
    );
    assert_eq!(std::fs::read(path).unwrap(), PNG);
    let req = &fal.requests()[0];
    assert_eq!(
        (req.method.as_str(), req.path()),
        ("POST", "/fal-ai/flux-2/klein/9b")
    );
    assert_eq!(req.header("authorization"), Some("Key fal-secret"));
    assert_eq!(
        req.json(),
        json!({"prompt": "a lighthouse at dusk", "image_size": "landscape_16_9", "num_inference_steps": 4, "output_format": "png", "enable_safety_checker": false})
    );

    // A provider answering with a private URL does not make us fetch it.
    let evil = TestServer::start(Router::new().route(
        "/fal-ai/flux-2/klein/9b",
        post(|| async {
            axum::Json(json!({"images": [{"url": "http://169.254.169.254/latest/meta-data"}]}))
        }),
    ))
    .await;
    let env = Environment::isolated([
        ("FAL_KEY", "fal-secret"),
        ("FAL_BASE_URL", evil.url("").as_str()),
    ]);
    let fetcher = Fetcher::with_resolver(UrlPolicy::strict(), Arc::new(StaticResolver::new()));
    let tool = ImageGenerateTool::new(
        api(),
        fetcher,
        env.clone(),
        ImageSettings::from_config(&cfg, &env),
        out.path().into(),
    );
    let (result, ok) = call(&tool, json!({"prompt": "x"})).await;
    assert!(!ok);
    assert!(
        result["error"].as_str().unwrap().contains("cloud metadata"),
        "{result}"
    );
}

#[tokio::test]
async fn openai_images_answer_base64_when_chosen_explicitly() {
    let b64 = base64::engine::general_purpose::STANDARD.encode(PNG);
    let srv = TestServer::start(Router::new().route(
        "/v1/images/generations",
        post(move || {
            let b64 = b64.clone();
            async move { axum::Json(json!({"created": 1, "data": [{"b64_json": b64}]})) }
        }),
    ))
    .await;
    let env = Environment::isolated([("OPENAI_API_KEY", "sk-img")]);
    // An inference key alone never enables a paid image provider.
    let (plain, _d0) = config("", &env);
    let out = tempfile::tempdir().unwrap();
    let fetcher = Fetcher::new(UrlPolicy::strict());
    let idle = ImageGenerateTool::new(
        api(),
        fetcher.clone(),
        env.clone(),
        ImageSettings::from_config(&plain, &env),
        out.path().into(),
    );
    assert!(idle.check_available().is_err());

    let yaml = format!(
        "image_gen:\n  provider: openai\n  openai:\n    model: gpt-image-2-high\n    base_url: {}\n",
        srv.url("/v1")
    );
    let (cfg, _d) = config(&yaml, &env);
    let tool = ImageGenerateTool::new(
        api(),
        fetcher,
        env.clone(),
        ImageSettings::from_config(&cfg, &env),
        out.path().into(),
    );
    assert!(tool.check_available().is_ok());
    let (result, ok) = call(&tool, json!({"prompt": "a red kite", "size": "portrait"})).await;
    assert!(ok, "{result}");
    assert_eq!(
        std::fs::read(result["image"].as_str().unwrap()).unwrap(),
        PNG
    );
    let req = &srv.requests()[0];
    assert_eq!(req.header("authorization"), Some("Bearer sk-img"));
    assert_eq!(
        req.json(),
        json!({"model": "gpt-image-2", "prompt": "a red kite", "size": "1024x1536", "quality": "high", "n": 1})
    );
}

#[tokio::test]
async fn openai_and_elevenlabs_speech_are_saved_as_mp3() {
    let srv = TestServer::start(
        Router::new()
            .route(
                "/v1/audio/speech",
                post(|| async {
                    (
                        [(header::CONTENT_TYPE, "audio/mpeg")],
                        b"ID3openai-audio".to_vec(),
                    )
                }),
            )
            .route(
                "/v1/text-to-speech/voice42",
                post(|| async {
                    (
                        [(header::CONTENT_TYPE, "audio/mpeg")],
                        b"ID3eleven-audio".to_vec(),
                    )
                }),
            ),
    )
    .await;
    let env = Environment::isolated([
        ("OPENAI_API_KEY", "sk-tts"),
        ("ELEVENLABS_API_KEY", "el-key"),
    ]);
    let out = tempfile::tempdir().unwrap();
    let yaml = format!(
        "tts:\n  provider: openai\n  openai:\n    voice: nova\n    base_url: {}\n",
        srv.url("/v1")
    );
    let (cfg, _d) = config(&yaml, &env);
    let tool = TextToSpeechTool::new(
        api(),
        env.clone(),
        TtsSettings::from_config(&cfg),
        out.path().into(),
    );
    let (result, ok) = call(&tool, json!({"text": "The ferry leaves at nine."})).await;
    assert!(ok, "{result}");
    let path = result["path"].as_str().unwrap();
    assert!(path.ends_with(".mp3"));
    assert_eq!(std::fs::read(path).unwrap(), b"ID3openai-audio");
    assert_eq!(result["media"], format!("MEDIA:{path}"));
    let req = &srv.requests()[0];
    assert_eq!(req.header("authorization"), Some("Bearer sk-tts"));
    assert_eq!(
        req.json(),
        json!({"model": "gpt-4o-mini-tts", "voice": "nova", "input": "The ferry leaves at nine.", "response_format": "mp3"})
    );

    let yaml = format!(
        "tts:\n  provider: elevenlabs\n  elevenlabs:\n    voice_id: voice42\n    model_id: eleven_flash_v2_5\n    base_url: {}\n",
        srv.url("")
    );
    let (cfg, _d2) = config(&yaml, &env);
    let tool = TextToSpeechTool::new(
        api(),
        env.clone(),
        TtsSettings::from_config(&cfg),
        out.path().into(),
    );
    let (result, ok) = call(&tool, json!({"text": "Hello"})).await;
    assert!(ok, "{result}");
    assert_eq!(
        std::fs::read(result["path"].as_str().unwrap()).unwrap(),
        b"ID3eleven-audio"
    );
    let req = &srv.requests()[1];
    assert_eq!(
        req.uri,
        "/v1/text-to-speech/voice42?output_format=mp3_44100_128"
    );
    assert_eq!(req.header("xi-api-key"), Some("el-key"));
    assert_eq!(
        req.json(),
        json!({"text": "Hello", "model_id": "eleven_flash_v2_5"})
    );

    let (cfg, _d3) = config("tts:\n  provider: neutts\n", &env);
    let tool = TextToSpeechTool::new(
        api(),
        env,
        TtsSettings::from_config(&cfg),
        out.path().into(),
    );
    let (result, ok) = call(&tool, json!({"text": "Hello"})).await;
    assert!(!ok);
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains("tts.provider `neutts` is not available"),
        "{result}"
    );
}

/// An Edge TTS endpoint: records the request line and the two messages, answers with
/// turn.start, two audio frames, a metadata frame and turn.end.
async fn edge_server() -> (String, Arc<Mutex<(String, Vec<String>)>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Arc<Mutex<(String, Vec<String>)>> = Arc::default();
    let record = seen.clone();
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let uri_seen = record.clone();
        // The handshake callback's error type is tungstenite's, large by design.
        #[allow(clippy::result_large_err)]
        let callback = move |req: &Request, resp: Response| {
            uri_seen.lock().unwrap().0 = req.uri().to_string();
            Ok(resp)
        };
        let mut ws = tokio_tungstenite::accept_hdr_async(stream, callback)
            .await
            .unwrap();
        for _ in 0..2 {
            if let Some(Ok(Message::Text(t))) = ws.next().await {
                record.lock().unwrap().1.push(t.to_string());
            }
        }
        let frame = |audio: &[u8]| {
            let head = b"X-RequestId:1\r\nContent-Type:audio/mpeg\r\nPath:audio\r\n";
            let mut f = (head.len() as u16).to_be_bytes().to_vec();
            f.extend_from_slice(head);
            f.extend_from_slice(audio);
            f
        };
        ws.send(Message::text(
            "X-RequestId:1\r\nContent-Type:application/json\r\nPath:turn.start\r\n\r\n{}",
        ))
        .await
        .unwrap();
        ws.send(Message::binary(frame(b"MP3-part-1|")))
            .await
            .unwrap();
        ws.send(Message::text(
            "X-RequestId:1\r\nPath:audio.metadata\r\n\r\n{\"Metadata\":[]}",
        ))
        .await
        .unwrap();
        ws.send(Message::binary(frame(b"MP3-part-2")))
            .await
            .unwrap();
        ws.send(Message::text("X-RequestId:1\r\nPath:turn.end\r\n\r\n{}"))
            .await
            .unwrap();
        let _ = ws.next().await;
    });
    (format!("ws://{addr}/edge/v1"), seen)
}

#[tokio::test]
async fn edge_tts_speaks_the_websocket_protocol() {
    let (base, seen) = edge_server().await;
    let env = Environment::isolated::<&str, &str>([]);
    let yaml = format!("tts:\n  edge:\n    voice: en-GB-SoniaNeural\n    base_url: {base}\n");
    let (cfg, _d) = config(&yaml, &env);
    let out = tempfile::tempdir().unwrap();
    let tool = TextToSpeechTool::new(
        api(),
        env,
        TtsSettings::from_config(&cfg),
        out.path().into(),
    );
    let (result, ok) = call(&tool, json!({"text": "Tides & <currents>"})).await;
    assert!(ok, "{result}");
    assert_eq!(result["provider"], "edge");
    assert_eq!(
        std::fs::read(result["path"].as_str().unwrap()).unwrap(),
        b"MP3-part-1|MP3-part-2"
    );

    let (uri, messages) = seen.lock().unwrap().clone();
    assert!(
        uri.starts_with("/edge/v1?TrustedClientToken=6A5AA1D4EAFF4E9FB37E23D68491D6F4&Sec-MS-GEC="),
        "{uri}"
    );
    let gec = uri
        .split("Sec-MS-GEC=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap();
    assert_eq!(gec.len(), 64, "{uri}");
    assert!(
        uri.contains("&Sec-MS-GEC-Version=1-130.0.2849.68&ConnectionId="),
        "{uri}"
    );
    assert!(
        messages[0].contains("Path:speech.config\r\n\r\n"),
        "{}",
        messages[0]
    );
    assert!(messages[0].contains("\"outputFormat\":\"audio-24khz-48kbitrate-mono-mp3\""));
    assert!(
        messages[1].contains("Content-Type:application/ssml+xml\r\n"),
        "{}",
        messages[1]
    );
    assert!(
        messages[1].contains("Path:ssml\r\n\r\n<speak version='1.0'"),
        "{}",
        messages[1]
    );
    assert!(
        messages[1].contains(
            "<voice name='Microsoft Server Speech Text to Speech Voice (en-GB, SoniaNeural)'>"
        ),
        "{}",
        messages[1]
    );
    assert!(
        messages[1].contains(">Tides &amp; &lt;currents&gt;</prosody>"),
        "{}",
        messages[1]
    );
}

#[tokio::test]
async fn espeak_ng_speaks_locally_when_installed() {
    let path = std::env::var("PATH").unwrap_or_default();
    if !hermes_web::media::tts::espeak_installed(Some(&path)) {
        eprintln!("skipping: espeak-ng is not installed");
        return;
    }
    let env = Environment::isolated::<&str, &str>([]);
    let (cfg, _d) = config("tts:\n  provider: espeak-ng\n", &env);
    let out = tempfile::tempdir().unwrap();
    let tool = TextToSpeechTool::new(
        api(),
        env,
        TtsSettings::from_config(&cfg),
        out.path().into(),
    );
    let (result, ok) = call(&tool, json!({"text": "-- hello from the harbour"})).await;
    assert!(ok, "{result}");
    let wav = std::fs::read(result["path"].as_str().unwrap()).unwrap();
    assert!(wav.starts_with(b"RIFF") && wav.len() > 1000);
}

#[tokio::test]
async fn whisper_transcription_over_openai_and_groq() {
    let srv = TestServer::start(
        Router::new()
            .route(
                "/openai/v1/audio/transcriptions",
                post(|| async { axum::Json(json!({"text": "  The night ferry is late.  "})) }),
            )
            .route(
                "/groq/openai/v1/audio/transcriptions",
                post(|| async { axum::Json(json!({"text": "Groq heard this."})) }),
            ),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let audio = dir.path().join("voice.ogg");
    std::fs::write(&audio, b"OggS-fake-audio-bytes").unwrap();

    let openai_base = srv.url("/openai/v1");
    let env = Environment::isolated([
        ("OPENAI_API_KEY", "sk-stt"),
        ("STT_OPENAI_BASE_URL", openai_base.as_str()),
    ]);
    let (cfg, _d) = config("", &env);
    let t = Transcriber::new(api(), &cfg, &env);
    assert_eq!(t.provider(), Ok(SttProvider::OpenAi));
    assert_eq!(
        t.transcribe(&audio).await.unwrap(),
        "The night ferry is late."
    );
    let req = &srv.requests()[0];
    assert_eq!(req.header("authorization"), Some("Bearer sk-stt"));
    let ct = req.header("content-type").unwrap();
    let boundary = ct.strip_prefix("multipart/form-data; boundary=").unwrap();
    let body = String::from_utf8_lossy(&req.body);
    assert!(
        body.contains(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n"
        )),
        "{body}"
    );
    assert!(body.contains("name=\"file\"; filename=\"voice.ogg\"\r\nContent-Type: audio/ogg\r\n\r\nOggS-fake-audio-bytes\r\n"), "{body}");

    let groq_base = srv.url("/groq/openai/v1");
    let env = Environment::isolated([
        ("GROQ_API_KEY", "gsk"),
        ("GROQ_BASE_URL", groq_base.as_str()),
        ("OPENAI_API_KEY", "sk"),
    ]);
    let t = Transcriber::new(api(), &cfg, &env);
    assert_eq!(t.provider(), Ok(SttProvider::Groq));
    assert_eq!(t.transcribe(&audio).await.unwrap(), "Groq heard this.");
    let req = &srv.requests()[1];
    assert_eq!(req.header("authorization"), Some("Bearer gsk"));
    assert!(String::from_utf8_lossy(&req.body).contains("\r\n\r\nwhisper-large-v3-turbo\r\n"));

    let bad = dir.path().join("notes.txt");
    std::fs::write(&bad, "x").unwrap();
    let err = t.transcribe(&bad).await.unwrap_err();
    assert!(
        err.to_string().contains("unsupported audio format"),
        "{err}"
    );
}
