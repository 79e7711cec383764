//! The nemesis of `locklab check --library L --nemesis F`: seeded faults
//! injected while the clients run, each recorded as a fault marker
//! ([`FaultMark`]) that the history keeps and the timeline draws.
//!
//! Every fault waits for a moment that matters — a client holds the lock
//! (its last history line is a granted acquire, before its write) — then
//! hits, for three to four leases unless said otherwise. Whom, how long and
//! the gaps between faults come from `--seed`.
//!
//! | fault | on | how | what a lock should survive |
//! |---|---|---|---|
//! | `pause` | the holder | SIGSTOP … SIGCONT of its process | a GC pause |
//! | `node-pause` | the lock's node | sim-server's [`Server::pause`](sim_server::Server::pause): as `kill -STOP` of redis-server | a frozen VM |
//! | `clock-jump` | the lock's node | [`Server::jump_clock`](sim_server::Server::jump_clock) forward by 3–4 leases | NTP stepping the clock |
//! | `clock-drift` | the lock's node | [`Server::drift_clock`](sim_server::Server::drift_clock) 4× fast for one lease | a clock running fast |
//! | `restart` | the lock's node | stopped and started on the same port, empty | a restart without persistence |
//! | `link-delay` | the holder | its links to every node delayed 1.5 leases each way | a slow network |
//! | `link-cut` | the holder | every request and reply on its links lost | a partition |
//! | `failover` | master + replica | replication cut; at the next grant the master killed, the replica promoted | a failover that loses an acknowledged write |
//! | `none` | nothing | no fault | a baseline: the library on its own |
//!
//! Under a link fault the workloads' work reads from the lock's node before
//! their write (`Round::read` in `check_run`), so the holder's work crosses
//! its slow or cut link and outlasts the lease: without fencing its write
//! lands after the next holder's. (A link fault on a client that is only
//! waiting finds nothing: with two clients the lock is rarely free when its
//! delayed request arrives.)
//!
//! The node faults need nodes the lab owns (sim-server): a server given
//! with `--redis` is never paused, restarted or moved in time. `failover`
//! needs replication, which sim-server does not have: its master and
//! replica are real redis-servers of a managed topology
//! ([`Servers`], `replicated`), faulted with that topology's own faults. Link faults
//! go through the real session's delaying proxy ([`LinkProxy`]), one per
//! client and node, so they work in front of either server.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use locklab_core::history::FaultMark;
use locklab_core::rng::Rng;
use locklab_core::server::Profile;

use super::check_run::{io, mono_ns, signal, Clients, Nemesis, RunError, POLL};
use crate::real::faults::proxy::{link_seed, LinkFault, LinkProxy};
use crate::real::topology::{NodeFault, Servers, TopologyKind};
use crate::sim_server;

/// A pause (of a client or a node) and a link fault last this many leases
/// and up to one more: a fault well past the lease, with room for the
/// others to take the lock and write meanwhile however slow the machine.
pub(super) const PAUSE_LEASES: u64 = 3;
/// `clock-drift`: how fast the node's clock runs while it drifts (parts
/// per million over real time: 3,000,000 is four times as fast).
const DRIFT_PPM: i64 = 3_000_000;
/// A restarted node's port may take a moment to be free again.
const REBIND_TRIES: u32 = 50;

/// What the nemesis acts on besides the client processes.
pub(super) struct Targets {
    /// The sim-server nodes the lab started (empty with `--redis`).
    pub(super) nodes: Vec<sim_server::Server>,
    /// Per client, its proxy to each node (link faults only).
    pub(super) links: Vec<Vec<LinkProxy>>,
    /// `failover`'s master (node 0) and replica (node 1).
    pub(super) topology: Option<Servers>,
}

impl Targets {
    /// Per client, the proxies in front of `urls` for a link nemesis.
    pub(super) fn links(&mut self, nemesis: Nemesis, clients: u32, urls: &[String]) -> Result<(), RunError> {
        if !nemesis.on_link() {
            return Ok(());
        }
        let upstreams = urls
            .iter()
            .map(|u| upstream(u).ok_or_else(|| RunError::Url(u.clone())))
            .collect::<Result<Vec<_>, _>>()?;
        for c in 1..=clients.max(1) {
            let mut mine = Vec::new();
            for (n, up) in upstreams.iter().enumerate() {
                let seed = link_seed(&format!("c{c}"), n as u32);
                mine.push(LinkProxy::start(*up, LinkFault::default(), seed).map_err(io("start a link proxy"))?);
            }
            self.links.push(mine);
        }
        Ok(())
    }

