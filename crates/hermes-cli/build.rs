//! Link options for the `hermes` binary. On Linux the relative relocations are packed (RELR,
//! `-z pack-relative-relocs`): the dynamic loader then reads a few kilobytes instead of megabytes
//! of relocation entries at every start, which shows in start-up time and resident memory.
//! Only the binary's own link step changes, so no dependency is rebuilt.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.contains("linux-gnu") && linker_supports_relr() && glibc_runs_relr() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rerun-if-changed=build.rs");
}

/// GNU ld gained `-z pack-relative-relocs` in binutils 2.38; an older toolchain links as before.
fn linker_supports_relr() -> bool {
    std::process::Command::new("ld")
        .arg("--help")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("pack-relative-relocs"))
        .unwrap_or(false)
}

/// Binaries with packed relocations need glibc 2.36 or newer to start (Ubuntu 22.04 has
/// binutils 2.38 but glibc 2.35: there the option must stay off).
fn glibc_runs_relr() -> bool {
    let Ok(out) = std::process::Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
    else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.trim().rsplit(' ').next().unwrap_or("");
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (2, 36)
}
