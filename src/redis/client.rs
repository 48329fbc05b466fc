//! Connections to a standalone server or to the masters of a Redis Cluster,
//! with this crate's own slot routing: commands go out as one pipeline per
//! node, and a command a node refuses with MOVED or ASK (so it did not run)
//! is sent again where the node says. A command whose reply was lost is
//! sent again only through [`Client::query`], which callers use only for
//! commands that may run twice (`GET`, `HGETALL`, `HSET` of a time); for the
//! rest the caller decides what a lost reply means (for a test-and-set,
//! every key of it counts as new).
//!
//! A redirected command is sent again after the commands behind it ran:
//! callers never have two commands whose order matters on one key in flight
//! at once (a test-and-set sends a line given twice in a batch once).
//!
//! The `redis` crate's own cluster client is not used: its pipelines do not
//! follow MOVED/ASK, and its single commands silently run again after a
//! lost reply (see docs/REDIS.md).

use super::location::Location;
use super::slot::SLOTS;
use anyhow::{Context, Result, anyhow, bail};
use redis::{Cmd, Connection, ServerErrorKind, Value};
use std::time::{Duration, Instant};

/// A command, packed, and the slot of its key.
pub(super) struct Routed {
    /// The slot the command's key hashes to.
    pub slot: u16,
    /// The command as sent.
    pub packed: Vec<u8>,
}

impl Routed {
    /// `cmd` for the node of `slot`.
    pub(super) fn new(slot: u16, cmd: &Cmd) -> Routed {
        Routed {
            slot,
            packed: cmd.get_packed_command(),
        }
    }
}

/// Commands sent, whose replies [`Client::recv_raw`] reads.
pub(super) struct Sent {
    cmds: Vec<Routed>,
    by_node: Vec<Vec<(usize, bool)>>,
}

/// The replies read for commands sent, and the commands a node redirected
/// (to send again with [`Client::finish`]).
pub(super) struct Raw {
    cmds: Vec<Routed>,
    replies: Vec<Option<Value>>,
    again: Vec<(usize, Option<usize>)>,
    refresh: bool,
    wait: bool,
}

impl Raw {
    /// Whether some commands must be sent again.
    pub(super) fn redirected(&self) -> bool {
        !self.again.is_empty()
    }
}

/// Why [`Client::exec`] gave no replies.
#[derive(Debug)]
pub(super) enum Failure {
    /// Nothing was sent: no command ran.
    NotSent(anyhow::Error),
    /// Commands were sent and some replies never came: they may or may not
    /// have run.
    Lost(anyhow::Error),
}

impl Failure {
    /// The error, whatever happened.
    pub(super) fn into_error(self) -> anyhow::Error {
        match self {
            Failure::NotSent(e) | Failure::Lost(e) => e,
        }
    }
}

/// How a run talks to its servers.
#[derive(Clone, Copy, Debug)]
pub struct Link {
    /// `--redis-timeout`: the longest wait for an answer or a reconnection.
    pub timeout: Duration,
    /// `--redis-wait`: replicas of each master that must hold a batch's
    /// writes (Redis `WAIT`) before its lines are printed; 0: no wait.
    pub replicas: u32,
}

/// One server (a standalone one, or a Cluster master).
struct Node {
    addr: (String, u16),
    conn: Option<Connection>,
    /// Commands went to it since the last `WAIT` (see `wait_replicas`).
    used: bool,
    /// When its connection last heard from it (opened, or a reply read).
    heard: Instant,
    /// Replies its connection owes (commands sent, not answered yet).
    owed: usize,
}

/// How long a connection may stay silent before it is checked with a
/// `PING` ahead of a command: a server's `timeout`, a proxy or a NAT may
/// have closed it meanwhile, and a command sent on a closed connection
/// loses its reply (a test-and-set would then take its lines as new, and
/// stop the run). A `PING` is safe to lose: the connection is reopened.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// Open connections to a filter's servers.
pub(super) struct Client {
    loc: Location,
    timeout: Duration,
    replicas: u32,
    nodes: Vec<Node>,
    /// Cluster only: the node serving each slot.
    slots: Option<Vec<u16>>,
    /// TLS only: the certificates given in the environment (see [`TLS_ENV`]).
    certs: Option<Box<redis::TlsCertificates>>,
    /// Commands a node redirected (MOVED, ASK, TRYAGAIN) so far.
    redirected: u64,
}

