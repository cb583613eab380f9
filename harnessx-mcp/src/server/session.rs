//! One MCP session: the `ServerHandler` that lists a registry's tools and runs calls
//! through its pipeline.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use harnessx_core::{Blob, Part, PermissionManager, RunContext, ToolCall, ToolRegistry, ToolResult};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest, CustomResult,
    ErrorCode, GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation, InitializeResult,
    JsonObject, ListPromptsResult, ListToolsResult, PaginatedRequestParams, Prompt, PromptArgument,
    PromptMessage, ResourceContents, Role, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations as McpAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use super::approval;

/// What every session of one server shares.
pub(super) struct Shared {
    pub(super) registry: ToolRegistry,
    pub(super) permissions: PermissionManager,
    /// The prompts offered beside the tools, if any.
    prompts: Option<Arc<dyn crate::server::PromptSource>>,
    /// Numbers the calls, so each has its own call id (approval requests and logs name it).
    calls: AtomicU64,
}

impl Shared {
    pub(super) fn new(
        registry: ToolRegistry,
        permissions: PermissionManager,
        prompts: Option<Arc<dyn crate::server::PromptSource>>,
    ) -> Arc<Self> {
        Arc::new(Self { registry, permissions, prompts, calls: AtomicU64::new(0) })
    }
}

/// One client's session: rmcp makes one per HTTP session (through the factory), and
/// there is one on stdio.
#[derive(Clone)]
pub(super) struct Session {
    pub(super) shared: Arc<Shared>,
    /// The session's manager: the server's, with the tools this session's user allowed
    /// "for this session" when asked.
    permissions: PermissionManager,
}

impl Session {
    pub(super) fn new(shared: Arc<Shared>) -> Self {
        let permissions = shared.permissions.session();
        Self { shared, permissions }
    }

    /// Runs one call (`arguments`: raw JSON text, as a model's) through the pipeline;
    /// every failure is an error result.
    async fn call(
        &self,
        name: String,
        arguments: String,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let number = self.shared.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let call = ToolCall::new(format!("mcp-{number}"), name, arguments);
        // Unknown tool, arguments that fail the schema: the pipeline's text. Permissions:
        // the pipeline's stage, through the session's authorizer. The registry's hooks
        // ([`ToolRegistry::set_hooks`]) see the call before its permission and its result
        // after: a hook's refusal is an error result with the hook's message.
        let authorizer =
            approval::Eliciting { permissions: self.permissions.clone(), peer: ctx.peer.clone() };
        let run = RunContext::new()
            .with_permissions(self.permissions.clone())
            .with_authorizer(Arc::new(authorizer));
        result(self.shared.registry.execute_in(&call, &run).await)
    }
}

/// A pipeline result as MCP's: the text as one text block, then a block for each media
/// part ([`block`]); an error as `isError: true`; structured content when it is a JSON
/// object (MCP's `structuredContent` must be one; other values are in the text already).
fn result(result: ToolResult) -> CallToolResult {
    let mut content = Vec::with_capacity(1 + result.parts.len());
    content.push(ContentBlock::text(result.content));
    if result.is_error {
        return CallToolResult::error(content);
    }
    content.extend(result.parts.iter().enumerate().map(|(i, part)| block(i, part)));
    let mut success = CallToolResult::success(content);
    if let Some(structured @ Value::Object(_)) = result.structured_content {
        success.structured_content = Some(structured);
    }
    success
}

/// A part as an MCP content block: an image as an image block, audio as an audio block, a
/// file as an embedded blob resource whose URI is `harnessx:part/{i}/{name}` (the name a
/// client takes from the URI's last segment; `harnessx:part/{i}` without a name), the
/// bytes in base64. MCP carries media as base64 only: a medium given by URL is a text
/// block naming it.
fn block(i: usize, part: &Part) -> ContentBlock {
    // `Err` is the line that stands for a medium given by URL.
    let base64 = |media_type: &str, data: &Blob| match data {
        Blob::Bytes(bytes) => Ok(BASE64.encode(bytes)),
        Blob::Url(url) => Err(format!("[{}: {media_type}, at {url}]", part.kind())),
    };
    let block = match part {
        Part::Text(text) => Ok(ContentBlock::text(text.clone())),
        Part::Image { media_type, data } => {
            base64(media_type, data).map(|b| ContentBlock::image(b, media_type))
        }
        Part::Audio { media_type, data } => {
            base64(media_type, data).map(|b| ContentBlock::audio(b, media_type))
        }
        Part::File { media_type, name, data } => base64(media_type, data).map(|b| {
            let uri = match name {
                Some(name) => format!("harnessx:part/{i}/{name}"),
                None => format!("harnessx:part/{i}"),
            };
            ContentBlock::resource(ResourceContents::blob(b, uri).with_mime_type(media_type))
        }),
    };
    block.unwrap_or_else(ContentBlock::text)
}

