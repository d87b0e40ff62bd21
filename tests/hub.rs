//! Models by name, against an HTTP server on 127.0.0.1 inside the test (never the internet): the
//! Hub's listing and resolve URLs, Range and ETag, a gated repo (401 without the token), a server
//! that ignores Range, a truncated body and a slow answer. Every remote import is compared with
//! the local import of the same files, and the bytes that crossed the wire are counted.

use headroom::core::scenario::Scenario;
use headroom::io::hub::{
    self, GGUF_FIRST_RANGE, GGUF_MAX_RANGE, HubErrorKind, Options, Request, Token,
};
use headroom::io::import::{ImportedModel, import_path};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A tensor: name, dtype, shape, bytes per element.
type TensorDef = (String, &'static str, Vec<u64>, u64);
/// A repo served: name, behaviour, files.
type Repo<'a> = (&'a str, Behaviour, Vec<(String, Vec<u8>)>);
type Repos = HashMap<String, (Behaviour, HashMap<String, Vec<u8>>)>;

const TOKEN: &str = "hf_TESTsecret0123456789";
const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

// ---- Fixtures ---------------------------------------------------------------------------------

/// A safetensors file: tensors (name, dtype, shape, bytes per element) packed in order.
fn safetensors(tensors: &[(&str, &str, Vec<u64>, u64)]) -> Vec<u8> {
    let mut map = serde_json::Map::new();
    let mut off = 0u64;
    for (name, dtype, shape, width) in tensors {
        let n: u64 = shape.iter().product::<u64>() * width;
        map.insert(
            name.to_string(),
            serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [off, off + n]}),
        );
        off += n;
    }
    let mut header = serde_json::to_vec(&serde_json::Value::Object(map)).unwrap();
    while !header.len().is_multiple_of(8) {
        header.push(b' ');
    }
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend(header);
    out.resize(out.len() + off as usize, 0);
    out
}

const CONFIG: &str = r#"{
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

/// A 5-shard Llama-shaped checkpoint: embeddings, one layer per shard 2–5, head in shard 5.
fn five_shards() -> Vec<(String, Vec<u8>)> {
    let name = |i: usize| format!("model-{i:05}-of-00005.safetensors");
    let layer = |l: usize| -> Vec<TensorDef> {
        let p = format!("model.layers.{l}");
        vec![
            (format!("{p}.input_layernorm.weight"), "BF16", vec![256], 2),
            (
                format!("{p}.self_attn.q_proj.weight"),
                "BF16",
                vec![256, 256],
                2,
            ),
            (
                format!("{p}.self_attn.k_proj.weight"),
                "BF16",
                vec![128, 256],
                2,
            ),
            (
                format!("{p}.self_attn.v_proj.weight"),
                "BF16",
                vec![128, 256],
                2,
            ),
            (
                format!("{p}.self_attn.o_proj.weight"),
                "BF16",
                vec![256, 256],
                2,
            ),
            (
                format!("{p}.post_attention_layernorm.weight"),
                "BF16",
                vec![256],
                2,
            ),
            (
                format!("{p}.mlp.gate_proj.weight"),
                "BF16",
                vec![512, 256],
                2,
            ),
            (format!("{p}.mlp.up_proj.weight"), "BF16", vec![512, 256], 2),
            (
                format!("{p}.mlp.down_proj.weight"),
                "BF16",
                vec![256, 512],
                2,
            ),
        ]
    };
    let mut shards: Vec<Vec<TensorDef>> = vec![vec![(
        "model.embed_tokens.weight".into(),
        "BF16",
        vec![1024, 256],
        2,
    )]];
    for l in 0..4 {
        shards.push(layer(l));
    }
    shards[4].push(("model.norm.weight".into(), "BF16", vec![256], 2));
    shards[4].push(("lm_head.weight".into(), "BF16", vec![1024, 256], 2));
    let mut files = Vec::new();
    let mut weight_map = serde_json::Map::new();
    let mut total = 0u64;
    for (i, ts) in shards.iter().enumerate() {
        let refs: Vec<(&str, &str, Vec<u64>, u64)> = ts
            .iter()
            .map(|(n, d, s, w)| (n.as_str(), *d, s.clone(), *w))
            .collect();
        for (n, _, s, w) in &refs {
            weight_map.insert(n.to_string(), serde_json::json!(name(i + 1)));
            total += s.iter().product::<u64>() * w;
        }
        files.push((name(i + 1), safetensors(&refs)));
    }
    let index = serde_json::json!({"metadata": {"total_size": total}, "weight_map": weight_map});
    files.push((
        "model.safetensors.index.json".into(),
        serde_json::to_vec_pretty(&index).unwrap(),
    ));
    files.push(("config.json".into(), CONFIG.as_bytes().to_vec()));
    files
}