/// Environment variables naming PEM files for TLS (`rediss://`): the
/// certificate authorities to trust instead of the system's, and the client
/// certificate and key a server may ask for (Redis asks by default).
pub(crate) const TLS_ENV: [&str; 3] = ["SEEN_REDIS_CA", "SEEN_REDIS_CERT", "SEEN_REDIS_KEY"];

/// The TLS certificates named by [`TLS_ENV`], read once; `None` when none is
/// set (the system's authorities, no client certificate).
fn tls_certificates() -> Result<Option<redis::TlsCertificates>> {
    // The PEM file `var` names, which must hold `what` (its PEM `tag`).
    let read = |var: &str, what: &str, tag: &[u8]| -> Result<Option<Vec<u8>>> {
        let Some(path) = std::env::var_os(var).filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        let pem = std::fs::read(&path).with_context(|| {
            format!(
                "cannot read {var}={}: it must name a PEM file",
                path.display()
            )
        })?;
        if !pem.windows(tag.len()).any(|w| w == tag) {
            bail!(
                "{var}={} holds no {what}: it must name a PEM file of one",
                path.display()
            );
        }
        Ok(Some(pem))
    };
    const CERT: &[u8] = b"-----BEGIN CERTIFICATE-----";
    let [ca, cert, key] = TLS_ENV;
    let root_cert = read(ca, "certificate", CERT)?;
    let client_cert = read(cert, "certificate", CERT)?;
    let client_key = read(key, "private key", b"PRIVATE KEY-----")?;
    let client_tls = match (client_cert, client_key) {
        (Some(client_cert), Some(client_key)) => Some(redis::ClientTlsConfig {
            client_cert,
            client_key,
        }),
        (None, None) => None,
        _ => bail!("{cert} and {key} go together: set both (a client certificate and its key)"),
    };
    Ok(
        (root_cert.is_some() || client_tls.is_some()).then_some(redis::TlsCertificates {
            client_tls,
            root_cert,
        }),
    )
}

impl Client {
    /// Connects to the server of `loc` (to every master of its Cluster),
    /// waiting at most `timeout` for any one step.
    ///
    /// # Errors
    /// A server that cannot be reached or refuses us, naming its address.
    pub(super) fn connect(loc: &Location, link: Link) -> Result<Client> {
        let mut client = Client {
            loc: loc.clone(),
            timeout: link.timeout,
            replicas: link.replicas,
            nodes: Vec::new(),
            slots: None,
            certs: if loc.tls {
                tls_certificates()?.map(Box::new)
            } else {
                None
            },
            redirected: 0,
        };
        if loc.cluster {
            client.refresh_slots()?;
        } else {
            let addr = loc.nodes[0].clone();
            let conn = client.open(&addr)?;
            client.nodes.push(Node {
                addr,
                conn: Some(conn),
                used: false,
                heard: Instant::now(),
                owed: 0,
            });
        }
        Ok(client)
    }

    /// The location this client serves.
    /// Commands a node redirected so far: a caller that needs its
    /// commands on one key to run in the order sent compares it before and
    /// after (a redirected one ran after those behind it).
    pub(super) fn redirected(&self) -> u64 {
        self.redirected
    }

    pub(super) fn location(&self) -> &Location {
        &self.loc
    }

