//! A table of hostile and odd inputs against the command line: every row runs the real binary
//! once and asserts its exit code (0 success, 1 output not written, 2 usage, 3 input, 4
//! network), that a failure is one line naming the flag, file or request, that nothing is left
//! behind or replaced in the row's folder (and the shared fixtures are untouched), a time bound
//! and, where the input is large, a memory bound (the child's peak RSS, `VmHWM` in
//! `/proc/PID/status`, sampled while it runs).
//!
//! Rows run on a few threads; the large-file rows run alone afterwards so their time bound
//! measures them, not their neighbours. The Hub rows talk to a server on 127.0.0.1 inside the
//! test, never to the internet.

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TOKEN: &str = "hf_GOODtoken0123456789";
const SHA: &str = "89abcdef0123456789abcdef0123456789abcdef";
/// Time bound of an ordinary row (a debug build on two busy cores; most take 20 ms).
const SECS: f64 = 15.0;

// ---- The rows ---------------------------------------------------------------------------------

/// What a row's run gave.
struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    dir: PathBuf,
}

type Check = Box<dyn Fn(&Outcome) -> Result<(), String> + Send + Sync>;
type Setup = Box<dyn Fn(&Path) + Send + Sync>;

#[derive(Clone, Copy, PartialEq)]
enum Stdout {
    Piped,
    /// `/dev/full`: every write fails with ENOSPC.
    Full,
    /// A pipe whose reader is gone (`| head`).
    Closed,
}

#[derive(Clone, Copy, PartialEq)]
enum Lines {
    /// A failure: exactly one line that is not a note.
    One,
    /// A usage help block (a subcommand without its subcommand).
    Help,
    /// Anything: the row writes its output to stderr on purpose.
    Any,
}

struct Row {
    name: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    code: i32,
    /// stderr contains each (the flag, file or request named).
    err: Vec<String>,
    /// stdout contains each.
    out: Vec<String>,
    /// Neither stdout nor stderr contains any.
    never: Vec<String>,
    lines: Lines,
    secs: f64,
    /// Peak RSS bound, MiB.
    rss_mib: Option<u64>,
    stdout: Stdout,
    setup: Option<Setup>,
    /// Files the row may change in its folder (relative paths); everything else must stay.
    changes: Vec<String>,
    /// Changes under `cache/` are the point of the row (no `.partial-` left, no empty folder).
    cache_ok: bool,
    /// Read this FIFO in the row's folder while the command runs; its text goes to `fifo_text`.
    fifo_reader: Option<String>,
    check: Option<Check>,
    /// Runs alone, after the others.
    heavy: bool,
}

fn row(name: &str, args: &[&str]) -> Row {
    Row {
        name: name.to_string(),
        args: args.iter().map(|s| s.to_string()).collect(),
        env: Vec::new(),
        code: 0,
        err: Vec::new(),
        out: Vec::new(),
        never: Vec::new(),
        lines: Lines::One,
        secs: SECS,
        rss_mib: None,
        stdout: Stdout::Piped,
        setup: None,
        changes: Vec::new(),
        cache_ok: false,
        fifo_reader: None,
        check: None,
        heavy: false,
    }
}

impl Row {
    fn code(mut self, c: i32) -> Self {
        self.code = c;
        self
    }
    /// A failure with `code` whose line names each of `needles`.
    fn fails(mut self, c: i32, needles: &[&str]) -> Self {
        self.code = c;
        self.err.extend(needles.iter().map(|s| s.to_string()));
        self
    }
    fn err(mut self, needle: &str) -> Self {
        self.err.push(needle.to_string());
        self
    }
    fn out(mut self, needle: &str) -> Self {
        self.out.push(needle.to_string());
        self
    }
    fn never(mut self, needle: &str) -> Self {
        self.never.push(needle.to_string());
        self
    }
    fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.to_string(), v.to_string()));
        self
    }
    fn secs(mut self, s: f64) -> Self {
        self.secs = s;
        self
    }
    fn rss(mut self, mib: u64) -> Self {
        self.rss_mib = Some(mib);
        self
    }
    fn help(mut self) -> Self {
        self.lines = Lines::Help;
        self
    }
    fn any_lines(mut self) -> Self {
        self.lines = Lines::Any;
        self
    }
    fn stdout(mut self, s: Stdout) -> Self {
        self.stdout = s;
        self
    }
    fn setup(mut self, f: impl Fn(&Path) + Send + Sync + 'static) -> Self {
        self.setup = Some(Box::new(f));
        self
    }
    fn changes(mut self, rel: &str) -> Self {
        self.changes.push(rel.to_string());
        self
    }
    fn cache(mut self) -> Self {
        self.cache_ok = true;
        self
    }
    fn fifo(mut self, rel: &str) -> Self {
        self.fifo_reader = Some(rel.to_string());
        self
    }
    fn check(mut self, f: impl Fn(&Outcome) -> Result<(), String> + Send + Sync + 'static) -> Self {
        self.check = Some(Box::new(f));
        self
    }
    fn heavy(mut self) -> Self {
        self.heavy = true;
        self
    }
}

/// `stdout` as JSON.
fn json_of(o: &Outcome) -> Result<Value, String> {
    serde_json::from_str(&o.stdout).map_err(|e| format!("stdout is not JSON ({e}): {}", o.stdout))
}

fn ensure(ok: bool, why: impl FnOnce() -> String) -> Result<(), String> {
    if ok { Ok(()) } else { Err(why()) }
}

// ---- Fixtures -----------------------------------------------------------------------------------

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

/// A tiny GGUF writer (the format in ggml `docs/gguf.md`).
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
    /// A tensor of `bytes` bytes.
    fn t(mut self, name: &str, dims: &[u64], ty: u32, bytes: u64) -> Self {
        self.infos.push((name.into(), dims.to_vec(), ty, bytes));
        self
    }
    /// The header, and the file's whole length (data after it, aligned to 32).
    fn header(&self) -> (Vec<u8>, u64) {
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
        let len = out.len() as u64 + off;
        (out, len)
    }
    /// Written with its data as a hole (a sparse file: an 8B model costs no disk).
    fn write(&self, p: &Path) {
        let (h, len) = self.header();
        let f = std::fs::File::create(p).unwrap();
        (&f).write_all(&h).unwrap();
        f.set_len(len).unwrap();
    }
}

fn small_llama() -> G {
    G::default()
        .s("general.architecture", "llama")
        .u32("llama.block_count", 1)
        .u32("llama.embedding_length", 64)
        .u32("llama.attention.head_count", 2)
        .u32("llama.context_length", 2048)
}

fn small_tensors(g: G) -> G {
    g.t("token_embd.weight", &[64, 32], 0, 64 * 32 * 4)
        .t("blk.0.attn_norm.weight", &[64], 0, 256)
        .t("blk.0.attn_q.weight", &[64, 64], 0, 64 * 64 * 4)
        .t("blk.0.ffn_up.weight", &[64, 128], 0, 64 * 128 * 4)
}

/// Llama-3-8B's tensors (meta-llama/Meta-Llama-3-8B config.json: 32 layers, hidden 4096, 32
/// heads, 8 KV heads, FFN 14336, vocabulary 128256, untied) at ggml type `ty` of `bpe` bytes per
/// 32 elements, in llama.cpp's names.
fn llama3_8b_gguf(ty: u32, per32: u64, file_type: u32) -> G {
    let (h, kv, f, v) = (4096u64, 1024u64, 14336u64, 128256u64);
    let q = |n: u64| n / 32 * per32;
    let mut g = G::default()
        .s("general.architecture", "llama")
        .s("general.name", "Llama 3 8B")
        .u32("general.file_type", file_type)
        .u32("llama.block_count", 32)
        .u32("llama.embedding_length", 4096)
        .u32("llama.attention.head_count", 32)
        .u32("llama.attention.head_count_kv", 8)
        .u32("llama.feed_forward_length", 14336)
        .u32("llama.context_length", 8192)
        .t("token_embd.weight", &[h, v], ty, q(h * v));
    for l in 0..32 {
        let b = |s: &str| format!("blk.{l}.{s}.weight");
        g = g
            .t(&b("attn_norm"), &[h], 0, h * 4)
            .t(&b("attn_q"), &[h, h], ty, q(h * h))
            .t(&b("attn_k"), &[h, kv], ty, q(h * kv))
            .t(&b("attn_v"), &[h, kv], ty, q(h * kv))
            .t(&b("attn_output"), &[h, h], ty, q(h * h))
            .t(&b("ffn_norm"), &[h], 0, h * 4)
            .t(&b("ffn_gate"), &[h, f], ty, q(h * f))
            .t(&b("ffn_up"), &[h, f], ty, q(h * f))
            .t(&b("ffn_down"), &[f, h], ty, q(f * h));
    }
    g.t("output_norm.weight", &[h], 0, h * 4)
        .t("output.weight", &[h, v], ty, q(h * v))
}

/// A safetensors header of `tensors` (name, dtype, shape, bytes per element), data as a hole.
fn safetensors_header(tensors: &[(String, &str, Vec<u64>, u64)]) -> (Vec<u8>, u64) {
    let mut map = serde_json::Map::new();
    let mut off = 0u64;
    for (name, dtype, shape, width) in tensors {
        let n: u64 = shape.iter().product::<u64>() * width;
        map.insert(
            name.clone(),
            serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [off, off + n]}),
        );
        off += n;
    }
    let mut header = serde_json::to_vec(&Value::Object(map)).unwrap();
    while !header.len().is_multiple_of(8) {
        header.push(b' ');
    }
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend(header);
    let len = out.len() as u64 + off;
    (out, len)
}

fn write_sparse(p: &Path, (bytes, len): (Vec<u8>, u64)) {
    let f = std::fs::File::create(p).unwrap();
    (&f).write_all(&bytes).unwrap();
    f.set_len(len).unwrap();
}