fn gstr(s: &str) -> Vec<u8> {
    let mut v = (s.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

/// A GGUF Llama with a 4096-token vocabulary of long strings (a header of ~450 KB, so the reader
/// needs two ranges) and 8.5 MB of F32 tensor data. Returns the file and where its tensor infos
/// end (the last byte the reader needs).
fn big_gguf(ftype: u32) -> (Vec<u8>, u64) {
    let mut kvs = Vec::new();
    let mut n_kv = 0u64;
    let mut kv = |key: &str, ty: u32, value: Vec<u8>| {
        kvs.extend(gstr(key));
        kvs.extend(ty.to_le_bytes());
        kvs.extend(value);
        n_kv += 1;
    };
    kv("general.architecture", 8, gstr("llama"));
    kv("general.file_type", 4, ftype.to_le_bytes().to_vec());
    kv("llama.block_count", 4, 2u32.to_le_bytes().to_vec());
    kv("llama.embedding_length", 4, 256u32.to_le_bytes().to_vec());
    kv("llama.attention.head_count", 4, 2u32.to_le_bytes().to_vec());
    kv("llama.context_length", 4, 4096u32.to_le_bytes().to_vec());
    let mut tokens = 8u32.to_le_bytes().to_vec();
    tokens.extend(4096u64.to_le_bytes());
    for i in 0..4096 {
        tokens.extend(gstr(&format!("token-{i:05}-{}", "x".repeat(90))));
    }
    kv("tokenizer.ggml.tokens", 9, tokens);
    let infos: [(&str, [u64; 2]); 4] = [
        ("token_embd.weight", [256, 4096]),
        ("blk.0.attn_q.weight", [256, 256]),
        ("blk.1.attn_q.weight", [256, 256]),
        ("output.weight", [256, 4096]),
    ];
    let mut out = b"GGUF".to_vec();
    out.extend(3u32.to_le_bytes());
    out.extend((infos.len() as u64).to_le_bytes());
    out.extend(n_kv.to_le_bytes());
    out.extend(&kvs);
    let mut off = 0u64;
    for (name, dims) in infos {
        out.extend(gstr(name));
        out.extend(2u32.to_le_bytes());
        for d in dims {
            out.extend(d.to_le_bytes());
        }
        out.extend(0u32.to_le_bytes()); // F32
        out.extend(off.to_le_bytes());
        off += dims[0] * dims[1] * 4;
    }
    let header_end = out.len() as u64;
    out.resize(out.len().div_ceil(32) * 32, 0);
    out.resize(out.len() + off as usize, 0x5a);
    (out, header_end)
}

// ---- The server ---------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Behaviour {
    Normal,
    /// Needs `Authorization: Bearer TOKEN`, else 401 with `X-Error-Code: GatedRepo`.
    Gated,
    /// Answers every request with 200 and the whole file.
    IgnoreRange,
    /// Announces the full length, sends half, closes.
    Truncate,
    /// Waits before answering.
    Slow,
}

#[derive(Clone, Debug)]
struct Seen {
    path: String,
    range: Option<String>,
    auth: Option<String>,
}

struct Server {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    body_bytes: Arc<AtomicU64>,
    /// While set, every connection is closed unanswered (the network is down).
    down: Arc<std::sync::atomic::AtomicBool>,
}

impl Server {
    /// Serves repos: name → (behaviour, files).
    fn start(repos: Vec<Repo>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let body_bytes = Arc::new(AtomicU64::new(0));
        let repos: Arc<Repos> = Arc::new(
            repos
                .into_iter()
                .map(|(n, b, f)| (n.to_string(), (b, f.into_iter().collect())))
                .collect(),
        );
        let (s2, b2) = (seen.clone(), body_bytes.clone());
        let down = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let d2 = down.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if d2.load(Ordering::SeqCst) {
                    drop(stream);
                    continue;
                }
                let (repos, seen, bytes) = (repos.clone(), s2.clone(), b2.clone());
                std::thread::spawn(move || {
                    let _ = handle(stream, &repos, &seen, &bytes);
                });
            }
        });
        Server {
            base,
            seen,
            body_bytes,
            down,
        }
    }
    fn requests(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
    fn bytes(&self) -> u64 {
        self.body_bytes.load(Ordering::SeqCst)
    }
}

fn etag(body: &[u8]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in body {
        h = (h ^ *b as u64).wrapping_mul(0x100000001b3);
    }
    format!("\"{h:016x}\"")
}

fn handle(
    mut stream: TcpStream,
    repos: &Repos,
    seen: &Mutex<Vec<Seen>>,
    bytes: &AtomicU64,
) -> std::io::Result<()> {
    let mut rd = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    rd.read_line(&mut line)?;
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
    let range = headers.get("range").cloned();
    let auth = headers.get("authorization").cloned();
    seen.lock().unwrap().push(Seen {
        path: path.clone(),
        range: range.clone(),
        auth: auth.clone(),
    });
    let mut send = |status: &str, extra: &str, body: &[u8], cut: bool| -> std::io::Result<()> {
        write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
            body.len()
        )?;
        let n = if cut { body.len() / 2 } else { body.len() };
        stream.write_all(&body[..n])?;
        bytes.fetch_add(n as u64, Ordering::SeqCst);
        stream.flush()
    };
    // /api/models/ORG/NAME/revision/REV?blobs=true  or  /ORG/NAME/resolve/REV/FILE
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
        return send("404 Not Found", "", b"", false);
    };
    let Some((behaviour, files)) = repos.get(&repo) else {
        return send(
            "401 Unauthorized",
            "X-Error-Code: RepoNotFound\r\n",
            b"",
            false,
        );
    };
    if *behaviour == Behaviour::Gated && auth.as_deref() != Some(&format!("Bearer {TOKEN}")) {
        return send(
            "401 Unauthorized",
            "X-Error-Code: GatedRepo\r\n",
            b"",
            false,
        );
    }
    if *behaviour == Behaviour::Slow {
        std::thread::sleep(Duration::from_secs(3));
    }
    let Some(file) = file else {
        let siblings: Vec<serde_json::Value> = files
            .iter()
            .map(|(n, b)| serde_json::json!({"rfilename": n, "size": b.len()}))
            .collect();
        let body =
            serde_json::to_vec(&serde_json::json!({"id": repo, "sha": SHA, "siblings": siblings}))
                .unwrap();
        return send("200 OK", "Content-Type: application/json\r\n", &body, false);
    };
    let Some(body) = files.get(&file) else {
        return send(
            "404 Not Found",
            "X-Error-Code: EntryNotFound\r\n",
            b"",
            false,
        );
    };
    let tag = format!("ETag: {}\r\n", etag(body));
    let cut = *behaviour == Behaviour::Truncate;
    match range.as_deref().and_then(|r| r.strip_prefix("bytes=")) {
        Some(r) if *behaviour != Behaviour::IgnoreRange => {
            let (a, b) = r.split_once('-').unwrap();
            let a: usize = a.parse().unwrap();
            let b: usize = b.parse::<usize>().unwrap().min(body.len() - 1);
            if a >= body.len() {
                return send("416 Range Not Satisfiable", "", b"", false);
            }
            let cr = format!("{tag}Content-Range: bytes {a}-{b}/{}\r\n", body.len());
            send("206 Partial Content", &cr, &body[a..=b], cut)
        }
        _ => send("200 OK", &tag, body, cut),
    }
}