    /// Start `failover`'s master and replica: real redis-servers with
    /// Redis's own asynchronous replication (sim-server has none), on
    /// loopback ports, killed when the run ends. The master's URL.
    pub(super) fn replicated(&mut self) -> Result<Vec<String>, RunError> {
        let topology = Servers::start(TopologyKind::Replicated)?;
        let master = topology.nodes().first().map(|n| n.url.clone()).unwrap_or_default();
        self.topology = Some(topology);
        Ok(vec![master])
    }

    /// Where the clients go once the master is gone: the replica's URL.
    pub(super) fn failover_url(&self) -> Option<String> {
        self.topology.as_ref()?.nodes().get(1).map(|n| n.url.clone())
    }

    /// The URLs client `i` (0-based) connects to.
    pub(super) fn urls_for(&self, i: usize, urls: &[String]) -> Vec<String> {
        self.links
            .get(i)
            .map_or_else(|| urls.to_vec(), |l| l.iter().map(LinkProxy::url).collect())
    }
}

/// `redis://host:port/…` → the socket address, for a link proxy's upstream.
fn upstream(url: &str) -> Option<SocketAddr> {
    let rest = url.strip_prefix("redis://")?;
    let hostport = rest.split('/').next()?;
    let hostport = hostport.rsplit('@').next()?;
    hostport.parse().ok()
}

/// The seeded nemesis, until the run's end: after a gap, wait for a
/// holder, inject the fault, record it.
pub(super) fn run(
    nemesis: Nemesis,
    clients: &mut Clients,
    targets: &mut Targets,
    (seed, lease_ms, end_ms, t0): (u64, u64, u64, u64),
) -> Result<Vec<FaultMark>, RunError> {
    let mut rng = Rng::new(seed);
    let now = || (mono_ns() - t0) / 1_000_000;
    let mut faults = Vec::new();
    let mut next = rng.between(lease_ms / 2, lease_ms);
    let mut failover = Failover::default();
    while now() < end_ms {
        std::thread::sleep(POLL);
        for c in &mut clients.all {
            c.tail.poll();
        }
        if now() < next {
            continue;
        }
        let holders: Vec<usize> = (0..clients.all.len())
            .filter(|&i| clients.all[i].tail.holding)
            .collect();
        if nemesis == Nemesis::Failover {
            if let Some(mark) = failover.step(targets, clients, &holders, (now(), lease_ms))? {
                faults.push(mark);
            }
            continue;
        }
        if holders.is_empty() || nemesis == Nemesis::None {
            continue;
        }
        let holder = holders[rng.below(holders.len() as u64) as usize];
        let from = now();
        let (target, note) = inject(nemesis, clients, targets, &mut rng, holder, lease_ms)?;
        faults.push(FaultMark {
            line: 0,
            fault: nemesis.name().to_owned(),
            target: Some(target),
            from_ms: from,
            to_ms: Some(now()),
            note: Some(note),
        });
        next = now() + rng.between(lease_ms, 2 * lease_ms);
    }
    Ok(faults)
}

/// Inject one fault now; whom it hit and how, for its marker.
fn inject(
    nemesis: Nemesis,
    clients: &mut Clients,
    targets: &mut Targets,
    rng: &mut Rng,
    holder: usize,
    lease_ms: u64,
) -> Result<(String, String), RunError> {
    let hold = lease_ms * PAUSE_LEASES + rng.between(0, lease_ms);
    let marker = match nemesis {
        Nemesis::Pause => {
            let victim = &mut clients.all[holder];
            signal(&victim.child, rustix::process::Signal::STOP);
            std::thread::sleep(Duration::from_millis(hold));
            signal(&victim.child, rustix::process::Signal::CONT);
            victim.tail.holding = false;
            let leases = hold / lease_ms.max(1);
            (victim.name.clone(), format!("SIGSTOP for {hold} ms, {leases} leases"))
        }
        Nemesis::NodePause => {
            let node = &targets.nodes[0];
            node.pause();
            std::thread::sleep(Duration::from_millis(hold));
            node.resume();
            ("n1".to_owned(), format!("node stopped for {hold} ms (as kill -STOP)"))
        }
        Nemesis::ClockJump => {
            targets.nodes[0].jump_clock(i64::try_from(hold).unwrap_or(i64::MAX));
            ("n1".to_owned(), format!("node clock jumped {hold} ms forward"))
        }
        Nemesis::ClockDrift => {
            let node = &targets.nodes[0];
            node.drift_clock(DRIFT_PPM);
            std::thread::sleep(Duration::from_millis(lease_ms));
            node.drift_clock(0);
            let gained = lease_ms * DRIFT_PPM.unsigned_abs() / 1_000_000;
            (
                "n1".to_owned(),
                format!("node clock ran 4× fast for {lease_ms} ms (gained {gained} ms)"),
            )
        }
        Nemesis::Restart => {
            restart(&mut targets.nodes, 0)?;
            (
                "n1".to_owned(),
                "node restarted without persistence: every key lost".to_owned(),
            )
        }
        Nemesis::LinkDelay => {
            // The holder, before its work's read: the read comes back
            // after its lease ran out.
            let victim = holder;
            let each_way = lease_ms * 3 / 2;
            let slow = LinkFault {
                latency_ms: each_way,
                ..LinkFault::default()
            };
            link(targets, victim, slow, hold);
            let name = clients.all[victim].name.clone();
            (name, format!("links delayed {each_way} ms each way for {hold} ms"))
        }
        // Driven by `Failover::step` (two steps), not from here; `none` never strikes.
        Nemesis::Failover | Nemesis::None => ("master".to_owned(), "see Failover::step".to_owned()),
        Nemesis::LinkCut => {
            let cut = LinkFault {
                drop_request_permille: 1000,
                drop_reply_permille: 1000,
                ..LinkFault::default()
            };
            link(targets, holder, cut, hold);
            let name = clients.all[holder].name.clone();
            (name, format!("links cut for {hold} ms (every request and reply lost)"))
        }
    };
    Ok(marker)
}

