//! `port`, `listen`, `auth`, `pathPrefix`, the `webHook…` properties,
//! `logLevel` and `allowFormContentType`: how the service is reached, who
//! may use it, where it reports, and what it logs.

use std::net::SocketAddr;

use crate::migrate::config::{
    ConfigError, Environment, Header, LogLevel, RawConfig, Substituter, auth, invalid, normalize_path_prefix,
};

/// The service section of a configuration, checked, defaults applied.
pub(super) struct Service {
    /// `port`.
    pub(super) port: u16,
    /// `listen`.
    pub(super) listen: Option<SocketAddr>,
    /// `auth`.
    pub(super) auth: auth::Auth,
    /// `pathPrefix`, normalized.
    pub(super) path_prefix: String,
    /// `webHookURL`.
    pub(super) web_hook_url: Option<String>,
    /// `webHookTemplate`.
    pub(super) web_hook_template: Option<String>,
    /// `webHookHeaders`.
    pub(super) web_hook_headers: Vec<Header>,
    /// `logLevel`.
    pub(super) log_level: LogLevel,
    /// `allowFormContentType`.
    pub(super) allow_form_content_type: bool,
}

impl Service {
    /// Takes the service section's properties out of `raw` and checks them
    /// in order: `port`, `listen`, `auth`, `pathPrefix`, the webhook,
    /// `logLevel`.
    pub(super) fn parse<E: Environment + ?Sized>(
        sub: &Substituter<'_, E>,
        raw: &mut RawConfig,
    ) -> Result<Service, ConfigError> {
        let port = sub.port(raw.port.take())?;
        let listen = auth::parse_listen(sub.optional("listen", raw.listen.take())?)?;
        let auth = auth::RawAuth::validate(raw.auth.take())?;
        let path_prefix =
            normalize_path_prefix(&sub.optional("pathPrefix", raw.path_prefix.take())?.unwrap_or_default())?;
        let (web_hook_url, web_hook_template, web_hook_headers) =
            sub.webhook(raw.web_hook_url.take(), raw.web_hook_template.take(), raw.web_hook_headers.take())?;
        let log_level = log_level(sub, raw.log_level.take())?;
        Ok(Service {
            port,
            listen,
            auth,
            path_prefix,
            web_hook_url,
            web_hook_template,
            web_hook_headers,
            log_level,
            allow_form_content_type: raw.allow_form_content_type.take().unwrap_or(false),
        })
    }
}

/// `logLevel`: one of DEBUG, INFO, ERROR and PANIC in any letter case
/// (default INFO).
fn log_level<E: Environment + ?Sized>(
    sub: &Substituter<'_, E>,
    value: Option<String>,
) -> Result<LogLevel, ConfigError> {
    match sub.optional("logLevel", value)? {
        None => Ok(LogLevel::Info),
        Some(text) => LogLevel::parse(&text)
            .ok_or_else(|| invalid("logLevel", format!("{text:?} is not one of DEBUG, INFO, ERROR, PANIC"))),
    }
}
