//! The summary of an operation, and the webhook payload rendered from it.
//!
//! The payload is the JSON of the summary plus `versionId`. With a
//! `webHookTemplate`, `${summary}` becomes that JSON escaped for use inside a
//! JSON string (so the template stays valid JSON), and `${summary.<field>}`
//! becomes one field's plain value.

use serde::Serialize;

use crate::migrate::template;

/// How many of each kind the plan applies; the counting fields of the
/// operation's Summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Tenants the operation covers (all tenants, or the one new tenant).
    pub tenants: u64,
    /// Single-schema migrations in the plan.
    pub single_migrations: u64,
    /// Distinct tenant migration files in the plan.
    pub tenant_migrations: u64,
    /// Tenant migration steps over all tenants.
    pub tenant_migrations_total: u64,
    /// Single-schema scripts in the plan.
    pub single_scripts: u64,
    /// Distinct tenant script files in the plan.
    pub tenant_scripts: u64,
    /// Tenant script steps over all tenants.
    pub tenant_scripts_total: u64,
}

impl Counts {
    /// `single_migrations + tenant_migrations_total`.
    pub fn migrations_grand_total(&self) -> u64 {
        self.single_migrations + self.tenant_migrations_total
    }

    /// `single_scripts + tenant_scripts_total`.
    pub fn scripts_grand_total(&self) -> u64 {
        self.single_scripts + self.tenant_scripts_total
    }

    /// Counts one file of kind `kind` run (or recorded) in `schemas`
    /// schemas: each schema is one single-schema step, while a tenant file
    /// counts once as a file and once per schema in its total. The rule of
    /// the planner and of what a failed version committed.
    pub fn add_file(&mut self, kind: crate::migrate::MigrationType, schemas: u64) {
        use crate::migrate::MigrationType;
        if schemas == 0 {
            return;
        }
        match kind {
            MigrationType::SingleMigration => self.single_migrations += schemas,
            MigrationType::SingleScript => self.single_scripts += schemas,
            MigrationType::TenantMigration => {
                self.tenant_migrations += 1;
                self.tenant_migrations_total += schemas;
            }
            MigrationType::TenantScript => {
                self.tenant_scripts += 1;
                self.tenant_scripts_total += schemas;
            }
        }
    }
}

/// The outcome of an operation, as served in `CreateResults.summary` and
/// posted to the webhook.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// When the operation started, RFC 3339 UTC (formatted by the shell,
    /// which owns the clock).
    pub started_at: String,
    /// Duration in seconds.
    pub duration: f64,
    /// The counts of the plan that was carried out.
    pub counts: Counts,
}

/// The fields `${summary.<field>}` may name.
pub const TEMPLATE_FIELDS: [&str; 12] = [
    "startedAt",
    "duration",
    "tenants",
    "singleMigrations",
    "tenantMigrations",
    "tenantMigrationsTotal",
    "migrationsGrandTotal",
    "singleScripts",
    "tenantScripts",
    "tenantScriptsTotal",
    "scriptsGrandTotal",
    "versionId",
];

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PayloadView<'a> {
    started_at: &'a str,
    duration: f64,
    tenants: u64,
    single_migrations: u64,
    tenant_migrations: u64,
    tenant_migrations_total: u64,
    migrations_grand_total: u64,
    single_scripts: u64,
    tenant_scripts: u64,
    tenant_scripts_total: u64,
    scripts_grand_total: u64,
    version_id: Option<i64>,
}

impl Summary {
    fn view(&self, version_id: Option<i64>) -> PayloadView<'_> {
        let c = &self.counts;
        PayloadView {
            started_at: &self.started_at,
            duration: if self.duration.is_finite() { self.duration } else { 0.0 },
            tenants: c.tenants,
            single_migrations: c.single_migrations,
            tenant_migrations: c.tenant_migrations,
            tenant_migrations_total: c.tenant_migrations_total,
            migrations_grand_total: c.migrations_grand_total(),
            single_scripts: c.single_scripts,
            tenant_scripts: c.tenant_scripts,
            tenant_scripts_total: c.tenant_scripts_total,
            scripts_grand_total: c.scripts_grand_total(),
            version_id,
        }
    }

    /// The JSON object of the summary plus `versionId`.
    pub fn to_json(&self, version_id: Option<i64>) -> String {
        serde_json::to_string(&self.view(version_id)).unwrap_or_else(|_| "{}".to_string())
    }

    /// The plain value of one field, as `${summary.<field>}` renders it.
    pub fn field(&self, name: &str, version_id: Option<i64>) -> Option<String> {
        let value = serde_json::to_value(self.view(version_id)).ok()?;
        match value.get(name)? {
            serde_json::Value::String(text) => Some(text.clone()),
            other => Some(other.to_string()),
        }
    }
}

