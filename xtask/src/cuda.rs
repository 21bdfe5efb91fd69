//! kernels/nvcam_abi.cuh, the CUDA side of the conversion kernels' ABI, and
//! src/gpu/params_layout.rs, rustc's side of the same layout check, from the Rust items that
//! define them (read with syn; they are crate-private, which cbindgen skips):
//!
//! - src/gpu/params.rs: the `#[repr(C)]` parameter blocks `KernelCommon`, `KernelItem`,
//!   `KernelParams`, `BatchParams` and nvJPEG's `JpegPackParams` (fields, types, doc comments),
//!   `BATCH_PER_LAUNCH` and the `DEPTH_*` codes;
//! - src/convert/mod.rs: `PixelFormat::code`'s match arms (`FMT_*`) and `Mode`'s discriminants
//!   (`MODE_*`);
//! - src/convert/launch.rs: `BLOCK` (`BLOCK_X`, `BLOCK_Y`) and every `const NAME: Shape = Shape { px,
//!   rows }` (`NAME_PX`, `NAME_ROWS`).
//!
//! The layout (sizes, every field's offset) is computed here by C's rules (what `#[repr(C)]`
//! promises) and asserted on both sides: `static_assert`s in the header for the CUDA compiler,
//! `const` assertions in params_layout.rs for rustc. Either compiler disagreeing fails its build.

use std::fmt::Write;
use std::path::Path;
use syn::{Expr, Fields, Item, Lit, Type};

/// The blocks, in declaration order (a block's fields come before it), with their CUDA names.
const STRUCTS: &[(&str, &str)] = &[
    ("KernelCommon", "nvcam_convert_common"),
    ("KernelItem", "nvcam_convert_item"),
    ("KernelParams", "nvcam_convert_params"),
    ("BatchParams", "nvcam_convert_batch_params"),
    ("JpegPackParams", "nvcam_jpeg_pack_params"),
];

const PARAMS: &str = "src/gpu/params.rs";
const CONVERT: &str = "src/convert/mod.rs";
const LAUNCH: &str = "src/convert/launch.rs";

