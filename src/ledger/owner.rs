//! Who holds a reservation: host, pid and the process's start time, so that
//! a later run can tell a live owner from a dead one (a reused pid has
//! another start time). Reservations also carry a lease, for owners that
//! cannot be checked.

use chrono::{DateTime, TimeDelta, Utc};

/// How long a reservation is trusted without a live owner to vouch for it.
pub const LEASE: TimeDelta = TimeDelta::minutes(10);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub host: String,
    pub pid: u32,
    /// The process start time as the OS reports it (clock ticks since boot on
    /// Linux); 0 when unknown.
    pub started: u64,
}

impl Owner {
    pub fn current() -> Owner {
        let pid = std::process::id();
        Owner { host: hostname(), pid, started: process_start(pid).unwrap_or(0) }
    }

    /// Whether the owner of a reservation made at `created` (and leased
    /// until `lease_until`) may still be sending it.
    pub fn may_be_alive(&self, me: &Owner, lease_until: DateTime<Utc>, now: DateTime<Utc>) -> bool {
        if self.host != me.host {
            return lease_until > now;
        }
        if self.pid == me.pid && self.started == me.started {
            return true;
        }
        match process_start(self.pid) {
            Some(started) => self.started == 0 || started == self.started,
            None => pid_exists(self.pid),
        }
    }
}

/// The host name: `$INDEXQ_HOST` if set (a container's or a CI runner's
/// name may not tell machines apart), else the kernel's.
fn hostname() -> String {
    if let Some(host) = std::env::var("INDEXQ_HOST").ok().filter(|h| !h.is_empty()) {
        return host;
    }
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

/// Field 22 of /proc/PID/stat: the start time in clock ticks since boot.
fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces; fields after it follow the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

fn pid_exists(pid: u32) -> bool {
    if std::path::Path::new("/proc/self").exists() {
        // With /proc present, a missing /proc/PID means the process is gone.
        return std::path::Path::new(&format!("/proc/{pid}")).exists();
    }
    signal_zero(pid)
}

/// Whether a process `pid` exists (signal 0 checks only that and permission).
#[cfg(unix)]
fn signal_zero(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Elsewhere (Windows) a process is not checked: it may be alive, and its
/// reservation is trusted until its lease ends, as another host's is.
#[cfg(not(unix))]
fn signal_zero(_pid: u32) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_process_is_alive_and_a_dead_child_is_not() {
        let me = Owner::current();
        let now = Utc::now();
        assert!(me.may_be_alive(&me, now, now));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let dead = Owner { host: me.host.clone(), pid, started: 1 };
        assert!(!dead.may_be_alive(&me, now + TimeDelta::hours(1), now));
    }

    #[test]
    fn another_host_is_trusted_until_its_lease_ends() {
        let me = Owner::current();
        let other = Owner { host: "elsewhere".into(), pid: 1, started: 1 };
        let now = Utc::now();
        assert!(other.may_be_alive(&me, now + LEASE, now));
        assert!(!other.may_be_alive(&me, now - TimeDelta::seconds(1), now));
    }
}