    /// Opens a connection to `addr` and sees the server answer, within the
    /// timeout.
    fn open(&self, addr: &(String, u16)) -> Result<Connection> {
        // No `CLIENT SETINFO`: the crate reads each set-up reply with the
        // whole timeout it is given, so a server that accepts and never
        // answers held a connection attempt for one timeout per set-up
        // command. The set-up left (AUTH, SELECT, or a PING) shares it.
        let start = Instant::now();
        let mut settings = redis::RedisConnectionInfo::default().set_skip_set_lib_name();
        let mut steps: u32 = 0;
        if !self.loc.cluster && self.loc.db != 0 {
            settings = settings.set_db(self.loc.db);
            steps += 1;
        }
        if let Some(u) = &self.loc.user {
            settings = settings.set_username(u);
        }
        if let Some(p) = &self.loc.password {
            settings = settings.set_password(p);
            steps += 1;
        }
        let info = if self.loc.tls {
            redis::ConnectionAddr::TcpTls {
                host: addr.0.clone(),
                port: addr.1,
                insecure: false,
                tls_params: None,
            }
        } else {
            redis::ConnectionAddr::Tcp(addr.0.clone(), addr.1)
        };
        let info = redis::IntoConnectionInfo::into_connection_info(info)
            .map(|i| i.set_redis_settings(settings))
            .with_context(|| self.at(addr))?;
        let client = match &self.certs {
            Some(certs) => redis::Client::build_with_tls(info, (**certs).clone()),
            None => redis::Client::open(info),
        };
        let left = || {
            self.timeout
                .saturating_sub(start.elapsed())
                .max(Duration::from_millis(1))
        };
        // The crate reads each of its set-up replies with the whole of its
        // share; the PING has what is left.
        let share = self.timeout / steps.max(1);
        let conn = client
            .and_then(|c| c.get_connection_with_timeout(share))
            .and_then(|mut conn| {
                // Without set-up, the first command is where a TLS
                // handshake or a server speaking something else fails:
                // make that here, a connection error with what to do.
                if steps == 0 {
                    conn.set_read_timeout(Some(left()))?;
                    conn.set_write_timeout(Some(left()))?;
                    redis::cmd("PING").query::<Value>(&mut conn)?;
                }
                Ok(conn)
            })
            .map_err(|e| self.not_connected(addr, &e))?;
        conn.set_read_timeout(Some(self.timeout))
            .and_then(|()| conn.set_write_timeout(Some(self.timeout)))
            .with_context(|| self.at(addr))?;
        Ok(conn)
    }

    /// Why a connection to `addr` could not be opened, and what to do.
    fn not_connected(&self, addr: &(String, u16), e: &redis::RedisError) -> anyhow::Error {
        let (host, port, loc) = (&addr.0, addr.1, &self.loc);
        if e.is_timeout() {
            return anyhow!(
                "cannot connect to Redis at {host}:{port} ({loc}): {}: check that a Redis \
                 server listens there, not another service, and that the network lets its \
                 replies through",
                self.no_answer()
            );
        }
        let hint = self.connect_hint(&e.to_string());
        anyhow!("cannot connect to Redis at {host}:{port} ({loc}): {e}: {hint}")
    }

    /// What a read that timed out is told as.
    fn no_answer(&self) -> String {
        format!("no answer within {:?} (--redis-timeout)", self.timeout)
    }

    /// What to do about a connection that failed with `e`.
    fn connect_hint(&self, e: &str) -> String {
        let [ca, cert, key] = TLS_ENV;
        if e.contains("CertificateRequired") || e.contains("certificate required") {
            return format!(
                "the server asks for a client certificate: name it and its key (PEM files) in \
                 {cert} and {key}"
            );
        }
        if e.contains("not valid for name") || e.contains("NotValidForName") {
            let mut hint = String::from(
                "the server's certificate is not valid for that host name: write the name \
                 it was issued for",
            );
            if self.loc.cluster {
                hint.push_str(
                    " (a Cluster hands out its nodes' addresses: their certificates must name \
                     them, or the nodes must announce names, `cluster-announce-hostname`)",
                );
            }
            return hint;
        }
        if e.contains("expired") || e.contains("Expired") || e.contains("NotValidYet") {
            return "the server's certificate has expired (or is not valid yet): renew it, or \
                    check this machine's clock"
                .into();
        }
        if e.contains("UnknownIssuer") || e.contains("unknown issuer") {
            return format!(
                "the server's certificate is not signed by an authority trusted here: name \
                 the one that signed it (a PEM file) in {ca}"
            );
        }
        if e.contains("peer certificate") {
            return "the server's certificate was refused".into();
        }
        let mut hint = String::from("check that the server runs and listens there");
        hint.push_str(if self.loc.tls {
            " and speaks TLS (else write redis://)"
        } else {
            " (a server that speaks only TLS needs rediss://)"
        });
        if self.loc.password.is_none() {
            hint.push_str(", and give its password in SEEN_REDIS_PASSWORD if it has one");
        }
        hint
    }

