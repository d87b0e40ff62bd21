//! Model-file import: GGUF, safetensors, config.json + index. Fixtures are written by
//! tests/fixtures/import/make_fixtures.py; the expected numbers below are worked out by hand from
//! the block layouts in ggml-common.h and the dtype sizes of the safetensors format.

use headroom::core::model::{MlpKind, ShapeSource};
use headroom::core::precision::WeightPrecision;
use headroom::io::import::gguf::{self, Value, ValueType};
use headroom::io::import::safetensors;
use headroom::io::import::{ErrorKind, ImportError, Location, import_path};
use proptest::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

// ---- The largest single allocation this test binary ever makes (hostile headers must not
// ---- allocate what they claim).

struct Tracking;
static LARGEST: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LARGEST.fetch_max(l.size(), Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LARGEST.fetch_max(new, Ordering::Relaxed);
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Tracking = Tracking;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
}

fn err_of(name: &str) -> ImportError {
    match import_path(&fixture(name)) {
        Ok(m) => panic!("{name} imported: {}", m.summary),
        Err(e) => e,
    }
}

// ---- A tiny GGUF writer for the tests that build their own files.

#[derive(Default)]
struct G {
    kvs: Vec<u8>,
    n_kv: u64,
    infos: Vec<(String, Vec<u64>, u32, u64)>,
}

fn gstr(s: &str) -> Vec<u8> {
    let mut v = (s.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

impl G {
    fn raw(mut self, key: &str, ty: u32, value: &[u8]) -> Self {
        self.kvs.extend(gstr(key));
        self.kvs.extend(ty.to_le_bytes());
        self.kvs.extend_from_slice(value);
        self.n_kv += 1;
        self
    }
    fn s(self, key: &str, v: &str) -> Self {
        self.raw(key, 8, &gstr(v))
    }
    fn u32(self, key: &str, v: u32) -> Self {
        self.raw(key, 4, &v.to_le_bytes())
    }
    /// An array of u32 (GGUF type 9 of type 4), as llama.cpp writes per-layer values.
    fn u32s(self, key: &str, v: &[u32]) -> Self {
        let mut b = 4u32.to_le_bytes().to_vec();
        b.extend((v.len() as u64).to_le_bytes());
        for x in v {
            b.extend(x.to_le_bytes());
        }
        self.raw(key, 9, &b)
    }
    fn u16(self, key: &str, v: u16) -> Self {
        self.raw(key, 2, &v.to_le_bytes())
    }
    /// A tensor of `bytes` bytes (given by the test, worked out by hand).
    fn t(mut self, name: &str, dims: &[u64], ty: u32, bytes: u64) -> Self {
        self.infos.push((name.into(), dims.to_vec(), ty, bytes));
        self
    }
    fn build(&self) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend((self.infos.len() as u64).to_le_bytes());
        out.extend(self.n_kv.to_le_bytes());
        out.extend(&self.kvs);
        let mut off = 0u64;
        for (name, dims, ty, bytes) in &self.infos {
            out.extend(gstr(name));
            out.extend((dims.len() as u32).to_le_bytes());
            for d in dims {
                out.extend(d.to_le_bytes());
            }
            out.extend(ty.to_le_bytes());
            out.extend(off.to_le_bytes());
            off += bytes.div_ceil(32) * 32;
        }
        out.resize(out.len().div_ceil(32) * 32, 0);
        out.resize(out.len() + off as usize, 0x5a);
        out
    }
    fn write(&self, dir: &Path, name: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, self.build()).unwrap();
        p
    }
}

fn llama_kvs() -> G {
    G::default()
        .s("general.architecture", "llama")
        .u32("llama.block_count", 2)
        .u32("llama.embedding_length", 256)
        .u32("llama.attention.head_count", 2)
        .u32("llama.context_length", 4096)
}

// ---------------------------------------------------------------------------------------------
// GGUF: the valid fixture.

#[test]
fn tiny_gguf_has_exact_bytes_params_and_layers() {
    let m = import_path(&fixture("tiny.gguf")).unwrap();
    let fw = m.spec.file_weights.as_ref().unwrap();
    // token_embd Q8_0 [32,8]: 8 blocks × 34 = 272; 4 F32 norms [32] = 4 × 128; blk.0.attn_q
    // Q4_0 [32,4] = 4 × 18 = 72; blk.0.ffn_down Q6_K [256,1] = 210; blk.0.ffn_gate Q4_K = 144;
    // blk.1.attn_q IQ4_NL [32,4] = 72; blk.1.ffn_down MXFP4 [32,2] = 2 × 17 = 34;
    // blk.1.ffn_norm BF16 [32] = 64.
    assert_eq!(fw.total_bytes, 272 + 512 + 72 + 210 + 144 + 72 + 34 + 64);
    assert_eq!(fw.total_bytes, 1380);
    // blk.0: 128 + 72 + 210 + 144 + 128; blk.1: 128 + 72 + 34 + 64.
    assert_eq!(fw.layer_bytes, 682 + 298);
    // Elements: 256 + 32 + (32 + 128 + 256 + 256 + 32) + (32 + 128 + 64 + 32).
    assert_eq!(fw.params, 1248);
    assert_eq!(m.spec.param_count().total, 1248);
    // Tied: llama.cpp loads token_embd again as the output on the GPU.
    assert_eq!(fw.runtime_extra_bytes, 272);
    assert_eq!(fw.format, "GGUF Q4_K_M (mostly Q8_0)");
    assert!(fw.path.ends_with("tiny.gguf"));
    assert_eq!(m.weights, Some(WeightPrecision::Q4KM));
    assert_eq!(
        m.bytes_by_type,
        [
            ("F32", 512),
            ("Q8_0", 272),
            ("Q6_K", 210),
            ("Q4_K", 144),
            ("IQ4_NL", 72),
            ("Q4_0", 72),
            ("BF16", 64),
            ("MXFP4", 34)
        ]
        .map(|(n, b)| (n.to_string(), b))
        .to_vec()
    );
}

#[test]
fn tiny_gguf_architecture() {
    let m = import_path(&fixture("tiny.gguf")).unwrap();
    let s = &m.spec;
    assert_eq!(s.name, "Tiny Llama");
    assert_eq!(s.arch, "llama");
    assert_eq!(
        (s.layers, s.hidden, s.heads, s.head_dim, s.intermediate),
        (2, 32, 4, 8, 64)
    );
    // head_count_kv is an array [2, 1]: sized with the largest, with a note.
    assert_eq!(s.kv_heads, 2);
    assert!(
        m.notes
            .iter()
            .any(|n| n.contains("head_count_kv varies per layer (1–2)")),
        "{:?}",
        m.notes
    );
    assert_eq!(s.vocab, 8);
    assert_eq!(s.max_context, 256);
    assert!(s.tied_embeddings);
    assert!(
        m.notes
            .iter()
            .any(|n| n.contains("output.weight is absent") && n.contains("272 bytes")),
        "{:?}",
        m.notes
    );
    assert_eq!(s.norms_per_layer, 2);
    assert_eq!(s.mlp, MlpKind::Gated);
    assert_eq!(s.source, ShapeSource::Exact);
    assert!(s.moe.is_none() && s.mla.is_none() && s.sliding.is_none());
    assert_eq!(
        m.summary,
        "Tiny Llama: llama, 2 layers, 1248 parameters, GGUF Q4_K_M (mostly Q8_0), 1.35 KiB"
    );
}

