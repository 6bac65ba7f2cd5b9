//! Fetching against a fake pip that serves wheels built here.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::default_model::Chunk;

/// A two-chunk model whose wheels sit in `wheels/`, and a fake pip that copies them into the
/// `-d` directory and counts its downloads in `calls`.
struct Fixture {
    dir: tempfile::TempDir,
    model: ChunkedModel,
}

impl Fixture {
    fn new(pieces: [&[u8]; 2]) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let wheels = dir.path().join("wheels");
        std::fs::create_dir_all(&wheels).unwrap();
        let mut chunks = Vec::new();
        let mut whole = Vec::new();
        for (i, piece) in pieces.iter().enumerate() {
            let module = format!("m_part{i}");
            let member = format!("{module}/data/m.gguf.part{i:02}");
            let wheel = wheels.join(format!("{module}-1.0-py3-none-any.whl"));
            let mut zip = zip::ZipWriter::new(File::create(&wheel).unwrap());
            zip.start_file(&member, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(piece).unwrap();
            zip.finish().unwrap();
            whole.extend_from_slice(piece);
            chunks.push(Chunk {
                requirement: format!("m-part{i}==1.0"),
                wheel_prefix: format!("{module}-1.0-"),
                member,
            });
        }
        let pip = dir.path().join("pip");
        std::fs::write(
            &pip,
            format!(
                "#!/bin/sh\n[ \"$1\" = --version ] && exit 0\necho x >> {calls}\nwhile [ \"$1\" != -d ]; do shift; done\ncp {wheels}/*.whl \"$2\"\n",
                calls = dir.path().join("calls").display(),
                wheels = wheels.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&pip, std::fs::Permissions::from_mode(0o755)).unwrap();
        let model = ChunkedModel {
            file_name: "m.gguf".into(),
            sha256: hex(&Sha256::digest(&whole)),
            size: whole.len() as u64,
            chunks,
        };
        Fixture { dir, model }
    }

    fn pip(&self) -> String {
        self.dir.path().join("pip").display().to_string()
    }

    fn downloads(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("calls"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    fn fetch_into(&self, home: &str) -> Result<Fetched, FetchError> {
        let pip = self.pip();
        let cache = self.dir.path().join("cache");
        fetch(
            &self.model,
            &self.dir.path().join(home).join("models"),
            Some(&cache),
            &[&["/nonexistent/pip"], &[pip.as_str()]],
            &mut |_| {},
        )
    }
}

#[test]
fn chunks_are_joined_verified_cached_and_linked_into_each_home() {
    let fx = Fixture::new([b"GGUF-first-", b"second"]);
    let first = fx.fetch_into("home1").unwrap();
    assert!(matches!(first, Fetched::Downloaded(_)), "{first:?}");
    assert_eq!(
        std::fs::read(first.path()).unwrap(),
        b"GGUF-first-second".to_vec()
    );
    assert!(is_verified(first.path(), &fx.model));
    assert!(is_verified(
        &fx.dir.path().join("cache").join("m.gguf"),
        &fx.model
    ));

    assert!(matches!(
        fx.fetch_into("home1").unwrap(),
        Fetched::AlreadyPresent(_)
    ));
    let other = fx.fetch_into("home2").unwrap();
    assert!(matches!(other, Fetched::FromCache(_)), "{other:?}");
    assert_eq!(
        fx.downloads(),
        1,
        "the cache is reused, not downloaded again"
    );
    let leftovers: Vec<_> = std::fs::read_dir(fx.dir.path().join("cache"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 2, "file and stamp only: {leftovers:?}");
}

#[test]
fn a_wrong_hash_keeps_nothing() {
    let mut fx = Fixture::new([b"a", b"b"]);
    fx.model.sha256 = "0".repeat(64);
    let err = fx.fetch_into("home").unwrap_err();
    assert!(matches!(err, FetchError::HashMismatch { .. }), "{err}");
    assert!(err.to_string().contains("not kept"), "{err}");
    let cache = fx.dir.path().join("cache");
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 0);
    assert!(!fx.dir.path().join("home/models/m.gguf").exists());
}

#[test]
fn a_damaged_copy_in_the_home_is_replaced() {
    let fx = Fixture::new([b"x", b"y"]);
    let models = fx.dir.path().join("home/models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::write(models.join("m.gguf"), b"trunc").unwrap();
    let fetched = fx.fetch_into("home").unwrap();
    assert_eq!(std::fs::read(fetched.path()).unwrap(), b"xy".to_vec());
}

#[test]
fn missing_or_failing_pip_is_a_clear_error() {
    let fx = Fixture::new([b"x", b"y"]);
    let dest = fx.dir.path().join("models");
    let err = fetch(
        &fx.model,
        &dest,
        None,
        &[&["/nonexistent/pip"]],
        &mut |_| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("pip is not available"), "{err}");

    let failing = fx.dir.path().join("failing-pip");
    std::fs::write(
        &failing,
        "#!/bin/sh\n[ \"$1\" = --version ] && exit 0\necho 'ERROR: No matching distribution found' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&failing, std::fs::Permissions::from_mode(0o755)).unwrap();
    let failing = failing.display().to_string();
    let err = fetch(&fx.model, &dest, None, &[&[failing.as_str()]], &mut |_| {}).unwrap_err();
    assert!(
        err.to_string().contains("No matching distribution found"),
        "{err}"
    );
}