    fn at(&self, addr: &(String, u16)) -> String {
        format!("Redis at {}:{} ({})", addr.0, addr.1, self.loc)
    }

    /// Reads the Cluster's slot map (`CLUSTER SLOTS`) from the first node
    /// that answers, and connects to every master.
    fn refresh_slots(&mut self) -> Result<()> {
        let mut seeds: Vec<(String, u16)> = self.nodes.iter().map(|n| n.addr.clone()).collect();
        for s in &self.loc.nodes {
            if !seeds.contains(s) {
                seeds.push(s.clone());
            }
        }
        let mut last = None;
        for seed in &seeds {
            let reply = match self.node_index(seed) {
                Some(i) if self.nodes[i].conn.is_some() => {
                    let conn = self.nodes[i].conn.as_mut().expect("checked");
                    redis::cmd("CLUSTER").arg("SLOTS").query::<Value>(conn)
                }
                _ => match self.open(seed) {
                    Ok(mut c) => redis::cmd("CLUSTER").arg("SLOTS").query::<Value>(&mut c),
                    Err(e) => {
                        last = Some(e);
                        continue;
                    }
                },
            };
            match reply {
                Ok(v) => return self.install_slots(seed, &v),
                Err(e) if e.kind() == redis::ErrorKind::Server(ServerErrorKind::ResponseError) => {
                    bail!(
                        "{} is not a Redis Cluster node ({e}): write {}://{}:{}/{} for a \
                         standalone server",
                        self.at(seed),
                        if self.loc.tls { "rediss" } else { "redis" },
                        seed.0,
                        seed.1,
                        self.loc.name
                    )
                }
                Err(e) => last = Some(anyhow!("{}: {e}", self.at(seed))),
            }
        }
        Err(last.unwrap_or_else(|| anyhow!("{}: no seed node", self.loc)))
    }

    fn node_index(&self, addr: &(String, u16)) -> Option<usize> {
        self.nodes.iter().position(|n| &n.addr == addr)
    }

    /// The index of the node at `addr`, added (not connected yet) if new.
    fn node_for(&mut self, addr: (String, u16)) -> usize {
        self.node_index(&addr).unwrap_or_else(|| {
            self.nodes.push(Node {
                addr,
                conn: None,
                used: false,
                heard: Instant::now(),
                owed: 0,
            });
            self.nodes.len() - 1
        })
    }

