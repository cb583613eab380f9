use std::rc::Rc;

use harnessx::tool;

async fn pause() {}

/// Count, holding an `Rc` across an await.
#[tool]
async fn count(n: i64) -> i64 {
    let shared = Rc::new(n);
    pause().await;
    *shared + 1
}

fn main() {}