#[test]
fn tiny_gguf_metadata_of_every_value_type() {
    let h = gguf::read_file(&fixture("tiny.gguf")).unwrap();
    assert_eq!(h.version, 3);
    assert_eq!(h.alignment, 32);
    assert_eq!(h.metadata.len(), 27);
    assert_eq!(h.tensors.len(), 11);
    assert_eq!(h.data_offset % 32, 0);
    assert_eq!(h.file_len, 3328);
    assert_eq!(h.get("test.u8"), Some(&Value::U8(200)));
    assert_eq!(h.get("test.i8"), Some(&Value::I8(-100)));
    assert_eq!(h.get("test.u16"), Some(&Value::U16(60000)));
    assert_eq!(h.get("test.i16"), Some(&Value::I16(-30000)));
    assert_eq!(h.get("test.u64"), Some(&Value::U64(1 << 40)));
    assert_eq!(h.get("test.i64"), Some(&Value::I64(-(1 << 40))));
    assert_eq!(h.get("test.f64"), Some(&Value::F64(2.5)));
    assert_eq!(h.get("test.bool"), Some(&Value::Bool(true)));
    assert_eq!(
        h.get("llama.attention.layer_norm_rms_epsilon"),
        Some(&Value::F32(1e-5))
    );
    assert_eq!(h.get_u64("llama.context_length"), Some(256));
    let nested = h.get("test.nested").and_then(Value::as_array).unwrap();
    assert_eq!((nested.item_type, nested.len), (ValueType::Array, 2));
    let inner: Vec<Vec<u64>> = nested
        .items
        .iter()
        .map(|v| {
            v.as_array()
                .unwrap()
                .items
                .iter()
                .filter_map(Value::as_u64)
                .collect()
        })
        .collect();
    assert_eq!(inner, vec![vec![1, 2], vec![3]]);
    let tokens = h
        .get("tokenizer.ggml.tokens")
        .and_then(Value::as_array)
        .unwrap();
    assert_eq!(tokens.len, 8);
    assert_eq!(tokens.items[2], Value::String("a".into()));
    let q6 = h.tensor("blk.0.ffn_down.weight").unwrap();
    assert_eq!(
        (q6.ggml_type.name, q6.dims.clone(), q6.elements, q6.bytes),
        ("Q6_K", vec![256, 1], 256, 210)
    );
    // Offsets as the writer laid them out: each tensor padded to 32.
    let offsets: Vec<u64> = h.tensors.iter().map(|t| t.offset).collect();
    assert_eq!(
        offsets,
        [0, 288, 416, 544, 640, 864, 1024, 1152, 1280, 1376, 1440]
    );
}

#[test]
fn every_strict_prefix_of_a_gguf_is_an_error() {
    let data = std::fs::read(fixture("tiny.gguf")).unwrap();
    for n in 0..data.len() {
        let r = gguf::read_header(&data[..n], n as u64);
        assert!(r.is_err(), "a {n}-byte prefix parsed");
    }
    assert!(gguf::read_header(&data[..], data.len() as u64).is_ok());
}

// ---------------------------------------------------------------------------------------------
// GGUF: one fixture per error, with the exact one-line message and offset.

#[test]
fn gguf_error_fixtures() {
    let cases: &[(&str, u64, &str)] = &[
        (
            "gguf_bad_magic.gguf",
            0,
            "not a GGUF file: it starts with \"GGML\" instead of \"GGUF\"",
        ),
        (
            "gguf_version1.gguf",
            4,
            "GGUF version 1 is not supported (llama.cpp reads versions 2 and 3)",
        ),
        (
            "gguf_big_endian.gguf",
            4,
            "GGUF version 50331648 (0x03000000) looks byte-swapped: a big-endian GGUF file, which llama.cpp does not read",
        ),
        (
            "gguf_truncated_counts.gguf",
            8,
            "file ends inside the tensor count (needs 8 bytes, 5 left)",
        ),
        (
            "gguf_huge_tensor_count.gguf",
            8,
            "tensor count 2^60 exceeds what a 24 B file can hold",
        ),
        (
            "gguf_huge_kv_count.gguf",
            16,
            "metadata key/value count 2^60 exceeds what a 24 B file can hold",
        ),
        (
            "gguf_huge_string.gguf",
            24,
            "key length 2^40 exceeds what a 39 B file can hold",
        ),
        (
            "gguf_huge_array.gguf",
            41,
            "array length 2^60 exceeds what a 53 B file can hold",
        ),
        (
            "gguf_huge_string_array.gguf",
            41,
            "array length 2^60 exceeds what a 57 B file can hold",
        ),
        (
            "gguf_invalid_utf8_key.gguf",
            34,
            "metadata key is not valid UTF-8",
        ),
        (
            "gguf_unknown_value_type.gguf",
            33,
            "unknown metadata value type 13",
        ),
        (
            "gguf_truncated_value.gguf",
            37,
            "file ends inside the metadata value (needs 4 bytes, 2 left)",
        ),
        ("gguf_duplicate_key.gguf", 41, "duplicate metadata key 'a'"),
        (
            "gguf_bad_alignment.gguf",
            24,
            "general.alignment 48 is not a power of two",
        ),
        (
            "gguf_alignment_u64.gguf",
            24,
            "general.alignment has type U64, expected u32",
        ),
        (
            "gguf_nested_too_deep.gguf",
            121,
            "arrays nested deeper than 8 levels",
        ),
        (
            "gguf_unknown_ggml_type.gguf",
            45,
            "tensor 'w' has unknown ggml type 99",
        ),
        (
            "gguf_removed_ggml_type.gguf",
            45,
            "tensor 'w' has ggml type 31 (Q4_0_4_4), which was removed from GGUF files",
        ),
        (
            "gguf_row_not_block.gguf",
            53,
            "tensor 'w' of type Q4_0 has rows of 33 elements, not a multiple of the block size 32",
        ),
        (
            "gguf_too_many_dims.gguf",
            33,
            "tensor 'w' has 5 dimensions (ggml allows at most 4)",
        ),
        (
            "gguf_elements_overflow.gguf",
            45,
            "tensor 'w' has more than 2^63 elements",
        ),
        (
            "gguf_long_name.gguf",
            24,
            "tensor name length 64 exceeds ggml's limit of 63 bytes",
        ),
        (
            "gguf_misaligned_offset.gguf",
            49,
            "tensor 'w' has data offset 16, not a multiple of the alignment 32",
        ),
        (
            "gguf_tensor_past_end.gguf",
            24,
            "tensor 'w' (128 bytes at data offset 0) ends at byte 192, past the end of the 128-byte file (truncated?)",
        ),
        (
            "gguf_duplicate_tensor.gguf",
            57,
            "duplicate tensor name 'w'",
        ),
        (
            "gguf_truncated_tensor_info.gguf",
            78,
            "file ends inside the tensor dimension (needs 8 bytes, 0 left)",
        ),
    ];
    for (file, offset, msg) in cases {
        let e = err_of(file);
        assert_eq!(
            e.to_string(),
            format!("{file}: offset {offset}: {msg}"),
            "{file}"
        );
        assert_eq!(e.offset(), Some(*offset), "{file}");
        assert_eq!(e.file, *file);
        assert!(!e.to_string().contains('\n'));
    }
}

#[test]
fn error_kinds_are_matchable() {
    assert!(matches!(
        err_of("gguf_bad_magic.gguf").kind,
        ErrorKind::BadMagic { .. }
    ));
    assert!(matches!(
        err_of("gguf_huge_tensor_count.gguf").kind,
        ErrorKind::TooLarge {
            what: "tensor count",
            ..
        }
    ));
    assert!(matches!(
        err_of("gguf_unknown_ggml_type.gguf").kind,
        ErrorKind::UnknownGgmlType { id: 99, .. }
    ));
    assert!(matches!(
        err_of("gguf_truncated_counts.gguf").kind,
        ErrorKind::Truncated {
            needed: 8,
            left: 5,
            ..
        }
    ));
}

/// A header claiming 2^60 tensors of a "5 GB" file fails at once and allocates nothing of that size,
/// nor do a 4 GB string, a 10^8-item array or a 99 MB safetensors header in a file that is not there.
#[test]
fn hostile_counts_never_allocate() {
    const FIVE_GB: u64 = 5_000_000_000;
    let head = |t: u64, kv: u64| {
        let mut v = b"GGUF".to_vec();
        v.extend(3u32.to_le_bytes());
        v.extend(t.to_le_bytes());
        v.extend(kv.to_le_bytes());
        v
    };
    let e = gguf::read_header(Cursor::new(head(1 << 60, 0)), FIVE_GB).unwrap_err();
    assert_eq!(
        e.to_string(),
        "offset 8: tensor count 2^60 exceeds what a 5.00 GB file can hold"
    );
    // Claims that fit a 5 GB file but whose bytes are not there.
    let mut big_string = head(0, 1);
    big_string.extend(4_000_000_000u64.to_le_bytes());
    assert!(gguf::read_header(Cursor::new(big_string), FIVE_GB).is_err());
    let mut big_array = head(0, 1);
    big_array.extend(gstr("a"));
    big_array.extend(9u32.to_le_bytes());
    big_array.extend(4u32.to_le_bytes());
    big_array.extend(100_000_000u64.to_le_bytes());
    assert!(gguf::read_header(Cursor::new(big_array), FIVE_GB).is_err());
    let mut strings = head(0, 1);
    strings.extend(gstr("a"));
    strings.extend(9u32.to_le_bytes());
    strings.extend(8u32.to_le_bytes());
    strings.extend(100_000_000u64.to_le_bytes());
    strings.extend(3_000_000_000u64.to_le_bytes());
    assert!(gguf::read_header(Cursor::new(strings), FIVE_GB).is_err());
    let e = gguf::read_header(Cursor::new(head(100_000_000, 0)), FIVE_GB).unwrap_err();
    assert_eq!(
        e.to_string(),
        "offset 8: tensor count 100000000 exceeds headroom's limit of 2^20"
    );
    let e = gguf::read_header(Cursor::new(head(0, 1 << 21)), FIVE_GB).unwrap_err();
    assert_eq!(
        e.to_string(),
        "offset 16: metadata key/value count 2^21 exceeds headroom's limit of 2^20"
    );
    assert!(gguf::read_header(Cursor::new(head(1 << 20, 1 << 20)), FIVE_GB).is_err());
    let st = 99_000_000u64.to_le_bytes();
    assert!(safetensors::read_header(Cursor::new(st), FIVE_GB).is_err());
    let largest = LARGEST.load(Ordering::Relaxed);
    assert!(largest < 64 << 20, "an allocation of {largest} bytes");
}