// ---- Helpers ------------------------------------------------------------------------------------

fn opts(server: &Server, cache: &Path) -> Options {
    Options {
        endpoint: server.base.clone(),
        token: None,
        cache_root: Some(cache.to_path_buf()),
        timeout: Duration::from_secs(10),
        deadline: None,
        cancel: None,
        offline: false,
    }
}

fn hub_req(repo: &str, file: Option<&str>, quant: Option<&str>) -> Request {
    Request::Hub {
        repo: repo.into(),
        revision: "main".into(),
        file: file.map(str::to_string),
        quant: quant.map(str::to_string),
    }
}

fn open(req: &Request, o: &Options) -> Result<hub::Opened, hub::HubError> {
    hub::open(req, o, &mut |_, _, _| {})
}

/// The same model from the same files on disk.
fn local(files: &[(String, Vec<u8>)], pick: Option<&str>) -> ImportedModel {
    let dir = tempfile::tempdir().unwrap();
    for (n, b) in files {
        std::fs::write(dir.path().join(n), b).unwrap();
    }
    let p = match pick {
        Some(f) => dir.path().join(f),
        None => dir.path().to_path_buf(),
    };
    import_path(&p).unwrap()
}

/// Remote and local give the same architecture, parameters and bytes (names and provenance aside).
fn assert_same(remote: &ImportedModel, local: &ImportedModel) {
    let (mut r, mut l) = (remote.spec.clone(), local.spec.clone());
    l.name = r.name.clone();
    if let (Some(a), Some(b)) = (&mut r.file_weights, &mut l.file_weights) {
        b.path = a.path.clone();
    }
    assert_eq!(r, l);
    assert_eq!(remote.bytes_by_type, local.bytes_by_type);
    assert_eq!(remote.weights, local.weights);
    assert_eq!(r.param_count(), l.param_count());
}

// ---- Tests --------------------------------------------------------------------------------------

#[test]
fn five_shard_safetensors_reads_headers_only_then_the_cache() {
    let files = five_shards();
    let server = Server::start(vec![("org/five", Behaviour::Normal, files.clone())]);
    let cache = tempfile::tempdir().unwrap();
    let o = opts(&server, cache.path());
    let a = open(&hub_req("org/five", None, None), &o).unwrap();
    assert!(!a.from_cache);
    assert_same(&a.model, &local(&files, None));
    let fw = a.model.spec.file_weights.as_ref().unwrap();
    assert_eq!(fw.path, format!("{}/org/five@main", server.base));

    // Bytes: the listing, config.json, the index, then 8 + header length per shard.
    let size = |n: &str| files.iter().find(|(f, _)| f == n).unwrap().1.len() as u64;
    let headers: u64 = files
        .iter()
        .filter(|(n, _)| n.ends_with(".safetensors"))
        .map(|(_, b)| 8 + u64::from_le_bytes(b[..8].try_into().unwrap()))
        .sum();
    let weights: u64 = files
        .iter()
        .filter(|(n, _)| n.ends_with(".safetensors"))
        .map(|(_, b)| b.len() as u64)
        .sum();
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1 + 2 + 2 * 5, "{seen:#?}");
    assert_eq!(a.requests, 13);
    let listing =
        server.bytes() - size("config.json") - size("model.safetensors.index.json") - headers;
    assert_eq!(a.bytes_transferred, server.bytes());
    assert_eq!(
        a.bytes_transferred,
        listing + size("config.json") + size("model.safetensors.index.json") + headers
    );
    // Far below the weights.
    assert!(
        a.bytes_transferred * 10 < weights,
        "{} vs {weights}",
        a.bytes_transferred
    );
    // For these fixtures: 5 × 8 length bytes + 4040 header bytes; with the 494-byte listing, the
    // 318-byte config.json and the 3195-byte index, 8087 bytes of a 5.78 MB checkpoint.
    assert_eq!(
        (headers, listing, a.bytes_transferred, weights),
        (4080, 494, 8087, 5_775_856)
    );
    // Each shard: bytes=0-7 then bytes=8-(8+n-1); the resolve URL pinned to the listing's commit.
    let shard1: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.path.ends_with("model-00001-of-00005.safetensors"))
        .collect();
    let n1 = u64::from_le_bytes(files[0].1[..8].try_into().unwrap());
    assert_eq!(shard1.len(), 2);
    assert_eq!(shard1[0].range.as_deref(), Some("bytes=0-7"));
    assert_eq!(
        shard1[1].range.clone(),
        Some(format!("bytes=8-{}", 8 + n1 - 1))
    );
    assert!(
        shard1[0]
            .path
            .starts_with(&format!("/org/five/resolve/{SHA}/"))
    );
    assert!(seen.iter().all(|s| s.auth.is_none()), "no token, no header");

    // Second run: from the cache, no request at all, the same model.
    let before = server.requests();
    let b = open(&hub_req("org/five", None, None), &o).unwrap();
    assert!(b.from_cache);
    assert_eq!((b.requests, b.bytes_transferred), (0, 0));
    assert_eq!(server.requests(), before);
    assert_eq!(b.model.spec, a.model.spec);
}

