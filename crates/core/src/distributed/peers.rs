//! Which peer died: every rank publishes `<host> <pid>` in the store when it joins, so that a
//! rank whose collective fails can look for exited peers on its own machine. Peers on other
//! machines cannot be checked from here; the message then says so.

use std::path::Path;

/// One rank's identity as published at rendezvous.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Peer {
    pub host: String,
    pub pid: u32,
}

/// Parses the shim's peer table: one `<host> <pid>` line per rank, in rank order.
pub(crate) fn parse_peers(table: &str) -> Vec<Option<Peer>> {
    table
        .lines()
        .map(|line| {
            let (host, pid) = line.rsplit_once(' ')?;
            Some(Peer {
                host: host.to_string(),
                pid: pid.trim().parse().ok()?,
            })
        })
        .collect()
}

/// Whether process `pid` has exited (gone, or a zombie waiting for its parent).
fn has_exited(pid: u32) -> bool {
    let proc_dir = Path::new("/proc");
    if !proc_dir.is_dir() {
        return false;
    }
    match std::fs::read_to_string(proc_dir.join(pid.to_string()).join("stat")) {
        Err(_) => true,
        // The state follows the parenthesised command name, which may itself hold spaces.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

/// Ranks other than `me` that ran on this machine and have exited.
pub(crate) fn exited_ranks(peers: &[Option<Peer>], me: usize) -> Vec<usize> {
    let Some(Some(mine)) = peers.get(me) else {
        return Vec::new();
    };
    peers
        .iter()
        .enumerate()
        .filter_map(|(rank, peer)| {
            let peer = peer.as_ref()?;
            (rank != me && peer.host == mine.host && has_exited(peer.pid)).then_some(rank)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exited_local_peers_are_found() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let me = std::process::id();
        let table = format!("box {me}\nbox {gone}\nother {gone}\nbox {me}\n");
        let peers = parse_peers(&table);
        assert_eq!(
            peers[1],
            Some(Peer {
                host: "box".into(),
                pid: gone
            })
        );
        // Rank 2 has the dead pid but lives on another machine: it cannot be judged from here.
        assert_eq!(exited_ranks(&peers, 0), vec![1]);
        assert!(parse_peers("garbage")[0].is_none());
    }
}