/// A Llama-shaped checkpoint's tensors in transformers' names (BF16).
fn llama_tensors(
    layers: u64,
    h: u64,
    kv: u64,
    f: u64,
    v: u64,
) -> Vec<(String, &'static str, Vec<u64>, u64)> {
    let mut t = vec![(
        "model.embed_tokens.weight".to_string(),
        "BF16",
        vec![v, h],
        2,
    )];
    for l in 0..layers {
        let p = format!("model.layers.{l}");
        for (n, shape) in [
            ("input_layernorm", vec![h]),
            ("post_attention_layernorm", vec![h]),
            ("self_attn.q_proj", vec![h, h]),
            ("self_attn.k_proj", vec![kv, h]),
            ("self_attn.v_proj", vec![kv, h]),
            ("self_attn.o_proj", vec![h, h]),
            ("mlp.gate_proj", vec![f, h]),
            ("mlp.up_proj", vec![f, h]),
            ("mlp.down_proj", vec![h, f]),
        ] {
            t.push((format!("{p}.{n}.weight"), "BF16", shape, 2));
        }
    }
    t.push(("model.norm.weight".to_string(), "BF16", vec![h], 2));
    t.push(("lm_head.weight".to_string(), "BF16", vec![v, h], 2));
    t
}

/// The tiny model the Hub serves: config.json and its one safetensors file.
const TINY_CONFIG: &str = r#"{
  "architectures": ["LlamaForCausalLM"],
  "model_type": "llama",
  "hidden_size": 256,
  "num_hidden_layers": 4,
  "num_attention_heads": 4,
  "num_key_value_heads": 2,
  "intermediate_size": 512,
  "vocab_size": 1024,
  "max_position_embeddings": 4096,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16"
}"#;

fn tiny_safetensors() -> Vec<u8> {
    let (mut b, len) = safetensors_header(&llama_tensors(4, 256, 128, 512, 1024));
    b.resize(len as usize, 0);
    b
}

/// Everything the rows read, written once; compared before and after all rows.
struct Shared {
    dir: tempfile::TempDir,
}

impl Shared {
    fn p(&self, rel: &str) -> String {
        self.dir.path().join(rel).display().to_string()
    }
}

fn shared() -> Shared {
    let s = Shared {
        dir: tempfile::tempdir().unwrap(),
    };
    let d = s.dir.path();
    let w = |rel: &str, bytes: &[u8]| std::fs::write(d.join(rel), bytes).unwrap();
    // config.json variants.
    let base: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("configs/meta-llama_Meta-Llama-3-8B.json")).unwrap(),
    )
    .unwrap();
    let with = |k: &str, v: Value| {
        let mut c = base.clone();
        c[k] = v;
        serde_json::to_vec(&c).unwrap()
    };
    w("llama3-8b.json", &serde_json::to_vec(&base).unwrap());
    w("heads0.json", &with("num_attention_heads", Value::from(0)));
    w("layers0.json", &with("num_hidden_layers", Value::from(0)));
    w(
        "layers-neg.json",
        &with("num_hidden_layers", Value::from(-3)),
    );
    w(
        "layers-frac.json",
        &with("num_hidden_layers", Value::from(32.5)),
    );
    w(
        "layers-huge.json",
        &with("num_hidden_layers", Value::from(1u64 << 40)),
    );
    w("hidden-str.json", &with("hidden_size", Value::from("4096")));
    w(
        "name-esc.json",
        &with("model_type", Value::from("llama\u{1b}]0;pwned\u{7}")),
    );
    w("empty.json", b"");
    w("array.json", b"[1, 2, 3]");
    w("not-utf8.json", b"{\"model_type\": \"\xff\xfe\"}");
    w("bad.json", b"{\n  \"model_type\": \"llama\",\n  oops\n}\n");
    w("nested.json", &[b'['; 100_000]);
    w("big-number.json", br#"{"num_hidden_layers": 1e400}"#);
    // 62 MB: the model's keys and one unknown key of 31 million numbers / a 62 MB string;
    // 60 MB of distinct small keys.
    let head = serde_json::to_string(&base).unwrap();
    let head = head.trim_end_matches('}');
    let mut junk = String::with_capacity(62_000_000);
    junk.push_str(head);
    junk.push_str(", \"junk\": [");
    for i in 0..31_000_000u32 {
        if i > 0 {
            junk.push(',');
        }
        junk.push('1');
    }
    junk.push_str("]}");
    w("junk-array.json", junk.as_bytes());
    let mut keys = String::with_capacity(62_000_000);
    keys.push_str(head);
    let mut i = 0u64;
    while keys.len() < 60_000_000 {
        keys.push_str(&format!(", \"k{i}\": {i}"));
        i += 1;
    }
    keys.push('}');
    w("junk-keys.json", keys.as_bytes());
    let mut string = String::with_capacity(62_000_000);
    string.push_str(head);
    string.push_str(", \"notes\": \"");
    string.push_str(&"x".repeat(62_000_000));
    string.push_str("\"}");
    w("junk-string.json", string.as_bytes());
    // Scenario files.
    let scen = |rel: &str, text: &str| w(rel, text.as_bytes());
    scen("ok.ron", "(context: 4096, batch: 2)");
    scen("context0.ron", "(context: 0)");
    scen("batch0.ron", "(batch: 0)");
    scen("zero9.ron", "(zero: 9)");
    scen("gpus-huge.ron", "(gpus: 4294967295)");
    scen("gmu-nan.ron", "(gpu_memory_utilization: NaN)");
    scen("gmu-neg.ron", "(gpu_memory_utilization: -1.0)");
    scen("layers0.ron", "(model: (name: \"x\", layers: 0))");
    scen(
        "params-max.ron",
        "(model: (nominal_params: Some(18446744073709551615)))",
    );
    scen("prompt0.ron", "(prompt_tokens: 0)");
    scen("lora0.ron", "(lora_rank: 0)");
    scen("ttft-neg.ron", "(serving: (target: (ttft_p95_s: -1.0)))");
    scen("users0.ron", "(serving: (load: Some(users(0))))");
    scen("bad.ron", "(context: 4096,\n batch: \"two\")");
    scen("unknown-field.ron", "(contxt: 4096)");
    w("huge.ron", &vec![b' '; 2 << 20]);
    // GGUF files.
    let gg = |rel: &str, g: G| g.write(&d.join(rel));
    gg("ok.gguf", small_tensors(small_llama()));
    gg(
        "heads0.gguf",
        small_tensors(
            G::default()
                .s("general.architecture", "llama")
                .u32("llama.block_count", 1)
                .u32("llama.embedding_length", 64)
                .u32("llama.attention.head_count", 0)
                .u32("llama.context_length", 2048),
        ),
    );
    gg("no-tensors.gguf", small_llama());
    gg(
        "no-arch.gguf",
        G::default()
            .t("token_embd.weight", &[64, 32], 0, 64 * 32 * 4)
            .t("blk.0.ffn_up.weight", &[64, 128], 0, 64 * 128 * 4),
    );
    gg(
        "no-arch-attn.gguf",
        small_tensors(G::default().u32("llama.block_count", 1)),
    );
    gg(
        "bidi-name.gguf",
        small_tensors(small_llama().s("general.name", "evil\u{202e}txt.exe\u{1b}[2J\u{7}")),
    );
    // A key length of 2^63 in a small file: the key is to blame, not the counts.
    let mut k63 = b"GGUF".to_vec();
    k63.extend(3u32.to_le_bytes());
    k63.extend(0u64.to_le_bytes());
    k63.extend(1u64.to_le_bytes());
    k63.extend((1u64 << 63).to_le_bytes());
    k63.extend(b"abc");
    w("key-2p63.gguf", &k63);
    llama3_8b_gguf(8, 34, 7).write(&d.join("llama3-8b-q8_0.gguf"));
    // safetensors files.
    write_sparse(
        &d.join("llama3-8b.safetensors"),
        safetensors_header(&llama_tensors(32, 4096, 1024, 14336, 128256)),
    );
    write_sparse(&d.join("empty.safetensors"), safetensors_header(&[]));
    let dup = br#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#;
    let mut st = (dup.len() as u64).to_le_bytes().to_vec();
    st.extend_from_slice(dup);
    st.extend([0u8; 8]);
    w("dup.safetensors", &st);
    // ~99.6 MB of header: a million small tensors, the most the format's 100 MB allows.
    // Each entry is `"NAME":{"data_offsets":[A,B],"dtype":"F32","shape":[1]},`.
    let digits = |n: u64| n.to_string().len();
    // A small Llama first (the shape is inferred from it), then a million one-element tensors.
    let mut t = llama_tensors(2, 64, 32, 128, 256);
    let (small, small_len) = safetensors_header(&t);
    let base = small_len - small.len() as u64;
    let mut size = small.len();
    let mut i = 0u64;
    while size < 99_600_000 {
        let name = format!("model.layers.{}.block.{i}.weight", i % 2);
        let at = base + 4 * i;
        size += name.len() + 3 + 17 + digits(at) + 1 + digits(at + 4) + 28 + 1;
        t.push((name, "F32", vec![1u64], 4u64));
        i += 1;
    }
    write_sparse(&d.join("huge-header.safetensors"), safetensors_header(&t));
    drop(t);
    // llama-bench output.
    let bench: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("llama-bench/rtx4090-llama2-7b-q4_0.json")).unwrap(),
    )
    .unwrap();
    let mut cpu = bench.clone();
    for r in cpu.as_array_mut().unwrap() {
        r["model_type"] = Value::from("llama 7B Q4_0\u{1b}[31m\u{7}\u{202e}");
        r["backends"] = Value::from("CPU");
        r["gpu_info"] = Value::from("");
        r["n_gpu_layers"] = Value::from(0);
        r["avg_ts"] = Value::from(r["avg_ts"].as_f64().unwrap() / 100.0);
    }
    w("bench-esc.json", &serde_json::to_vec(&cpu).unwrap());
    w(
        "bench-garbage.txt",
        b"hello world\nthis is not llama-bench\n",
    );
    w("bench-huge.json", &vec![b' '; 17 << 20]);
    w("catalog-bad.ron", b"(machines: [ (id: \"x\", name: 3) ])");
    w("plain", b"a file, not a folder");
    s
}

