use harnessx::tool;

#[derive(serde::Deserialize)]
struct Point {
    x: f64,
}

/// Distance from the origin.
#[tool]
fn distance(origin: Option<Vec<Point>>) -> f64 {
    origin.unwrap_or_default().iter().map(|p| p.x.abs()).sum()
}

fn main() {}