    /// Installs the slot map of a `CLUSTER SLOTS` reply from `seed`.
    fn install_slots(&mut self, seed: &(String, u16), v: &Value) -> Result<()> {
        let here = self.at(seed);
        let bad = || anyhow!("{here}: unexpected CLUSTER SLOTS reply");
        let Value::Array(ranges) = v else {
            return Err(bad());
        };
        let mut slots = vec![u16::MAX; SLOTS];
        for r in ranges {
            let Value::Array(r) = r else {
                return Err(bad());
            };
            let (Some(Value::Int(a)), Some(Value::Int(b)), Some(Value::Array(master))) =
                (r.first(), r.get(1), r.get(2))
            else {
                return Err(bad());
            };
            let host = match master.first() {
                Some(Value::BulkString(h)) => String::from_utf8_lossy(h).into_owned(),
                Some(Value::SimpleString(h)) => h.clone(),
                _ => return Err(bad()),
            };
            // An empty host means "the address you reached me at".
            let host = if host.is_empty() {
                seed.0.clone()
            } else {
                host
            };
            let Some(Value::Int(port)) = master.get(1) else {
                return Err(bad());
            };
            let addr = (host, u16::try_from(*port).map_err(|_| bad())?);
            let i = self.node_for(addr);
            let (a, b) = (
                usize::try_from(*a).map_err(|_| bad())?,
                usize::try_from(*b).map_err(|_| bad())?,
            );
            for s in slots.iter_mut().take(b.saturating_add(1)).skip(a) {
                *s = i as u16;
            }
        }
        if let Some(s) = slots.iter().position(|&n| n == u16::MAX) {
            bail!(
                "the Redis Cluster at {} does not serve slot {s}: run `redis-cli --cluster check` \
                 and fix it (every slot must be served)",
                self.loc
            );
        }
        self.slots = Some(slots);
        Ok(())
    }

    /// The node that serves `slot`.
    fn node_of(&self, slot: u16) -> usize {
        self.slots
            .as_ref()
            .map_or(0, |s| usize::from(s[usize::from(slot)]))
    }

    /// Makes sure node `i` has a connection, trying again until the timeout.
    fn ensure(&mut self, i: usize) -> Result<()> {
        let node = &mut self.nodes[i];
        if let Some(conn) = &mut node.conn {
            if node.owed > 0 || node.heard.elapsed() < IDLE_CHECK {
                return Ok(());
            }
            // Silent a while, nothing in flight: still open?
            if redis::cmd("PING").query::<Value>(conn).is_ok() {
                node.heard = Instant::now();
                return Ok(());
            }
            node.conn = None;
        }
        let deadline = Instant::now() + self.timeout;
        let mut pause = Duration::from_millis(20);
        loop {
            match self.open(&self.nodes[i].addr) {
                Ok(c) => {
                    let node = &mut self.nodes[i];
                    node.conn = Some(c);
                    (node.heard, node.owed) = (Instant::now(), 0);
                    return Ok(());
                }
                Err(e) if Instant::now() + pause >= deadline => return Err(e),
                Err(_) => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
            }
        }
    }