// ---- The Hub server -------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Behaviour {
    Normal,
    Gated,
    Slow,
}

struct Server {
    base: String,
}

fn serve(repos: HashMap<String, (Behaviour, BTreeMap<String, Vec<u8>>)>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let repos = Arc::new(repos);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let repos = repos.clone();
            std::thread::spawn(move || {
                let _ = answer(stream, &repos);
            });
        }
    });
    Server { base }
}

fn answer(
    mut stream: TcpStream,
    repos: &HashMap<String, (Behaviour, BTreeMap<String, Vec<u8>>)>,
) -> std::io::Result<()> {
    let mut rd = BufReader::new(stream.try_clone()?);
    let mut raw = Vec::new();
    rd.read_until(b'\n', &mut raw)?;
    let line = String::from_utf8_lossy(&raw).into_owned();
    if !line.starts_with("GET ") {
        // Not HTTP (a TLS ClientHello): a plain-HTTP server answers 400 in plain text.
        write!(
            stream,
            "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )?;
        return stream.flush();
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        if rd.read_line(&mut h)? == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let mut send = |status: &str, extra: &str, body: &[u8]| -> std::io::Result<()> {
        write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
            body.len()
        )?;
        stream.write_all(body)?;
        stream.flush()
    };
    let p = path.split('?').next().unwrap_or("");
    let parts: Vec<&str> = p.trim_start_matches('/').split('/').collect();
    let (repo, file) = if parts.first() == Some(&"api") && parts.len() >= 6 {
        (format!("{}/{}", parts[2], parts[3]), None)
    } else if parts.len() >= 5 && parts[2] == "resolve" {
        (
            format!("{}/{}", parts[0], parts[1]),
            Some(parts[4..].join("/")),
        )
    } else {
        return send("404 Not Found", "", b"");
    };
    let Some((behaviour, files)) = repos.get(&repo) else {
        return send("401 Unauthorized", "X-Error-Code: RepoNotFound\r\n", b"");
    };
    if *behaviour == Behaviour::Gated
        && headers.get("authorization").map(String::as_str) != Some(&format!("Bearer {TOKEN}"))
    {
        return send("401 Unauthorized", "X-Error-Code: GatedRepo\r\n", b"");
    }
    if *behaviour == Behaviour::Slow {
        std::thread::sleep(Duration::from_secs(4));
    }
    let Some(file) = file else {
        let siblings: Vec<Value> = files
            .iter()
            .map(|(n, b)| serde_json::json!({"rfilename": n, "size": b.len()}))
            .collect();
        let body =
            serde_json::to_vec(&serde_json::json!({"id": repo, "sha": SHA, "siblings": siblings}))
                .unwrap();
        return send("200 OK", "Content-Type: application/json\r\n", &body);
    };
    let Some(body) = files.get(&file) else {
        return send("404 Not Found", "X-Error-Code: EntryNotFound\r\n", b"");
    };
    let tag = "ETag: \"fixed\"\r\n";
    match headers
        .get("range")
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.split_once('-'))
    {
        Some((a, b)) => {
            let a: usize = a.parse().unwrap_or(0);
            let b: usize = b.parse::<usize>().unwrap_or(0).min(body.len() - 1);
            if a >= body.len() {
                return send("416 Range Not Satisfiable", "", b"");
            }
            let cr = format!("{tag}Content-Range: bytes {a}-{b}/{}\r\n", body.len());
            send("206 Partial Content", &cr, &body[a..=b])
        }
        None => send("200 OK", tag, body),
    }
}

fn hub() -> Server {
    let tiny: BTreeMap<String, Vec<u8>> = [
        ("config.json".to_string(), TINY_CONFIG.as_bytes().to_vec()),
        ("model.safetensors".to_string(), tiny_safetensors()),
    ]
    .into_iter()
    .collect();
    let (h, len) =
        small_tensors(small_llama().s("general.name", "evil\u{202e}cod.exe\u{1b}[2J")).header();
    let mut gguf = h;
    gguf.resize(len as usize, 0);
    let bidi: BTreeMap<String, Vec<u8>> = [("model-Q8_0.gguf".to_string(), gguf)]
        .into_iter()
        .collect();
    serve(
        [
            ("org/ok".to_string(), (Behaviour::Normal, tiny.clone())),
            ("org/gated".to_string(), (Behaviour::Gated, tiny.clone())),
            ("org/slow".to_string(), (Behaviour::Slow, tiny)),
            ("org/bidi".to_string(), (Behaviour::Normal, bidi)),
        ]
        .into_iter()
        .collect(),
    )
}

/// A port nothing listens on (bound, then closed).
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

// ---- Running a row ---------------------------------------------------------------------------------

/// Every path under `dir` with its kind, length and modification time.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (String, u64, Option<std::time::SystemTime>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(md) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            let ft = md.file_type();
            let kind = if ft.is_symlink() {
                format!("link:{}", std::fs::read_link(&p).unwrap().display())
            } else if ft.is_dir() {
                stack.push(p.clone());
                "dir".into()
            } else if ft.is_file() {
                "file".into()
            } else {
                "special".into()
            };
            let len = if ft.is_file() { md.len() } else { 0 };
            let mtime = if ft.is_file() {
                md.modified().ok()
            } else {
                None
            };
            out.insert(
                p.strip_prefix(dir).unwrap().to_path_buf(),
                (kind, len, mtime),
            );
        }
    }
    out
}

/// The peak RSS (MiB) of a running process, from `VmHWM` in `/proc/PID/status`. Only a status
/// whose `Name:` is headroom's counts: between the spawn and the exec the child still shares the
/// test process's memory (and its size), which must not be taken for the command's.
fn peak_rss_mib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let name = s.lines().find_map(|l| l.strip_prefix("Name:"))?.trim();
    if name != "headroom" {
        return None;
    }
    let l = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = l.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}