// ---------------------------------------------------------------------------------------------
// GGUF: files built here.

/// Bytes of a [256, 2] tensor of every ggml type llama.cpp defines, from the block structs of
/// ggml-common.h (sizeof(block_X) per QK_X elements): 2 rows × 256 / block × block bytes.
#[test]
fn every_ggml_type_has_its_exact_size() {
    let expected: &[(u32, &str, u64)] = &[
        (0, "F32", 2048),
        (1, "F16", 1024),
        (2, "Q4_0", 2 * 8 * 18),
        (3, "Q4_1", 2 * 8 * 20),
        (6, "Q5_0", 2 * 8 * 22),
        (7, "Q5_1", 2 * 8 * 24),
        (8, "Q8_0", 2 * 8 * 34),
        (9, "Q8_1", 2 * 8 * 36),
        (10, "Q2_K", 2 * 84),
        (11, "Q3_K", 2 * 110),
        (12, "Q4_K", 2 * 144),
        (13, "Q5_K", 2 * 176),
        (14, "Q6_K", 2 * 210),
        (15, "Q8_K", 2 * 292),
        (16, "IQ2_XXS", 2 * 66),
        (17, "IQ2_XS", 2 * 74),
        (18, "IQ3_XXS", 2 * 98),
        (19, "IQ1_S", 2 * 50),
        (20, "IQ4_NL", 2 * 8 * 18),
        (21, "IQ3_S", 2 * 110),
        (22, "IQ2_S", 2 * 82),
        (23, "IQ4_XS", 2 * 136),
        (24, "I8", 512),
        (25, "I16", 1024),
        (26, "I32", 2048),
        (27, "I64", 4096),
        (28, "F64", 4096),
        (29, "IQ1_M", 2 * 56),
        (30, "BF16", 1024),
        (34, "TQ1_0", 2 * 54),
        (35, "TQ2_0", 2 * 66),
        (39, "MXFP4", 2 * 8 * 17),
        (40, "NVFP4", 2 * 4 * 36),
        (41, "Q1_0", 2 * 2 * 18),
        (42, "Q2_0", 2 * 4 * 18),
    ];
    let mut g = G::default();
    for (id, name, bytes) in expected {
        g = g.t(&format!("t.{name}"), &[256, 2], *id, *bytes);
    }
    let data = g.build();
    let h = gguf::read_header(Cursor::new(&data), data.len() as u64).unwrap();
    for ((id, name, bytes), t) in expected.iter().zip(&h.tensors) {
        assert_eq!(
            (t.ggml_type.id, t.ggml_type.name, t.bytes, t.elements),
            (*id, *name, *bytes, 512),
            "{name}"
        );
    }
    // Removed ids and ids past the table are errors.
    for id in [4u32, 5, 31, 32, 33, 36, 37, 38, 43, 1000] {
        let data = G::default().t("w", &[256], id, 0).build();
        let e = gguf::read_header(Cursor::new(&data), data.len() as u64).unwrap_err();
        assert!(e.to_string().contains("ggml type"), "{id}: {e}");
    }
}

#[test]
fn untied_output_means_no_runtime_extra() {
    let dir = tempfile::tempdir().unwrap();
    let p = llama_kvs()
        .t("token_embd.weight", &[256, 4], 12, 4 * 144)
        .t("output.weight", &[256, 4], 14, 4 * 210)
        .t("blk.0.attn_q.weight", &[256, 2], 12, 2 * 144)
        .t("blk.1.attn_q.weight", &[256, 2], 12, 2 * 144)
        .write(dir.path(), "untied.gguf");
    let m = import_path(&p).unwrap();
    let fw = m.spec.file_weights.unwrap();
    assert_eq!(
        (fw.total_bytes, fw.layer_bytes, fw.runtime_extra_bytes),
        (576 + 840 + 576, 576, 0)
    );
    assert!(!m.spec.tied_embeddings);
    // No general.file_type: the preset comes from the dominant type, Q4_K.
    assert_eq!(fw.format, "GGUF (mostly Q4_K)");
    assert_eq!(m.weights, Some(WeightPrecision::Q4KM));
    assert_eq!(m.spec.name, "untied");
}

#[test]
fn mtp_layers_are_not_loaded_by_llama_cpp() {
    let dir = tempfile::tempdir().unwrap();
    let p = G::default()
        .s("general.architecture", "glm4moe")
        .u32("glm4moe.block_count", 3)
        .u32("glm4moe.nextn_predict_layers", 1)
        .u32("glm4moe.embedding_length", 256)
        .u32("glm4moe.attention.head_count", 2)
        .t("token_embd.weight", &[256, 4], 0, 4096)
        .t("output.weight", &[256, 4], 0, 4096)
        .t("blk.0.attn_q.weight", &[256, 1], 0, 1024)
        .t("blk.1.attn_q.weight", &[256, 1], 0, 1024)
        .t("blk.2.nextn.eh_proj.weight", &[256, 2], 0, 2048)
        .write(dir.path(), "mtp.gguf");
    let m = import_path(&p).unwrap();
    let fw = m.spec.file_weights.as_ref().unwrap();
    assert_eq!(
        (fw.total_bytes, fw.layer_bytes, fw.params),
        (8192 + 2048, 2048, 2048 + 512)
    );
    assert_eq!((m.spec.layers, m.spec.mtp_layers), (2, 1));
    assert!(
        m.notes
            .iter()
            .any(|n| n.to_string().contains("multi-token-prediction")),
        "{:?}",
        m.notes
    );
}

#[test]
fn moe_sliding_window_and_mla_keys() {
    let dir = tempfile::tempdir().unwrap();
    let p = G::default()
        .s("general.architecture", "gemma2")
        .u32("gemma2.block_count", 4)
        .u32("gemma2.embedding_length", 256)
        .u32("gemma2.attention.head_count", 8)
        .u32("gemma2.attention.head_count_kv", 4)
        .u32("gemma2.attention.key_length", 64)
        .u32("gemma2.attention.sliding_window", 4096)
        .u32("gemma2.expert_count", 8)
        .u32("gemma2.expert_used_count", 2)
        .u32("gemma2.expert_feed_forward_length", 512)
        .u32("gemma2.leading_dense_block_count", 1)
        .u32("gemma2.attention.kv_lora_rank", 512)
        .u32("gemma2.attention.q_lora_rank", 1536)
        .u32("gemma2.rope.dimension_count", 64)
        .u32("gemma2.attention.key_length_mla", 192)
        .u32("gemma2.attention.value_length_mla", 128)
        .t("blk.1.ffn_gate_inp.weight", &[256, 8], 0, 8192)
        .t("blk.2.ffn_gate_inp.weight", &[256, 8], 0, 8192)
        .t("blk.3.ffn_gate_inp.weight", &[256, 8], 0, 8192)
        .t(
            "blk.1.ffn_gate_exps.weight",
            &[256, 512, 8],
            12,
            512 * 8 * 144,
        )
        .write(dir.path(), "mix.gguf");
    let m = import_path(&p).unwrap();
    let s = &m.spec;
    let moe = s.moe.as_ref().unwrap();
    assert_eq!(
        (
            moe.experts,
            moe.active_experts,
            moe.expert_ffn,
            moe.first_dense_layers
        ),
        (8, 2, 512, 1)
    );
    assert!(moe.dense_layers.is_empty());
    let sw = s.sliding.as_ref().unwrap();
    // gemma2: llama.cpp's swa pattern 2 → layers 0 and 2 local of 4.
    assert_eq!((sw.window, sw.local_layers, sw.period), (4096, 2, 2));
    let mla = s.mla.as_ref().unwrap();
    assert_eq!(
        (
            mla.kv_lora_rank,
            mla.q_lora_rank,
            mla.qk_rope_head_dim,
            mla.qk_nope_head_dim,
            mla.v_head_dim
        ),
        (512, 1536, 64, 128, 128)
    );
    assert_eq!((s.heads, s.kv_heads, s.head_dim), (8, 4, 64));
    // No output.weight, but no token_embd either: nothing to duplicate.
    assert_eq!(s.file_weights.as_ref().unwrap().runtime_extra_bytes, 0);
}