#[test]
fn gguf_reads_growing_ranges_up_to_the_tensor_infos() {
    let (q4, end4) = big_gguf(15);
    let (q8, _) = big_gguf(7);
    let files = vec![
        ("tiny-Q4_K_M.gguf".to_string(), q4.clone()),
        ("tiny-Q8_0.gguf".to_string(), q8),
        ("README.md".to_string(), b"# tiny".to_vec()),
    ];
    let server = Server::start(vec![("org/tiny-GGUF", Behaviour::Normal, files.clone())]);
    let cache = tempfile::tempdir().unwrap();
    let o = opts(&server, cache.path());

    // Two quants and nothing to pick by: one line naming them.
    let e = open(&hub_req("org/tiny-GGUF", None, None), &o).unwrap_err();
    assert_eq!(e.kind, HubErrorKind::Ambiguous);
    assert!(
        e.message.contains("Q4_K_M") && e.message.contains("Q8_0"),
        "{e}"
    );

    // The quant picker (--weights q4_k_m) finds the file.
    let before = (server.requests(), server.bytes());
    let a = open(&hub_req("org/tiny-GGUF", None, Some("q4_k_m")), &o).unwrap();
    assert_same(&a.model, &local(&files, Some("tiny-Q4_K_M.gguf")));
    // Ranges of 256 KiB, 512 KiB, … until the tensor infos end (byte `end4`).
    let mut chunks = Vec::new();
    let (mut got, mut next) = (0u64, GGUF_FIRST_RANGE);
    while got < end4 {
        let n = next.min(q4.len() as u64 - got);
        chunks.push(format!("bytes={got}-{}", got + n - 1));
        got += n;
        next = (next * 2).min(GGUF_MAX_RANGE);
    }
    assert_eq!(chunks, vec!["bytes=0-262143", "bytes=262144-786431"]);
    let seen = server.seen.lock().unwrap().clone();
    let ranges: Vec<String> = seen[before.0..]
        .iter()
        .filter(|s| s.path.ends_with(".gguf"))
        .map(|s| s.range.clone().unwrap())
        .collect();
    assert_eq!(ranges, chunks);
    assert_eq!(a.requests, 1 + 2);
    let listing = server.bytes() - before.1 - got;
    assert_eq!(a.bytes_transferred, listing + 786_432);
    // For this fixture: the tensor infos end at byte 451084 of 9364000; 786432 header bytes
    // (two ranges) and the 213-byte listing.
    assert_eq!(
        (end4, q4.len(), listing, a.bytes_transferred),
        (451_084, 9_364_000, 213, 786_645)
    );
    assert!(got * 10 < q4.len() as u64, "{got} of {}", q4.len());

    // --hf-file picks the other one; the second open of either is from the cache.
    let b = open(&hub_req("org/tiny-GGUF", Some("tiny-Q8_0.gguf"), None), &o).unwrap();
    assert_eq!(
        b.model.weights,
        Some(headroom::core::precision::WeightPrecision::Q8_0)
    );
    let n = server.requests();
    let c = open(&hub_req("org/tiny-GGUF", None, Some("q4_k_m")), &o).unwrap();
    assert!(c.from_cache && c.requests == 0 && server.requests() == n);
    assert_eq!(c.model.spec, a.model.spec);

    // A quant the repo does not have.
    let e = open(&hub_req("org/tiny-GGUF", None, Some("q2_k")), &o).unwrap_err();
    assert_eq!(e.kind, HubErrorKind::NotFound, "{e}");
}

#[test]
fn url_reads_a_gguf_and_a_safetensors_file() {
    let (q4, _) = big_gguf(15);
    let five = five_shards();
    let st = five[0].clone();
    let files = vec![("m-Q4_K_M.gguf".to_string(), q4), st.clone()];
    let server = Server::start(vec![("files/x", Behaviour::Normal, files.clone())]);
    let cache = tempfile::tempdir().unwrap();
    let o = opts(&server, cache.path());
    let url = format!("{}/files/x/resolve/main/m-Q4_K_M.gguf", server.base);
    let a = open(&Request::Url(url.clone()), &o).unwrap();
    assert_same(&a.model, &local(&files[..1], Some("m-Q4_K_M.gguf")));
    assert_eq!(a.requests, 2);
    let b = open(&Request::Url(url), &o).unwrap();
    assert!(b.from_cache);

    let url = format!("{}/files/x/resolve/main/{}", server.base, st.0);
    let s = open(&Request::Url(url), &o).unwrap();
    let n = u64::from_le_bytes(st.1[..8].try_into().unwrap());
    assert_eq!(s.bytes_transferred, 8 + n);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("single.safetensors");
    std::fs::write(&p, &st.1).unwrap();
    assert_same(&s.model, &import_path(&p).unwrap());

    let e = open(&Request::Url(format!("{}/x/model.bin", server.base)), &o).unwrap_err();
    assert_eq!(e.kind, HubErrorKind::BadRequest);
}

