//! The hexagon, enforced on the manifests (95 CF-025; issue 13 "the graph is checked").
//!
//! Reads `cargo metadata` for the workspace and fails when
//! - `gateway-core` depends (normally, directly or through another workspace crate) on an I/O
//!   crate: reqwest, hyper, fred, tokio-postgres, deadpool-postgres, rusqlite, axum, zip;
//! - a workspace member named `adapter-*` depends on any workspace crate but `gateway-ports`
//!   (dev-dependencies excepted: tests may use the core and the test kit);
//! - any member has a normal or build dependency (optional or not) on `gateway-testkit`, the
//!   crate of the test doubles: dev-dependencies only, so no double ships in a normal build;
//! - `gateway-testkit` is publishable (it must say `publish = false`).
//!
//! Members are discovered from the metadata, so crates added later (adapter-redis,
//! adapter-postgres, adapter-monkeyocr…) are checked without editing this file. The checker
//! itself is proven against planted violations in fake metadata below.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::{BTreeSet, HashMap};
use std::process::Command;

use serde_json::{Value, json};

/// Crates that do I/O; the core must reach none of them (05 "core never depends on…").
const IO_CRATES: [&str; 8] = [
    "reqwest",
    "hyper",
    "fred",
    "tokio-postgres",
    "deadpool-postgres",
    "rusqlite",
    "axum",
    "zip",
];

/// A declared dependency that reaches normal builds (kind `null` = normal, or `build`).
fn is_shipped(dep: &Value) -> bool {
    !matches!(dep["kind"].as_str(), Some("dev"))
}

/// The crate of the test doubles (dev-dependencies only).
const TESTKIT: &str = "gateway-testkit";

/// Every violation of the four rules in a `cargo metadata --format-version 1 --no-deps`
/// document (one line each, naming the crates).
fn violations(metadata: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let members: HashMap<String, &Value> = packages
        .iter()
        .filter_map(|p| Some((p["name"].as_str()?.to_owned(), p)))
        .collect();
    let shipped_deps = |name: &str| -> Vec<Value> {
        members
            .get(name)
            .and_then(|p| p["dependencies"].as_array())
            .map(|deps| deps.iter().filter(|d| is_shipped(d)).cloned().collect())
            .unwrap_or_default()
    };

    // 1. gateway-core reaches no I/O crate, directly or through workspace crates.
    let mut seen = BTreeSet::new();
    let mut stack = vec![("gateway-core".to_owned(), "gateway-core".to_owned())];
    while let Some((name, path)) = stack.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        for dep in shipped_deps(&name) {
            // Past the core itself, an optional dependency is behind a feature of that crate
            // which the core's own dependency line decides; the core's own optional lines are
            // still followed, so an I/O crate reached behind a core feature counts.
            if name != "gateway-core" && dep["optional"].as_bool() == Some(true) {
                continue;
            }
            let dep_name = dep["name"].as_str().unwrap_or_default().to_owned();
            let via = format!("{path} -> {dep_name}");
            if IO_CRATES.contains(&dep_name.as_str()) {
                out.push(format!(
                    "gateway-core depends on I/O crate {dep_name} ({via})"
                ));
            }
            if members.contains_key(&dep_name) {
                stack.push((dep_name, via));
            }
        }
    }

    // 2. adapter-* depend on gateway-ports only, of our crates.
    for name in members.keys().filter(|n| n.starts_with("adapter-")) {
        for dep in shipped_deps(name) {
            let dep_name = dep["name"].as_str().unwrap_or_default();
            if dep_name != "gateway-ports" && members.contains_key(dep_name) {
                out.push(format!(
                    "{name} depends on workspace crate {dep_name} (adapters may depend on gateway-ports only)"
                ));
            }
        }
    }

    // 3. nobody ships the test kit: dev-dependencies only.
    for name in members.keys() {
        for dep in shipped_deps(name) {
            if dep["name"] == TESTKIT {
                let kind = dep["kind"].as_str().unwrap_or("normal");
                out.push(format!(
                    "{name} has a {kind} dependency on {TESTKIT} (dev-dependencies only)"
                ));
            }
        }
    }

    // 4. the test kit is never published (`publish = false` is an empty registry list).
    if let Some(kit) = members.get(TESTKIT) {
        let unpublished = kit["publish"].as_array().is_some_and(Vec::is_empty);
        if !unpublished {
            out.push(format!(
                "{TESTKIT} is publishable (it must say publish = false)"
            ));
        }
    }
    out.sort();
    out
}

fn workspace_metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata could not be run");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("cargo metadata printed JSON")
}

// covers: CF-025
#[test]
fn cf_025_the_workspace_graph_keeps_the_hexagon() {
    let metadata = workspace_metadata();
    let names: Vec<&str> = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(names.contains(&"gateway-core"), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("adapter-")), "{names:?}");
    assert!(names.contains(&TESTKIT), "{names:?}");
    assert_eq!(violations(&metadata), Vec::<String>::new());
}

// ---- the checker against planted violations ------------------------------------------------

