//! A throw-away PostgreSQL cluster from Debian's package: `initdb` into a temp dir, `postgres`
//! on a free loopback port, password authentication; stopped (and removed) when dropped.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use sqlx::Connection;
use tempfile::TempDir;

use super::free_port;

pub const SUPERUSER: &str = "postgres";
pub const SUPERUSER_PASSWORD: &str = "throwaway-superuser-password";

pub struct Postgres {
    pub port: u16,
    dir: TempDir,
    child: Option<Child>,
}

/// Where Debian puts the server binaries (not on PATH by default).
fn bin(name: &str) -> PathBuf {
    let on_path = Command::new("sh").arg("-c").arg(format!("command -v {name}")).output();
    if let Ok(output) = on_path
        && output.status.success()
    {
        return PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    }
    let versions =
        std::fs::read_dir("/usr/lib/postgresql").expect("PostgreSQL is installed (apt-get install postgresql)");
    let mut dirs: Vec<PathBuf> = versions.filter_map(|e| e.ok().map(|e| e.path())).collect();
    dirs.sort();
    dirs.last().expect("a PostgreSQL version").join("bin").join(name)
}

/// PostgreSQL refuses to run as root: as root, run it as the `postgres` user (setpriv execs, so
/// the child is the server itself and killing it stops the server).
fn command(program: &Path) -> Command {
    if is_root() {
        let mut command = Command::new("setpriv");
        command.args(["--reuid=postgres", "--regid=postgres", "--init-groups", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

impl Postgres {
    pub async fn start() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        if is_root() {
            let status = Command::new("chown").args(["-R", "postgres:postgres"]).arg(dir.path()).status().unwrap();
            assert!(status.success(), "chown to postgres");
        }
        let password_file = dir.path().join("pwfile");
        std::fs::write(&password_file, SUPERUSER_PASSWORD).unwrap();
        if is_root() {
            Command::new("chown").args(["postgres:postgres"]).arg(&password_file).status().unwrap();
        }
        let status = command(&bin("initdb"))
            .arg("-D")
            .arg(dir.path().join("data"))
            .args(["-U", SUPERUSER, "-A", "scram-sha-256", "--no-sync", "-E", "UTF8", "--locale=C"])
            .arg(format!("--pwfile={}", password_file.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("initdb runs");
        assert!(status.success(), "initdb");
        let mut postgres = Self { port: 0, dir, child: None };
        postgres.start_server().await;
        postgres
    }

    /// Starts the server on the existing data directory (again, after `kill`).
    pub async fn start_server(&mut self) {
        for _ in 0..5 {
            let port = if self.port == 0 { free_port() } else { self.port };
            let child = command(&bin("postgres"))
                .arg("-D")
                .arg(self.dir.path().join("data"))
                .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
                .arg(format!("-cunix_socket_directories={}", self.dir.path().display()))
                .args(["-c", "fsync=off", "-c", "max_connections=300"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                // A group of its own, so that `kill` takes the backends too, as a lost host would.
                .process_group(0)
                .spawn()
                .expect("postgres starts");
            self.child = Some(child);
            self.port = port;
            if self.wait_ready().await {
                return;
            }
            self.kill();
        }
        panic!("PostgreSQL did not start");
    }

    async fn wait_ready(&mut self) -> bool {
        for _ in 0..200 {
            if self.child.as_mut().is_some_and(|c| c.try_wait().ok().flatten().is_some()) {
                return false;
            }
            if sqlx::PgConnection::connect(&self.url("postgres")).await.is_ok() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    /// The superuser's URL for `database`.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://{SUPERUSER}:{SUPERUSER_PASSWORD}@127.0.0.1:{}/{database}", self.port)
    }

    /// The URL without the password, as a broker config would hold it.
    pub fn url_without_password(&self, database: &str) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/{database}", self.port)
    }

    pub async fn create_database(&self, name: &str) {
        let mut connection = sqlx::PgConnection::connect(&self.url("postgres")).await.expect("connects");
        sqlx::query(&format!("CREATE DATABASE \"{name}\"")).execute(&mut connection).await.expect("CREATE DATABASE");
    }

    /// SIGKILL: a crash, as an outage would look to its clients.
    /// Kills the server and every backend it started at once. SIGKILL to the postmaster alone
    /// leaves each connection's backend answering its next query until it notices.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.kill();
    }
}