#[test]
fn implausible_architecture_values_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let g = G::default()
        .s("general.architecture", "llama")
        .raw("llama.block_count", 10, &(1u64 << 40).to_le_bytes())
        .t("blk.0.attn_q.weight", &[256, 1], 0, 1024);
    let e = import_path(&g.write(dir.path(), "deep.gguf")).unwrap_err();
    // The key starts after the header (24) and general.architecture (8 + 20 + 4 + 8 + 5 = 45).
    assert_eq!(
        e.to_string(),
        "deep.gguf: offset 69: block count 2^40 is not plausible (over 4096)"
    );
    // A vocabulary inferred from a 0-element [2^40, 0] embedding.
    let header = r#"{"model.embed_tokens.weight":{"dtype":"F16","shape":[1099511627776,0],"data_offsets":[0,0]}}"#;
    let mut st = (header.len() as u64).to_le_bytes().to_vec();
    st.extend_from_slice(header.as_bytes());
    let p = dir.path().join("wide.safetensors");
    std::fs::write(&p, st).unwrap();
    let e = import_path(&p).unwrap_err();
    assert_eq!(
        e.to_string(),
        "wide.safetensors: vocabulary size 1099511627776 read from the tensor shapes is not plausible (over 16777216)"
    );
}

#[test]
fn split_gguf_reads_every_part() {
    let dir = tempfile::tempdir().unwrap();
    let part = |no: u16| llama_kvs().u16("split.no", no).u16("split.count", 2);
    part(0)
        .t("token_embd.weight", &[256, 4], 0, 4096)
        .t("blk.0.attn_q.weight", &[256, 1], 0, 1024)
        .write(dir.path(), "m-00001-of-00002.gguf");
    part(1)
        .t("blk.1.attn_q.weight", &[256, 1], 0, 1024)
        .t("output.weight", &[256, 4], 0, 4096)
        .write(dir.path(), "m-00002-of-00002.gguf");
    for p in [
        dir.path().join("m-00002-of-00002.gguf"),
        dir.path().to_path_buf(),
    ] {
        let m = import_path(&p).unwrap();
        let fw = m.spec.file_weights.as_ref().unwrap();
        assert_eq!(
            (fw.total_bytes, fw.layer_bytes, fw.runtime_extra_bytes),
            (10240, 2048, 0)
        );
        assert!(m.notes[0].contains("read all 2 parts"));
    }
    std::fs::remove_file(dir.path().join("m-00002-of-00002.gguf")).unwrap();
    let e = import_path(&dir.path().join("m-00001-of-00002.gguf")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "m-00002-of-00002.gguf: cannot read: part of the split model m-00001-of-00002.gguf is missing"
    );
}

#[test]
fn files_are_recognised_by_their_magic() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("model.bin");
    std::fs::copy(fixture("tiny.gguf"), &p).unwrap();
    assert_eq!(
        import_path(&p)
            .unwrap()
            .spec
            .file_weights
            .unwrap()
            .total_bytes,
        1380
    );
    let p = dir.path().join("weights.bin");
    std::fs::copy(fixture("tiny.safetensors"), &p).unwrap();
    assert_eq!(
        import_path(&p)
            .unwrap()
            .spec
            .file_weights
            .unwrap()
            .total_bytes,
        1920
    );
    let e = import_path(&fixture("make_fixtures.py")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "make_fixtures.py: not a model file: expected a .gguf or .safetensors file, a config.json, or a folder of safetensors shards"
    );
    let e = import_path(&dir.path().join("nothing.gguf")).unwrap_err();
    assert!(
        e.to_string().starts_with("nothing.gguf: cannot read: "),
        "{e}"
    );
    assert_eq!(e.location, Location::File);
}

// ---------------------------------------------------------------------------------------------
// safetensors.

#[test]
fn tiny_safetensors_exact_bytes_and_inferred_shape() {
    let m = import_path(&fixture("tiny.safetensors")).unwrap();
    let fw = m.spec.file_weights.as_ref().unwrap();
    // embed [16,8] BF16 256; per layer: 2 norms [8] 32 + q [8,8] 128 + k, v [4,8] 128 +
    // o 128 + q_norm [4] F32 16 + gate/up/down [8,8] 384 = 816; final norm [8] F32 32.
    assert_eq!(fw.total_bytes, 256 + 2 * 816 + 32);
    assert_eq!(fw.layer_bytes, 1632);
    // 128 + 2 × (8 + 64 + 32 + 32 + 64 + 4 + 8 + 192) + 8
    assert_eq!(fw.params, 944);
    assert_eq!(fw.runtime_extra_bytes, 0);
    assert_eq!(fw.format, "safetensors BF16");
    assert_eq!(m.weights, Some(WeightPrecision::Bf16));
    assert_eq!(
        m.bytes_by_type,
        vec![("BF16".to_string(), 1856), ("F32".to_string(), 64)]
    );
    let s = &m.spec;
    assert_eq!(s.source, ShapeSource::Estimated);
    assert_eq!(
        (
            s.layers,
            s.hidden,
            s.vocab,
            s.heads,
            s.kv_heads,
            s.head_dim,
            s.intermediate
        ),
        (2, 8, 16, 2, 1, 4, 8)
    );
    assert!(s.tied_embeddings && s.qk_norm);
    assert_eq!(s.norms_per_layer, 2);
    assert!(
        m.notes
            .iter()
            .any(|n| n.to_string().contains("no config.json")),
        "{:?}",
        m.notes
    );
    assert!(m.summary.ends_with("(shape inferred)"), "{}", m.summary);

    let h = safetensors::read_file(&fixture("tiny.safetensors")).unwrap();
    assert_eq!(h.metadata.get("format").map(String::as_str), Some("pt"));
    assert_eq!(h.tensors.len(), 22);
    let q = h.tensor("model.layers.1.self_attn.q_proj.weight").unwrap();
    assert_eq!(
        (q.dtype, q.shape.clone(), q.elements, q.bytes()),
        (safetensors::Dtype::BF16, vec![8, 8], 64, 128)
    );
    assert_eq!(h.file_len, 8 + h.header_len + 1920);
}

#[test]
fn safetensors_dtype_sizes() {
    use safetensors::Dtype as D;
    let bits: Vec<(D, u64)> = D::ALL.iter().map(|d| (*d, d.bits())).collect();
    assert_eq!(
        bits,
        vec![
            (D::BOOL, 8),
            (D::F4, 4),
            (D::F6_E2M3, 6),
            (D::F6_E3M2, 6),
            (D::U8, 8),
            (D::I8, 8),
            (D::F8_E5M2, 8),
            (D::F8_E4M3, 8),
            (D::F8_E8M0, 8),
            (D::I16, 16),
            (D::U16, 16),
            (D::F16, 16),
            (D::BF16, 16),
            (D::I32, 32),
            (D::U32, 32),
            (D::F32, 32),
            (D::C64, 64),
            (D::F64, 64),
            (D::I64, 64),
            (D::U64, 64),
        ]
    );
    for d in D::ALL {
        assert_eq!(D::parse(d.name()), Some(d));
    }
}

