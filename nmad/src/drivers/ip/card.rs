//! Addresses: where an IP driver instance (tcp, udp) listens (loopback only for a single-node
//! job, every interface otherwise, or the one chosen), what its business card says, and which
//! addresses of a peer's card to try.
//!
//! Card: `NODE,PORT,ADDR[,ADDR...]` (no `;`, `=` or spaces; IPv6 addresses keep their colons).
//! Loopback addresses in a card only serve processes of the same node (same boot id and network
//! namespace); other nodes use the rest. This module owns no state and opens no socket.

use super::sys;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// More addresses than this make a card malformed.
const MAX_ADDRS: usize = 32;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Card {
    pub node: String,
    pub port: u16,
    pub addrs: Vec<IpAddr>,
}

/// `node` with anything a card cannot carry replaced by `_`.
pub fn card_node(node: &str) -> String {
    let n: String = node
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' })
        .collect();
    if n.is_empty() { "_".to_string() } else { n }
}

impl Card {
    pub fn parse(card: &str) -> Option<Card> {
        let mut parts = card.split(',');
        let node = parts.next().filter(|n| !n.is_empty() && card_node(n) == *n)?.to_string();
        let port = parts.next()?.parse().ok().filter(|&p| p != 0)?;
        let addrs: Vec<IpAddr> = parts.map(|a| a.parse().ok()).collect::<Option<_>>()?;
        if addrs.is_empty() || addrs.len() > MAX_ADDRS {
            return None;
        }
        Some(Card { node, port, addrs })
    }

    /// Whether a process on node `my_node` can reach some address of `card`.
    pub fn reaches(card: &str, my_node: &str) -> bool {
        Card::parse(card).is_some_and(|c| !c.candidates(my_node).is_empty())
    }

    /// The addresses of `card` (a peer's, rank `peer`) that driver `name` on node `my_node`
    /// may try, best first; an error saying why when the card is malformed or none is
    /// reachable.
    pub fn reachable(card: &str, my_node: &str, name: &str, peer: u32) -> std::io::Result<Vec<SocketAddr>> {
        let c = Card::parse(card).ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{name}: malformed card `{card}`"))
        })?;
        let candidates = c.candidates(my_node);
        if candidates.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AddrNotAvailable,
                format!(
                    "{name}: cannot connect to rank {peer} (card `{card}`): no address of the card is reachable from this node"
                ),
            ));
        }
        Ok(candidates)
    }

    /// Where to connect from a process on node `my_node`, best first.
    pub fn candidates(&self, my_node: &str) -> Vec<SocketAddr> {
        let same = self.node == card_node(my_node);
        let mut v: Vec<IpAddr> = self.addrs.iter().copied().filter(|a| same || !a.is_loopback()).collect();
        v.sort_by_key(|a| !a.is_loopback()); // stable: loopback first, card order otherwise
        v.into_iter().map(|a| SocketAddr::new(a, self.port)).collect()
    }
}

impl std::fmt::Display for Card {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{},{}", self.node, self.port)?;
        self.addrs.iter().try_for_each(|a| write!(f, ",{a}"))
    }
}

/// Where an instance listens, what its card advertises, and the local address its outgoing
/// connections start from (a rail bound to one interface sends through it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub bind: IpAddr,
    pub advertised: Vec<IpAddr>,
    pub local: Option<IpAddr>,
}

/// The plan for `tcp` or `udp` (`choice` = None: every interface, or loopback only if
/// `single_node`: no peer can come from elsewhere) or `tcp:IFACE` / `tcp:ADDRESS` (`udp:` alike).
pub fn plan(choice: Option<&str>, single_node: bool) -> io::Result<Plan> {
    if choice.is_none() && single_node {
        let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
        return Ok(Plan { bind: lo, advertised: vec![lo], local: None });
    }
    let ifs = sys::interface_addrs()?;
    plan_from(choice, &ifs)
}

fn plan_from(choice: Option<&str>, ifs: &[sys::IfAddr]) -> io::Result<Plan> {
    let ip = match choice {
        None => None,
        Some(c) => match c.parse::<IpAddr>() {
            Ok(ip) => Some(ip),
            Err(_) => Some(interface_ip(c, ifs)?),
        },
    };
    Ok(match ip {
        Some(ip) if !ip.is_unspecified() => Plan { bind: ip, advertised: vec![ip], local: Some(ip) },
        _ => {
            let mut advertised: Vec<IpAddr> = ifs
                .iter()
                .filter(|i| !i.loopback && i.ip.is_ipv4())
                .map(|i| i.ip)
                .take(MAX_ADDRS - 1)
                .collect();
            advertised.push(IpAddr::V4(Ipv4Addr::LOCALHOST));
            Plan { bind: IpAddr::V4(Ipv4Addr::UNSPECIFIED), advertised, local: None }
        }
    })
}

