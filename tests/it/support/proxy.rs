//! A loopback TCP proxy in front of OpenBao that can stop forwarding, so tests make a backend
//! outage exactly when they want it, on connections already open too.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    Forward = 0,
    /// Requests are accepted and swallowed; no answer ever comes.
    BlackHole = 1,
    /// Connections are closed at once.
    Refuse = 2,
}

pub struct Proxy {
    pub address: String,
    mode: Arc<AtomicU8>,
    /// Every byte forwarded upstream, so tests can read what the broker asked for.
    sent: Arc<Mutex<Vec<u8>>>,
}

impl Proxy {
    pub async fn start(upstream: &str) -> Self {
        let upstream = upstream.trim_start_matches("http://").to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("proxy binds");
        let address = format!("http://{}", listener.local_addr().unwrap());
        let mode = Arc::new(AtomicU8::new(Mode::Forward as u8));
        let sent = Arc::new(Mutex::new(Vec::new()));
        let (shared, record) = (mode.clone(), sent.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(relay(client, upstream.clone(), shared.clone(), record.clone()));
            }
        });
        Self { address, mode, sent }
    }

    /// The bodies of the HTTP requests forwarded so far, in order.
    pub fn request_bodies(&self) -> Vec<String> {
        let sent = self.sent.lock().unwrap();
        let text = String::from_utf8_lossy(&sent);
        let mut bodies = Vec::new();
        let mut rest: &str = &text;
        while let Some(end) = rest.find("\r\n\r\n") {
            let headers = &rest[..end];
            let length = headers
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length").then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            let body_start = end + 4;
            let body_end = (body_start + length).min(rest.len());
            bodies.push(rest[body_start..body_end].to_owned());
            rest = &rest[body_end..];
        }
        bodies
    }

    pub fn set(&self, mode: Mode) {
        self.mode.store(mode as u8, Ordering::SeqCst);
    }
}

fn mode(shared: &AtomicU8) -> Mode {
    match shared.load(Ordering::SeqCst) {
        0 => Mode::Forward,
        1 => Mode::BlackHole,
        _ => Mode::Refuse,
    }
}

async fn relay(mut client: TcpStream, upstream: String, shared: Arc<AtomicU8>, sent: Arc<Mutex<Vec<u8>>>) {
    if mode(&shared) == Mode::Refuse {
        return;
    }
    let Ok(server) = TcpStream::connect(&upstream).await else { return };
    let (mut server_read, mut server_write) = server.into_split();
    let (mut client_read, mut client_write) = client.split();
    let requests = async {
        let mut buffer = vec![0u8; 16 * 1024];
        while let Ok(n @ 1..) = client_read.read(&mut buffer).await {
            match mode(&shared) {
                Mode::Forward => {
                    sent.lock().unwrap().extend_from_slice(&buffer[..n]);
                    if server_write.write_all(&buffer[..n]).await.is_err() {
                        break;
                    }
                }
                Mode::BlackHole => {}
                Mode::Refuse => break,
            }
        }
    };
    let answers = tokio::io::copy(&mut server_read, &mut client_write);
    tokio::select! {
        _ = requests => {}
        _ = answers => {}
    }
}