/// Runs one row: its time (s) and peak RSS (MiB, 0 when not sampled); `Err` says what failed.
fn run_row(r: &Row, vars: &HashMap<&str, String>) -> Result<(f64, u64), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let d = dir.path();
    for sub in ["config", "cache", "hf"] {
        std::fs::create_dir(d.join(sub)).unwrap();
    }
    if let Some(s) = &r.setup {
        s(d);
    }
    let subst = |s: &str| {
        let mut s = s.replace("{dir}", &d.display().to_string());
        for (k, v) in vars {
            s = s.replace(&format!("{{{k}}}"), v);
        }
        s
    };
    let before = snapshot(d);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_headroom"));
    cmd.args(r.args.iter().map(|a| subst(a)))
        .current_dir(d)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("HF_TOKEN")
        .env_remove("HF_TOKEN_PATH")
        .env_remove("HF_ENDPOINT")
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("HTTPS_PROXY")
        .env_remove("HTTP_PROXY")
        .env_remove("ALL_PROXY")
        .env_remove("https_proxy")
        .env_remove("http_proxy")
        .env("XDG_CONFIG_HOME", d.join("config"))
        .env("HEADROOM_CONFIG_DIR", d.join("config"))
        .env("HEADROOM_CACHE", d.join("cache"))
        .env("HF_HOME", d.join("hf"))
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in &r.env {
        cmd.env(k, subst(v));
    }
    match r.stdout {
        Stdout::Piped | Stdout::Closed => {
            cmd.stdout(Stdio::piped());
        }
        Stdout::Full => {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .map_err(|e| format!("/dev/full: {e}"))?;
            cmd.stdout(Stdio::from(f));
        }
    }
    let fifo = r.fifo_reader.as_ref().map(|rel| {
        let p = d.join(rel);
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::fs::File::open(&p).and_then(|mut f| f.read_to_string(&mut s));
            s
        })
    });
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|e| e.to_string())?;
    let pid = child.id();
    let out_reader = match r.stdout {
        Stdout::Closed => {
            drop(child.stdout.take());
            None
        }
        _ => child.stdout.take().map(|mut o| {
            std::thread::spawn(move || {
                let mut b = Vec::new();
                let _ = o.read_to_end(&mut b);
                b
            })
        }),
    };
    let mut e = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = e.read_to_end(&mut b);
        b
    });
    let mut peak = 0u64;
    let mut samples = 0u32;
    let status = loop {
        if let Some(m) = peak_rss_mib(pid) {
            peak = peak.max(m);
            samples += 1;
        }
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            break st;
        }
        if start.elapsed().as_secs_f64() > r.secs * 3.0 + 10.0 {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "still running after {:.1} s: killed",
                start.elapsed().as_secs_f64()
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let took = start.elapsed().as_secs_f64();
    let stdout = out_reader
        .map(|t| String::from_utf8_lossy(&t.join().unwrap()).into_owned())
        .unwrap_or_default();
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned();
    let fifo_text = fifo.map(|t| {
        if !t.is_finished() {
            // The command never opened it: open the writing end ourselves so the reader ends.
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .open(d.join(r.fifo_reader.as_ref().unwrap()));
        }
        t.join().unwrap()
    });
    let o = Outcome {
        code: status.code(),
        stdout,
        stderr,
        dir: d.to_path_buf(),
    };
    let ctx = || format!("stderr {:?}\nstdout {:.400?}", o.stderr, o.stdout);
    ensure(o.code == Some(r.code), || {
        format!("exit {:?}, expected {}; {}", o.code, r.code, ctx())
    })?;
    ensure(!o.stderr.contains("panicked"), || {
        format!("a panic; {}", ctx())
    })?;
    for n in &r.err {
        let n = subst(n);
        ensure(o.stderr.contains(&n), || {
            format!("stderr lacks {n:?}; {}", ctx())
        })?;
    }
    for n in &r.out {
        let n = subst(n);
        ensure(o.stdout.contains(&n), || {
            format!("stdout lacks {n:?}; {}", ctx())
        })?;
    }
    for n in &r.never {
        let n = subst(n);
        ensure(!o.stdout.contains(&n) && !o.stderr.contains(&n), || {
            format!("output holds {n:?}; {}", ctx())
        })?;
    }
    // Every stderr line is headroom's; a failure is one line (notes aside); the help of a
    // subcommand is its usage block.
    match r.lines {
        Lines::One => {
            let lines: Vec<&str> = o.stderr.lines().collect();
            ensure(lines.iter().all(|l| l.starts_with("headroom: ")), || {
                format!("a stderr line not from headroom; {}", ctx())
            })?;
            if r.code != 0 {
                let errors = lines
                    .iter()
                    .filter(|l| !l.starts_with("headroom: note: "))
                    .count();
                ensure(errors == 1, || format!("{errors} error lines; {}", ctx()))?;
            }
        }
        Lines::Help => ensure(o.stderr.contains("Usage: headroom"), || {
            format!("no usage; {}", ctx())
        })?,
        Lines::Any => {}
    }
    // No terminal control from a file or a server reaches the output.
    for c in ['\u{1b}', '\u{7}', '\u{202e}'] {
        ensure(!o.stderr.contains(c), || {
            format!("stderr holds {c:?}; {}", ctx())
        })?;
        ensure(!o.stdout.contains(c), || {
            format!("stdout holds {c:?}; {}", ctx())
        })?;
    }
    ensure(took <= r.secs, || {
        format!("took {took:.2} s, bound {} s", r.secs)
    })?;
    if let Some(max) = r.rss_mib
        && cfg!(target_os = "linux")
    {
        ensure(samples > 0, || "no memory sample was taken".to_string())?;
        ensure(peak <= max, || {
            format!("peak RSS {peak} MiB, bound {max} MiB")
        })?;
    }
    if let (Some(rel), Some(text)) = (&r.fifo_reader, &fifo_text) {
        ensure(text.starts_with("# "), || {
            format!("the reader of {rel} got {:.80?}", text)
        })?;
    }
    // Nothing left behind or replaced.
    let after = snapshot(d);
    let changed: Vec<String> = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .map(|k| k.display().to_string())
        .filter(|k| !r.changes.iter().any(|c| k == c))
        .filter(|k| !(r.cache_ok && k.starts_with("cache")))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    ensure(changed.is_empty(), || {
        format!("files changed or left behind: {changed:?}; {}", ctx())
    })?;
    if r.cache_ok {
        for (k, (kind, _, _)) in &after {
            let name = k.display().to_string();
            ensure(!name.contains(".partial-"), || {
                format!("{name} left behind")
            })?;
            if kind == "dir" && name.starts_with("cache/") {
                let empty = std::fs::read_dir(d.join(k)).map(|mut i| i.next().is_none());
                ensure(!empty.unwrap_or(false), || {
                    format!("empty folder {name} left behind")
                })?;
            }
        }
    }
    if let Some(c) = &r.check {
        c(&o).map_err(|e| format!("{e}; {}", ctx()))?;
    }
    Ok((took, peak))
}

// ---- The table ------------------------------------------------------------------------------------

/// Weights bytes of an `estimate --json` run.
fn weights_of(o: &Outcome) -> Result<u64, String> {
    json_of(o)?["memory"]["weights"]
        .as_u64()
        .ok_or_else(|| "no memory.weights".to_string())
}

/// The preset's weights at a precision, for comparison (the same binary).
fn preset_weights(args: &[&str]) -> u64 {
    let o = Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(["estimate", "--model", "llama-3-8b", "--json"])
        .args(args)
        .env("XDG_CONFIG_HOME", "/nonexistent-headroom-config")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["memory"]["weights"].as_u64().unwrap()
}

fn within(got: u64, want: u64, share: f64) -> Result<(), String> {
    let off = (got as f64 - want as f64).abs() / want as f64;
    ensure(off <= share, || {
        format!("weights {got} vs {want}: {:.2} % apart", off * 100.0)
    })
}

fn usage_rows() -> Vec<Row> {
    let mut v = vec![
        row("typo in an option", &["estimate", "--modle", "x"])
            .fails(2, &["--modle", "tip", "--mode"]),
        row(
            "unknown precision lists the values and the nearest",
            &["estimate", "--weights", "q4km"],
        )
        .fails(2, &["--weights", "possible values", "q4_k_m", "tip"]),
        row("missing value", &["estimate", "--context"])
            .fails(2, &["--context", "a value is required"]),
        row("calibrate without its file", &["calibrate"]).fails(2, &["<FILE>", "not provided"]),
        row(
            "catalog without a subcommand prints its usage",
            &["catalog"],
        )
        .help()
        .code(2)
        .err("list")
        .err("validate"),
        row("unknown catalog subcommand", &["catalog", "frobnicate"]).fails(2, &["frobnicate"]),
        row("unknown command", &["frobnicate"]).fails(2, &["frobnicate"]),
        row("KV type", &["estimate", "--kv", "fp16/int2"]).fails(2, &["--kv", "int2"]),
        row("mode", &["estimate", "--mode", "pretrain"]).fails(2, &["--mode", "qlora"]),
        row("ZeRO stage", &["estimate", "--zero", "4"]).fails(2, &["--zero"]),
        row("too many GPUs", &["estimate", "--gpus", "70000"]).fails(2, &["--gpus", "65,536"]),
        row("batch 0", &["estimate", "--batch", "0"]).fails(2, &["--batch"]),
        row("fractional batch", &["estimate", "--batch", "1.5"]).fails(2, &["--batch", "whole"]),
        row(
            "fractional context is not rounded to 2",
            &["estimate", "--context", "1.5"],
        )
        .fails(2, &["--context", "not a whole number"]),
        row("context 0", &["estimate", "--context", "0"]).fails(2, &["--context"]),
        row("negative context", &["estimate", "--context", "-5"]).fails(2, &["--context"]),
        row(
            "context past the limit",
            &["estimate", "--context", "20000000"],
        )
        .fails(2, &["--context"]),
        row("context 1e400", &["estimate", "--context", "1e400"]).fails(2, &["--context"]),
        row("context NaN", &["estimate", "--context", "NaN"]).fails(2, &["--context"]),
        row("empty context", &["estimate", "--context", ""]).fails(2, &["--context"]),
        row(
            "context with a unit that means billions",
            &["estimate", "--context", "8B"],
        )
        .fails(2, &["--context"]),
        row("params without a suffix", &["estimate", "--params", "70"])
            .fails(2, &["--params", "70B"]),
        row("params 1e14", &["estimate", "--params", "1e14"]).fails(2, &["--params"]),
        row("params words", &["estimate", "--params", "lots"]).fails(2, &["--params"]),
        row("params 0", &["estimate", "--params", "0"]).fails(2, &["--params"]),
        row("LoRA rank 0", &["estimate", "--lora-rank", "0"]).fails(2, &["--lora-rank"]),
        row(
            "GPU memory fraction 1.5",
            &["estimate", "--gpu-memory-utilization", "1.5"],
        )
        .fails(2, &["--gpu-memory-utilization"]),
        row(
            "GPU memory fraction NaN",
            &["estimate", "--gpu-memory-utilization", "NaN"],
        )
        .fails(2, &["--gpu-memory-utilization"]),
        row("ubatch 0", &["estimate", "--ubatch", "0"]).fails(2, &["--ubatch"]),
        row("training tokens 0", &["estimate", "--train-tokens", "0"])
            .fails(2, &["--train-tokens"]),
        row(
            "training tokens 1e16",
            &["estimate", "--train-tokens", "1e16"],
        )
        .fails(2, &["--train-tokens"]),
        row("runtime", &["estimate", "--runtime", "tgi"]).fails(2, &["--runtime", "vllm"]),
        row("offload", &["estimate", "--offload", "disk"]).fails(2, &["--offload"]),
        row("framework", &["estimate", "--framework", "jax"]).fails(2, &["--framework"]),
        row("checkpointing", &["estimate", "--checkpointing", "some"])
            .fails(2, &["--checkpointing"]),
        row(
            "LoRA targets",
            &["estimate", "--lora-targets", "everything"],
        )
        .fails(2, &["--lora-targets"]),
        row("KV allocation", &["estimate", "--kv-alloc", "random"]).fails(2, &["--kv-alloc"]),
        row(
            "flash attention",
            &["estimate", "--flash-attention", "maybe"],
        )
        .fails(2, &["--flash-attention"]),
        row(
            "two model sources",
            &["estimate", "--model", "llama-3-8b", "--params", "7B"],
        )
        .fails(2, &["--params"]),
        row(
            "--hf-file without --hf",
            &["estimate", "--hf-file", "x.gguf"],
        )
        .fails(2, &["--hf"]),
        row("machine kind", &["fit", "--kind", "spaceship"]).fails(2, &["--kind"]),
        row(
            "negative electricity is refused, not read as 0",
            &["fit", "--electricity", "-1"],
        )
        .fails(2, &["--electricity", "negative"]),
        row("electricity NaN", &["fit", "--electricity", "NaN"]).fails(2, &["--electricity"]),
        row("electricity inf", &["fit", "--electricity", "inf"]).fails(2, &["--electricity"]),
        row(
            "fit --gpus is refused, not ignored",
            &["fit", "--gpus", "4"],
        )
        .fails(2, &["--gpus", "fit"]),
        row("serve --gpus", &["serve", "--gpus", "2"]).fails(2, &["--gpus", "serve"]),
        row("recommend --gpus", &["recommend", "--gpus", "2"]).fails(2, &["--gpus", "recommend"]),
        row("unknown machine", &["fit", "--machine", "no-such-machine"])
            .fails(2, &["--machine", "no-such-machine"]),
        row("report format", &["report", "--format", "pdf"]).fails(2, &["--format"]),
        row("report extension", &["report", "-o", "{dir}/r.pdf"]).fails(2, &["r.pdf"]),
        row("report with an empty name", &["report", "-o", ""]).fails(2, &["--output"]),
        row("budget", &["recommend", "--budget", "-5"]).fails(2, &["--budget"]),
        row("users 0", &["serve", "--users", "0"]).fails(2, &["--users"]),
        row("rate negative", &["serve", "--rate", "-3"]).fails(2, &["--rate"]),
        row("prefix share", &["serve", "--prefix-share", "1.5"]).fails(2, &["--prefix-share"]),
        row("TTFT words", &["serve", "--ttft", "soon"]).fails(2, &["--ttft"]),
        row("users and rate", &["serve", "--users", "5", "--rate", "2"]).fails(2, &["--users"]),
        row("tensor parallel 0", &["estimate", "--tp", "0"]).fails(2, &["--tp"]),
        row("max-num-seqs 0", &["estimate", "--max-num-seqs", "0"]).fails(2, &["--max-num-seqs"]),
        row("output tokens 0", &["estimate", "--output-tokens", "0"])
            .fails(2, &["--output-tokens"]),
        row("engine", &["fit", "--engine", "tgi"]).fails(2, &["--engine"]),
        row("mix", &["serve", "--mix", "banter"]).fails(2, &["--mix"]),
        row(
            "model id typo suggests the nearest ids",
            &["estimate", "--model", "llama3-8b"],
        )
        .fails(2, &["--model", "llama3-8b", "nearest: llama-3-8b"])
        .never("qwen2.5-0.5b"),
        row(
            "model id far from every preset",
            &["estimate", "--model", "zzzzzzzzzzzzzzzz"],
        )
        .fails(2, &["--model", "headroom catalog models"])
        .never("nearest"),
        row(
            "model id with terminal escapes",
            &["estimate", "--model", "x\u{1b}[31m\u{7}"],
        )
        .fails(2, &["--model", "\\u{1b}"]),
        row(
            "prompt longer than the context",
            &["estimate", "--prompt", "9000", "--context", "8192"],
        )
        .fails(2, &["--prompt", "9,000", "8,192"]),
        row(
            "LoRA rank far over the hidden size",
            &["estimate", "--mode", "lora", "--lora-rank", "65536"],
        )
        .fails(2, &["--lora-rank", "hidden size"]),
        row("repo id", &["estimate", "--hf", "not a repo"]).fails(2, &["--hf", "not a repo"]),
        row("revision", &["estimate", "--hf", "org/ok@.."]).fails(2, &["--hf", "revision"]),
        row(
            "a URL that is not http",
            &["estimate", "--url", "ftp://example.org/m.gguf"],
        )
        .fails(2, &["--url", "ftp://"]),
        row(
            "a URL that is not a model file",
            &["estimate", "--url", "http://127.0.0.1:9/model.bin"],
        )
        .fails(2, &["--url", "model.bin"]),
        row(
            "--format against the extension writes nothing",
            &["report", "--format", "html", "-o", "{dir}/r.json"],
        )
        .fails(2, &["--format html", "r.json"]),
        row(
            "--format json into a .md name",
            &["report", "--format", "json", "-o", "{dir}/r.md"],
        )
        .fails(2, &["r.md"]),
    ];
    // Accepted inputs next to the refused ones: the edge of each range holds.
    v.extend([
        row(
            "context 1.5K is whole",
            &[
                "estimate",
                "--context",
                "1.5K",
                "--prompt",
                "1000",
                "--json",
            ],
        )
        .out("\"kv_cache_per_token\""),
        row(
            "the default prompt over a short context is lowered with a note",
            &["estimate", "--context", "512", "--json"],
        )
        .err("note: Prompt tokens lowered from 1,024 to the context (512)"),
        row("params 7.5e9", &["estimate", "--params", "7.5e9", "--json"]).out("7500000000"),
        row(
            "electricity 0",
            &[
                "fit",
                "--electricity",
                "0",
                "--machine",
                "desktop-rtx4090-64gb",
                "--json",
            ],
        )
        .out("\"machine\""),
        row(
            "estimate takes --gpus",
            &["estimate", "--gpus", "4", "--json"],
        )
        .out("\"gpus\": 4"),
    ]);
    v
}