/// The IPv4 address of interface `name` (else its first global IPv6 one).
fn interface_ip(name: &str, ifs: &[sys::IfAddr]) -> io::Result<IpAddr> {
    let mine = || ifs.iter().filter(|i| i.name == name);
    let v6_usable = |ip: &IpAddr| matches!(ip, IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) != 0xfe80);
    mine().find(|i| i.ip.is_ipv4()).or_else(|| mine().find(|i| v6_usable(&i.ip))).map(|i| i.ip).ok_or_else(
        || {
            let mut names: Vec<&str> = ifs.iter().map(|i| i.name.as_str()).collect();
            names.dedup();
            io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "`{name}` is neither an address nor an up interface with one (up: {})",
                    names.join(", ")
                ),
            )
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ifs() -> Vec<sys::IfAddr> {
        let a = |name: &str, ip: &str, loopback| sys::IfAddr {
            name: name.into(),
            ip: ip.parse().unwrap(),
            loopback,
        };
        vec![
            a("lo", "127.0.0.1", true),
            a("eth0", "10.0.0.5", false),
            a("eth0", "fe80::1", false),
            a("v6", "fe80::2", false),
            a("v6", "2001:db8::7", false),
        ]
    }

    #[test]
    fn card_round_trips_and_rejects_malformed() {
        let c = Card {
            node: "ab12-4026531840".into(),
            port: 4242,
            addrs: vec!["10.0.0.5".parse().unwrap(), "::1".parse().unwrap()],
        };
        let s = c.to_string();
        assert!(!s.contains([';', '=', ' ']), "{s}");
        assert_eq!(Card::parse(&s), Some(c));
        for bad in [
            "",
            "garbage",
            "n,0,1.2.3.4",
            "n,70000,1.2.3.4",
            "n,1",
            "n,1,",
            "n,1,1.2.3.4,x",
            "n;x,1,1.2.3.4",
            ",1,1.2.3.4",
        ] {
            assert_eq!(Card::parse(bad), None, "`{bad}` accepted");
        }
        let many = format!("n,1{}", ",1.2.3.4".repeat(MAX_ADDRS + 1));
        assert_eq!(Card::parse(&many), None, "too many addresses");
        assert_eq!(card_node("a b;c=d"), "a_b_c_d");
    }

    #[test]
    fn same_node_prefers_loopback_other_nodes_never_use_it() {
        let c = Card::parse("n1,9,10.0.0.5,10.0.1.5,127.0.0.1").unwrap();
        let s: Vec<String> = c.candidates("n1").iter().map(|a| a.to_string()).collect();
        assert_eq!(s, ["127.0.0.1:9", "10.0.0.5:9", "10.0.1.5:9"]);
        let o: Vec<String> = c.candidates("n2").iter().map(|a| a.to_string()).collect();
        assert_eq!(o, ["10.0.0.5:9", "10.0.1.5:9"]);
        assert!(Card::parse("n1,9,127.0.0.1").unwrap().candidates("n2").is_empty());
    }

    #[test]
    fn plans_for_every_kind_of_choice() {
        let all = plan_from(None, &ifs()).unwrap();
        assert_eq!(all.bind.to_string(), "0.0.0.0");
        assert_eq!(all.local, None);
        let adv: Vec<String> = all.advertised.iter().map(|a| a.to_string()).collect();
        assert_eq!(adv, ["10.0.0.5", "127.0.0.1"]);
        let eth = plan_from(Some("eth0"), &ifs()).unwrap();
        assert_eq!((eth.bind.to_string(), eth.local), ("10.0.0.5".into(), Some(eth.bind)));
        assert_eq!(plan_from(Some("v6"), &ifs()).unwrap().bind.to_string(), "2001:db8::7");
        assert_eq!(
            plan_from(Some("127.0.0.2"), &ifs()).unwrap().advertised,
            ["127.0.0.2".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(plan_from(Some("0.0.0.0"), &ifs()).unwrap(), all, "unspecified = every interface");
        let e = plan_from(Some("nope0"), &ifs()).unwrap_err().to_string();
        assert!(e.contains("nope0") && e.contains("eth0"), "{e}");
    }

    #[test]
    fn this_machine_has_a_plan() {
        let p = plan(None, false).unwrap();
        assert!(p.advertised.iter().any(|a| a.is_loopback()));
        let single = plan(None, true).unwrap();
        assert_eq!((single.bind.to_string(), single.advertised), ("127.0.0.1".into(), vec![single.bind]));
        assert_eq!(plan(Some("127.0.0.2"), true).unwrap().bind.to_string(), "127.0.0.2", "a choice wins");
    }
}
