//! Who this process runs as, on which host, as the operating system says
//! (a leaf: it imports nothing of the crate, so the lock's holder and the
//! command line's principal read it without depending on each other).

/// The operating system's account this process runs as, on this host: who
/// runs the command line, and who holds the lock. Read from the process's
/// own uid (named by the password database when it names it), never from
/// `$USER`, which anyone can set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OsAccount {
    /// The effective uid, when `/proc` tells it.
    pub(crate) uid: Option<u32>,
    /// The account's name, else its uid, else `unknown`.
    pub(crate) user: String,
    /// The host name, else `localhost`.
    pub(crate) host: String,
}

impl OsAccount {
    /// This process's account.
    pub(crate) fn current() -> OsAccount {
        use std::os::unix::fs::MetadataExt;
        // /proc/self belongs to the process's effective uid.
        let uid = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
        let user = match (uid.and_then(account_name), uid) {
            (Some(name), _) => name,
            (None, Some(uid)) => uid.to_string(),
            (None, None) => "unknown".to_string(),
        };
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".to_string());
        OsAccount { uid, user, host }
    }
}

/// The name of account `uid` in `/etc/passwd`, if it has one.
fn account_name(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id = fields.nth(1)?;
        (id.parse::<u32>().ok()? == uid && !name.is_empty()).then(|| name.to_string())
    })
}