#[test]
fn gated_repo_needs_the_token_which_never_leaks() {
    let files = five_shards();
    let server = Server::start(vec![("org/gated", Behaviour::Gated, files.clone())]);
    let cache = tempfile::tempdir().unwrap();
    let mut o = opts(&server, cache.path());
    let e = open(&hub_req("org/gated", None, None), &o).unwrap_err();
    assert_eq!(e.kind, HubErrorKind::Gated);
    assert!(
        e.message.contains(&format!(
            "accept the licence at {}/org/gated and set HF_TOKEN",
            server.base
        )),
        "{e}"
    );
    assert!(!e.message.contains('\n'));
    assert!(
        walk(cache.path()).is_empty(),
        "nothing cached from a failed read"
    );

    // A wrong token: refused, and the message does not show it.
    o.token = Token::new("hf_wrong_secret_value");
    let e = open(&hub_req("org/gated", None, None), &o).unwrap_err();
    assert_eq!(e.kind, HubErrorKind::Gated);
    assert!(!e.message.contains("hf_wrong_secret_value"), "{e}");
    assert!(!format!("{o:?}").contains("hf_wrong_secret_value"));

    o.token = Token::new(TOKEN);
    let a = open(&hub_req("org/gated", None, None), &o).unwrap();
    assert_same(&a.model, &local(&files, None));
    let seen = server.seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .any(|s| s.auth.as_deref() == Some(&format!("Bearer {TOKEN}")))
    );
    // The token is nowhere in the model, its notes, a saved scenario or the cache.
    let s = Scenario {
        model: a.model.spec.clone(),
        ..Scenario::default()
    };
    let all = format!(
        "{:?}\n{}\n{:?}",
        a.model,
        headroom::io::export::save_scenario(&s),
        o.token
    );
    assert!(!all.contains(TOKEN));
    for f in walk(cache.path()) {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
            "{}",
            f.display()
        );
    }

    // A token is only sent to the endpoint's host: not to another server named by --url.
    let other = Server::start(vec![("o/x", Behaviour::Normal, files[..1].to_vec())]);
    let url = format!("{}/o/x/resolve/main/{}", other.base, files[0].0);
    let mut o2 = opts(&server, tempfile::tempdir().unwrap().path());
    o2.token = Token::new(TOKEN);
    o2.cache_root = None;
    open(&Request::Url(url), &o2).unwrap();
    assert!(other.seen.lock().unwrap().iter().all(|s| s.auth.is_none()));
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn a_server_that_ignores_range_is_refused() {
    let (q4, _) = big_gguf(15);
    let files = five_shards();
    let server = Server::start(vec![
        ("org/norange", Behaviour::IgnoreRange, files.clone()),
        (
            "org/norange-GGUF",
            Behaviour::IgnoreRange,
            vec![("m-Q4_K_M.gguf".into(), q4.clone())],
        ),
    ]);
    let cache = tempfile::tempdir().unwrap();
    let o = opts(&server, cache.path());
    for repo in ["org/norange", "org/norange-GGUF"] {
        let before = server.bytes();
        let e = open(&hub_req(repo, None, None), &o).unwrap_err();
        assert_eq!(e.kind, HubErrorKind::RangeIgnored, "{e}");
        assert!(e.message.contains("ignored the Range request"), "{e}");
        assert!(e.message.contains("will not download a weight file"), "{e}");
        // The client stopped reading: far less than the whole weight file came through.
        let _ = before;
    }
    assert!(
        walk(cache.path()).is_empty(),
        "nothing cached from a failed read"
    );
}

