//! The crate layering of docs/architecture.md, checked over `cargo metadata`: a crate may
//! depend only on the Trawl crates listed for it, and the light crates stay free of heavy
//! dependencies.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Allowed Trawl dependencies of each Trawl crate.
const ALLOWED: &[(&str, &[&str])] = &[
    ("trawl-common", &[]),
    ("trawl-kql", &["trawl-common"]),
    ("trawl-functions", &["trawl-common"]),
    ("trawl-planner", &["trawl-common", "trawl-kql", "trawl-functions"]),
    ("trawl-catalog", &["trawl-common"]),
    ("trawl-auth", &["trawl-common", "trawl-catalog"]),
    ("trawl-storage", &["trawl-common", "trawl-functions", "trawl-catalog"]),
    (
        "trawl-engine",
        &[
            "trawl-common",
            "trawl-kql",
            "trawl-functions",
            "trawl-planner",
            "trawl-catalog",
            "trawl-storage",
        ],
    ),
    ("trawl-proto", &[]),
    ("trawl-heap", &[]),
    // The web UI's files: no Trawl code.
    ("trawl-ui", &[]),
    ("trawl-intake", &["trawl-common", "trawl-proto"]),
    (
        "trawl-ingest",
        &["trawl-common", "trawl-catalog", "trawl-storage", "trawl-auth"],
    ),
    (
        "trawl-api",
        &[
            "trawl-common",
            "trawl-kql",
            "trawl-functions",
            "trawl-planner",
            "trawl-catalog",
            "trawl-storage",
            "trawl-engine",
            "trawl-proto",
            "trawl-intake",
            "trawl-ingest",
            "trawl-gateway",
            "trawl-auth",
            "trawl-heap",
        ],
    ),
    (
        "trawl-gateway",
        &[
            "trawl-common",
            "trawl-proto",
            "trawl-client",
            "trawl-catalog",
            "trawl-auth",
            "trawl-ui",
        ],
    ),
    ("trawl-client", &["trawl-common"]),
    (
        "trawl",
        &[
            "trawl-common",
            "trawl-kql",
            "trawl-functions",
            "trawl-planner",
            "trawl-catalog",
            "trawl-storage",
            "trawl-engine",
            "trawl-proto",
            "trawl-intake",
            "trawl-ingest",
            "trawl-api",
            "trawl-gateway",
            "trawl-auth",
            "trawl-client",
            "trawl-heap",
        ],
    ),
    // Benchmarks drive the public faces, read segment files (the token index report) with
    // storage's own reader, and time the ingest stages (intake's mapping, storage's encoder)
    // with the server's allocator.
    (
        "trawl-bench",
        &[
            "trawl-common",
            "trawl-proto",
            "trawl-functions",
            "trawl-client",
            "trawl-storage",
            "trawl-intake",
            "trawl-heap",
        ],
    ),
];

/// External crates a Trawl crate must not pull in directly.
const FORBIDDEN_EXTERNAL: &[(&str, &[&str])] = &[
    ("trawl-common", &["datafusion", "tokio", "axum", "tonic", "sqlx"]),
    (
        "trawl-kql",
        &["datafusion", "tokio", "axum", "tonic", "sqlx", "object_store"],
    ),
    ("trawl-intake", &["datafusion", "axum", "sqlx", "object_store", "tokio"]),
    ("trawl-catalog", &["datafusion", "axum", "tonic"]),
    ("trawl-planner", &["tokio", "axum", "tonic", "sqlx", "object_store"]),
    ("trawl-functions", &["tokio", "axum", "tonic", "sqlx", "object_store"]),
    ("trawl-storage", &["axum", "tonic"]),
    ("trawl-engine", &["axum", "tonic"]),
    ("trawl-ingest", &["axum", "tonic"]),
];

fn workspace_dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let mut graph = BTreeMap::new();
    for package in metadata["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().expect("name").to_string();
        let deps = package["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| d["kind"].is_null()) // normal dependencies only
            .map(|d| d["name"].as_str().expect("dependency name").to_string())
            .collect();
        graph.insert(name, deps);
    }
    graph
}

#[test]
fn trawl_crates_depend_only_down_the_layering() {
    let graph = workspace_dependencies();
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut violations = Vec::new();
    for (name, deps) in &graph {
        let Some(allowed_deps) = allowed.get(name.as_str()) else {
            violations.push(format!("{name} is not in the layering table"));
            continue;
        };
        for dep in deps.iter().filter(|d| d.starts_with("trawl")) {
            if !allowed_deps.contains(&dep.as_str()) {
                violations.push(format!("{name} must not depend on {dep}"));
            }
        }
    }
    for (name, forbidden) in FORBIDDEN_EXTERNAL {
        if let Some(deps) = graph.get(*name) {
            for dep in deps.iter().filter(|d| forbidden.contains(&d.as_str())) {
                violations.push(format!("{name} must not depend on {dep}"));
            }
        }
    }
    assert!(violations.is_empty(), "layering violations:\n{}", violations.join("\n"));
}