/// Client `i`'s links misbehave as `fault` for `ms`, then are plain again.
fn link(targets: &Targets, i: usize, fault: LinkFault, ms: u64) {
    let mine = targets.links.get(i).map_or(&[][..], Vec::as_slice);
    for p in mine {
        p.set(fault);
    }
    std::thread::sleep(Duration::from_millis(ms));
    for p in mine {
        p.set(LinkFault::default());
    }
}

/// Stop sim-server node `i` and start a new one, empty, on the same port:
/// redis-server restarted with `--save ''` and no AOF. Its clients' next
/// command finds the connection closed and connects again.
fn restart(nodes: &mut Vec<sim_server::Server>, i: usize) -> Result<(), RunError> {
    let port = nodes[i].port();
    // Stopped first: the new one cannot listen on the port before.
    drop(nodes.remove(i));
    let cfg = sim_server::SimServerConfig::new(Ipv4Addr::LOCALHOST.into(), port, Profile::V7_0);
    let mut tries = 0;
    loop {
        match sim_server::spawn(cfg.clone()) {
            Ok(s) => {
                nodes.insert(i, s);
                return Ok(());
            }
            Err(e) if tries >= REBIND_TRIES => return Err(io(format!("restart the node on port {port}"))(e)),
            Err(_) => {
                tries += 1;
                std::thread::sleep(POLL);
            }
        }
    }
}

/// `failover` in two steps, once per run: replication is cut, so the
/// replica lags from then on; a lease later (what it had expired), at the
/// next grant, the master
/// is killed (SIGKILL) and the replica promoted (`REPLICAOF NO ONE`): the
/// lock its holder was just granted is on no node any more. Asynchronous
/// replication loses an acknowledged write this way whenever the master
/// dies before the replica got it; cutting replication first makes
/// "before" certain however fast the machine.
#[derive(Default)]
struct Failover {
    /// When replication was cut, and each client's grants by then.
    cut: Option<(u64, Vec<u64>)>,
    done: bool,
}

impl Failover {
    fn step(
        &mut self,
        targets: &mut Targets,
        clients: &Clients,
        holders: &[usize],
        (now, lease_ms): (u64, u64),
    ) -> Result<Option<FaultMark>, RunError> {
        let Some(topology) = targets.topology.as_mut() else {
            return Ok(None);
        };
        if self.done {
            return Ok(None);
        }
        let Some((from, before)) = &mut self.cut else {
            topology.fault(NodeFault::CutReplication { node: 1 })?;
            self.cut = Some((now, Vec::new()));
            return Ok(None);
        };
        // Locks the replica got before the cut expire there one lease
        // later; until then a client that fails over would find the lock
        // still taken on the promoted replica. Count grants from then on.
        if now < *from + lease_ms {
            return Ok(None);
        }
        if before.is_empty() {
            *before = clients.all.iter().map(|c| c.tail.grants).collect();
            return Ok(None);
        }
        let from = *from;
        let before = before.clone();
        let granted_since = |&i: &usize| clients.all[i].tail.grants > before.get(i).copied().unwrap_or(0);
        let Some(&holder) = holders.iter().find(|i| granted_since(i)) else {
            return Ok(None);
        };
        topology.fault(NodeFault::Crash { node: 0 })?;
        topology.fault(NodeFault::Promote { node: 1 })?;
        self.done = true;
        let who = &clients.all[holder].name;
        Ok(Some(FaultMark {
            line: 0,
            fault: Nemesis::Failover.name().to_owned(),
            target: Some("master".to_owned()),
            from_ms: from,
            to_ms: Some(now),
            note: Some(format!(
                "replication cut at {from} ms; at {now} ms, {who} holding a lock granted since, which the replica \
                 never got, the master was killed and the replica promoted"
            )),
        }))
    }
}
