//! Importing a GGUF header end to end: a file that claims 5 GB (sparse: only the header is
//! written), a 150k-token vocabulary with scores and token types, and 291 tensor infos shaped
//! like Llama-3-8B at Q4_K. Goal: ≤ 50 ms.

use criterion::{Criterion, criterion_group, criterion_main};
use headroom::io::import::import_path;
use std::hint::black_box;
use std::io::Write;

fn gstr(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn kv_u32(out: &mut Vec<u8>, k: &str, v: u32) {
    gstr(out, k);
    out.extend(4u32.to_le_bytes());
    out.extend(v.to_le_bytes());
}

/// The header of a Llama-3-8B-shaped GGUF with a `vocab`-token tokenizer.
fn header(vocab: u64) -> Vec<u8> {
    let mut kvs = Vec::new();
    let mut n_kv = 0u64;
    gstr(&mut kvs, "general.architecture");
    kvs.extend(8u32.to_le_bytes());
    gstr(&mut kvs, "llama");
    gstr(&mut kvs, "general.name");
    kvs.extend(8u32.to_le_bytes());
    gstr(&mut kvs, "Bench Llama 8B");
    n_kv += 2;
    for (k, v) in [
        ("general.file_type", 15),
        ("llama.block_count", 32),
        ("llama.context_length", 8192),
        ("llama.embedding_length", 4096),
        ("llama.feed_forward_length", 14336),
        ("llama.attention.head_count", 32),
        ("llama.attention.head_count_kv", 8),
        ("llama.rope.dimension_count", 128),
        ("llama.vocab_size", vocab as u32),
    ] {
        kv_u32(&mut kvs, k, v);
        n_kv += 1;
    }
    // tokenizer.ggml.tokens: strings of 2–12 bytes, like a BPE vocabulary.
    gstr(&mut kvs, "tokenizer.ggml.tokens");
    kvs.extend(9u32.to_le_bytes());
    kvs.extend(8u32.to_le_bytes());
    kvs.extend(vocab.to_le_bytes());
    for i in 0..vocab {
        let t = format!("Ġt{}", i % 100_000_000);
        gstr(&mut kvs, &t[..t.len().min(12)]);
    }
    gstr(&mut kvs, "tokenizer.ggml.scores");
    kvs.extend(9u32.to_le_bytes());
    kvs.extend(6u32.to_le_bytes());
    kvs.extend(vocab.to_le_bytes());
    for i in 0..vocab {
        kvs.extend((-(i as f32)).to_le_bytes());
    }
    gstr(&mut kvs, "tokenizer.ggml.token_type");
    kvs.extend(9u32.to_le_bytes());
    kvs.extend(5u32.to_le_bytes());
    kvs.extend(vocab.to_le_bytes());
    for _ in 0..vocab {
        kvs.extend(1i32.to_le_bytes());
    }
    n_kv += 3;

    // 291 tensors: token_embd, output_norm, output, and 9 per layer × 32.
    let (h, ff, kv, v) = (4096u64, 14336u64, 1024u64, vocab);
    let q4k = |ne0: u64, ne1: u64| ne0 / 256 * 144 * ne1;
    let mut tensors: Vec<(String, Vec<u64>, u32, u64)> = vec![
        ("token_embd.weight".into(), vec![h, v], 12, q4k(h, v)),
        ("output_norm.weight".into(), vec![h], 0, 4 * h),
        ("output.weight".into(), vec![h, v], 12, q4k(h, v)),
    ];
    for l in 0..32 {
        let p = |s: &str| format!("blk.{l}.{s}");
        tensors.push((p("attn_norm.weight"), vec![h], 0, 4 * h));
        tensors.push((p("attn_q.weight"), vec![h, h], 12, q4k(h, h)));
        tensors.push((p("attn_k.weight"), vec![h, kv], 12, q4k(h, kv)));
        tensors.push((p("attn_v.weight"), vec![h, kv], 12, q4k(h, kv)));
        tensors.push((p("attn_output.weight"), vec![h, h], 12, q4k(h, h)));
        tensors.push((p("ffn_norm.weight"), vec![h], 0, 4 * h));
        tensors.push((p("ffn_gate.weight"), vec![h, ff], 12, q4k(h, ff)));
        tensors.push((p("ffn_up.weight"), vec![h, ff], 12, q4k(h, ff)));
        tensors.push((p("ffn_down.weight"), vec![ff, h], 12, q4k(ff, h)));
    }
    let mut out = b"GGUF".to_vec();
    out.extend(3u32.to_le_bytes());
    out.extend((tensors.len() as u64).to_le_bytes());
    out.extend(n_kv.to_le_bytes());
    out.extend(kvs);
    let mut off = 0u64;
    for (name, dims, ty, bytes) in &tensors {
        gstr(&mut out, name);
        out.extend((dims.len() as u32).to_le_bytes());
        for d in dims {
            out.extend(d.to_le_bytes());
        }
        out.extend(ty.to_le_bytes());
        out.extend(off.to_le_bytes());
        off += bytes.div_ceil(32) * 32;
    }
    out
}

fn bench_import(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("bench-5gb.gguf");
    let mut f = std::fs::File::create(&path).expect("create");
    f.write_all(&header(150_000)).expect("write");
    // Sparse: the tensor data is never written, only claimed.
    f.set_len(5_000_000_000).expect("set_len");
    drop(f);
    let m = import_path(&path).expect("import");
    let fw = m.spec.file_weights.as_ref().expect("file weights");
    assert_eq!(m.spec.vocab, 150_000);
    assert!(fw.total_bytes < 5_000_000_000 && fw.layer_bytes > 0);
    c.bench_function("import 5 GB GGUF header (150k vocab, 291 tensors)", |b| {
        b.iter(|| import_path(black_box(&path)).expect("import"))
    });
}

criterion_group!(benches, bench_import);
criterion_main!(benches);