#[test]
fn truncated_bodies_and_hostile_headers_are_one_line_errors() {
    let (q4, _) = big_gguf(15);
    let five = five_shards();
    // A safetensors header length far past the file: the local reader's bound, before any
    // second request.
    let mut hostile = five[0].1.clone();
    hostile[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let server = Server::start(vec![
        (
            "org/cut",
            Behaviour::Truncate,
            vec![("m-Q4_K_M.gguf".into(), q4)],
        ),
        (
            "org/hostile",
            Behaviour::Normal,
            vec![("model.safetensors".into(), hostile.clone())],
        ),
    ]);
    let cache = tempfile::tempdir().unwrap();
    let o = opts(&server, cache.path());
    let e = open(&hub_req("org/cut", None, None), &o).unwrap_err();
    assert_eq!(e.kind, HubErrorKind::Truncated, "{e}");
    assert!(e.message.contains("truncated"), "{e}");

    let before = server.requests();
    let e = open(&hub_req("org/hostile", None, None), &o).unwrap_err();
    assert_eq!(e.kind, HubErrorKind::Invalid, "{e}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("model.safetensors"), &hostile).unwrap();
    let local = import_path(&dir.path().join("model.safetensors")).unwrap_err();
    assert!(e.message.ends_with(&local.to_string()), "{e} vs {local}");
    assert_eq!(
        server.requests() - before,
        2,
        "the listing and the 8 bytes only"
    );
    assert!(walk(cache.path()).is_empty());
}

#[test]
fn a_slow_server_hits_the_timeout() {
    let server = Server::start(vec![("org/slow", Behaviour::Slow, five_shards())]);
    let cache = tempfile::tempdir().unwrap();
    let mut o = opts(&server, cache.path());
    o.timeout = Duration::from_millis(500);
    let t = std::time::Instant::now();
    let e = open(&hub_req("org/slow", None, None), &o).unwrap_err();
    assert_eq!(e.kind, HubErrorKind::Timeout, "{e}");
    assert!(e.message.contains("timeout"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(3));
}

#[test]
fn not_found_no_network_and_bad_ids() {
    let server = Server::start(vec![("org/five", Behaviour::Normal, five_shards())]);
    let cache = tempfile::tempdir().unwrap();
    let o = opts(&server, cache.path());
    let e = open(&hub_req("org/missing", None, None), &o).unwrap_err();
    assert_eq!(e.kind, HubErrorKind::NotFound, "{e}");
    let e = open(&hub_req("org/five", Some("nope.gguf"), None), &o).unwrap_err();
    assert_eq!(e.kind, HubErrorKind::NotFound, "{e}");
    // Nothing listens on this port.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut off = o.clone();
    off.endpoint = format!("http://127.0.0.1:{port}");
    let e = open(&hub_req("org/five", None, None), &off).unwrap_err();
    assert_eq!(e.kind, HubErrorKind::Network, "{e}");
    for bad in ["", "a/b/c", "../x", "org/na me", "org/x@", "org/x@a/../b"] {
        assert!(hub::parse_repo(bad).is_err(), "{bad}");
    }
    assert_eq!(
        hub::parse_repo("meta-llama/Llama-3.1-8B@refs/pr/1").unwrap(),
        ("meta-llama/Llama-3.1-8B".into(), "refs/pr/1".into())
    );
    assert_eq!(
        hub::resolve_url("https://huggingface.co", "a/b", "refs/pr/1", "sub/x.gguf"),
        "https://huggingface.co/a/b/resolve/refs%2Fpr%2F1/sub/x.gguf"
    );
    assert_eq!(
        hub::quant_in_name("Q4_K_M/Model-Q4_K_M-00001-of-00002.gguf").as_deref(),
        Some("Q4_K_M")
    );
    assert_eq!(hub::quant_in_name("model-f16.gguf").as_deref(), Some("F16"));
}

/// A whole one-layer Llama-shaped model in one file (what a `--url` can be sized from alone).
fn one_file() -> Vec<u8> {
    let (h, kv, f, v) = (256u64, 128u64, 512u64, 1024u64);
    let mut t: Vec<(String, &str, Vec<u64>, u64)> =
        vec![("model.embed_tokens.weight".into(), "BF16", vec![v, h], 2)];
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
        t.push((format!("model.layers.0.{n}.weight"), "BF16", shape, 2));
    }
    t.push(("model.norm.weight".into(), "BF16", vec![h], 2));
    t.push(("lm_head.weight".into(), "BF16", vec![v, h], 2));
    let refs: Vec<(&str, &str, Vec<u64>, u64)> = t
        .iter()
        .map(|(n, d, s, w)| (n.as_str(), *d, s.clone(), *w))
        .collect();
    safetensors(&refs)
}

#[test]
fn cli_estimate_with_hf_and_url() {
    let files = five_shards();
    let server = Server::start(vec![
        ("org/five", Behaviour::Normal, files.clone()),
        (
            "org/one",
            Behaviour::Normal,
            vec![("model.safetensors".to_string(), one_file())],
        ),
    ]);
    let cache = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_headroom"))
            .args(args)
            .env("HF_ENDPOINT", &server.base)
            .env("HEADROOM_CACHE", cache.path())
            .env("HF_TOKEN", TOKEN)
            .env_remove("HTTPS_PROXY")
            .env_remove("HTTP_PROXY")
            .env_remove("ALL_PROXY")
            .output()
            .unwrap()
    };
    let out = run(&["estimate", "--hf", "org/five", "--json"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stdout.contains(TOKEN) && !stderr.contains(TOKEN));
    let local = local(&files, None);
    let params = local.spec.param_count().total;
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(stdout.contains(&params.to_string()), "{v}");
    let n = server.requests();
    let again = run(&["estimate", "--hf", "org/five", "--json"]);
    assert_eq!(String::from_utf8_lossy(&again.stdout), stdout);
    assert_eq!(
        server.requests(),
        n,
        "the second run is served from the cache"
    );

    // --url: a whole model in one file by its URL (the shape inferred from its tensors).
    let url = format!("{}/org/one/resolve/main/model.safetensors", server.base);
    let by_url = run(&["estimate", "--url", &url, "--json"]);
    assert!(
        by_url.status.success(),
        "{}",
        String::from_utf8_lossy(&by_url.stderr)
    );
    // One shard of five alone holds no layers: refused naming the URL, not sized as a model.
    let shard = format!("{}/org/five/resolve/main/{}", server.base, files[0].0);
    let part = run(&["estimate", "--url", &shard, "--json"]);
    assert_eq!(part.status.code(), Some(3));
    let err = String::from_utf8_lossy(&part.stderr);
    assert!(
        err.contains(&shard) && err.contains("model.layers 0"),
        "{err}"
    );
    // --hf-file needs --hf; --hf and --model are one source.
    assert!(!run(&["estimate", "--hf-file", "x.gguf"]).status.success());
    assert!(
        !run(&["estimate", "--hf", "org/five", "--model", "llama-3-8b"])
            .status
            .success()
    );

    let bad = run(&["estimate", "--hf", "org/missing"]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!err.contains(TOKEN));
}

// ---- The GUI dialog -------------------------------------------------------------------------------

#[cfg(feature = "gui")]
#[test]
fn gui_dialog_lists_quants_and_reads_one() {
    use egui_kittest::Harness;
    use egui_kittest::kittest::Queryable as _;
    use headroom::gui::hub_dialog::HubDialog;

    let (q4, _) = big_gguf(15);
    let (q8, _) = big_gguf(7);
    let files = vec![
        ("tiny-Q4_K_M.gguf".to_string(), q4),
        ("tiny-Q8_0.gguf".to_string(), q8),
    ];
    let server = Server::start(vec![("org/tiny-GGUF", Behaviour::Normal, files.clone())]);
    let cache = tempfile::tempdir().unwrap();
    let mut dialog = HubDialog::default();
    dialog.open = true;
    dialog.options = Some(opts(&server, cache.path()));
    struct S {
        d: HubDialog,
        got: Option<(String, ImportedModel)>,
    }
    let mut h = Harness::builder()
        .with_size(egui::vec2(700.0, 500.0))
        .build_ui_state(
            |ui, s: &mut S| {
                let ctx = ui.ctx().clone();
                if let Some(m) = s.d.show(&ctx) {
                    s.got = Some(m);
                }
            },
            S {
                d: dialog,
                got: None,
            },
        );
    h.run();
    h.get_by_label("Repository").click();
    h.run();
    h.get_by_label("Repository").type_text("org/tiny-GGUF");
    h.run();
    h.get_by_label("List files").click();
    let wait = |h: &mut Harness<'_, S>| {
        for _ in 0..200 {
            h.step();
            if !h.state().d.busy() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        h.run();
    };
    wait(&mut h);
    let q8_label = format!(
        "GGUF Q8_0: tiny-Q8_0.gguf, {}",
        headroom::core::units::Bytes(files[1].1.len() as u64).display_gib()
    );
    h.get_by_label_contains("GGUF Q4_K_M: tiny-Q4_K_M.gguf");
    h.get_by_label(&q8_label).click();
    h.run();
    h.get_by_label("Read headers").click();
    wait(&mut h);
    let (_, m) = h.state().got.clone().expect("the model came back");
    assert_same(&m, &local(&files, Some("tiny-Q8_0.gguf")));
    assert!(
        !h.state().d.open,
        "the window closes when the model is read"
    );

    // Cancel while a slow server keeps the worker waiting: the window answers at once.
    let slow = Server::start(vec![("org/slow", Behaviour::Slow, files)]);
    let cache = tempfile::tempdir().unwrap();
    let mut dialog = HubDialog::default();
    dialog.open = true;
    dialog.repo = "org/slow".into();
    dialog.options = Some(opts(&slow, cache.path()));
    let mut h = Harness::builder()
        .with_size(egui::vec2(700.0, 500.0))
        .build_ui_state(
            |ui, s: &mut S| {
                let ctx = ui.ctx().clone();
                if let Some(m) = s.d.show(&ctx) {
                    s.got = Some(m);
                }
            },
            S {
                d: dialog,
                got: None,
            },
        );
    h.run();
    h.get_by_label("List files").click();
    h.step();
    h.step();
    assert!(h.state().d.busy());
    h.get_by_label("Cancel").click();
    h.step();
    h.step();
    assert!(!h.state().d.busy());
    assert!(h.query_by_label("Cancel").is_none());
    assert!(h.state().got.is_none());
}

#[test]
fn the_token_file_of_huggingface_cli_login_is_read() {
    let files = five_shards();
    let server = Server::start(vec![("org/gated", Behaviour::Gated, files)]);
    let cache = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("token"), format!("{TOKEN}\n")).unwrap();
    let run = |hf_home: &Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_headroom"))
            .args(["fit", "--hf", "org/gated", "--json"])
            .env("HF_ENDPOINT", &server.base)
            .env("HEADROOM_CACHE", cache.path())
            .env("HF_HOME", hf_home)
            .env_remove("HF_TOKEN")
            .env_remove("HF_TOKEN_PATH")
            .output()
            .unwrap()
    };
    let empty = tempfile::tempdir().unwrap();
    let refused = run(empty.path());
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains(&format!(
            "accept the licence at {}/org/gated and set HF_TOKEN",
            server.base
        )),
        "{err}"
    );
    let ok = run(home.path());
    let (out, err) = (
        String::from_utf8_lossy(&ok.stdout),
        String::from_utf8_lossy(&ok.stderr),
    );
    assert!(ok.status.success(), "{err}");
    assert!(!out.contains(TOKEN) && !err.contains(TOKEN));
}