#[test]
fn safetensors_error_fixtures() {
    let cases: &[(&str, &str)] = &[
        (
            "st_short.safetensors",
            "offset 0: file ends inside the header length (needs 8 bytes, 3 left)",
        ),
        (
            "st_header_too_long.safetensors",
            "offset 0: header length 2^40 exceeds what a 10 B file can hold",
        ),
        (
            "st_bad_json.safetensors",
            "offset 30 (header JSON line 1:23): invalid JSON: key must be a string",
        ),
        (
            "st_invalid_utf8.safetensors",
            "offset 11: the JSON header is not valid UTF-8",
        ),
        (
            "st_not_object.safetensors",
            "offset 8 (header JSON line 1:1): the header is not a JSON object (it must start with '{')",
        ),
        (
            "st_unknown_dtype.safetensors",
            "offset 9 (header JSON line 1:2): tensor 'w' has unknown dtype \"F17\"",
        ),
        (
            "st_size_mismatch.safetensors",
            "offset 9 (header JSON line 1:2): tensor 'w' has data_offsets [0, 6] (6 bytes) but shape [2, 2] of F16 needs 8 bytes",
        ),
        (
            "st_truncated_data.safetensors",
            "offset 9 (header JSON line 1:2): the tensors need 8 data bytes but the file holds 5 after the header (truncated? 3 B short)",
        ),
        (
            "st_trailing_data.safetensors",
            "offset 72: 3 bytes after the last tensor: the format forbids trailing data",
        ),
        (
            "st_gap.safetensors",
            "offset 70 (header JSON line 1:63): tensor 'b' starts at data byte 8 but the previous tensor ends at 4 (a gap)",
        ),
        (
            "st_shape_overflow.safetensors",
            "offset 9 (header JSON line 1:2): tensor 'w' has more than 2^64 elements",
        ),
        (
            "st_negative_shape.safetensors",
            "offset 9 (header JSON line 1:2): tensor 'w' has a shape entry that is not a non-negative integer: -2",
        ),
    ];
    for (file, msg) in cases {
        let e = err_of(file);
        assert_eq!(e.to_string(), format!("{file}: {msg}"), "{file}");
        assert!(e.offset().is_some(), "{file}");
    }
}

#[test]
fn sharded_folder_with_config() {
    let dir = fixture("sharded");
    let m = import_path(&dir).unwrap();
    let fw = m.spec.file_weights.as_ref().unwrap();
    // All BF16: embed 256 + 2 × (816 − 8 for the q_norm now BF16 + 8 for k_norm) + norm 16.
    assert_eq!(fw.total_bytes, 1904);
    assert_eq!(fw.layer_bytes, 1632);
    // 128 + 2 × (8 + 64 + 32 + 32 + 64 + 4 + 4 + 8 + 192) + 8
    assert_eq!(fw.params, 952);
    assert_eq!(fw.format, "safetensors BF16 (2 shards)");
    assert_eq!(m.weights, Some(WeightPrecision::Bf16));
    // The architecture is the config's.
    let s = &m.spec;
    assert_eq!(s.arch, "qwen3");
    assert_eq!(
        (
            s.layers,
            s.hidden,
            s.heads,
            s.kv_heads,
            s.head_dim,
            s.vocab,
            s.max_context
        ),
        (2, 8, 2, 1, 4, 16, 512)
    );
    assert!(s.tied_embeddings);
    assert_eq!(s.source, ShapeSource::Exact);
    assert_eq!(s.param_count().total, 952);
    // The same model from one shard, from the index or from config.json.
    for p in [
        "sharded/model-00002-of-00002.safetensors",
        "sharded/model.safetensors.index.json",
        "sharded/config.json",
    ] {
        let other = import_path(&fixture(p)).unwrap();
        assert_eq!(
            other.spec.file_weights.as_ref().unwrap().total_bytes,
            1904,
            "{p}"
        );
        assert_eq!(other.spec.arch, "qwen3", "{p}");
    }
    let one = import_path(&fixture("sharded/model-00001-of-00002.safetensors")).unwrap();
    assert!(one.notes[0].contains("one shard of 2"), "{:?}", one.notes);
}

#[test]
fn layers_beyond_the_config_are_not_counted() {
    // DeepSeek-V3 ships its multi-token-prediction layer as model.layers.61 with 61 layers in
    // config.json; here: the sharded model with a config that says 1 layer.
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    ] {
        std::fs::copy(fixture("sharded").join(f), dir.path().join(f)).unwrap();
    }
    let cfg = std::fs::read_to_string(fixture("sharded/config.json")).unwrap();
    let cfg = cfg.replace("\"num_hidden_layers\": 2", "\"num_hidden_layers\": 1");
    std::fs::write(dir.path().join("config.json"), cfg).unwrap();
    let m = import_path(dir.path()).unwrap();
    let fw = m.spec.file_weights.as_ref().unwrap();
    // 1904 − layer 1 (816).
    assert_eq!(
        (fw.total_bytes, fw.layer_bytes, fw.params),
        (1088, 816, 952 - 408)
    );
    assert_eq!(m.spec.layers, 1);
    assert!(
        m.notes
            .iter()
            .any(|n| n.contains("1 layer(s) beyond config.json's 1")),
        "{:?}",
        m.notes
    );
}

#[test]
fn config_with_index_total_size() {
    let m = import_path(&fixture("config_index/config.json")).unwrap();
    let fw = m.spec.file_weights.as_ref().unwrap();
    // meta-llama/Meta-Llama-3-8B: total_size 16,060,522,496 = 2 × 8,030,261,248 (BF16).
    assert_eq!(fw.total_bytes, 16_060_522_496);
    assert_eq!(fw.params, 0);
    assert_eq!(m.spec.param_count().total, 8_030_261_248);
    // Layers' share from the architecture: (P − 2·V·h − h) / P of the total.
    assert_eq!(fw.layer_bytes, 13_959_168_000);
    assert_eq!(m.weights, Some(WeightPrecision::Bf16));
    assert_eq!(m.spec.layers, 32);
    assert!(m.bytes_by_type.is_empty());
    let again = import_path(&fixture("config_index/model.safetensors.index.json")).unwrap();
    assert_eq!(again.spec.file_weights, m.spec.file_weights);
    let folder = import_path(&fixture("config_index")).unwrap();
    assert_eq!(folder.spec.file_weights, m.spec.file_weights);
}

#[test]
fn json_errors_give_line_and_column() {
    let e = import_path(&fixture("json_bad_config")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "config.json: line 3:18: invalid JSON: expected value"
    );
    assert_eq!(
        e.location,
        Location::LineCol {
            line: 3,
            column: 18
        }
    );
    let e = import_path(&fixture("json_bad_index/config.json")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "model.safetensors.index.json: line 2:32: invalid JSON: trailing comma"
    );
}

#[test]
fn missing_shard_is_named() {
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "model-00001-of-00002.safetensors",
        "model.safetensors.index.json",
        "config.json",
    ] {
        std::fs::copy(fixture("sharded").join(f), dir.path().join(f)).unwrap();
    }
    let e = import_path(dir.path()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "model-00002-of-00002.safetensors: cannot read: shard missing from the folder"
    );
}

// ---------------------------------------------------------------------------------------------
// Properties.

#[derive(Clone, Debug)]
enum Scalar {
    U32(u32),
    I64(i64),
    F32(f32),
    S(String),
    Bool(bool),
    ArrU16(Vec<u16>),
}

