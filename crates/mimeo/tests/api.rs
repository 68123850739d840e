//! The public API, as rustdoc sees it, compared with `tests/api.golden`, so that any change to
//! the surface is deliberate. After a deliberate change, refresh the snapshot with
//! `MIMEO_UPDATE_GOLDEN=1 cargo test -p mimeo --test api` and commit it with the change.
//!
//! The surface comes from rustdoc's JSON output (`--output-format json`, unstable, enabled on
//! a stable toolchain with `RUSTC_BOOTSTRAP=1`). Each public item becomes one line: its path,
//! its kind and its signature (fields and variants for types, parameters and result for
//! functions, the traits a type implements).

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn public_api_matches_the_snapshot() {
    let json = rustdoc_json();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let mut lines = BTreeSet::new();
    let api = Api { doc: &doc };
    let root = doc["root"].to_string();
    api.module(&root, "mimeo", &mut lines);
    let text: String = lines.into_iter().map(|l| l + "\n").collect();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/api.golden");
    if std::env::var_os("MIMEO_UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&golden).unwrap_or_default();
    if expected != text {
        let old: BTreeSet<&str> = expected.lines().collect();
        let new: BTreeSet<&str> = text.lines().collect();
        let gone: Vec<_> = old.difference(&new).collect();
        let added: Vec<_> = new.difference(&old).collect();
        panic!(
            "the public API changed (refresh with MIMEO_UPDATE_GOLDEN=1 if deliberate)\n\
             removed: {gone:#?}\nadded: {added:#?}"
        );
    }
}

/// Builds the crate's rustdoc JSON in a target directory of its own and returns its path.
fn rustdoc_json() -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("api-json");
    let status = Command::new(env!("CARGO"))
        .args([
            "rustdoc",
            "--quiet",
            "--locked",
            "-p",
            "mimeo",
            "--lib",
            "--target-dir",
        ])
        .arg(&target)
        .args(["--", "-Z", "unstable-options", "--output-format", "json"])
        .env("RUSTC_BOOTSTRAP", "1")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("run cargo rustdoc");
    assert!(status.success(), "cargo rustdoc failed");
    target.join("doc/mimeo.json")
}

struct Api<'a> {
    doc: &'a Value,
}