#[test]
fn cancel_stops_a_read_and_caches_nothing() {
    let server = Server::start(vec![("org/slow", Behaviour::Slow, five_shards())]);
    let cache = tempfile::tempdir().unwrap();
    let mut o = opts(&server, cache.path());
    o.cancel = Some(Arc::new(std::sync::atomic::AtomicBool::new(true)));
    let e = open(&hub_req("org/slow", None, None), &o).unwrap_err();
    assert_eq!(e.kind, HubErrorKind::Cancelled);
    assert_eq!(server.requests(), 0, "cancelled before the first request");
    assert!(walk(cache.path()).is_empty());
}

/// A small GGUF part of a split model (llama.cpp `gguf-split`: `split.no`, `split.count`).
fn split_part(no: u16, count: u16, tensors: &[(&str, [u64; 2])]) -> Vec<u8> {
    let mut kvs = Vec::new();
    let mut n_kv = 0u64;
    let mut kv = |key: &str, ty: u32, value: Vec<u8>| {
        kvs.extend(gstr(key));
        kvs.extend(ty.to_le_bytes());
        kvs.extend(value);
        n_kv += 1;
    };
    kv("general.architecture", 8, gstr("llama"));
    kv("llama.block_count", 4, 2u32.to_le_bytes().to_vec());
    kv("llama.embedding_length", 4, 256u32.to_le_bytes().to_vec());
    kv("llama.attention.head_count", 4, 2u32.to_le_bytes().to_vec());
    kv("llama.context_length", 4, 4096u32.to_le_bytes().to_vec());
    kv("split.no", 2, no.to_le_bytes().to_vec());
    kv("split.count", 2, count.to_le_bytes().to_vec());
    let mut out = b"GGUF".to_vec();
    out.extend(3u32.to_le_bytes());
    out.extend((tensors.len() as u64).to_le_bytes());
    out.extend(n_kv.to_le_bytes());
    out.extend(&kvs);
    let mut off = 0u64;
    for (name, dims) in tensors {
        out.extend(gstr(name));
        out.extend(2u32.to_le_bytes());
        for d in dims {
            out.extend(d.to_le_bytes());
        }
        out.extend(0u32.to_le_bytes());
        out.extend(off.to_le_bytes());
        off += dims[0] * dims[1] * 4;
    }
    out.resize(out.len().div_ceil(32) * 32, 0);
    out.resize(out.len() + off as usize, 0);
    out
}