fn scalar() -> impl Strategy<Value = Scalar> {
    prop_oneof![
        any::<u32>().prop_map(Scalar::U32),
        any::<i64>().prop_map(Scalar::I64),
        (-1e6f32..1e6).prop_map(Scalar::F32),
        "\\PC{0,12}".prop_map(Scalar::S),
        any::<bool>().prop_map(Scalar::Bool),
        prop::collection::vec(any::<u16>(), 0..20).prop_map(Scalar::ArrU16),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Whatever valid header is written, the reader gives back its keys, values and tensors.
    #[test]
    fn gguf_round_trip(
        kvs in prop::collection::btree_map("[a-z]{1,8}(\\.[a-z]{1,8}){0,2}", scalar(), 0..12),
        tensors in prop::collection::vec((prop::collection::vec(1u64..5, 1..4), prop::bool::ANY), 0..8),
    ) {
        let mut g = G::default();
        for (k, v) in &kvs {
            g = match v {
                Scalar::U32(x) => g.u32(k, *x),
                Scalar::I64(x) => g.raw(k, 11, &x.to_le_bytes()),
                Scalar::F32(x) => g.raw(k, 6, &x.to_le_bytes()),
                Scalar::S(s) => g.s(k, s),
                Scalar::Bool(b) => g.raw(k, 7, &[u8::from(*b)]),
                Scalar::ArrU16(xs) => {
                    let mut v = 2u32.to_le_bytes().to_vec();
                    v.extend((xs.len() as u64).to_le_bytes());
                    for x in xs { v.extend(x.to_le_bytes()); }
                    g.raw(k, 9, &v)
                }
            };
        }
        let mut want = Vec::new();
        for (i, (dims, f16)) in tensors.iter().enumerate() {
            let n: u64 = dims.iter().product();
            let (ty, bytes) = if *f16 { (1, 2 * n) } else { (0, 4 * n) };
            g = g.t(&format!("t{i}"), dims, ty, bytes);
            want.push((format!("t{i}"), dims.clone(), bytes));
        }
        let data = g.build();
        let h = gguf::read_header(Cursor::new(&data), data.len() as u64).unwrap();
        prop_assert_eq!(h.metadata.len(), kvs.len());
        for (k, v) in &kvs {
            let got = h.get(k).unwrap();
            match v {
                Scalar::U32(x) => prop_assert_eq!(got, &Value::U32(*x)),
                Scalar::I64(x) => prop_assert_eq!(got, &Value::I64(*x)),
                Scalar::F32(x) => prop_assert_eq!(got, &Value::F32(*x)),
                Scalar::S(s) => prop_assert_eq!(got, &Value::String(s.clone())),
                Scalar::Bool(b) => prop_assert_eq!(got, &Value::Bool(*b)),
                Scalar::ArrU16(xs) => {
                    let a = got.as_array().unwrap();
                    let items: Vec<Value> = xs.iter().map(|x| Value::U16(*x)).collect();
                    prop_assert_eq!(&a.items, &items);
                }
            }
        }
        let got: Vec<(String, Vec<u64>, u64)> = h.tensors.iter().map(|t| (t.name.clone(), t.dims.clone(), t.bytes)).collect();
        prop_assert_eq!(got, want);
        prop_assert_eq!(h.data_offset % 32, 0);
        // And the import never fails on it, but for a file without tensors (nothing to size).
        match gguf::to_model(&h, "x.gguf", "x") {
            Ok(m) => prop_assert_eq!(m.spec.file_weights.unwrap().total_bytes, h.tensor_bytes()),
            Err(e) => {
                prop_assert!(tensors.is_empty(), "{e}");
                prop_assert!(e.to_string().contains("no tensors"), "{e}");
            }
        }
    }

    /// Corrupting any bytes of a valid GGUF or safetensors file gives a result or a one-line
    /// error, never a panic.
    #[test]
    fn corrupted_files_never_panic(flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8), gguf_file in any::<bool>()) {
        let name = if gguf_file { "tiny.gguf" } else { "tiny.safetensors" };
        let mut data = std::fs::read(fixture(name)).unwrap();
        for (i, b) in &flips {
            let i = i.index(data.len());
            data[i] = *b;
        }
        let len = data.len() as u64;
        let r = if gguf_file {
            gguf::read_header(Cursor::new(&data), len).and_then(|h| gguf::to_model(&h, name, "x").map(|_| ()))
        } else {
            safetensors::read_header(Cursor::new(&data), len).map(|_| ())
        };
        if let Err(e) = r {
            let s = e.to_string();
            prop_assert!(!s.contains('\n'));
            prop_assert!(s.starts_with("offset "), "{}", s);
        }
    }
}

/// Found by the gguf fuzz target: `general.architecture` and `general.name` are the file's own
/// strings, and a "\r\n" in them broke the one-line summary (and the notes that quote the
/// architecture). They are kept for key lookups but shown with control characters escaped.
#[test]
fn control_characters_in_gguf_strings_stay_on_one_line() {
    let arch = "llama\r\n";
    let bytes = G::default()
        .s("general.architecture", arch)
        .s("general.name", "My\nModel")
        .u32(&format!("{arch}.block_count"), 2)
        .u32(&format!("{arch}.embedding_length"), 256)
        .u32(&format!("{arch}.attention.head_count"), 2)
        .t("token_embd.weight", &[256, 8], 0, 256 * 8 * 4)
        .build();
    let h = headroom::io::import::gguf::read_header(&bytes[..], bytes.len() as u64).unwrap();
    let m = headroom::io::import::gguf::to_model(&h, "x.gguf", "x").unwrap();
    assert_eq!(m.spec.name, "My\\nModel");
    assert_eq!(m.spec.arch, "llama\\r\\n");
    // The keys under the raw architecture name were found: the shape is the file's.
    assert_eq!((m.spec.layers, m.spec.hidden, m.spec.heads), (2, 256, 2));
    assert!(!m.summary.contains(['\n', '\r']), "{}", m.summary);
    for n in &m.notes {
        assert!(!n.contains(['\n', '\r']), "{n}");
    }
}

// ---------------------------------------------------------------------------------------------
// GGUF: hybrid linear-attention and state-space architectures (llama.cpp `ssm.*` keys).

fn kv_of(spec: &headroom::core::model::ModelSpec, context: u64) -> u64 {
    let e = headroom::core::estimate::estimate(&headroom::core::scenario::Scenario {
        model: spec.clone(),
        context,
        ..Default::default()
    });
    e.kind_total(headroom::core::estimate::ComponentKind::KvCache)
        .0
}

#[test]
fn qwen3next_gguf_has_attention_every_interval_and_a_fixed_state() {
    let dir = tempfile::tempdir().unwrap();
    let p = G::default()
        .s("general.architecture", "qwen3next")
        .u32("qwen3next.block_count", 4)
        .u32("qwen3next.embedding_length", 64)
        .u32("qwen3next.context_length", 4096)
        .u32("qwen3next.attention.head_count", 2)
        .u32("qwen3next.attention.head_count_kv", 1)
        .u32("qwen3next.attention.key_length", 16)
        .u32("qwen3next.full_attention_interval", 2)
        .u32("qwen3next.ssm.inner_size", 32)
        .u32("qwen3next.ssm.time_step_rank", 4)
        .u32("qwen3next.ssm.group_count", 2)
        .u32("qwen3next.ssm.state_size", 8)
        .u32("qwen3next.ssm.conv_kernel", 4)
        .t("token_embd.weight", &[64, 10], 0, 2560)
        .t("blk.0.attn_norm.weight", &[64], 0, 256)
        .write(dir.path(), "q3n.gguf");
    let m = import_path(&p).unwrap();
    let r = m.spec.recurrent.as_ref().expect("recurrent layers");
    // Interval 2: layers 1 and 3 attend, 0 and 2 are Gated DeltaNet.
    assert_eq!(r.attention_layers, vec![1, 3]);
    assert_eq!((r.heads, r.head_dim, r.state, r.groups), (4, 8, 8, 2));
    assert!(m.spec.attn_output_gate);
    // State per linear layer: conv (4 − 1) × (32 + 2·2·8) = 192, delta rule 8 × 32 = 256;
    // (192 + 256) × 4 B = 1792 B; 2 layers = 3584 B per sequence.
    assert_eq!(m.spec.recurrent_state_bytes_per_sequence(), 3584);
    // KV: 2 attention layers × 2 × 1 KV head × 16 × 2 B (F16) = 128 B/token.
    assert_eq!(kv_of(&m.spec, 1024), 128 * 1024 + 3584);
    assert_eq!(kv_of(&m.spec, 4096) - kv_of(&m.spec, 1024), 128 * 3072);
}

#[test]
fn mamba2_gguf_has_no_kv_cache_only_state() {
    let dir = tempfile::tempdir().unwrap();
    let p = G::default()
        .s("general.architecture", "mamba2")
        .u32("mamba2.block_count", 2)
        .u32("mamba2.embedding_length", 64)
        .u32("mamba2.context_length", 1_048_576)
        .u32("mamba2.ssm.inner_size", 128)
        .u32("mamba2.ssm.time_step_rank", 4)
        .u32("mamba2.ssm.group_count", 1)
        .u32("mamba2.ssm.state_size", 16)
        .u32("mamba2.ssm.conv_kernel", 4)
        .t("token_embd.weight", &[64, 10], 0, 2560)
        .t("blk.0.attn_norm.weight", &[64], 0, 256)
        .write(dir.path(), "m2.gguf");
    let m = import_path(&p).unwrap();
    let s = &m.spec;
    assert_eq!(s.attention_layer_count(), 0);
    // No attention head count: the SSM's heads, and the shape stays exact.
    assert_eq!((s.heads, s.head_dim), (4, 32));
    assert_eq!(s.source, ShapeSource::Exact);
    // Per layer: conv 3 × (128 + 2·1·16) = 480, SSM 16 × 128 = 2048; 2528 × 4 B = 10,112 B;
    // 2 layers = 20,224 B, at any context.
    assert_eq!(s.recurrent_state_bytes_per_sequence(), 20_224);
    assert_eq!(kv_of(s, 1024), 20_224);
    assert_eq!(kv_of(s, 1_000_000), 20_224);
}