/// The webhook request body: the template rendered, or the summary JSON
/// when there is no template.
pub fn render_payload(template: Option<&str>, summary: &Summary, version_id: Option<i64>) -> String {
    match template {
        Some(template) => render_template(template, summary, version_id),
        None => summary.to_json(version_id),
    }
}

/// Renders `template`, replacing `${summary}` and `${summary.<field>}`.
/// Other placeholders are left as they are.
pub fn render_template(template: &str, summary: &Summary, version_id: Option<i64>) -> String {
    let result: Result<String, std::convert::Infallible> = template::substitute(template, |name| {
        Ok(if name == "summary" {
            Some(escape_for_json_string(&summary.to_json(version_id)))
        } else {
            name.strip_prefix("summary.").and_then(|field| summary.field(field, version_id))
        })
    });
    match result {
        Ok(text) => text,
        Err(never) => match never {},
    }
}

/// Checks that every `${summary.<field>}` of a template names a known field.
pub fn validate_template(template: &str) -> Result<(), String> {
    for name in template::placeholder_names(template) {
        if let Some(field) = name.strip_prefix("summary.")
            && !TEMPLATE_FIELDS.contains(&field)
        {
            return Err(format!("${{{name}}} names no summary field; known fields: {}", TEMPLATE_FIELDS.join(", ")));
        }
    }
    Ok(())
}

/// Names in a message: the first `shown`, then how many more
/// (`"t1, t2 and 3 more"`), so a message about thousands of tenants stays
/// a line.
pub fn some_of(names: &[String], shown: usize) -> String {
    let mut text = names.iter().take(shown).map(String::as_str).collect::<Vec<_>>().join(", ");
    if names.len() > shown {
        text.push_str(&format!(" and {} more", names.len() - shown));
    }
    text
}

/// Escapes `\` and `"` so `text` can sit inside a JSON string literal.
fn escape_for_json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn some_of_names_the_first_then_counts_the_rest() {
        let names: Vec<String> = (1..=5).map(|i| format!("t{i}")).collect();
        assert_eq!(some_of(&names, 2), "t1, t2 and 3 more");
        assert_eq!(some_of(&names, 5), "t1, t2, t3, t4, t5");
        assert_eq!(some_of(&names[..1], 20), "t1");
        assert_eq!(some_of(&[], 20), "");
    }

    fn summary() -> Summary {
        Summary {
            started_at: "2026-11-22T05:00:00.5Z".into(),
            duration: 0.25,
            counts: Counts {
                tenants: 3,
                single_migrations: 2,
                tenant_migrations: 4,
                tenant_migrations_total: 12,
                single_scripts: 1,
                tenant_scripts: 1,
                tenant_scripts_total: 3,
            },
        }
    }

    const JSON: &str = r#"{"startedAt":"2026-11-22T05:00:00.5Z","duration":0.25,"tenants":3,"singleMigrations":2,"tenantMigrations":4,"tenantMigrationsTotal":12,"migrationsGrandTotal":14,"singleScripts":1,"tenantScripts":1,"tenantScriptsTotal":3,"scriptsGrandTotal":4,"versionId":7}"#;

    #[test]
    fn payload_without_template_is_the_summary_json() {
        assert_eq!(render_payload(None, &summary(), Some(7)), JSON);
    }

    #[test]
    fn summary_placeholder_is_escaped_for_a_json_string() {
        let rendered = render_template(r#"{"text": "done: ${summary}"}"#, &summary(), Some(7));
        assert_eq!(rendered, format!(r#"{{"text": "done: {}"}}"#, JSON.replace('"', "\\\"")));
        let parsed: serde_json::Value = serde_json::from_str(&rendered).unwrap();
        assert_eq!(parsed["text"].as_str().unwrap(), format!("done: {JSON}"));
    }

    #[test]
    fn field_placeholders_render_plain_values() {
        let rendered = render_template(
            "v=${summary.versionId} at ${summary.startedAt} total ${summary.migrationsGrandTotal} ${other}",
            &summary(),
            Some(7),
        );
        assert_eq!(rendered, "v=7 at 2026-11-22T05:00:00.5Z total 14 ${other}");
        assert_eq!(render_template("${summary.versionId}", &summary(), None), "null");
    }

    #[test]
    fn unknown_fields_are_refused_by_validation() {
        assert_eq!(validate_template("${summary} ${summary.tenants} ${x}"), Ok(()));
        let err = validate_template("${summary.nope}").unwrap_err();
        assert!(err.starts_with("${summary.nope} names no summary field; known fields: startedAt, duration"), "{err}");
    }
}
