//! `headroom mcp`: a Model Context Protocol server over stdio (rmcp, the official Rust SDK), so
//! that an agent can ask headroom without guessing flags or parsing help text.
//!
//! Each tool is a CLI subcommand ([`tools::TOOLS`]); its `inputSchema` is read off that
//! subcommand's clap grammar ([`schema`]) and a call runs the subcommand's own parser and code, so
//! a result is the CLI's `--json` output (the README's JSON contract) and a refused argument is
//! the CLI's one-line message, as a tool result with `isError`. An unknown tool, or a request
//! that is not JSON-RPC, is a JSON-RPC error, and the server keeps serving. Nothing reaches the
//! network unless a call names a Hub repo (`hf`) or a URL (`url`), as on the CLI; nothing is
//! written but the Hub cache that such a call fills. Notes the CLI writes on stderr go to the
//! server's stderr, which MCP clients keep in their logs; stdout carries the protocol only.

pub mod schema;
pub mod tools;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
    Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use std::sync::Arc;

/// What the server tells the client about itself, for the agent.
const INSTRUCTIONS: &str = "headroom answers \"what hardware do I need for this LLM, and will it run on mine?\". \
Name a model with `model` (a preset id from catalog_models), `params` (\"70B\"), a local file (`gguf`, `safetensors`, `config`) or a Hub repo (`hf`, the only network use with `url`). \
estimate: memory by component. fit: the verdict, speed and cost on catalog machines (`machine`: ids from catalog_machines, or \"local\" for the machine the server runs on). \
recommend: which machine to buy or rent. quality: what each precision costs in quality and the best one that fits. serve: many users on one machine. cluster: more than one machine. detect: this machine. report: everything in one JSON. \
Sizes are in bytes; null means the value does not apply.";

/// The server: the tool list, built once from the CLI grammar.
#[derive(Debug, Clone)]
pub struct Headroom {
    tools: Arc<Vec<Tool>>,
}

impl Default for Headroom {
    fn default() -> Self {
        Headroom {
            tools: Arc::new(tool_list()),
        }
    }
}

/// Every tool as `tools/list` gives it.
pub fn tool_list() -> Vec<Tool> {
    tools::TOOLS
        .iter()
        .map(|t| {
            let cmd = tools::command(t);
            let schema = schema::input_schema(&cmd, t.hidden);
            // Only `hf` and `url` reach out (the Hub, a server): open-world where a tool has them.
            let open = cmd
                .get_arguments()
                .any(|a| matches!(a.get_id().as_str(), "hf" | "url"));
            Tool::new_with_raw(
                t.name,
                Some(tools::description(t, &cmd).into()),
                Arc::new(schema),
            )
            .with_annotations(
                ToolAnnotations::new()
                    .read_only(true)
                    .destructive(false)
                    .idempotent(true)
                    .open_world(open),
            )
        })
        .collect()
}

/// Whether the negotiated protocol lets `structuredContent` be any JSON value (2026-07-28 on);
/// before it, only an object.
fn any_structured(v: Option<&ProtocolVersion>) -> bool {
    v.is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// A call's result: the CLI's JSON text as text content and, where the protocol allows the
/// value (an object, or any JSON from 2026-07-28), as `structuredContent` too; an error as one
/// line of text with `isError`.
pub fn result(o: tools::Outcome, any_json: bool) -> CallToolResult {
    match o {
        tools::Outcome::Json(text, v) => {
            let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
            if v.is_object() || any_json {
                r.structured_content = Some(v);
            }
            r
        }
        tools::Outcome::Error(line) => CallToolResult::error(vec![ContentBlock::text(line)]),
    }
}

impl ServerHandler for Headroom {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("headroom", crate::cli::VERSION)
                    .with_title("headroom: what hardware an LLM needs"),
            )
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(t) = tools::find(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool '{}' (tools/list gives them: {})",
                    crate::core::format::one_line(&request.name),
                    tools::TOOLS
                        .iter()
                        .map(|t| t.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None,
            ));
        };
        let any_json = any_structured(context.protocol_version().as_ref());
        let args = request.arguments.unwrap_or_default();
        // The work blocks (file and Hub reads, detection, whole-catalog fits): off the IO thread,
        // so that the server keeps answering; a panic in it is an internal error, not an exit.
        let outcome = tokio::task::spawn_blocking(move || tools::call(t, &args))
            .await
            .map_err(|e| ErrorData::internal_error(format!("{}: {e}", t.name), None))?;
        Ok(result(outcome, any_json).into())
    }
}

/// Serves on stdin/stdout until the client closes stdin.
pub fn serve() -> Result<(), String> {
    use std::io::IsTerminal as _;
    if std::io::stdin().is_terminal() {
        eprintln!(
            "headroom: mcp: a Model Context Protocol server on stdin/stdout, for an MCP client (README \"Ask headroom from an agent\"); Ctrl-D ends it"
        );
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let done = rt.block_on(async {
        let running = match Headroom::default().serve(rmcp::transport::stdio()).await {
            Ok(r) => r,
            // The client left before its first request: nothing was asked, nothing failed.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => return Err(format!("the client's first request failed: {e}")),
        };
        running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| format!("the server stopped: {e}"))
    });
    // A read of stdin still pending (the handshake failed before EOF) cannot be cancelled: do
    // not wait for it.
    rt.shutdown_background();
    done
}