#[test]
fn lfm2_gguf_conv_layers_are_those_without_kv_heads() {
    // llama.cpp LLM_ARCH_LFM2: a layer is recurrent iff its head_count_kv is 0.
    let dir = tempfile::tempdir().unwrap();
    let p = G::default()
        .s("general.architecture", "lfm2")
        .u32("lfm2.block_count", 4)
        .u32("lfm2.embedding_length", 64)
        .u32("lfm2.context_length", 4096)
        .u32("lfm2.feed_forward_length", 128)
        .u32("lfm2.attention.head_count", 4)
        .u32s("lfm2.attention.head_count_kv", &[0, 0, 2, 0])
        .u32("lfm2.shortconv.l_cache", 3)
        .t("token_embd.weight", &[64, 10], 0, 2560)
        .t("blk.0.attn_norm.weight", &[64], 0, 256)
        .t("blk.0.ffn_norm.weight", &[64], 0, 256)
        .write(dir.path(), "lfm2.gguf");
    let m = import_path(&p).unwrap();
    let r = m.spec.recurrent.as_ref().expect("short-conv layers");
    assert_eq!(r.kind, headroom::core::model::RecurrentKind::ShortConv);
    assert_eq!(r.attention_layers, vec![2]);
    assert_eq!((m.spec.kv_heads, m.spec.head_dim), (2, 16));
    // State per conv layer: (3 − 1) × 64 = 128 elements × 4 B = 512 B; 3 layers = 1536 B.
    assert_eq!(m.spec.recurrent_state_bytes_per_sequence(), 1536);
    // KV: 1 attention layer × 2 × 2 KV heads × 16 × 2 B = 128 B/token.
    assert_eq!(kv_of(&m.spec, 1024), 128 * 1024 + 1536);
    // The per-layer KV heads are read, not an upper bound to warn about.
    assert!(
        !m.notes.iter().any(|n| n.contains("varies per layer")),
        "{:?}",
        m.notes
    );
}

#[test]
fn nemotron_h_gguf_layers_by_kv_heads_and_feed_forward_length() {
    // llama.cpp LLM_ARCH_NEMOTRON_H: recurrent iff head_count_kv and feed_forward_length are
    // both 0; here layer 1 attends, layer 2 is an MLP, layers 0 and 3 are Mamba-2.
    let dir = tempfile::tempdir().unwrap();
    let p = G::default()
        .s("general.architecture", "nemotron_h")
        .u32("nemotron_h.block_count", 4)
        .u32("nemotron_h.embedding_length", 64)
        .u32("nemotron_h.context_length", 8192)
        .u32s("nemotron_h.attention.head_count", &[0, 4, 0, 0])
        .u32s("nemotron_h.attention.head_count_kv", &[0, 2, 0, 0])
        .u32("nemotron_h.attention.key_length", 16)
        .u32s("nemotron_h.feed_forward_length", &[0, 0, 128, 0])
        .u32("nemotron_h.ssm.inner_size", 128)
        .u32("nemotron_h.ssm.time_step_rank", 4)
        .u32("nemotron_h.ssm.group_count", 2)
        .u32("nemotron_h.ssm.state_size", 16)
        .u32("nemotron_h.ssm.conv_kernel", 4)
        .t("token_embd.weight", &[64, 10], 0, 2560)
        .t("blk.0.attn_norm.weight", &[64], 0, 256)
        .write(dir.path(), "nemotron_h.gguf");
    let m = import_path(&p).unwrap();
    let s = &m.spec;
    let r = s.recurrent.as_ref().expect("Mamba-2 layers");
    assert_eq!(r.attention_layers, vec![1]);
    assert_eq!(r.mlp_only_layers, vec![2]);
    assert!(r.mixers_without_mlp);
    assert_eq!(
        (
            s.attention_layer_count(),
            s.recurrent_layer_count(),
            s.mlp_only_layer_count()
        ),
        (1, 2, 1)
    );
    // State per Mamba layer: conv 3 × (128 + 2·2·16) = 576, SSM 16 × 128 = 2048;
    // 2624 × 4 B = 10,496 B; 2 layers = 20,992 B.
    assert_eq!(s.recurrent_state_bytes_per_sequence(), 20_992);
    // KV: 1 attention layer × 2 × 2 KV heads × 16 × 2 B = 128 B/token.
    assert_eq!(kv_of(s, 1024), 128 * 1024 + 20_992);
    assert!(
        !m.notes.iter().any(|n| n.contains("varies per layer")),
        "{:?}",
        m.notes
    );
}

#[test]
fn other_recurrent_gguf_archs_say_they_are_not_modelled() {
    let dir = tempfile::tempdir().unwrap();
    let p = G::default()
        .s("general.architecture", "jamba")
        .u32("jamba.block_count", 2)
        .u32("jamba.embedding_length", 64)
        .u32("jamba.attention.head_count", 2)
        .u32("jamba.context_length", 4096)
        .u32("jamba.ssm.inner_size", 128)
        .t("token_embd.weight", &[64, 10], 0, 2560)
        .write(dir.path(), "jamba.gguf");
    let m = import_path(&p).unwrap();
    assert!(m.spec.recurrent.is_none());
    assert!(
        m.notes.iter().any(|n| n.contains("not modelled yet")),
        "{:?}",
        m.notes
    );
}

/// A Gemma-3-style mmproj GGUF (`general.architecture` "clip"): SigLIP at 896², 14-pixel patches,
/// pooled 4 × 4 to 256 tokens (llama.cpp `tools/mtmd/clip-impl.h` keys), with two tensors whose
/// bytes are worked out by hand: F16 1152 × 1000 = 2,304,000 B and F32 1152 = 4,608 B.
fn gemma3_mmproj() -> G {
    G::default()
        .s("general.architecture", "clip")
        .raw("clip.has_vision_encoder", 7, &[1])
        .s("clip.projector_type", "gemma3")
        .u32("clip.vision.image_size", 896)
        .u32("clip.vision.patch_size", 14)
        .u32("clip.vision.embedding_length", 1152)
        .u32("clip.vision.feed_forward_length", 4304)
        .u32("clip.vision.block_count", 27)
        .u32("clip.vision.attention.head_count", 16)
        .u32("clip.vision.projector.scale_factor", 4)
        .t("v.blk.0.ffn_up.weight", &[1152, 1000], 1, 2_304_000)
        .t("v.post_ln.weight", &[1152], 0, 4_608)
}

#[test]
fn an_mmproj_sizes_the_vision_encoder_and_its_images() {
    use headroom::core::estimate::{ComponentKind, estimate};
    use headroom::core::scenario::Scenario;
    use headroom::core::vision::VisionInputs;
    let dir = tempfile::tempdir().unwrap();
    let p = gemma3_mmproj().write(dir.path(), "mmproj-gemma3.gguf");
    let e = headroom::io::import::mmproj::read_mmproj(&p).unwrap();
    assert_eq!((e.weight_bytes, e.params), (2_308_608, 1_153_152));
    assert_eq!((e.patches(), e.tokens_per_image()), (4096, 256));
    assert_eq!(e.projector, "gemma3");

    let s = Scenario {
        vision: Some(VisionInputs {
            encoder: e.clone(),
            images: 2,
            ..VisionInputs::default()
        }),
        ..Scenario::default()
    };
    let est = estimate(&s);
    let of = |name: &str| {
        est.components
            .iter()
            .find(|c| c.name == name)
            .map(|c| (c.kind, c.bytes.0))
    };
    assert_eq!(
        of("Vision encoder + projector (mmproj)"),
        Some((ComponentKind::Weights, 2_308_608))
    );
    // FlashAttention on (the default): FFN 4096 × 4304 × 4 B + residual 4096 × 1152 × 16 B.
    assert_eq!(
        of("Vision compute buffer (one image)"),
        Some((
            ComponentKind::Activations,
            4096 * 4304 * 4 + 4096 * 1152 * 16
        ))
    );
    // Without it, the scores: 16 heads × 4096² × 4 B = 1 GiB — why llama.cpp runs out of memory
    // on images when the encoder is left out of the plan.
    let no_fa = Scenario {
        flash_attention: false,
        ..s.clone()
    };
    assert_eq!(
        estimate(&no_fa)
            .components
            .iter()
            .find(|c| c.name == "Vision compute buffer (one image)")
            .unwrap()
            .bytes
            .0,
        16 * 4096 * 4096 * 4 + 4096 * 1152 * 16
    );

    // The CLI: the images' tokens and encode time are in the fit's TTFT.
    let run = |extra: &[&str]| {
        let mut args = vec![
            "fit",
            "--model",
            "gemma-3-4b",
            "--weights",
            "q4_k_m",
            "--machine",
            "desktop-rtx4090-64gb",
            "--json",
        ];
        args.extend_from_slice(extra);
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_headroom"))
            .args(&args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()[0].clone()
    };
    let plain = run(&[]);
    let mm = p.to_str().unwrap();
    let with = run(&["--mmproj", mm, "--images", "2"]);
    assert_eq!(with["vision"]["tokens_per_image"], 256);
    assert_eq!(with["vision"]["images"], 2);
    assert!(
        with["ttft_s"].as_f64().unwrap() > plain["ttft_s"].as_f64().unwrap(),
        "{with}"
    );
    // Bad input: one line naming the file or flag.
    let llama = llama_kvs()
        .t("token_embd.weight", &[256, 10], 0, 10_240)
        .write(dir.path(), "model.gguf");
    for (args, needle) in [
        (
            vec!["estimate", "--mmproj", llama.to_str().unwrap()],
            "not a vision projector",
        ),
        (vec!["estimate", "--images", "2"], "need --mmproj"),
    ] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_headroom"))
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains(needle) && err.lines().count() == 1,
            "{err}"
        );
    }
}