fn input_rows(s: &Shared) -> Vec<Row> {
    let p = |rel: &str| s.p(rel);
    let mut v = vec![
        row(
            "config.json missing",
            &["estimate", "--config", "{dir}/none.json"],
        )
        .fails(3, &["none.json"]),
        row(
            "config.json is /dev/zero: bounded, and the limit said once",
            &["estimate", "--config", "/dev/zero"],
        )
        .fails(3, &["/dev/zero", "64.0 MiB"])
        .never("more than the 64.0 MiB")
        .secs(10.0)
        .rss(200),
        row(
            "config.json is a folder",
            &["estimate", "--config", "{dir}"],
        )
        .fails(3, &["folder"]),
        row(
            "config.json with a syntax error at line:column",
            &["estimate", "--config", &p("bad.json")],
        )
        .fails(3, &["bad.json", "line 3:3"]),
        row(
            "config.json with 0 heads",
            &["estimate", "--config", &p("heads0.json")],
        )
        .fails(3, &["heads0.json", "num_attention_heads"]),
        row(
            "config.json with 0 layers",
            &["estimate", "--config", &p("layers0.json")],
        )
        .fails(3, &["num_hidden_layers"]),
        row(
            "config.json with negative layers",
            &["estimate", "--config", &p("layers-neg.json")],
        )
        .fails(3, &["num_hidden_layers"]),
        row(
            "config.json with 32.5 layers",
            &["estimate", "--config", &p("layers-frac.json")],
        )
        .fails(3, &["num_hidden_layers"]),
        row(
            "config.json with 2^40 layers",
            &["estimate", "--config", &p("layers-huge.json")],
        )
        .fails(3, &["num_hidden_layers"]),
        row(
            "config.json with a string width",
            &["estimate", "--config", &p("hidden-str.json")],
        )
        .fails(3, &["hidden_size"]),
        row(
            "config.json escapes in model_type are shown escaped",
            &["estimate", "--config", &p("name-esc.json")],
        )
        .out("\\u{1b}]0;pwned\\u{7}"),
        row(
            "config.json empty",
            &["estimate", "--config", &p("empty.json")],
        )
        .fails(3, &["empty.json"]),
        row(
            "config.json an array",
            &["estimate", "--config", &p("array.json")],
        )
        .fails(3, &["array.json"]),
        row(
            "config.json not UTF-8",
            &["estimate", "--config", &p("not-utf8.json")],
        )
        .fails(3, &["not-utf8.json", "UTF-8"]),
        row(
            "config.json nested 100,000 deep",
            &["estimate", "--config", &p("nested.json")],
        )
        .fails(3, &["nested.json"]),
        row(
            "config.json with 1e400",
            &["estimate", "--config", &p("big-number.json")],
        )
        .fails(3, &["big-number.json"]),
        row("GGUF missing", &["estimate", "--gguf", "{dir}/none.gguf"]).fails(3, &["none.gguf"]),
        row("GGUF is /dev/zero", &["estimate", "--gguf", "/dev/zero"])
            .fails(3, &["zero"])
            .secs(5.0),
        row(
            "GGUF folder without models",
            &["estimate", "--gguf", "{dir}"],
        )
        .fails(3, &["the folder has no"]),
        row(
            "GGUF with head_count 0 is refused, as config.json is",
            &["estimate", "--gguf", &p("heads0.gguf")],
        )
        .fails(3, &["heads0.gguf", "llama.attention.head_count is 0"]),
        row(
            "GGUF with no tensors is refused",
            &["estimate", "--gguf", &p("no-tensors.gguf")],
        )
        .fails(3, &["no-tensors.gguf", "no tensors"]),
        row(
            "GGUF without an architecture says so (and has no heads)",
            &["estimate", "--gguf", &p("no-arch.gguf"), "--json"],
        )
        .fails(3, &["no-arch.gguf", "model.heads 0"])
        .err("note: general.architecture is missing")
        .never("note: .context_length"),
        row(
            "GGUF without an architecture but with attention",
            &["estimate", "--gguf", &p("no-arch-attn.gguf")],
        )
        .fails(3, &["no-arch-attn.gguf", "general.architecture is missing"]),
        row(
            "GGUF key length 2^63 is blamed on the key",
            &["estimate", "--gguf", &p("key-2p63.gguf")],
        )
        .fails(3, &["key-2p63.gguf", "key length 2^63"])
        .never("key/value count"),
        row(
            "GGUF name with a bidi override and ESC is escaped",
            &["estimate", "--gguf", &p("bidi-name.gguf")],
        )
        .out("\\u{202e}"),
        row(
            "GGUF name escaped in JSON too",
            &[
                "report",
                "--gguf",
                &p("bidi-name.gguf"),
                "--machine",
                "desktop-rtx4090-64gb",
                "--format",
                "md",
            ],
        )
        .out("\\u{202e}"),
        row(
            "GGUF good",
            &["estimate", "--gguf", &p("ok.gguf"), "--json"],
        )
        .out("\"params\""),
        row(
            "safetensors missing",
            &["estimate", "--safetensors", "{dir}/none.safetensors"],
        )
        .fails(3, &["none.safetensors"]),
        row(
            "safetensors without tensors is refused",
            &["estimate", "--safetensors", &p("empty.safetensors")],
        )
        .fails(3, &["empty.safetensors", "no tensors"]),
        row(
            "safetensors with a name twice",
            &["estimate", "--safetensors", &p("dup.safetensors")],
        )
        .fails(3, &["dup.safetensors", "given twice"]),
        row(
            "scenario missing",
            &["estimate", "--scenario", "{dir}/none.ron"],
        )
        .fails(3, &["none.ron"]),
        row(
            "scenario is /dev/zero",
            &["estimate", "--scenario", "/dev/zero"],
        )
        .fails(3, &["/dev/zero", "1.00 MiB"])
        .secs(5.0),
        row(
            "scenario too large",
            &["estimate", "--scenario", &p("huge.ron")],
        )
        .fails(3, &["huge.ron", "1.00 MiB"]),
        row(
            "scenario with a syntax error at line:column",
            &["estimate", "--scenario", &p("bad.ron")],
        )
        .fails(3, &["bad.ron:2:"]),
        row(
            "scenario with an unknown field",
            &["estimate", "--scenario", &p("unknown-field.ron")],
        )
        .fails(3, &["unknown-field.ron", "contxt"]),
        row(
            "scenario good",
            &["estimate", "--scenario", &p("ok.ron"), "--json"],
        )
        .out("\"kv_cache_per_token\""),
        row("calibrate missing", &["calibrate", "{dir}/none.json"]).fails(3, &["none.json"]),
        row(
            "calibrate /dev/zero stops at the limit",
            &["calibrate", "/dev/zero"],
        )
        .fails(3, &["/dev/zero", "16.0 MiB"])
        .secs(10.0)
        .rss(120),
        row(
            "calibrate a 17 MiB file",
            &["calibrate", &p("bench-huge.json")],
        )
        .fails(3, &["bench-huge.json", "more than the 16.0 MiB"])
        .rss(120),
        row("calibrate garbage", &["calibrate", &p("bench-garbage.txt")])
            .fails(3, &["bench-garbage.txt", "llama-bench"]),
        row("calibrate a folder", &["calibrate", "{dir}"]).fails(3, &["folder"]),
        row(
            "calibrate escapes llama-bench's model_type",
            &["calibrate", &p("bench-esc.json")],
        )
        .changes("config/calibration.json")
        .out("\\u{1b}[31m\\u{7}\\u{202e}"),
        row(
            "catalog validate missing",
            &["catalog", "validate", "{dir}/none.ron"],
        )
        .fails(3, &["none.ron"]),
        row(
            "catalog validate /dev/zero",
            &["catalog", "validate", "/dev/zero"],
        )
        .fails(3, &["/dev/zero"])
        .secs(10.0)
        .rss(120),
        row(
            "catalog validate bad RON",
            &["catalog", "validate", &p("catalog-bad.ron")],
        )
        .fails(3, &["catalog-bad.ron:1:"]),
    ];
    // Each scenario-file range the flags enforce, through Scenario::problems.
    for (file, field) in [
        ("context0.ron", "context 0"),
        ("batch0.ron", "batch 0"),
        ("zero9.ron", "zero 9"),
        ("gpus-huge.ron", "gpus 4,294,967,295"),
        ("gmu-nan.ron", "gpu_memory_utilization NaN"),
        ("gmu-neg.ron", "gpu_memory_utilization -1"),
        ("layers0.ron", "model.layers 0"),
        ("params-max.ron", "model.nominal_params"),
        ("prompt0.ron", "prompt_tokens 0"),
        ("lora0.ron", "lora_rank 0"),
        ("ttft-neg.ron", "serving.target.ttft_p95_s"),
        ("users0.ron", "serving.load (Users)"),
    ] {
        v.push(
            row(
                &format!("scenario file {field}"),
                &["fit", "--scenario", &p(file)],
            )
            .fails(3, &[file, field, "is outside"]),
        );
    }
    // The GGUF and safetensors fixtures made to break the readers: each one line with the file
    // and where.
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import");
    let mut names: Vec<String> = std::fs::read_dir(&fx)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("gguf_") || n.starts_with("st_"))
        .collect();
    names.sort();
    for n in names {
        let flag = if n.starts_with("gguf_") {
            "--gguf"
        } else {
            "--safetensors"
        };
        let path = fx.join(&n).display().to_string();
        v.push(row(&format!("fixture {n}"), &["estimate", flag, &path]).fails(3, &[&n, "offset"]));
    }
    v
}

