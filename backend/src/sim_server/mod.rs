//! `locklab sim-server` (work in progress: the real server lands shortly).

use locklab_core::server::Profile;

/// Where to listen and which redis-server to imitate.
#[derive(Clone, Debug)]
pub struct Config {
    pub bind: std::net::IpAddr,
    pub port: u16,
    pub profile: Profile,
}

/// Serve until interrupted.
pub fn run(_cfg: Config) -> std::io::Result<()> {
    Err(std::io::Error::other("sim-server is not finished yet"))
}