impl Api<'_> {
    fn item(&self, id: &str) -> Option<&Value> {
        self.doc["index"].get(id)
    }

    fn module(&self, id: &str, path: &str, out: &mut BTreeSet<String>) {
        let Some(m) = self.item(id) else { return };
        for child in m["inner"]["module"]["items"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let Some(item) = self.item(&child.to_string()) else {
                continue;
            };
            if let Some(u) = item["inner"].get("use") {
                // A re-export: the item it names, under the name it is exported as.
                let name = u["name"].as_str().unwrap_or_default();
                match u["id"].as_u64().and_then(|t| self.item(&t.to_string())) {
                    Some(target) => self.describe(target, &format!("{path}::{name}"), out),
                    None => {
                        out.insert(format!("use {path}::{name} = {}", u["source"]));
                    }
                }
            } else {
                let name = item["name"].as_str().unwrap_or_default();
                self.describe(item, &format!("{path}::{name}"), out);
            }
        }
    }

    fn describe(&self, item: &Value, path: &str, out: &mut BTreeSet<String>) {
        let inner = &item["inner"];
        let marks = if item["attrs"].to_string().contains("non_exhaustive") {
            " #[non_exhaustive]"
        } else {
            ""
        };
        let (kind, body) = match inner.as_object().and_then(|o| o.iter().next()) {
            Some((k, v)) => (k.as_str(), v),
            None => return,
        };
        match kind {
            "module" => {
                out.insert(format!("mod {path}"));
                self.module(&item["id"].to_string(), path, out);
            }
            "function" => {
                out.insert(format!("fn {path}{}", self.signature(body)));
            }
            "struct" => {
                out.insert(format!("struct {path}{}{marks}", generics(body)));
                let fields = &body["kind"];
                if let Some(plain) = fields.get("plain") {
                    for f in plain["fields"].as_array().into_iter().flatten() {
                        self.field(&f.to_string(), path, out);
                    }
                } else if let Some(tuple) = fields.get("tuple") {
                    out.insert(format!("struct {path}({})", self.tuple(tuple)));
                }
                self.impls(body, path, out);
            }
            "enum" => {
                out.insert(format!("enum {path}{}{marks}", generics(body)));
                for v in body["variants"].as_array().into_iter().flatten() {
                    let Some(var) = self.item(&v.to_string()) else {
                        continue;
                    };
                    let name = var["name"].as_str().unwrap_or_default();
                    let vk = &var["inner"]["variant"]["kind"];
                    let vpath = format!("{path}::{name}");
                    if let Some(fields) = vk.get("struct") {
                        out.insert(format!("variant {vpath} {{..}}"));
                        for f in fields["fields"].as_array().into_iter().flatten() {
                            self.field(&f.to_string(), &vpath, out);
                        }
                    } else if let Some(tuple) = vk.get("tuple") {
                        out.insert(format!("variant {vpath}({})", self.tuple(tuple)));
                    } else {
                        out.insert(format!("variant {vpath}"));
                    }
                }
                self.impls(body, path, out);
            }
            "trait" => {
                out.insert(format!("trait {path}"));
                for m in body["items"].as_array().into_iter().flatten() {
                    if let Some(mi) = self.item(&m.to_string()) {
                        let name = mi["name"].as_str().unwrap_or_default();
                        if let Some(f) = mi["inner"].get("function") {
                            out.insert(format!("trait fn {path}::{name}{}", self.signature(f)));
                        }
                    }
                }
            }
            "type_alias" => {
                out.insert(format!("type {path} = {}", self.ty(&body["type"])));
            }
            "constant" => {
                out.insert(format!("const {path}: {}", self.ty(&body["type"])));
            }
            other => {
                out.insert(format!("{other} {path}"));
            }
        }
    }

    /// The types of a tuple struct's or variant's fields.
    fn tuple(&self, fields: &Value) -> String {
        let shown: Vec<String> = fields
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| match self.item(&f.to_string()) {
                Some(f) => self.ty(&f["inner"]["struct_field"]),
                None => "_".into(),
            })
            .collect();
        shown.join(", ")
    }

    fn field(&self, id: &str, owner: &str, out: &mut BTreeSet<String>) {
        if let Some(f) = self.item(id) {
            let name = f["name"].as_str().unwrap_or_default();
            out.insert(format!(
                "field {owner}.{name}: {}",
                self.ty(&f["inner"]["struct_field"])
            ));
        }
    }

    /// Inherent public methods, and the names of the traits implemented (derives included).
    fn impls(&self, body: &Value, path: &str, out: &mut BTreeSet<String>) {
        for i in body["impls"].as_array().into_iter().flatten() {
            let Some(imp) = self.item(&i.to_string()) else {
                continue;
            };
            let imp = &imp["inner"]["impl"];
            if imp["is_synthetic"].as_bool() == Some(true) || !imp["blanket_impl"].is_null() {
                continue;
            }
            match imp["trait"].get("path").and_then(Value::as_str) {
                Some(tr) => {
                    out.insert(format!("impl {tr} for {path}"));
                }
                None => {
                    for m in imp["items"].as_array().into_iter().flatten() {
                        let Some(mi) = self.item(&m.to_string()) else {
                            continue;
                        };
                        if mi["visibility"] != "public" {
                            continue;
                        }
                        let name = mi["name"].as_str().unwrap_or_default();
                        if let Some(f) = mi["inner"].get("function") {
                            out.insert(format!("fn {path}::{name}{}", self.signature(f)));
                        } else if let Some(c) = mi["inner"].get("assoc_const") {
                            out.insert(format!("const {path}::{name}: {}", self.ty(&c["type"])));
                        }
                    }
                }
            }
        }
    }

    fn signature(&self, f: &Value) -> String {
        let inputs: Vec<String> = f["sig"]["inputs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                let name = p[0].as_str().unwrap_or("_");
                format!("{name}: {}", self.ty(&p[1]))
            })
            .collect();
        let output = match &f["sig"]["output"] {
            Value::Null => String::new(),
            t => format!(" -> {}", self.ty(t)),
        };
        format!("{}({}){output}", generics(f), inputs.join(", "))
    }

    fn ty(&self, t: &Value) -> String {
        let Some((kind, v)) = t.as_object().and_then(|o| o.iter().next()) else {
            return t.to_string();
        };
        match kind.as_str() {
            "primitive" | "generic" => v.as_str().unwrap_or_default().to_string(),
            "resolved_path" => self.path(v),
            "borrowed_ref" => {
                let lt = v["lifetime"]
                    .as_str()
                    .map(|l| format!("{l} "))
                    .unwrap_or_default();
                let m = if v["is_mutable"].as_bool() == Some(true) {
                    "mut "
                } else {
                    ""
                };
                format!("&{lt}{m}{}", self.ty(&v["type"]))
            }
            "slice" => format!("[{}]", self.ty(v)),
            "array" => format!(
                "[{}; {}]",
                self.ty(&v["type"]),
                v["len"].as_str().unwrap_or("_")
            ),
            "tuple" => {
                let parts: Vec<String> = v
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|x| self.ty(x))
                    .collect();
                format!("({})", parts.join(", "))
            }
            "dyn_trait" => {
                let traits: Vec<String> = v["traits"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|t| self.path(&t["trait"]))
                    .collect();
                format!("dyn {}", traits.join(" + "))
            }
            "impl_trait" => {
                let bounds: Vec<String> = v
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|b| b.get("trait_bound"))
                    .map(|b| self.path(&b["trait"]))
                    .collect();
                format!("impl {}", bounds.join(" + "))
            }
            _ => format!("{kind}{v}"),
        }
    }

    fn path(&self, p: &Value) -> String {
        // The last segment only: where a type is defined inside the crate is not part of the
        // surface (it is reached through its re-export).
        let full = p["path"].as_str().unwrap_or_default();
        let name = full.rsplit("::").next().unwrap_or(full).to_string();
        let args = &p["args"]["angle_bracketed"]["args"];
        let shown: Vec<String> = args
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| {
                if let Some(t) = a.get("type") {
                    self.ty(t)
                } else if let Some(l) = a.get("lifetime") {
                    l.as_str().unwrap_or_default().to_string()
                } else {
                    a.to_string()
                }
            })
            .collect();
        let constraints = &p["args"]["angle_bracketed"]["constraints"];
        let mut all = shown;
        for c in constraints.as_array().into_iter().flatten() {
            if let Some(eq) = c["binding"].get("equality") {
                all.push(format!(
                    "{} = {}",
                    c["name"].as_str().unwrap_or_default(),
                    self.ty(&eq["type"])
                ));
            }
        }
        // Parenthesised arguments, as in `FnMut(WorkItem)`.
        if let Some(par) = p["args"].get("parenthesized") {
            let ins: Vec<String> = par["inputs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|x| self.ty(x))
                .collect();
            let out = match &par["output"] {
                Value::Null => String::new(),
                t => format!(" -> {}", self.ty(t)),
            };
            return format!("{name}({}){out}", ins.join(", "));
        }
        if all.is_empty() {
            name
        } else {
            format!("{name}<{}>", all.join(", "))
        }
    }
}

/// `<...>` of an item's generic parameters (names only), or nothing.
fn generics(body: &Value) -> String {
    let names: Vec<&str> = body["generics"]["params"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str())
        .collect();
    if names.is_empty() {
        String::new()
    } else {
        format!("<{}>", names.join(", "))
    }
}
