//! The embedded kernels match their sources: `kernels/nvcam_kernels.manifest` records the
//! SHA-256 of the sources `scripts/build/build-kernels.sh` compiled (`kernels/*.cu`, the `*.cuh` they
//! include, `kernels/test/*.cu`) and of the fatbins it wrote (the release one and the tests').
//! A source edited without a rebuild (or a fatbin replaced by hand) fails here, on any machine,
//! with no GPU and no CUDA compiler. The fatbin's container is also walked: every architecture
//! the manifest names is in it as SASS, plus the PTX.

use std::collections::BTreeMap;
use std::path::Path;

/// SHA-256 (FIPS 180-4), small and slow: enough for a few hundred kilobytes.
fn sha256(data: &[u8]) -> String {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
        0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
        0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
        0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ];
    let mut h: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in msg.chunks(64) {
        let mut w = [0u32; 64];
        for i in 0..16 {
            w[i] = u32::from_be_bytes(block[4 * i..4 * i + 4].try_into().unwrap());
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16].wrapping_add(s0).wrapping_add(w[i - 7]).wrapping_add(s1);
        }
        let mut v = h;
        for i in 0..64 {
            let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
            let ch = (v[4] & v[5]) ^ (!v[4] & v[6]);
            let t1 = v[7].wrapping_add(s1).wrapping_add(ch).wrapping_add(K[i]).wrapping_add(w[i]);
            let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
            let maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            let t2 = s0.wrapping_add(maj);
            v = [t1.wrapping_add(t2), v[0], v[1], v[2], v[3].wrapping_add(t1), v[4], v[5], v[6]];
        }
        for i in 0..8 {
            h[i] = h[i].wrapping_add(v[i]);
        }
    }
    h.iter().map(|x| format!("{x:08x}")).collect()
}

fn kernels_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels"))
}

fn manifest() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(kernels_dir().join("nvcam_kernels.manifest")).expect("kernels/nvcam_kernels.manifest");
    text.lines()
        .filter(|l| !l.starts_with('#') && l.contains('='))
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect()
}

#[test]
fn sha256_is_sha256() {
    assert_eq!(sha256(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert_eq!(sha256(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/// The build's sources by their path in kernels/, in name order: `*.cu` and `*.cuh` there, and
/// `test/*.cu`.
fn kernel_sources() -> Vec<String> {
    let list = |dir: &str, exts: &[&str]| -> Vec<String> {
        std::fs::read_dir(kernels_dir().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| exts.iter().any(|x| e == *x)))
            .map(|p| format!("{dir}{}", p.file_name().unwrap().to_str().unwrap()))
            .collect()
    };
    let mut srcs = list("", &["cu", "cuh"]);
    srcs.extend(list("test/", &["cu"]));
    srcs.sort();
    srcs
}

/// A kernel source or header changed without `bash scripts/build/build-kernels.sh`: the library would
/// embed stale machine code.
#[test]
fn committed_fatbin_was_built_from_these_kernel_sources() {
    let m = manifest();
    let srcs = kernel_sources();
    let mut all = Vec::new();
    for s in &srcs {
        all.extend_from_slice(s.as_bytes());
        all.push(b'\n');
        all.extend_from_slice(&std::fs::read(kernels_dir().join(s)).unwrap());
    }
    assert_eq!(m["sources"], srcs.join(" "), "the kernel sources changed: run bash scripts/build/build-kernels.sh");
    assert_eq!(m["source_sha256"], sha256(&all), "a kernel source changed since the fatbins were built: run bash scripts/build/build-kernels.sh and commit them");
    let fatbin = std::fs::read(kernels_dir().join("nvcam_kernels.fatbin")).unwrap();
    assert_eq!(m["fatbin_sha256"], sha256(&fatbin), "kernels/nvcam_kernels.fatbin is not the one the manifest describes");
    let test = std::fs::read(kernels_dir().join("test/nvcam_test_kernels.fatbin")).unwrap();
    assert_eq!(m["test_fatbin_sha256"], sha256(&test), "kernels/test/nvcam_test_kernels.fatbin is not the one the manifest describes");
}

/// The container holds SASS for every architecture the manifest names, and the PTX, with sizes
/// that add up (what cuModuleLoadData will walk).
#[test]
fn fatbin_holds_sass_for_every_listed_architecture_and_ptx() {
    let m = manifest();
    let d = std::fs::read(kernels_dir().join("nvcam_kernels.fatbin")).unwrap();
    let u16at = |o: usize| u16::from_le_bytes(d[o..o + 2].try_into().unwrap());
    let u32at = |o: usize| u32::from_le_bytes(d[o..o + 4].try_into().unwrap());
    let u64at = |o: usize| u64::from_le_bytes(d[o..o + 8].try_into().unwrap());
    assert_eq!(u32at(0), 0xba55_ed50, "fatbin magic");
    assert_eq!(u16at(4), 1, "fatbin version");
    let header = u16at(6) as usize;
    assert_eq!(header as u64 + u64at(8), d.len() as u64, "fatbin size field");
    let (mut sass, mut ptx) = (Vec::new(), Vec::new());
    let mut o = header;
    while o < d.len() {
        let kind = u16at(o);
        let entry_header = u32at(o + 4) as usize;
        let payload = u64at(o + 8) as usize;
        let arch = u32at(o + 28);
        match kind {
            1 => ptx.push(format!("compute_{arch}")),
            2 => {
                let elf = &d[o + entry_header..o + entry_header + 4];
                assert_eq!(elf, b"\x7fELF", "SASS entry for sm_{arch} is not an ELF image (compressed?)");
                sass.push(format!("sm_{arch}"));
            }
            k => panic!("unknown fatbin entry kind {k}"),
        }
        o += entry_header + payload;
    }
    assert_eq!(o, d.len(), "entries overrun the container");
    assert_eq!(sass.join(" "), m["sass"]);
    assert_eq!(ptx.join(" "), m["ptx"]);
    assert!(sass.contains(&"sm_50".to_string()) && sass.contains(&"sm_90".to_string()), "sm_50..sm_90: {sass:?}");
}