fn weights_rows(s: &Shared) -> Vec<Row> {
    let q4 = preset_weights(&["--weights", "q4_k_m"]);
    let qlora = preset_weights(&["--mode", "qlora"]);
    let bf16 = preset_weights(&[]);
    let st = s.p("llama3-8b.safetensors");
    let gg = s.p("llama3-8b-q8_0.gguf");
    vec![
        row(
            "8B safetensors at --weights q4_k_m sizes like the preset",
            &[
                "estimate",
                "--safetensors",
                &st,
                "--weights",
                "q4_k_m",
                "--json",
            ],
        )
        .err("note: weights at GGUF Q4_K_M")
        .check(move |o| within(weights_of(o)?, q4, 0.01)),
        row(
            "8B safetensors without --weights keeps the file's bytes",
            &["estimate", "--safetensors", &st, "--json"],
        )
        .check(|o| {
            ensure(weights_of(o)? == 16_060_522_496, || {
                "not the file's 16,060,522,496 bytes".into()
            })
        }),
        row(
            "8B safetensors in QLoRA is NF4, not the file's BF16",
            &[
                "estimate",
                "--safetensors",
                &st,
                "--mode",
                "qlora",
                "--json",
            ],
        )
        .check(move |o| within(weights_of(o)?, qlora, 0.01)),
        row(
            "8B GGUF Q8_0 at --weights q4_k_m sizes like the preset",
            &["estimate", "--gguf", &gg, "--weights", "q4_k_m", "--json"],
        )
        .check(move |o| within(weights_of(o)?, q4, 0.01)),
        row(
            "8B GGUF Q8_0 at --weights bf16 sizes like the preset",
            &["estimate", "--gguf", &gg, "--weights", "bf16", "--json"],
        )
        .check(move |o| within(weights_of(o)?, bf16, 0.01)),
        row(
            "8B GGUF at its own precision keeps the file's bytes",
            &["estimate", "--gguf", &gg, "--weights", "q8_0", "--json"],
        )
        .never("note: weights at")
        .check(move |o| {
            let w = weights_of(o)?;
            ensure(w > 8_000_000_000 && w < 9_000_000_000, || {
                format!("{w} is not the Q8_0 file")
            })
        }),
        row(
            "fit of the 8B GGUF at Q4_K_M asks what the preset asks",
            &[
                "fit",
                "--gguf",
                &gg,
                "--weights",
                "q4_k_m",
                "--machine",
                "desktop-rtx4090-64gb",
                "--json",
            ],
        )
        .check(|o| {
            let need = json_of(o)?[0]["gpu_required_bytes"].as_u64().unwrap_or(0);
            ensure(need < 8_000_000_000, || {
                format!("asks {need} bytes, as at Q8_0")
            })
        }),
        row(
            "the estimate header says the precision it sized",
            &["estimate", "--gguf", &gg, "--weights", "q4_k_m"],
        )
        .out("weights GGUF Q4_K_M")
        .out("Σ tensors"),
    ]
}

