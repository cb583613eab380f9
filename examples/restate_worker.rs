//! A durable run on a Restate cluster: this process serves a worker, registers it, starts
//! a run that pauses for an approval, approves it as another process would, and follows
//! the run to its answer.
//!
//! Start a server first (`npx @restatedev/restate-server`, ingress on 8080, admin on
//! 9070), then: `cargo run --example restate_worker --features restate -- \
//! http://127.0.0.1:8080 http://127.0.0.1:9070`.

use std::sync::Arc;

use harnessx::agent::{Agent, AgentConfig};
use harnessx::durable::RunStatus;
use harnessx::durable::restate::{RestateRuntime, register, serve};
use harnessx::model::{FunctionModel, Message, ModelResponse};
use harnessx::{ApprovalDecision, PermissionLevel, PermissionManager, ToolCall, ToolDefinition, ToolHandler};
use serde_json::json;

fn agent() -> Agent {
    let model = FunctionModel::new(|req| {
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => ModelResponse::tool_calls(vec![ToolCall::new(
                "c1",
                "send_invoice",
                r#"{"to":"ada@example.com"}"#,
            )]),
            Some(Message::Tool { content, .. }) => ModelResponse::text(format!("Done: {content}")),
            _ => ModelResponse::text("?"),
        })
    });
    let send = ToolDefinition::new(
        "send_invoice",
        "Send the invoice by email.",
        json!({"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}),
        ToolHandler::from_async(
            |args, _ctx| async move { Ok(format!("invoice sent to {}", args["to"]).into()) },
        ),
    );
    Agent::builder()
        .model(model)
        .tool(send)
        // Every call asks; the run waits, durably, for `approve`.
        .permissions(PermissionManager::new(PermissionLevel::Ask))
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .expect("a valid agent")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(ingress), Some(admin)) = (args.next(), args.next()) else {
        return Err("usage: restate_worker INGRESS_URL ADMIN_URL (a running restate-server)".into());
    };

    // The worker: serve the endpoint, then register it (Restate asks it what it serves).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let uri = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn(serve(Arc::new(agent()), listener, async {
        let _ = stopped.await;
    }));
    println!("worker {uri} registered as {}", register(&admin, &uri).await?);

    // A client, from any process: start, approve, follow.
    let cluster = RestateRuntime::new(&ingress)?.with_admin(&admin)?;
    let run_id = format!("invoice-{}", std::process::id());
    let paused = cluster.start(&run_id, "Send Ada her invoice").await?;
    let waiting = paused.needs_input.first().ok_or("the ASK call waits for approval")?;
    println!("waiting: {} ({:?} of {})", waiting.reason, waiting.kind, waiting.call_id);
    cluster.approve(&run_id, &waiting.call_id, ApprovalDecision::Approve).await?;
    let done = cluster.wait(&run_id, |event| println!("  {event}")).await?;
    assert_eq!(done.status, RunStatus::Completed);
    println!("answer: {}", done.output);

    let _ = stop.send(());
    worker.await?;
    Ok(())
}
