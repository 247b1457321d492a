//! [`Resource`]: the fenced resource of the drills, inside the test
//! process. A TCP line server on 127.0.0.1 that accepts `WRITE <token>
//! <writer>` when the token is at least the highest it has accepted (`OK`)
//! and refuses it otherwise (`STALE <highest>`), recording every attempt
//! for the test to assert on. The rule itself is `leasehold_fence::check`.

use std::io::{BufRead, BufReader, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// One attempted write, as the resource saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteAttempt {
    /// Who wrote (the worker's writer id).
    pub writer: String,
    /// The fencing token it carried.
    pub token: u64,
    /// Whether the resource took it.
    pub accepted: bool,
}

/// What the resource remembers: the highest token it accepted, and every attempt.
#[derive(Debug, Default)]
struct Ledger {
    highest: Option<u64>,
    attempts: Vec<WriteAttempt>,
}

/// A resource that checks fencing tokens (see the module doc).
pub struct Resource {
    /// Where it listens.
    pub addr: SocketAddr,
    ledger: Arc<Mutex<Ledger>>,
    /// Tells the accept loop to end (it is woken by a connection).
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl Resource {
    /// Listens on a free port of 127.0.0.1.
    pub fn start() -> Resource {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the resource");
        let addr = listener.local_addr().expect("resource address");
        let ledger = Arc::new(Mutex::new(Ledger::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let (ledger, stop) = (ledger.clone(), stop.clone());
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    let Ok(conn) = conn else { continue };
                    let ledger = ledger.clone();
                    std::thread::spawn(move || serve_writes(conn, &ledger));
                }
            })
        };
        Resource {
            addr,
            ledger,
            stop,
            acceptor: Some(acceptor),
        }
    }

    /// Every attempt so far, in the order the resource decided them.
    pub fn attempts(&self) -> Vec<WriteAttempt> {
        self.ledger.lock().expect("ledger").attempts.clone()
    }
}

impl Drop for Resource {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = TcpStream::connect(self.addr);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

/// Answers the `WRITE <token> <writer>` lines of one connection.
fn serve_writes(conn: TcpStream, ledger: &Mutex<Ledger>) {
    let Ok(mut out) = conn.try_clone() else {
        return;
    };
    for line in BufReader::new(conn).lines() {
        let Ok(line) = line else { return };
        let answer = match line.split_whitespace().collect::<Vec<_>>()[..] {
            ["WRITE", token, writer] => match token.parse() {
                Ok(token) => decide(ledger, token, writer),
                Err(_) => "ERR bad token".to_owned(),
            },
            _ => "ERR expected WRITE <token> <writer>".to_owned(),
        };
        if writeln!(out, "{answer}").is_err() {
            return;
        }
    }
}

/// Decides one write by the fencing rule (`leasehold_fence::check`: a
/// token no lower than the highest accepted) and records it.
fn decide(ledger: &Mutex<Ledger>, token: u64, writer: &str) -> String {
    let mut ledger = ledger.lock().expect("ledger");
    let decided = leasehold_fence::check("drill", ledger.highest, token);
    if let Ok(highest) = decided {
        ledger.highest = Some(highest);
    }
    ledger.attempts.push(WriteAttempt {
        writer: writer.to_owned(),
        token,
        accepted: decided.is_ok(),
    });
    match decided {
        Ok(_) => "OK".to_owned(),
        Err(stale) => format!("STALE {}", stale.highest),
    }
}