fn output_rows() -> Vec<Row> {
    let report = |out: &str| -> Vec<String> {
        [
            "report",
            "--model",
            "llama-3-8b",
            "--machine",
            "desktop-rtx4090-64gb",
            "-o",
            out,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let r = |name: &str, out: &str| {
        let mut x = row(name, &[]);
        x.args = report(out);
        x
    };
    let mut v = vec![
        r("-o /dev/null writes through the device", "/dev/null")
            .err("Wrote the Markdown report to /dev/null")
            .check(|_| {
                use std::os::unix::fs::FileTypeExt as _;
                let ft = std::fs::metadata("/dev/null")
                    .map_err(|e| e.to_string())?
                    .file_type();
                ensure(ft.is_char_device(), || {
                    "/dev/null is no longer a device".into()
                })
            }),
        r("-o /dev/stdout writes the report to stdout", "/dev/stdout")
            .out("# Sizing report")
            .err("Wrote"),
        r("-o /dev/stderr", "/dev/stderr")
            .err("# Sizing report")
            .any_lines(),
        r(
            "-o a FIFO writes into it and leaves it a FIFO",
            "{dir}/pipe.md",
        )
        .setup(|d| {
            let ok = Command::new("mkfifo")
                .arg(d.join("pipe.md"))
                .status()
                .unwrap()
                .success();
            assert!(ok, "mkfifo");
        })
        .fifo("pipe.md"),
        r(
            "-o a symlink writes its target and keeps the link",
            "{dir}/link.md",
        )
        .setup(|d| {
            std::fs::write(d.join("real.md"), "old").unwrap();
            std::os::unix::fs::symlink("real.md", d.join("link.md")).unwrap();
        })
        .changes("real.md")
        .check(|o| {
            let t = std::fs::read_to_string(o.dir.join("real.md")).unwrap();
            let link = std::fs::symlink_metadata(o.dir.join("link.md")).unwrap();
            ensure(t.starts_with("# ") && link.file_type().is_symlink(), || {
                "link replaced or target unwritten".into()
            })
        }),
        r("-o a dangling symlink is refused", "{dir}/dangling.md")
            .setup(|d| std::os::unix::fs::symlink("nowhere/x.md", d.join("dangling.md")).unwrap())
            .fails(1, &["dangling.md", "does not exist"]),
        r("-o a folder", "{dir}/sub.md")
            .setup(|d| std::fs::create_dir(d.join("sub.md")).unwrap())
            .fails(1, &["sub.md", "folder"]),
        r(
            "-o /proc/x.md is not 'the folder does not exist'",
            "/proc/x.md",
        )
        .fails(1, &["/proc/x.md", "does not take new files"])
        .never("'/proc' does not exist"),
        r("-o into a missing folder", "/nonexistent/dir/r.md")
            .fails(1, &["/nonexistent/dir/r.md", "does not exist"]),
        r("-o below a file", "{dir}/plain.txt/r.md")
            .setup(|d| std::fs::write(d.join("plain.txt"), "x").unwrap())
            .fails(1, &["r.md", "is not a folder"]),
        r("-o /dev/full", "/dev/full").fails(1, &["/dev/full", "no space"]),
        r(
            "-o replaces a regular file and says so on stderr only",
            "{dir}/r.md",
        )
        .setup(|d| std::fs::write(d.join("r.md"), "old").unwrap())
        .changes("r.md")
        .err("Wrote the Markdown report to")
        .check(|o| {
            ensure(o.stdout.is_empty(), || "stdout is not empty".into())?;
            let t = std::fs::read_to_string(o.dir.join("r.md")).unwrap();
            ensure(t.starts_with("# "), || "not replaced".into())
        }),
        r("-o a new JSON file", "{dir}/r.json")
            .changes("r.json")
            .check(|o| {
                let t = std::fs::read_to_string(o.dir.join("r.json")).unwrap();
                serde_json::from_str::<Value>(&t)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }),
        r("-o - is stdout", "-")
            .out("# Sizing report")
            .never("Wrote"),
        row(
            "fit --json into /dev/full fails and says so",
            &["fit", "--json"],
        )
        .stdout(Stdout::Full)
        .fails(1, &["stdout", "no space"]),
        row("estimate into /dev/full", &["estimate"])
            .stdout(Stdout::Full)
            .fails(1, &["stdout"]),
        row("a closed pipe is not an error", &["catalog", "list"]).stdout(Stdout::Closed),
    ];
    v.push(
        row(
            "report --format json -o /dev/stdout",
            &[
                "report",
                "--model",
                "llama-3-8b",
                "--machine",
                "desktop-rtx4090-64gb",
                "--format",
                "json",
                "-o",
                "/dev/stdout",
            ],
        )
        .check(|o| json_of(o).map(|_| ())),
    );
    v
}

fn json_rows() -> Vec<Row> {
    vec![
        row(
            "detect --json storage in bytes, lowercase kinds",
            &["detect", "--json"],
        )
        .check(|o| {
            let v = json_of(o)?;
            let s = &v["storage"];
            if s.is_null() {
                return Ok(());
            }
            ensure(s["capacity"].is_u64(), || {
                format!("capacity {}", s["capacity"])
            })?;
            ensure(s["free"].is_u64() || s["free"].is_null(), || {
                format!("free {}", s["free"])
            })?;
            let k = s["kind"].as_str().unwrap_or("");
            ensure(!k.is_empty() && k == k.to_ascii_lowercase(), || {
                format!("kind {k}")
            })
        }),
        row(
            "report JSON scenario in CLI names",
            &[
                "report",
                "--model",
                "llama-3-8b",
                "--machine",
                "desktop-rtx4090-64gb",
                "--format",
                "json",
            ],
        )
        .check(|o| {
            let v = json_of(o)?;
            let s = &v["scenario"];
            for (k, want) in [
                ("mode", "inference"),
                ("weights", "bf16"),
                ("lora_targets", "all-linear"),
                ("offload", "none"),
                ("checkpointing", "none"),
                ("kv", "fp16"),
                ("runtime", "generic"),
                ("kv_allocation", "contiguous"),
            ] {
                ensure(s[k] == want, || format!("scenario.{k} = {}", s[k]))?;
            }
            ensure(
                s["serving"]["load"].is_null() && s["overhead_override"].is_null(),
                || "not null".into(),
            )
        }),
        row(
            "report JSON scenario with a load",
            &[
                "report",
                "--model",
                "llama-3-8b",
                "--users",
                "20",
                "--machine",
                "desktop-rtx4090-64gb",
                "--format",
                "json",
            ],
        )
        .check(|o| {
            let v = json_of(o)?;
            ensure(v["scenario"]["serving"]["load"]["users"] == 20, || {
                format!("{}", v["scenario"]["serving"]["load"])
            })
        }),
        row(
            "recommend: speeds null where nothing runs, prices hourly",
            &[
                "recommend",
                "--model",
                "llama-3-70b",
                "--mode",
                "full",
                "--json",
                "--no-detect",
            ],
        )
        .check(|o| {
            let v = json_of(o)?;
            for k in v["kinds"].as_array().unwrap() {
                let per = &k["price_per"];
                ensure(
                    per.is_null() || per == "hourly" || per == "purchase",
                    || format!("price_per {per}"),
                )?;
                for p in k["picks"].as_array().unwrap() {
                    ensure(
                        p["verdict"] != "none" || p["tokens_per_s"].is_null(),
                        || format!("{p}"),
                    )?;
                    ensure(p["tokens_per_s"] != 0.0, || {
                        format!("tokens_per_s 0 in {p}")
                    })?;
                }
            }
            Ok(())
        }),
        row(
            "fit on a CPU-only machine: GPU figures null",
            &["fit", "--machine", "desktop-cpu-only-32gb-ddr4", "--json"],
        )
        .check(|o| {
            let v = json_of(o)?;
            let r = &v[0];
            ensure(
                r["gpus"] == 0
                    && r["gpu_capacity_bytes"].is_null()
                    && r["gpu_required_bytes"].is_null()
                    && r["gpu_layers"].is_null(),
                || format!("{r}"),
            )
        }),
        row(
            "catalog: CPU-only machines count 0 GPUs",
            &["catalog", "list", "--json"],
        )
        .check(|o| {
            let v = json_of(o)?;
            let rows = v.as_array().unwrap();
            ensure(rows.iter().any(|m| m["gpu"].is_null()), || {
                "no CPU-only machine".into()
            })?;
            for m in rows.iter().filter(|m| m["gpu"].is_null()) {
                ensure(m["gpu_count"] == 0, || {
                    format!("{} has gpu_count {}", m["id"], m["gpu_count"])
                })?;
            }
            Ok(())
        }),
        row(
            "fit: every none row says why",
            &["fit", "--model", "llama-3-70b", "--mode", "full", "--json"],
        )
        .check(|o| {
            let v = json_of(o)?;
            let none: Vec<&Value> = v
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["verdict"] == "none")
                .collect();
            ensure(none.len() > 50, || format!("{} none rows", none.len()))?;
            for r in none {
                let first = r["notes"][0].as_str().unwrap_or("");
                ensure(!first.is_empty(), || {
                    format!("{} has no reason", r["machine"])
                })?;
                ensure(r["decode_tokens_per_s"].is_null(), || format!("{r}"))?;
            }
            Ok(())
        }),
        row(
            "fit --json on this machine",
            &[
                "fit",
                "--model",
                "qwen2.5-0.5b",
                "--machine",
                "local",
                "--json",
            ],
        )
        .check(|o| {
            let v = json_of(o)?;
            let r = &v[0];
            if r["gpus"] == 0 {
                ensure(r["gpu_capacity_bytes"].is_null(), || format!("{r}"))
            } else {
                ensure(r["gpu_capacity_bytes"].is_u64(), || format!("{r}"))
            }
        }),
    ]
}

/// Reads `repo` once into the row's cache (what a later run finds there).
fn prime(d: &Path, base: &str, repo: &str) {
    let o = Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(["estimate", "--hf", repo, "--json"])
        .env("HEADROOM_CACHE", d.join("cache"))
        .env("HF_ENDPOINT", base)
        .env("XDG_CONFIG_HOME", d.join("config"))
        .env("HF_HOME", d.join("hf"))
        .env_remove("HF_TOKEN")
        .env_remove("HF_HUB_OFFLINE")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The cache entry folder a primed read left (the one holding a manifest).
fn entry_dir(d: &Path) -> PathBuf {
    snapshot(&d.join("cache"))
        .keys()
        .find(|k| k.ends_with("manifest.json"))
        .map(|k| d.join("cache").join(k).parent().unwrap().to_path_buf())
        .expect("a primed cache entry")
}

fn hub_rows(base: &str) -> Vec<Row> {
    let ok = |name: &str, args: &[&str]| row(name, args).env("HF_ENDPOINT", "{srv}").cache();
    let b = base.to_string();
    let primed = move |then: fn(&Path)| {
        let b = b.clone();
        move |d: &Path| {
            prime(d, &b, "org/ok");
            then(d);
        }
    };
    vec![
        ok(
            "--hf says what it read",
            &["estimate", "--hf", "org/ok", "--json"],
        )
        .err("note: read from {srv}/org/ok@main")
        .err("bytes in")
        .err("requests"),
        ok(
            "--hf twice: the second is from the cache",
            &["estimate", "--hf", "org/ok", "--json"],
        )
        .setup(primed(|_| {}))
        .err("answered from the cache"),
        ok(
            "--hf --weights q4_k_m on a safetensors repo sizes the architecture at Q4_K_M",
            &[
                "estimate",
                "--hf",
                "org/ok",
                "--weights",
                "q4_k_m",
                "--json",
            ],
        )
        .err("note: weights at GGUF Q4_K_M")
        .check(|o| {
            let w = weights_of(o)?;
            // The same config.json given alone, at the same precision.
            let dir = tempfile::tempdir().unwrap();
            let c = dir.path().join("config.json");
            std::fs::write(&c, TINY_CONFIG).unwrap();
            let out = Command::new(env!("CARGO_BIN_EXE_headroom"))
                .args([
                    "estimate",
                    "--config",
                    c.to_str().unwrap(),
                    "--weights",
                    "q4_k_m",
                    "--json",
                ])
                .output()
                .unwrap();
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            ensure(Some(w) == v["memory"]["weights"].as_u64(), || {
                format!("{w} vs {}", v["memory"]["weights"])
            })
        }),
        ok(
            "gated without a token: said once, set HF_TOKEN",
            &["estimate", "--hf", "org/gated"],
        )
        .fails(
            4,
            &[
                "org/gated is gated or private",
                "set HF_TOKEN",
                "{srv}/org/gated",
            ],
        )
        .check(|o| {
            ensure(o.stderr.matches("is gated or private").count() == 1, || {
                "said more than once".into()
            })
        }),
        ok(
            "gated with a wrong token: refused, not 'set HF_TOKEN'",
            &["estimate", "--hf", "org/gated"],
        )
        .env("HF_TOKEN", "hf_wrong")
        .fails(4, &["org/gated", "refused the token"])
        .never("set HF_TOKEN")
        .never("hf_wrong"),
        ok(
            "gated with the token",
            &["estimate", "--hf", "org/gated", "--json"],
        )
        .env("HF_TOKEN", TOKEN)
        .never(TOKEN),
        ok(
            "HF_TOKEN_PATH=/dev/zero is read bounded and sends no token",
            &["estimate", "--hf", "org/gated"],
        )
        .env("HF_TOKEN_PATH", "/dev/zero")
        .fails(4, &["set HF_TOKEN"])
        .secs(10.0)
        .rss(100),
        ok(
            "no such repo, and no empty folders left",
            &["estimate", "--hf", "org/missing"],
        )
        .fails(4, &["org/missing"]),
        ok(
            "a missing file of a repo",
            &["estimate", "--hf", "org/ok", "--hf-file", "nope.gguf"],
        )
        .fails(4, &["org/ok", "nope.gguf"]),
        ok(
            "a GGUF name from the Hub with a bidi override is escaped",
            &["estimate", "--hf", "org/bidi"],
        )
        .out("\\u{202e}"),
        ok(
            "launch settings name the repo and --revision, not the resolve URL",
            &[
                "report",
                "--hf",
                "org/ok@v1.0",
                "--machine",
                "desktop-rtx4090-64gb",
                "--format",
                "json",
            ],
        )
        .check(|o| {
            let v = json_of(o)?;
            let s = v["launch"]["settings"].as_array().unwrap();
            let vllm = s
                .iter()
                .find(|x| x["runtime"] == "vllm")
                .ok_or("no vllm setting")?;
            let t = vllm["text"].as_str().unwrap();
            ensure(
                t.starts_with("vllm serve org/ok --revision v1.0") && !t.contains("http"),
                || t.to_string(),
            )
        }),
        row(
            "TLS spoken to a plain-HTTP endpoint",
            &["estimate", "--hf", "org/ok"],
        )
        .env("HF_ENDPOINT", "{srv_tls}")
        .fails(4, &["does not speak TLS"])
        .cache(),
        row(
            "an endpoint nobody listens on",
            &["estimate", "--hf", "org/ok"],
        )
        .env("HF_ENDPOINT", "{closed}")
        .fails(4, &["org/ok", "cannot"])
        .cache(),
        ok(
            "a slow server meets the overall deadline",
            &["estimate", "--hf", "org/slow"],
        )
        .env("HEADROOM_HUB_DEADLINE_S", "1")
        .fails(4, &["org/slow", "HEADROOM_HUB_DEADLINE_S"])
        .secs(6.0),
        ok(
            "a slow server meets the per-request timeout",
            &["estimate", "--hf", "org/slow"],
        )
        .env("HEADROOM_HUB_TIMEOUT_S", "0.5")
        .fails(4, &["org/slow", "did not answer within 0.5 s"])
        .secs(6.0),
        ok(
            "a dead process's staging folder is removed",
            &["estimate", "--hf", "org/ok", "--json"],
        )
        .setup(primed(|d| {
            // PID 4,000,000,000 is past any kernel's pid_max: no such process.
            let e = entry_dir(d);
            let stale = e.with_file_name(".default.partial-4000000000-0");
            std::fs::create_dir(&stale).unwrap();
            std::fs::write(stale.join("header-00000.bin"), b"half").unwrap();
        })),
        ok(
            "a damaged manifest is removed and read again",
            &["estimate", "--hf", "org/ok", "--json"],
        )
        .setup(primed(|d| {
            std::fs::write(entry_dir(d).join("manifest.json"), b"garbage").unwrap()
        }))
        .check(|o| {
            let m = std::fs::read_to_string(entry_dir(&o.dir).join("manifest.json")).unwrap();
            serde_json::from_str::<Value>(&m)
                .map(|_| ())
                .map_err(|e| format!("manifest still damaged: {e}"))
        }),
        ok(
            "a damaged header in the cache is removed and read again",
            &["estimate", "--hf", "org/ok", "--json"],
        )
        .setup(primed(|d| {
            std::fs::write(entry_dir(d).join("header-00000.bin"), b"\x01").unwrap()
        }))
        .check(|o| ensure(o.stdout.contains("\"params\""), || "no estimate".into())),
        ok(
            "offline with a damaged entry names its folder",
            &["estimate", "--hf", "org/ok"],
        )
        .env("HF_HUB_OFFLINE", "1")
        .setup(primed(|d| {
            std::fs::write(entry_dir(d).join("manifest.json"), b"garbage").unwrap()
        }))
        .fails(
            4,
            &["HF_HUB_OFFLINE", "was damaged", "{dir}/cache/endpoints"],
        ),
        row(
            "one endpoint's cache does not answer for another",
            &["estimate", "--hf", "org/ok"],
        )
        .env("HF_ENDPOINT", "{closed}")
        .setup(primed(|_| {}))
        .fails(4, &["org/ok"])
        .cache(),
    ]
}

fn heavy_rows(s: &Shared) -> Vec<Row> {
    let (fast, size) = if cfg!(debug_assertions) {
        (20.0, 1.0)
    } else {
        (1.0, 1.0)
    };
    let mib = |path: &str| {
        (std::fs::metadata(path).unwrap().len() as f64 * size / (1 << 20) as f64) as u64
    };
    let header = s.p("huge-header.safetensors");
    // The header's length: 4× it is the memory bound (plus the process's own ~40 MiB).
    let hlen = {
        let mut f = std::fs::File::open(&header).unwrap();
        let mut b = [0u8; 8];
        f.read_exact(&mut b).unwrap();
        u64::from_le_bytes(b) >> 20
    };
    let junk = s.p("junk-array.json");
    let keys = s.p("junk-keys.json");
    let string = s.p("junk-string.json");
    vec![
        row(
            "a 99.6 MB safetensors header parses fast and in 4× its size",
            &["estimate", "--safetensors", &header, "--json"],
        )
        .secs(fast)
        .rss(4 * hlen + 40)
        .heavy(),
        row(
            "a 62 MB config.json of one huge array is refused fast",
            &["estimate", "--config", &junk],
        )
        .fails(3, &["junk-array.json", "\"junk\" holds more than"])
        .secs(fast)
        .rss(4 * mib(&junk) + 40)
        .heavy(),
        row(
            "a 60 MB config.json of distinct keys is refused fast",
            &["estimate", "--config", &keys],
        )
        .fails(3, &["junk-keys.json", "more than"])
        .secs(fast)
        .rss(4 * mib(&keys) + 40)
        .heavy(),
        row(
            "a 62 MB config.json with one long string is read in bounds",
            &["estimate", "--config", &string, "--json"],
        )
        .secs(fast)
        .rss(4 * mib(&string) + 40)
        .heavy(),
    ]
}

#[test]
fn hostile_inputs() {
    let shared = shared();
    let server = hub();
    // A plain-HTTP server addressed as https://.
    let tls = server.base.replace("http://", "https://");
    let vars: HashMap<&str, String> = [
        ("srv", server.base.clone()),
        ("srv_tls", tls),
        ("closed", format!("http://127.0.0.1:{}", closed_port())),
    ]
    .into_iter()
    .collect();
    let mut rows = Vec::new();
    rows.extend(usage_rows());
    rows.extend(input_rows(&shared));
    rows.extend(weights_rows(&shared));
    rows.extend(output_rows());
    rows.extend(json_rows());
    rows.extend(hub_rows(&server.base));
    rows.extend(heavy_rows(&shared));
    assert!(rows.len() >= 150, "{} rows", rows.len());
    let before = snapshot(shared.dir.path());

    let (heavy, light): (Vec<&Row>, Vec<&Row>) = rows.iter().partition(|r| r.heavy);
    let failures = Mutex::new(Vec::new());
    let next = AtomicUsize::new(0);
    std::thread::scope(|sc| {
        for _ in 0..4 {
            sc.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(r) = light.get(i) else { break };
                    if let Err(e) = run_row(r, &vars) {
                        failures.lock().unwrap().push(format!("{}: {e}", r.name));
                    }
                }
            });
        }
    });
    for r in heavy {
        match run_row(r, &vars) {
            // The figures docs/hardening.md quotes (`cargo test --test hostile -- --nocapture`).
            Ok((took, peak)) => println!("{}: {took:.2} s, peak RSS {peak} MiB", r.name),
            Err(e) => failures.lock().unwrap().push(format!("{}: {e}", r.name)),
        }
    }
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n\n")
    );
    assert_eq!(
        snapshot(shared.dir.path()),
        before,
        "the shared fixtures changed"
    );
}
