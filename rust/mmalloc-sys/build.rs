//! Builds the mmalloc C library from the repository's sources (the `csrc`
//! and `include` links) into one static library, as the CMake build's
//! libmmalloc.a is made: every object compiled, linked into one relocatable
//! object whose internal (hidden) symbols are then made local, so that only
//! the `mm_` API (and, with the `override` feature, the malloc family and the
//! C++ operators) can meet another name in the final program.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let src = root.join("csrc");
    let include = root.join("include");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let override_family = env::var_os("CARGO_FEATURE_OVERRIDE").is_some();
    let secure = env::var_os("CARGO_FEATURE_SECURE").is_some();

    let mut sources: Vec<PathBuf> = fs::read_dir(&src)
        .unwrap_or_else(|e| panic!("mmalloc-sys: cannot read {}: {}", src.display(), e))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().map_or(false, |x| x == "c"))
        .filter(|p| override_family || p.file_name().unwrap() != "override.c")
        .collect();
    sources.sort();
    assert!(sources.len() > 10, "mmalloc-sys: no C sources in {}", src.display());

    let mut build = cc::Build::new();
    build
        .files(&sources)
        .include(&include)
        .include(&src)
        .define("MM_DEBUG", "0")
        .flag("-std=gnu11")
        .flag("-fvisibility=hidden")
        .flag("-fno-builtin-malloc")
        .flag("-fno-builtin-calloc")
        .flag("-fno-builtin-free")
        .flag("-fno-builtin-realloc")
        .flag("-pthread")
        .opt_level(3)
        .warnings(false);
    if secure {
        build.define("MM_SECURE", "1");
    }
    if override_family {
        // operator new may throw through override.c (from a new_handler).
        build.flag("-fexceptions");
    }
    for s in &sources {
        println!("cargo:rerun-if-changed={}", s.display());
    }
    for h in fs::read_dir(&src).unwrap().map(|e| e.unwrap().path()) {
        if h.extension().map_or(false, |x| x == "h") {
            println!("cargo:rerun-if-changed={}", h.display());
        }
    }
    println!("cargo:rerun-if-changed={}", include.join("mmalloc.h").display());

    let objects = build.compile_intermediates();
    let lib = out.join("libmmalloc_sys_c.a");
    let _ = fs::remove_file(&lib);
    if !localize(&objects, &out, &lib) {
        // No binutils to merge with: an archive of the objects as they are
        // (the internal names stay global; a clash is then possible).
        println!("cargo:warning=mmalloc-sys: ld -r / objcopy unavailable, internal symbols stay global");
        let mut ar = build.get_archiver();
        ar.arg("crs").arg(&lib).args(&objects);
        run(&mut ar, "ar");
    }
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=mmalloc_sys_c");
    println!("cargo:rustc-link-lib=pthread");
    println!("cargo:root={}", out.display());
    println!("cargo:include={}", include.display());
}

/// ld -r the objects into one, make its hidden symbols local, archive it.
fn localize(objects: &[PathBuf], out: &Path, lib: &Path) -> bool {
    let merged = out.join("mmalloc_all.o");
    let ld = env::var("MMALLOC_SYS_LD").unwrap_or_else(|_| "ld".into());
    let objcopy = env::var("MMALLOC_SYS_OBJCOPY").unwrap_or_else(|_| "objcopy".into());
    let ok = Command::new(&ld).arg("-r").arg("-o").arg(&merged).args(objects).status().map_or(false, |s| s.success())
        && Command::new(&objcopy).arg("--localize-hidden").arg(&merged).status().map_or(false, |s| s.success());
    if !ok {
        return false;
    }
    let mut ar = cc::Build::new().get_archiver();
    ar.arg("crs").arg(lib).arg(&merged);
    run(&mut ar, "ar");
    true
}

fn run(cmd: &mut Command, what: &str) {
    let status = cmd.status().unwrap_or_else(|e| panic!("mmalloc-sys: cannot run {}: {}", what, e));
    assert!(status.success(), "mmalloc-sys: {} failed: {:?}", what, cmd);
}
