//! SLURM's compressed host lists (`node[01-03,07],gpu5`): only the first host is needed, as the
//! rendezvous address.

/// The first host of a SLURM host list, keeping the zero padding of its number.
pub(crate) fn first_host(list: &str) -> Option<String> {
    let list = list.trim();
    // The first top-level entry: commas inside brackets separate ranges, not hosts.
    let mut depth = 0usize;
    let end = list
        .char_indices()
        .find(|&(_, c)| {
            match c {
                '[' => depth += 1,
                ']' => depth = depth.saturating_sub(1),
                _ => {}
            }
            c == ',' && depth == 0
        })
        .map_or(list.len(), |(i, _)| i);
    let entry = &list[..end];
    let host = match entry.split_once('[') {
        None => entry.to_string(),
        Some((prefix, rest)) => {
            let (ranges, suffix) = rest.split_once(']')?;
            let first = ranges.split([',', '-']).next()?.trim();
            if first.is_empty() || !first.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            format!("{prefix}{first}{suffix}")
        }
    };
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::first_host;

    #[test]
    fn first_hosts() {
        assert_eq!(first_host("node1").as_deref(), Some("node1"));
        assert_eq!(first_host("a,b").as_deref(), Some("a"));
        assert_eq!(
            first_host("gpu[007-009,011],cpu1").as_deref(),
            Some("gpu007")
        );
        assert_eq!(first_host("n[3,5]x,m1").as_deref(), Some("n3x"));
        assert_eq!(first_host("n[,]"), None);
        assert_eq!(first_host("n[1-2"), None);
        assert_eq!(first_host(""), None);
    }
}