    /// With `--redis-wait N`: waits until N replicas of every master that
    /// took commands since the last wait hold its writes (Redis `WAIT`, every
    /// master's sent before any reply is read). Nothing else may be in
    /// flight. `risk` says what a failover could do to the writes not
    /// acknowledged.
    ///
    /// # Errors
    /// Fewer replicas acknowledged within the timeout, or a lost connection
    /// (the writes are on the masters either way).
    pub(super) fn wait_replicas(&mut self, risk: &str) -> Result<()> {
        if self.replicas == 0 {
            return Ok(());
        }
        let wait = redis::cmd("WAIT")
            .arg(self.replicas)
            .arg(u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX))
            .get_packed_command();
        // A node that no longer serves a slot (a master demoted by a
        // failover) is not asked: it refuses WAIT, and holds none of the
        // writes that count.
        let serving = |n: usize| {
            self.slots
                .as_ref()
                .is_none_or(|s| s.iter().any(|&i| usize::from(i) == n))
        };
        let todo: Vec<usize> = (0..self.nodes.len())
            .filter(|&n| self.nodes[n].used && self.nodes[n].conn.is_some() && serving(n))
            .collect();
        let mut asked = Vec::new();
        for n in todo {
            let node = &mut self.nodes[n];
            let conn = node.conn.as_mut().expect("has a connection");
            // The server answers WAIT at its timeout: read a little longer.
            let longer = self.timeout + Duration::from_secs(2);
            if let Err(e) = conn
                .set_read_timeout(Some(longer))
                .and_then(|()| conn.send_packed_command(&wait))
            {
                let e = anyhow!("{}: WAIT: {e}", at(&self.loc, &node.addr));
                self.reset();
                return Err(e);
            }
            asked.push(n);
        }
        let mut short = None;
        for n in asked {
            let node = &mut self.nodes[n];
            node.used = false;
            let conn = node.conn.as_mut().expect("asked");
            let reply = conn
                .recv_response()
                .and_then(|v| conn.set_read_timeout(Some(self.timeout)).map(|()| v))
                .map_err(|e| anyhow!("{}: WAIT: {e}", at(&self.loc, &node.addr)));
            match reply {
                Ok(Value::Int(k)) if k >= i64::from(self.replicas) => {}
                Ok(Value::Int(k)) => {
                    short.get_or_insert((n, k));
                }
                Ok(other) => {
                    let e = server_error("WAIT", &self.loc, &other)
                        .unwrap_or_else(|| anyhow!("{}: unexpected WAIT reply", self.loc));
                    self.reset();
                    return Err(e);
                }
                Err(e) => {
                    self.reset();
                    return Err(e);
                }
            }
        }
        if let Some((n, k)) = short {
            bail!(
                "{}: only {k} of the {} replicas asked for (--redis-wait) acknowledged the \
                 writes within {:?}: they are on the master, but a failover now could lose \
                 them{risk}; check the replicas (INFO replication)",
                at(&self.loc, &self.nodes[n].addr),
                self.replicas,
                self.timeout
            );
        }
        Ok(())
    }

    /// Runs one command on the node of `slot`, once (for a command that must
    /// not run twice: a lost reply is an error).
    ///
    /// # Errors
    /// The server's error, or no answer.
    pub(super) fn query_once(&mut self, slot: u16, cmd: Cmd) -> Result<Value> {
        let mut v = self
            .exec(vec![Routed::new(slot, &cmd)])
            .map_err(Failure::into_error)?;
        Ok(v.pop().expect("one reply"))
    }

    /// Runs one command on the node of `slot` (for commands that may safely
    /// run twice, it is sent again after a lost connection, until the timeout).
    ///
    /// # Errors
    /// The server's error, or no answer within the timeout.
    pub(super) fn query(&mut self, slot: u16, cmd: Cmd) -> Result<Value> {
        let deadline = Instant::now() + self.timeout;
        loop {
            match self.exec(vec![Routed::new(slot, &cmd)]) {
                Ok(mut v) => return Ok(v.pop().expect("one reply")),
                Err(f) => {
                    let e = f.into_error();
                    if Instant::now() >= deadline || !is_io(&e) {
                        return Err(e);
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
    }

    /// Runs `cmds` (one pipeline per node, every node's sent before any
    /// reply is read), following MOVED and ASK, waiting out TRYAGAIN and
    /// CLUSTERDOWN. Replies come in the order of `cmds`; a server error
    /// other than those is a reply like any other. Nothing else may be in
    /// flight.
    ///
    /// # Errors
    /// [`Failure::NotSent`] when a node could not be reached before anything
    /// went to it; [`Failure::Lost`] when a reply did not come (a command of
    /// this call may have run, or not).
    pub(super) fn exec(&mut self, cmds: Vec<Routed>) -> Result<Vec<Value>, Failure> {
        let sent = self.send(cmds)?;
        let raw = self.recv_raw(sent)?;
        self.finish(raw)
    }

    /// Sends `cmds` (one pipeline per node) without waiting for replies:
    /// [`Client::recv_raw`] reads them, so that the servers work while the
    /// caller prepares the next batch.
    ///
    /// # Errors
    /// As [`Client::exec`].
    pub(super) fn send(&mut self, cmds: Vec<Routed>) -> Result<Sent, Failure> {
        let todo: Vec<(usize, Option<usize>)> = (0..cmds.len()).map(|i| (i, None)).collect();
        let by_node = self.send_some(&cmds, &todo, false)?;
        Ok(Sent { cmds, by_node })
    }

    /// Forgets every connection (a failure left replies unread on some):
    /// the next command opens new ones.
    fn reset(&mut self) {
        for n in &mut self.nodes {
            n.conn = None;
            n.owed = 0;
        }
    }

    /// Sends the commands `todo` of `cmds` (index, ASK target), grouped by
    /// node; returns, per node, which were sent there in order.
    fn send_some(
        &mut self,
        cmds: &[Routed],
        todo: &[(usize, Option<usize>)],
        mut sent_any: bool,
    ) -> Result<Vec<Vec<(usize, bool)>>, Failure> {
        let mut by_node: Vec<Vec<(usize, bool)>> = vec![Vec::new(); self.nodes.len()];
        for &(i, ask) in todo {
            let n = ask.unwrap_or_else(|| self.node_of(cmds[i].slot));
            by_node[n].push((i, ask.is_some()));
        }
        for (n, list) in by_node.iter().enumerate() {
            if list.is_empty() {
                continue;
            }
            if let Err(e) = self.ensure(n) {
                if sent_any {
                    self.reset();
                    return Err(Failure::Lost(e));
                }
                return Err(Failure::NotSent(e));
            }
            let mut packed = Vec::new();
            for &(i, asking) in list {
                if asking {
                    packed.extend(redis::cmd("ASKING").get_packed_command());
                }
                packed.extend_from_slice(&cmds[i].packed);
            }
            let conn = self.nodes[n].conn.as_mut().expect("ensured");
            if let Err(e) = conn.send_packed_command(&packed) {
                let e = anyhow!("{}: {e}", at(&self.loc, &self.nodes[n].addr));
                // A partial write may have delivered whole commands.
                self.reset();
                return Err(Failure::Lost(e));
            }
            sent_any = true;
            self.nodes[n].used = true;
            self.nodes[n].owed += list.len() + list.iter().filter(|(_, asking)| *asking).count();
        }
        Ok(by_node)
    }

    /// Reads every reply of commands sent with [`Client::send`], sending
    /// nothing: those a node redirected are left for [`Client::finish`]
    /// (which sends them again once nothing else is in flight). After a
    /// failure every connection is dropped (some owe replies).
    ///
    /// # Errors
    /// [`Failure::Lost`] when a reply did not come.
    pub(super) fn recv_raw(&mut self, sent: Sent) -> Result<Raw, Failure> {
        let Sent { cmds, by_node } = sent;
        let mut raw = Raw {
            replies: vec![None; cmds.len()],
            cmds,
            again: Vec::new(),
            refresh: false,
            wait: false,
        };
        self.read_into(&by_node, &mut raw)?;
        Ok(raw)
    }

    fn read_into(&mut self, by_node: &[Vec<(usize, bool)>], raw: &mut Raw) -> Result<(), Failure> {
        for (n, list) in by_node.iter().enumerate() {
            for &(i, asking) in list {
                let read = |node: &mut Node| -> Result<Value, anyhow::Error> {
                    let conn = node
                        .conn
                        .as_mut()
                        .ok_or_else(|| anyhow!("connection lost"))?;
                    if asking {
                        conn.recv_response()?;
                    }
                    Ok(conn.recv_response()?)
                };
                let v = match read(&mut self.nodes[n]) {
                    Ok(v) => {
                        let node = &mut self.nodes[n];
                        node.owed = node.owed.saturating_sub(1 + usize::from(asking));
                        node.heard = Instant::now();
                        v
                    }
                    Err(e) => {
                        let here = at(&self.loc, &self.nodes[n].addr);
                        let e = if e
                            .downcast_ref::<redis::RedisError>()
                            .is_some_and(redis::RedisError::is_timeout)
                        {
                            anyhow!("{here}: {}", self.no_answer())
                        } else {
                            anyhow!("{here}: {e}")
                        };
                        self.reset();
                        return Err(Failure::Lost(e));
                    }
                };
                let r = redirect(&v);
                self.redirected += u64::from(r.is_some());
                match r {
                    Some(Redirect::Moved) => {
                        raw.refresh = true;
                        raw.again.push((i, None));
                    }
                    Some(Redirect::Ask(addr)) => {
                        let t = self.node_for(addr);
                        raw.again.push((i, Some(t)));
                    }
                    Some(Redirect::Wait) => {
                        raw.wait = true;
                        raw.again.push((i, None));
                    }
                    None => raw.replies[i] = Some(v),
                }
            }
        }
        Ok(())
    }

    /// Sends again, in their order, the commands of `raw` that were
    /// redirected (MOVED: after reading the slot map again; ASK: to the node
    /// named, once; TRYAGAIN: after a pause), until all are answered. Nothing
    /// else may be in flight.
    ///
    /// # Errors
    /// As [`Client::exec`]; also when commands are still redirected after
    /// the timeout.
    pub(super) fn finish(&mut self, mut raw: Raw) -> Result<Vec<Value>, Failure> {
        let deadline = Instant::now() + self.timeout;
        while !raw.again.is_empty() {
            if Instant::now() >= deadline {
                self.reset();
                return Err(Failure::Lost(anyhow!(
                    "{}: {} commands were still redirected (MOVED, ASK, TRYAGAIN) after {:?}",
                    self.loc,
                    raw.again.len(),
                    self.timeout
                )));
            }
            if raw.wait {
                std::thread::sleep(Duration::from_millis(20));
            }
            if raw.refresh {
                if self.slots.is_none() {
                    self.reset();
                    return Err(Failure::Lost(anyhow!(
                        "{} is a Redis Cluster node (it answered MOVED): write \
                         {}+cluster://{}:{}/{}",
                        self.loc,
                        if self.loc.tls { "rediss" } else { "redis" },
                        self.loc.nodes[0].0,
                        self.loc.nodes[0].1,
                        self.loc.name
                    )));
                }
                if let Err(e) = self.refresh_slots() {
                    self.reset();
                    return Err(Failure::Lost(e));
                }
            }
            let mut again = std::mem::take(&mut raw.again);
            again.sort_unstable();
            (raw.refresh, raw.wait) = (false, false);
            let by_node = self.send_some(&raw.cmds, &again, true)?;
            self.read_into(&by_node, &mut raw)?;
        }
        Ok(raw
            .replies
            .into_iter()
            .map(|v| v.expect("every command answered"))
            .collect())
    }
}

fn at(loc: &Location, addr: &(String, u16)) -> String {
    format!("Redis at {}:{} ({loc})", addr.0, addr.1)
}

/// Whether an error is a lost connection (worth trying again for a command
/// that may run twice).
fn is_io(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<redis::RedisError>()
            .is_some_and(|r| r.is_io_error() || r.is_timeout() || r.is_connection_dropped())
    }) || e.to_string().contains("cannot connect")
}

/// Where a refused command goes next.
enum Redirect {
    /// The slot lives elsewhere now: refresh the map.
    Moved,
    /// Ask this node, once.
    Ask((String, u16)),
    /// Try again shortly (TRYAGAIN, CLUSTERDOWN, LOADING).
    Wait,
}

fn redirect(v: &Value) -> Option<Redirect> {
    let Value::ServerError(e) = v else {
        return None;
    };
    match e.kind() {
        Some(ServerErrorKind::Moved) => Some(Redirect::Moved),
        Some(ServerErrorKind::Ask) => {
            let target = e.details()?.split_whitespace().nth(1)?;
            let (h, p) = target.rsplit_once(':')?;
            Some(Redirect::Ask((h.to_string(), p.parse().ok()?)))
        }
        Some(
            ServerErrorKind::TryAgain | ServerErrorKind::ClusterDown | ServerErrorKind::BusyLoading,
        ) => Some(Redirect::Wait),
        _ => None,
    }
}

/// A server error reply as an error, naming the command.
pub(super) fn server_error(what: &str, loc: &Location, v: &Value) -> Option<anyhow::Error> {
    match v {
        Value::ServerError(e) => Some(anyhow!(
            "{loc}: {what} failed: {} {}",
            e.code(),
            e.details().unwrap_or("")
        )),
        _ => None,
    }
}
