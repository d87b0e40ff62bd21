//! `headroom mcp` over raw JSON-RPC lines (tests/mcp_client.py drives it with the official Python
//! SDK in CI): the handshake, the tool list and its schemas, results that are the CLI's `--json`
//! output byte for byte, refused arguments with the CLI's one-line message, and malformed
//! requests that get errors while the server keeps serving.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

fn config_dir() -> std::path::PathBuf {
    std::env::temp_dir().join("headroom-mcp-test-no-user-files")
}

fn headroom(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(args)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env("XDG_CONFIG_HOME", config_dir())
        .env("HEADROOM_CONFIG_DIR", config_dir())
        .output()
        .expect("run headroom")
}

/// A running `headroom mcp`: lines in, replies out (read on a thread, so a test can time out).
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_headroom"))
            .arg("mcp")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env("XDG_CONFIG_HOME", config_dir())
            .env("HEADROOM_CONFIG_DIR", config_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start headroom mcp");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut s = Server {
            child,
            stdin,
            lines: rx,
            next_id: 100,
        };
        let init = s.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "tests/mcp.rs", "version": "0"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "headroom", "{init}");
        assert!(
            init["result"]["capabilities"]["tools"].is_object(),
            "{init}"
        );
        s.send_raw(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
        s
    }

    fn send_raw(&mut self, line: &str) {
        let w = self.stdin.as_mut().expect("stdin open");
        writeln!(w, "{line}").expect("write to the server");
        w.flush().expect("flush");
    }

    /// The next reply line (at most 120 s: a whole-catalog fit in a debug build takes seconds).
    fn recv(&self) -> Value {
        let l = self
            .lines
            .recv_timeout(Duration::from_secs(120))
            .expect("a reply from the server");
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))
    }

    /// The reply to a request (replies to other ids are not expected here).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send_raw(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        let r = self.recv();
        assert_eq!(r["id"], json!(id), "{r}");
        r
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        r["result"].clone()
    }

    /// Closes stdin and waits for the exit.
    fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        self.child.wait().expect("wait for headroom mcp")
    }
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[test]
fn tools_are_the_subcommands_with_their_options() {
    let mut s = Server::start();
    let r = s.request("tools/list", json!({}));
    let tools = r["result"]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "estimate",
            "fit",
            "recommend",
            "serve",
            "cluster",
            "quality",
            "report",
            "detect",
            "catalog_models",
            "catalog_machines"
        ]
    );
    for t in tools {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        assert_eq!(t["inputSchema"]["additionalProperties"], false, "{t}");
        assert!(t["description"].as_str().is_some_and(|d| d.len() > 40));
        assert_eq!(t["annotations"]["readOnlyHint"], true, "{t}");
    }
    // The estimate tool offers every option of `headroom estimate --help` but the output ones.
    let est = &tools[0]["inputSchema"]["properties"];
    let help = String::from_utf8(headroom(&["estimate", "--help"]).stdout).unwrap();
    let mut options = 0;
    for word in help.split_whitespace() {
        let Some(long) = word.strip_prefix("--") else {
            continue;
        };
        let long = long.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
        if long.is_empty()
            || ["help", "json", "save-scenario"].contains(&long)
            || !help.contains(&format!("  --{long}"))
        {
            continue;
        }
        options += 1;
        let name = long.replace('-', "_");
        assert!(est[&name].is_object(), "estimate lacks '{name}': {est}");
    }
    assert!(options >= 40, "{options} options");
    assert!(est["save_scenario"].is_null() && est["json"].is_null());
    assert_eq!(est["pure_bf16"]["type"], "boolean");
    assert!(
        est["mode"]["enum"]
            .as_array()
            .unwrap()
            .contains(&json!("qlora"))
    );
    assert!(
        est["kv"]["anyOf"][1]["pattern"]
            .as_str()
            .unwrap()
            .contains("q8_0")
    );
    assert!(s.finish().success());
}

#[test]
fn a_call_is_the_cli_json_and_a_refusal_is_its_line() {
    let mut s = Server::start();
    let r = s.call(
        "estimate",
        json!({"model": "llama-3-8b", "context": "32K", "weights": "q4_k_m"}),
    );
    let cli = headroom(&[
        "estimate",
        "--model",
        "llama-3-8b",
        "--context",
        "32K",
        "--weights",
        "q4_k_m",
        "--json",
    ]);
    assert!(cli.status.success());
    let out = String::from_utf8(cli.stdout).unwrap();
    assert_eq!(text(&r), out);
    assert_eq!(r["isError"], false);
    assert_eq!(
        r["structuredContent"],
        serde_json::from_str::<Value>(&out).unwrap()
    );
    // An array (the machines) is text only before protocol 2026-07-28.
    let r = s.call("catalog_machines", json!({"kind": "laptop"}));
    let cli = headroom(&["catalog", "list", "--kind", "laptop", "--json"]);
    assert_eq!(text(&r), String::from_utf8(cli.stdout).unwrap());
    assert!(r.get("structuredContent").is_none(), "{r}");

    for (args, argv) in [
        (
            json!({"model": "llama3-8b"}),
            &["estimate", "--model", "llama3-8b", "--json"][..],
        ),
        (
            json!({"weights": "q4km"}),
            &["estimate", "--weights", "q4km", "--json"][..],
        ),
        (
            json!({"batch": -1}),
            &["estimate", "--batch=-1", "--json"][..],
        ),
    ] {
        let r = s.call("estimate", args.clone());
        let cli = headroom(argv);
        assert_eq!(cli.status.code(), Some(2), "{argv:?}");
        let err = String::from_utf8(cli.stderr).unwrap();
        let line = err
            .lines()
            .last()
            .unwrap()
            .strip_prefix("headroom: ")
            .unwrap();
        assert_eq!(r["isError"], true, "{args}: {r}");
        assert_eq!(text(&r), line, "{args}");
    }
    assert!(s.finish().success());
}

#[test]
fn malformed_requests_get_errors_and_the_server_keeps_serving() {
    let mut s = Server::start();
    // Not JSON at all: nothing to answer (no id to answer to), as the MCP SDKs do; the next
    // request is answered.
    s.send_raw("{this is not json");
    let r = s.request("ping", json!({}));
    assert_eq!(r["result"], json!({}), "{r}");
    // JSON, but not a JSON-RPC request: Invalid Request.
    s.send_raw(r#"{"jsonrpc": "2.0", "id": 7, "method": 42}"#);
    let r = s.recv();
    assert_eq!(r["error"]["code"], -32600, "{r}");
    // An unknown method, an unknown tool, arguments that are not an object.
    let r = s.request("no/such/method", json!({}));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    let r = s.request(
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("unknown tool 'no_such_tool'"),
        "{r}"
    );
    let r = s.request(
        "tools/call",
        json!({"name": "estimate", "arguments": "not an object"}),
    );
    assert!(r["error"].is_object(), "{r}");
    // An argument the tool does not have is the tool's error, not the protocol's.
    let r = s.call("estimate", json!({"save_scenario": "/tmp/x.ron"}));
    assert_eq!(r["isError"], true);
    assert!(
        text(&r).starts_with("unknown argument 'save_scenario' for tool estimate"),
        "{r}"
    );
    // And the server still answers.
    let r = s.call("catalog_models", json!({}));
    assert_eq!(r["isError"], false, "{r}");
    assert!(text(&r).contains("\"llama-3-8b\""));
    assert!(s.finish().success());
}