fn parse(root: &Path, path: &str) -> syn::File {
    let text = std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The `///` lines of an item or field, as `//` lines indented by `indent`.
fn docs(attrs: &[syn::Attribute], indent: &str) -> String {
    let mut out = String::new();
    for a in attrs {
        if let syn::Meta::NameValue(nv) = &a.meta {
            if nv.path.is_ident("doc") {
                if let Expr::Lit(syn::ExprLit { lit: Lit::Str(s), .. }) = &nv.value {
                    let line = s.value();
                    let line = line.strip_prefix(' ').unwrap_or(&line);
                    // Rust's intra-doc links read as plain names in C.
                    let line = line.replace("[`", "`").replace("`]", "`");
                    writeln!(out, "{indent}//{}{line}", if line.is_empty() { "" } else { " " }).unwrap();
                }
            }
        }
    }
    out
}

/// An integer literal (with or without a suffix), or the value of a `const` named in `consts`.
fn int(e: &Expr, consts: &[(String, u64)]) -> u64 {
    match e {
        Expr::Lit(syn::ExprLit { lit: Lit::Int(i), .. }) => i.base10_parse().unwrap_or_else(|err| panic!("{i}: {err}")),
        Expr::Path(p) if p.path.get_ident().is_some() => {
            let name = p.path.get_ident().unwrap().to_string();
            consts.iter().find(|(n, _)| *n == name).map(|c| c.1).unwrap_or_else(|| panic!("no integer const {name}"))
        }
        other => panic!("not an integer: {other:?}"),
    }
}

/// `CamelCase8` as `CAMEL_CASE8`.
fn upper_snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if i > 0 && c.is_ascii_uppercase() {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// A field type: its CUDA spelling (before the name, after it), C size and alignment.
struct Mapped {
    base: String,
    dims: String,
    size: usize,
    align: usize,
}

/// What the generator knows: the integer constants (name, value, CUDA name) and the blocks laid
/// out so far (Rust name, CUDA name, size, alignment).
#[derive(Default)]
struct Abi {
    consts: Vec<(String, u64)>,
    laid: Vec<(String, String, usize, usize)>,
}

impl Abi {
    fn map(&self, ty: &Type) -> Mapped {
        match ty {
            Type::Path(p) => {
                let name = p.path.get_ident().unwrap_or_else(|| panic!("field type {p:?}: a plain name expected")).to_string();
                let scalar = |c: &str, n| Mapped { base: c.to_string(), dims: String::new(), size: n, align: n };
                match name.as_str() {
                    "u64" => scalar("u64", 8),
                    "u32" => scalar("u32", 4),
                    "i32" => scalar("int", 4),
                    "f32" => scalar("float", 4),
                    other => {
                        let s = self.laid.iter().find(|s| s.0 == other).unwrap_or_else(|| panic!("field type {other}: no mapping to CUDA"));
                        Mapped { base: s.1.clone(), dims: String::new(), size: s.2, align: s.3 }
                    }
                }
            }
            Type::Array(a) => {
                let m = self.map(&a.elem);
                let n = int(&a.len, &self.consts);
                // A named length keeps its name (the header defines it as NVCAM_NAME).
                let len = match &a.len {
                    Expr::Path(p) => format!("NVCAM_{}", p.path.get_ident().unwrap()),
                    _ => n.to_string(),
                };
                Mapped { base: m.base, dims: format!("[{len}]{}", m.dims), size: m.size * n as usize, align: m.align }
            }
            other => panic!("field type {other:?}: no mapping to CUDA"),
        }
    }
}

/// The two generated files: (kernels/nvcam_abi.cuh, src/gpu/params_layout.rs).
pub fn generate(root: &Path) -> (String, String) {
    let params = parse(root, PARAMS);
    let convert = parse(root, CONVERT);
    let launch = parse(root, LAUNCH);
    let mut abi = Abi::default();
    let mut cuh = String::from(
        "// The CUDA kernels' ABI: the parameter blocks the host passes them (the conversion kernels' and
// nvJPEG's chroma packing's), the codes in those blocks, the launch shapes the host sizes its
// grids by and the batch limit.
// Generated by `cargo xtask gen` from src/gpu/params.rs, src/convert/mod.rs and
// src/convert/launch.rs (xtask/src/cuda.rs says which items): do not edit; CI fails if it differs.
// The sizes and offsets asserted below are the generator's C layout of the Rust blocks, which
// src/gpu/params_layout.rs asserts for rustc.
#ifndef NVCAM_ABI_CUH
#define NVCAM_ABI_CUH

typedef unsigned int u32;
typedef unsigned long long u64;

// NVRTC has no <cstddef> and no __builtin_offsetof; its front end folds the classic form.
#ifdef __CUDACC_RTC__
#define NVCAM_OFFSETOF(t, f) ((u64) & ((t*)0)->f)
#else
#include <cstddef>
#define NVCAM_OFFSETOF(t, f) offsetof(t, f)
#endif
",
    );

    // Integer constants of params.rs: the batch limit and the sample-width codes.
    let mut defines = String::new();
    for item in &params.items {
        if let Item::Const(c) = item {
            let name = c.ident.to_string();
            if name == "_" {
                continue;
            }
            let v = int(&c.expr, &abi.consts);
            defines += &docs(&c.attrs, "");
            writeln!(defines, "#define NVCAM_{name} {v}").unwrap();
            abi.consts.push((name, v));
        }
    }
    cuh += "\n// ---- Limits and codes (src/gpu/params.rs) ----\n\n";
    cuh += &defines;

    // Output formats: PixelFormat::code's arms, `PixelFormat::X => n`.
    cuh += "\n// Output formats: `PixelFormat::code` (src/convert/mod.rs), the C API's NVCAM_PIXEL_* values.\n";
    let code = convert
        .items
        .iter()
        .filter_map(|i| if let Item::Impl(im) = i { Some(im) } else { None })
        .filter(|im| matches!(&*im.self_ty, Type::Path(p) if p.path.is_ident("PixelFormat")))
        .flat_map(|im| im.items.iter())
        .find_map(|i| match i {
            syn::ImplItem::Fn(f) if f.sig.ident == "code" => Some(f),
            _ => None,
        })
        .expect("PixelFormat::code in src/convert/mod.rs");
    let Some(syn::Stmt::Expr(Expr::Match(m), _)) = code.block.stmts.first() else { panic!("PixelFormat::code: one match expected") };
    for arm in &m.arms {
        let syn::Pat::Path(p) = &arm.pat else { panic!("PixelFormat::code: `PixelFormat::X => n` arms expected") };
        let variant = p.path.segments.last().unwrap().ident.to_string();
        writeln!(cuh, "#define FMT_{} {}", upper_snake(&variant), int(&arm.body, &[])).unwrap();
    }

    // Sampling modes: Mode's discriminants.
    let mode = convert
        .items
        .iter()
        .find_map(|i| match i {
            Item::Enum(e) if e.ident == "Mode" => Some(e),
            _ => None,
        })
        .expect("enum Mode in src/convert/mod.rs");
    cuh += "\n// How an item samples its ROI: `Mode` (src/convert/mod.rs).\n";
    for v in &mode.variants {
        let (_, d) = v.discriminant.as_ref().unwrap_or_else(|| panic!("Mode::{}: an explicit discriminant expected", v.ident));
        cuh += &docs(&v.attrs, "");
        writeln!(cuh, "#define MODE_{} {}", upper_snake(&v.ident.to_string()), int(d, &[])).unwrap();
    }

    // Launch shapes: BLOCK and the Shape consts of src/convert/launch.rs.
    cuh += "\n// ---- Launch shapes (src/convert/launch.rs sizes its grids by them) ----\n";
    cuh += "// Per kernel, the output pixels one thread converts along a row (NAME_PX) and the rows it takes\n";
    cuh += "// (NAME_ROWS): `const NAME: Shape`.\n\n";
    for item in &launch.items {
        let Item::Const(c) = item else { continue };
        let name = c.ident.to_string();
        match (&*c.ty, &*c.expr) {
            (Type::Tuple(_), Expr::Tuple(t)) if name == "BLOCK" => {
                cuh += &docs(&c.attrs, "");
                let v: Vec<_> = t.elems.iter().map(|e| int(e, &[])).collect();
                let [x, y] = v[..] else { panic!("BLOCK: (x, y) expected") };
                writeln!(cuh, "#define BLOCK_X {x}\n#define BLOCK_Y {y}").unwrap();
            }
            (Type::Path(p), Expr::Struct(s)) if p.path.is_ident("Shape") => {
                cuh += &docs(&c.attrs, "");
                for f in &s.fields {
                    let syn::Member::Named(field) = &f.member else { panic!("{name}: named fields expected") };
                    writeln!(cuh, "#define {name}_{} {}", field.to_string().to_uppercase(), int(&f.expr, &[])).unwrap();
                }
            }
            _ => {}
        }
    }

    // The blocks.
    let mut asserts = String::new();
    let mut rust = String::from(
        "// Generated by `cargo xtask gen` (xtask/src/cuda.rs): do not edit; CI fails if it differs.
// The layout of the kernels' parameter blocks that kernels/nvcam_abi.cuh asserts for the CUDA
// compiler (C's rules applied to the fields below), asserted here for rustc: included by
// params.rs.
",
    );
    cuh += "\n// ---- Parameter blocks (src/gpu/params.rs) ----\n";
    for (rust_name, c_name) in STRUCTS {
        let s = params
            .items
            .iter()
            .find_map(|i| match i {
                Item::Struct(s) if s.ident == rust_name => Some(s),
                _ => None,
            })
            .unwrap_or_else(|| panic!("struct {rust_name} in {PARAMS}"));
        let repr_c = s.attrs.iter().any(|a| a.path().is_ident("repr") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "C"));
        assert!(repr_c, "{rust_name}: #[repr(C)] expected");
        let Fields::Named(fields) = &s.fields else { panic!("{rust_name}: named fields expected") };
        let (mut offset, mut align) = (0usize, 1usize);
        let mut body = String::new();
        rust += "\nconst _: () = {\n";
        for f in &fields.named {
            let name = f.ident.as_ref().unwrap().to_string();
            let m = abi.map(&f.ty);
            offset = offset.next_multiple_of(m.align);
            body += &docs(&f.attrs, "    ");
            if name.starts_with("_pad") {
                // Padding the Rust block spells out (so no uninitialised byte reaches the driver):
                // in C the same hole, which alignment makes, unnamed. The next field's offset (or
                // the size) asserted below proves that it is there.
                writeln!(body, "    // {} bytes of padding (`{name}` in the Rust block)", m.size).unwrap();
            } else {
                writeln!(body, "    {} {name}{};", m.base, m.dims).unwrap();
                writeln!(asserts, "static_assert(NVCAM_OFFSETOF({c_name}, {name}) == {offset}, \"{c_name}.{name}: not where src/gpu/params.rs has it\");").unwrap();
            }
            writeln!(rust, "    assert!(std::mem::offset_of!({rust_name}, {name}) == {offset});").unwrap();
            offset += m.size;
            align = align.max(m.align);
        }
        let size = offset.next_multiple_of(align);
        write!(cuh, "\n{}struct {c_name} {{\n{body}}};\n", docs(&s.attrs, "")).unwrap();
        writeln!(asserts, "static_assert(sizeof({c_name}) == {size}, \"{c_name}: not the size src/gpu/params.rs has\");").unwrap();
        writeln!(rust, "    assert!(std::mem::size_of::<{rust_name}>() == {size});\n}};").unwrap();
        abi.laid.push((rust_name.to_string(), c_name.to_string(), size, align));
    }
    cuh += "\n// The layout of src/gpu/params.rs (which params_layout.rs asserts for rustc).\n";
    cuh += &asserts;
    cuh += "\n#endif  // NVCAM_ABI_CUH\n";
    (cuh, rust)
}