#[test]
fn gemma3n_gguf_reads_per_layer_inputs_altup_laurel_and_shared_kv() {
    // llama.cpp LLM_ARCH_GEMMA3N: sliding-window pattern 5, the last
    // `attention.shared_kv_layers` layers keep no cache.
    let dir = tempfile::tempdir().unwrap();
    let p = G::default()
        .s("general.architecture", "gemma3n")
        .u32("gemma3n.block_count", 5)
        .u32("gemma3n.embedding_length", 64)
        .u32("gemma3n.context_length", 4096)
        .u32("gemma3n.feed_forward_length", 128)
        .u32("gemma3n.attention.head_count", 2)
        .u32("gemma3n.attention.head_count_kv", 1)
        .u32("gemma3n.attention.key_length", 16)
        .u32("gemma3n.attention.value_length", 16)
        .u32("gemma3n.attention.sliding_window", 8)
        .u32("gemma3n.attention.shared_kv_layers", 2)
        .u32("gemma3n.embedding_length_per_layer_input", 4)
        .u32("gemma3n.altup.num_inputs", 4)
        .u32("gemma3n.laurel_rank", 2)
        .t("token_embd.weight", &[64, 10], 0, 2560)
        .t("per_layer_token_embd.weight", &[20, 10], 0, 800)
        .t("blk.0.attn_norm.weight", &[64], 0, 256)
        .write(dir.path(), "g3n.gguf");
    let m = import_path(&p).unwrap();
    let s = &m.spec;
    let g = s.gemma3n.as_ref().expect("Gemma 3n parts");
    // Per-layer width 4, table rows 10 (ne[1] of per_layer_token_embd), AltUp 4, LAuReL 2.
    assert_eq!(
        (g.ple_dim, g.ple_vocab, g.altup_inputs, g.laurel_rank),
        (4, 10, 4, 2)
    );
    assert_eq!(s.kv_shared_layers, 2);
    // Pattern 5: layers 0-3 sliding, layer 4 full; layers 0-2 keep a cache, all sliding.
    assert_eq!(s.local_layers(), (4, 8));
    assert_eq!(s.kv_cache_layers(), (3, 3));
    // 2 × 1 KV head × 16 × 2 B = 64 B per token per layer; 3 sliding layers × 8 tokens.
    assert_eq!(kv_of(s, 1024), 3 * 64 * 8);
}

#[test]
fn lfm2moe_gguf_conv_layers_and_experts() {
    // llama.cpp `src/models/lfm2moe.cpp` `load_arch_hparams`: LFM2's layers (recurrent iff
    // head_count_kv is 0) and the MoE keys; the first leading_dense_block_count layers dense.
    let dir = tempfile::tempdir().unwrap();
    let p = G::default()
        .s("general.architecture", "lfm2moe")
        .u32("lfm2moe.block_count", 4)
        .u32("lfm2moe.embedding_length", 64)
        .u32("lfm2moe.context_length", 4096)
        .u32("lfm2moe.feed_forward_length", 128)
        .u32("lfm2moe.attention.head_count", 4)
        .u32s("lfm2moe.attention.head_count_kv", &[0, 0, 2, 0])
        .u32("lfm2moe.shortconv.l_cache", 3)
        .u32("lfm2moe.expert_count", 4)
        .u32("lfm2moe.expert_used_count", 2)
        .u32("lfm2moe.expert_feed_forward_length", 32)
        .u32("lfm2moe.leading_dense_block_count", 1)
        .t("token_embd.weight", &[64, 10], 0, 2560)
        .t("blk.0.attn_norm.weight", &[64], 0, 256)
        .write(dir.path(), "lfm2moe.gguf");
    let m = import_path(&p).unwrap();
    let r = m.spec.recurrent.as_ref().expect("short-conv layers");
    assert_eq!(r.kind, headroom::core::model::RecurrentKind::ShortConv);
    assert_eq!(r.attention_layers, vec![2]);
    let moe = m.spec.moe.as_ref().expect("experts");
    assert_eq!(
        (moe.experts, moe.active_experts, moe.expert_ffn),
        (4, 2, 32)
    );
    assert_eq!(moe.first_dense_layers, 1);
    assert_eq!(m.spec.moe_layer_count(), 3);
    // Conv state: 3 layers × (3 − 1) × 64 × 4 B = 1536 B; KV: 1 layer × 2 × 2 × 16 × 2 B.
    assert_eq!(m.spec.recurrent_state_bytes_per_sequence(), 1536);
    assert_eq!(kv_of(&m.spec, 1024), 128 * 1024 + 1536);
}

#[test]
fn nemotron_h_moe_gguf_moe_layers_from_their_expert_tensors() {
    // Nemotron 3 (llama.cpp LLM_ARCH_NEMOTRON_H_MOE, built like nemotron_h): layer 0 Mamba-2,
    // 1 attention, 2 an MLP, 3 a MoE block (its router ffn_gate_inp marks it, as for every MoE
    // GGUF; ffn_*_exps the experts, one shared expert).
    let dir = tempfile::tempdir().unwrap();
    let p = G::default()
        .s("general.architecture", "nemotron_h_moe")
        .u32("nemotron_h_moe.block_count", 4)
        .u32("nemotron_h_moe.embedding_length", 64)
        .u32("nemotron_h_moe.context_length", 8192)
        .u32s("nemotron_h_moe.attention.head_count", &[0, 4, 0, 0])
        .u32s("nemotron_h_moe.attention.head_count_kv", &[0, 2, 0, 0])
        .u32("nemotron_h_moe.attention.key_length", 16)
        .u32s("nemotron_h_moe.feed_forward_length", &[0, 0, 128, 32])
        .u32("nemotron_h_moe.expert_count", 4)
        .u32("nemotron_h_moe.expert_used_count", 2)
        .u32("nemotron_h_moe.expert_feed_forward_length", 32)
        .u32("nemotron_h_moe.ssm.inner_size", 128)
        .u32("nemotron_h_moe.ssm.time_step_rank", 4)
        .u32("nemotron_h_moe.ssm.group_count", 2)
        .u32("nemotron_h_moe.ssm.state_size", 16)
        .u32("nemotron_h_moe.ssm.conv_kernel", 4)
        .t("token_embd.weight", &[64, 10], 0, 2560)
        .t("blk.3.ffn_gate_inp.weight", &[64, 4], 0, 1024)
        .t("blk.3.ffn_up_exps.weight", &[64, 32, 4], 0, 32_768)
        .t("blk.3.ffn_down_exps.weight", &[32, 64, 4], 0, 32_768)
        .t("blk.3.ffn_up_shexp.weight", &[64, 48], 0, 12_288)
        .write(dir.path(), "nemotron_h_moe.gguf");
    let m = import_path(&p).unwrap();
    let s = &m.spec;
    let r = s.recurrent.as_ref().expect("Mamba-2 layers");
    assert_eq!(r.attention_layers, vec![1]);
    assert_eq!(r.mlp_only_layers, vec![2, 3]);
    assert!(r.mixers_without_mlp);
    let moe = s.moe.as_ref().expect("experts");
    assert_eq!(
        (moe.experts, moe.active_experts, moe.expert_ffn),
        (4, 2, 32)
    );
    assert_eq!((moe.shared_experts, moe.shared_ffn), (1, 48));
    assert!(s.is_moe_layer(3) && !s.is_moe_layer(2));
    assert_eq!(s.moe_layer_count(), 1);
    // One Mamba layer: conv 3 × (128 + 2·2·16) = 576, SSM 16 × 128 = 2048; × 4 B = 10,496 B.
    assert_eq!(s.recurrent_state_bytes_per_sequence(), 10_496);
    assert!(
        !m.notes.iter().any(|n| n.contains("not modelled yet")),
        "{:?}",
        m.notes
    );
}