fn dep(name: &str, kind: Option<&str>, features: &[&str]) -> Value {
    json!({ "name": name, "kind": kind, "features": features, "optional": false })
}

fn package(name: &str, deps: Vec<Value>, features: Value) -> Value {
    json!({ "name": name, "dependencies": deps, "features": features, "publish": null })
}

/// A clean workspace shaped like ours, plus `extra` packages.
fn fake(extra: Vec<Value>, core_deps: Vec<Value>) -> Value {
    let mut packages = vec![
        package("gateway-ports", vec![dep("serde", None, &[])], json!({})),
        package(
            "gateway-core",
            [
                vec![
                    dep("gateway-ports", None, &[]),
                    dep(TESTKIT, Some("dev"), &[]),
                ],
                core_deps,
            ]
            .concat(),
            json!({ "structured": ["dep:jsonschema"] }),
        ),
        json!({
            "name": TESTKIT,
            "dependencies": [dep("gateway-core", None, &[]), dep("upstream-sim", None, &[])],
            "features": {},
            "publish": [],
        }),
        package(
            "adapter-sqlite",
            vec![
                dep("gateway-ports", None, &[]),
                dep("rusqlite", None, &[]),
                dep("gateway-core", Some("dev"), &[]),
                dep(TESTKIT, Some("dev"), &[]),
            ],
            json!({}),
        ),
        package(
            "polygateway",
            vec![
                dep("gateway-core", None, &[]),
                dep("adapter-sqlite", None, &[]),
            ],
            json!({}),
        ),
    ];
    packages.extend(extra);
    json!({ "packages": packages })
}

// covers: CF-025
#[test]
fn cf_025_checker_passes_a_clean_graph() {
    assert_eq!(violations(&fake(vec![], vec![])), Vec::<String>::new());
}

// covers: CF-025
#[test]
fn cf_025_checker_catches_an_io_crate_in_the_core_directly_or_through_a_member() {
    let direct = violations(&fake(vec![], vec![dep("reqwest", None, &[])]));
    assert_eq!(direct.len(), 1, "{direct:?}");
    assert!(direct[0].contains("reqwest"));
    // Through a workspace crate the core depends on.
    let helper = package("io-helper", vec![dep("fred", None, &[])], json!({}));
    let via = violations(&fake(vec![helper], vec![dep("io-helper", None, &[])]));
    assert_eq!(via.len(), 1, "{via:?}");
    assert!(
        via[0].contains("gateway-core -> io-helper -> fred"),
        "{via:?}"
    );
    // A dev-dependency is not shipped.
    let dev = violations(&fake(vec![], vec![dep("hyper", Some("dev"), &[])]));
    assert!(dev.is_empty(), "{dev:?}");
}

// covers: CF-025
#[test]
fn cf_025_checker_catches_an_adapter_depending_on_the_core_even_one_added_later() {
    let redis = package(
        "adapter-redis",
        vec![
            dep("gateway-ports", None, &[]),
            dep("gateway-core", None, &[]),
        ],
        json!({}),
    );
    let found = violations(&fake(vec![redis], vec![]));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("adapter-redis depends on workspace crate gateway-core"));
    let build = package(
        "adapter-postgres",
        vec![dep("polygateway", Some("build"), &[])],
        json!({}),
    );
    assert_eq!(violations(&fake(vec![build], vec![])).len(), 1);
}

// covers: CF-025
#[test]
fn cf_025_checker_catches_the_test_kit_as_a_normal_build_or_optional_dependency() {
    let contract = package("contract-tests", vec![dep(TESTKIT, None, &[])], json!({}));
    let found = violations(&fake(vec![contract], vec![]));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("contract-tests has a normal dependency on gateway-testkit"),
        "{found:?}"
    );
    let build = package(
        "gateway-cli",
        vec![dep(TESTKIT, Some("build"), &[])],
        json!({}),
    );
    let found = violations(&fake(vec![build], vec![]));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("a build dependency"), "{found:?}");
    // Behind a feature (an optional normal dependency) still ships when the feature is on.
    let mut optional = dep(TESTKIT, None, &[]);
    optional["optional"] = json!(true);
    let facade = package(
        "hello-app",
        vec![optional],
        json!({ "doubles": ["dep:gateway-testkit"] }),
    );
    let found = violations(&fake(vec![facade], vec![]));
    assert_eq!(found.len(), 1, "{found:?}");
    // The core itself may not ship it either.
    let found = violations(&fake(vec![], vec![dep(TESTKIT, None, &[])]));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("gateway-core has a normal dependency"),
        "{found:?}"
    );
}

// covers: CF-025
#[test]
fn cf_025_checker_catches_a_publishable_test_kit() {
    let mut metadata = fake(vec![], vec![]);
    for p in metadata["packages"].as_array_mut().unwrap() {
        if p["name"] == TESTKIT {
            p["publish"] = Value::Null;
        }
    }
    let found = violations(&metadata);
    assert_eq!(
        found,
        ["gateway-testkit is publishable (it must say publish = false)"]
    );
}