/// The registry's tools as MCP's: canonical input schemas, annotations as hints.
fn tools(registry: &ToolRegistry) -> Vec<Tool> {
    let hints: HashMap<String, harnessx_core::ToolAnnotations> =
        registry.list_tools().into_iter().map(|def| (def.name, def.annotations)).collect();
    registry
        .get_tool_params()
        .into_iter()
        .map(|spec| {
            let schema: JsonObject = match spec.input_schema {
                Value::Object(map) => map,
                // Canonical schemas are objects; keep MCP's shape whatever happens.
                _ => serde_json::Map::from_iter([("type".to_owned(), Value::String("object".into()))]),
            };
            let mut tool = Tool::new(spec.name.clone(), spec.description, Arc::new(schema));
            if let Some(a) = hints.get(&spec.name).filter(|a| !a.is_empty()) {
                tool = tool.with_annotations(McpAnnotations::from_raw(
                    None,
                    a.read_only,
                    a.destructive,
                    a.idempotent,
                    a.open_world,
                ));
            }
            tool
        })
        .collect()
}

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        let capabilities = match self.shared.prompts {
            Some(_) => ServerCapabilities::builder().enable_tools().enable_prompts().build(),
            None => ServerCapabilities::builder().enable_tools().build(),
        };
        InitializeResult::new(capabilities)
            .with_server_info(Implementation::new("harnessx", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Tools served by harnessx. A failed call is a result with isError set and one line saying what \
                 was wrong; correct the call and try again.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools(&self.shared.registry)))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let offered = self.shared.prompts.as_ref().map(|p| p.prompts()).unwrap_or_default();
        let prompts = offered
            .into_iter()
            .map(|p| {
                let arguments: Vec<PromptArgument> = p
                    .arguments
                    .into_iter()
                    .map(|(name, description, required)| {
                        let mut argument = PromptArgument::new(name).with_required(required);
                        if let Some(description) = description {
                            argument = argument.with_description(description);
                        }
                        argument
                    })
                    .collect();
                Prompt::new(p.name, p.description, (!arguments.is_empty()).then_some(arguments))
            })
            .collect();
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let Some(prompts) = &self.shared.prompts else {
            return Err(ErrorData::invalid_params(format!("no prompt named {:?}", request.name), None));
        };
        let arguments: Vec<(String, String)> = request
            .arguments
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
            .collect();
        let messages = prompts
            .prompt(&request.name, &arguments)
            .map_err(|e| ErrorData::invalid_params(e, None))?
            .into_iter()
            .map(|m| {
                let role = match m.role {
                    crate::McpRole::User => Role::User,
                    crate::McpRole::Assistant => Role::Assistant,
                };
                PromptMessage::new_text(role, m.text)
            })
            .collect();
        Ok(GetPromptResult::new(messages).into())
    }

    // `get_tool` is left to its default (`None`): rmcp would otherwise validate the
    // arguments itself and answer a bad call with a protocol error instead of the
    // pipeline's error result.

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default()).to_string();
        Ok(self.answer(request.name.to_string(), arguments, &ctx).await.into())
    }

    /// A `tools/call` rmcp could not parse lands here: `arguments` that is not an
    /// object, say. It gets the pipeline's error result too (`expected a JSON object,
    /// got a string`), not a bare "method not found".
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        if request.method != "tools/call" {
            return Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, request.method, None));
        }
        let params = request.params.unwrap_or(Value::Null);
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(ErrorData::invalid_params(
                "tools/call needs the tool's name as a string in `name`",
                None,
            ));
        };
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => "{}".to_owned(),
            Some(other) => other.to_string(),
        };
        let result = self.answer(name.to_owned(), arguments, &ctx).await;
        serde_json::to_value(result)
            .map(CustomResult::new)
            .map_err(|e| ErrorData::internal_error(format!("encoding the result: {e}"), None))
    }
}

impl Session {
    /// [`call`](Self::call), until the client cancels it.
    async fn answer(
        &self,
        name: String,
        arguments: String,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        tokio::select! {
            outcome = self.call(name.clone(), arguments, ctx) => outcome,
            // `notifications/cancelled`: stop waiting (the call's future is dropped, which
            // drops a pending approval too). The client no longer reads the answer.
            () = ctx.ct.cancelled() => {
                tracing::info!(tool = name, "MCP tool call cancelled by the client");
                CallToolResult::error(vec![ContentBlock::text(format!("the call of {name} was cancelled by the client"))])
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_medium_by_url_is_a_line_and_a_nameless_file_is_numbered() {
        let url = Part::image_url("image/png", "https://example.com/a.png");
        assert_eq!(block(0, &url), ContentBlock::text("[image: image/png, at https://example.com/a.png]"));
        let file = Part::file("text/csv", None, &b"a,b"[..]);
        assert_eq!(
            serde_json::to_value(block(2, &file)).unwrap(),
            json!({"type": "resource", "resource": {"uri": "harnessx:part/2", "mimeType": "text/csv", "blob": "YSxi"}})
        );
        assert_eq!(block(0, &Part::text("hi")), ContentBlock::text("hi"));
    }

    #[test]
    fn an_error_result_sends_its_text_only() {
        let mut failed = ToolResult::error("c", "t", "it broke");
        failed.parts.push(Part::image("image/png", vec![1]));
        assert_eq!(result(failed).content, [ContentBlock::text("it broke")]);
    }
}