#[test]
fn a_split_gguf_brings_its_parts() {
    let files = vec![
        (
            "Q8_0/m-Q8_0-00001-of-00002.gguf".to_string(),
            split_part(
                0,
                2,
                &[
                    ("token_embd.weight", [256, 64]),
                    ("blk.0.attn_q.weight", [256, 16]),
                ],
            ),
        ),
        (
            "Q8_0/m-Q8_0-00002-of-00002.gguf".to_string(),
            split_part(
                1,
                2,
                &[
                    ("blk.1.attn_q.weight", [256, 16]),
                    ("output.weight", [256, 64]),
                ],
            ),
        ),
    ];
    let server = Server::start(vec![("org/split-GGUF", Behaviour::Normal, files.clone())]);
    let cache = tempfile::tempdir().unwrap();
    let o = opts(&server, cache.path());
    let listing = hub::list_repo("org/split-GGUF", "main", &o).unwrap();
    let g = listing.ggufs();
    assert_eq!(g.len(), 1, "one model of two parts");
    assert_eq!((g[0].parts, g[0].quant.as_deref()), (2, Some("Q8_0")));
    assert_eq!(
        g[0].size,
        Some((files[0].1.len() + files[1].1.len()) as u64)
    );
    let a = open(&hub_req("org/split-GGUF", None, None), &o).unwrap();
    assert!(
        a.model.notes[0].contains("read all 2 parts"),
        "{:?}",
        a.model.notes
    );
    let dir = tempfile::tempdir().unwrap();
    for (n, b) in &files {
        std::fs::write(dir.path().join(n.rsplit('/').next().unwrap()), b).unwrap();
    }
    let local = import_path(&dir.path().join("m-Q8_0-00001-of-00002.gguf")).unwrap();
    assert_same(&a.model, &local);
    assert_eq!(a.requests, 1 + 2, "one range per small part");

    // The network down later: the listing and the model come from the cache.
    server.down.store(true, Ordering::SeqCst);
    let off = o.clone();
    assert_eq!(
        hub::list_repo("org/split-GGUF", "main", &off).unwrap(),
        listing
    );
    let b = open(&hub_req("org/split-GGUF", None, None), &off).unwrap();
    assert!(b.from_cache);
    assert_eq!(b.model.spec, a.model.spec);
    server.down.store(false, Ordering::SeqCst);
    // Another endpoint (a mirror) has its own cache: nothing of this one's answers it.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut mirror = o.clone();
    mirror.endpoint = format!("http://127.0.0.1:{port}");
    assert!(hub::list_repo("org/split-GGUF", "main", &mirror).is_err());
    assert!(open(&hub_req("org/split-GGUF", None, None), &mirror).is_err());
    // HF_HUB_OFFLINE: the cache answers, nothing else is asked.
    let mut offline = o.clone();
    offline.offline = true;
    let n = server.requests();
    assert!(
        open(&hub_req("org/split-GGUF", None, None), &offline)
            .unwrap()
            .from_cache
    );
    let e = open(&hub_req("org/split-GGUF", None, Some("q4_k_m")), &offline).unwrap_err();
    assert!(e.message.contains("HF_HUB_OFFLINE"), "{e}");
    assert_eq!(server.requests(), n);
    // An unknown repo offline is still a network error.
    let e = hub::list_repo("org/other", "main", &mirror).unwrap_err();
    assert_eq!(e.kind, HubErrorKind::Network, "{e}");
}

#[test]
fn too_many_shards_is_refused_before_reading_them() {
    let map: serde_json::Map<String, serde_json::Value> = (0..=hub::MAX_SHARDS)
        .map(|i| {
            (
                format!("t{i}"),
                serde_json::json!(format!("s{i}.safetensors")),
            )
        })
        .collect();
    let index = serde_json::to_vec(&serde_json::json!({"weight_map": map})).unwrap();
    let files = vec![
        ("config.json".to_string(), CONFIG.as_bytes().to_vec()),
        ("model.safetensors.index.json".to_string(), index),
    ];
    let server = Server::start(vec![("org/huge", Behaviour::Normal, files)]);
    let cache = tempfile::tempdir().unwrap();
    let e = open(
        &hub_req("org/huge", None, None),
        &opts(&server, cache.path()),
    )
    .unwrap_err();
    assert_eq!(e.kind, HubErrorKind::TooManyShards, "{e}");
    assert!(e.message.contains("2048"), "{e}");
    assert_eq!(
        server.requests(),
        3,
        "the listing, config.json and the index only"
    );
    assert!(walk(cache.path()).is_empty());
}

#[test]
fn hostile_fixtures_fail_over_http_as_they_fail_locally() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import");
    let mut files = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if (name.starts_with("gguf_") && name.ends_with(".gguf"))
            || (name.starts_with("st_") && name.ends_with(".safetensors"))
        {
            files.push((name, std::fs::read(e.path()).unwrap()));
        }
    }
    files.sort();
    assert!(files.len() >= 30, "{}", files.len());
    let server = Server::start(vec![("bad/files", Behaviour::Normal, files.clone())]);
    let mut o = opts(&server, Path::new("/nonexistent"));
    o.cache_root = None;
    for (name, _) in &files {
        let local = import_path(&dir.join(name)).unwrap_err().to_string();
        let url = format!("{}/bad/files/resolve/main/{name}", server.base);
        let remote = open(&Request::Url(url), &o).unwrap_err();
        assert_eq!(remote.message, local, "{name}");
        assert!(matches!(
            remote.kind,
            HubErrorKind::Invalid | HubErrorKind::Truncated
        ));
    }
}
